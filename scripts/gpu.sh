#!/usr/bin/env bash
# The one entry on a GPU machine (no Rust there: scripts/stage.sh, run where Rust is, makes the
# stage/ folder this reads). Runs the named suites in order, each one's own script
# (scripts/gpu-SUITE.sh, where its logic and its options stay), and ends with one line per suite.
# On a machine without a GPU, scripts/test.sh is the entry (every check CI runs, on simulated
# devices).
#
#   scripts/gpu.sh SUITE [SUITE...]     e.g. scripts/gpu.sh test sleep memory
#   scripts/gpu.sh --help               the suites, each with what it does (status 1 when a
#                                       suite's script has no header comment saying it)
#
# A suite's arguments follow it after a colon and commas: `memory:compare/before` runs
# `scripts/gpu-memory.sh compare/before`. Exit status 0 when every suite passed.
set -uo pipefail
cd "$(dirname "$0")/.."

suites() {
  local script
  for script in scripts/gpu-*.sh; do
    case $script in scripts/gpu-common.sh) continue ;; esac
    script=${script#scripts/gpu-}
    echo "${script%.sh}"
  done
}

# What a suite does: the first sentence of its script's header comment.
describe() {
  sed -n '2,/^[^#]/p' "scripts/gpu-$1.sh" | sed -n 's/^# \{0,1\}//p' | tr '\n' ' ' | sed 's/\([.:]\) .*/\1/' | cut -c1-150
}

if [ $# -eq 0 ] || [ "$1" = --help ] || [ "$1" = -h ]; then
  sed -n '2,/^[^#]/p' "$0" | sed -n 's/^# \{0,1\}//p'
  echo
  echo "Suites:"
  undescribed=0
  for suite in $(suites); do
    what=$(describe "$suite")
    [ -n "$what" ] || { what="(no header comment: say what it does)"; undescribed=1; }
    printf '  %-18s %s\n' "$suite" "$what"
  done
  [ $# -eq 0 ] && exit 2
  exit $undescribed
fi

known=" $(suites | tr '\n' ' ') "
for request in "$@"; do
  case $known in *" ${request%%:*} "*) ;; *)
    echo "gpu.sh: no suite '${request%%:*}' (scripts/gpu.sh --help lists them)" >&2
    exit 2 ;;
  esac
done

results=()
failed=0
for request in "$@"; do
  suite=${request%%:*}
  args=()
  [ "$suite" != "$request" ] && IFS=, read -r -a args <<<"${request#*:}"
  printf '\n==== scripts/gpu-%s.sh %s\n' "$suite" "${args[*]}"
  start=$SECONDS
  if "scripts/gpu-$suite.sh" "${args[@]}"; then
    results+=("$suite: passed ($((SECONDS - start)) s)")
  else
    results+=("$suite: FAILED ($((SECONDS - start)) s)")
    failed=1
  fi
done
printf '\n==== gpu.sh summary\n'
printf '%s\n' "${results[@]}"
exit $failed
