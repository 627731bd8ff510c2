#!/usr/bin/env bash
# compute-sanitizer under the preload library, on a GPU machine (stage/ from scripts/stage.sh).
#   scripts/gpu-sanitizer.sh            the planted errors of cxx_tests/sanitizer_planted.cu,
#                                       each under its tool, without and with the preload library
#   SANITIZER_DIAGNOSE=nvtx scripts/gpu-sanitizer.sh
#                                       only the pools' NVTX calls under memcheck, logged
#   SANITIZER_DIAGNOSE=1 scripts/gpu-sanitizer.sh
#                                       also: why a tool does not attach (which libraries the
#                                       target loads, its environment, its threads' stacks)
# Output files go to $OUT (or a temporary folder).
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-common.sh
stage=${STAGE_DIR:-$PWD/stage}
require_staged gpu-sanitizer.sh "$stage/lib/librmm_preload.so" "$stage/lib/librmm.so"
find_nvcc gpu-sanitizer.sh
out=${OUT:-$(mktemp -d /tmp/rmm-sanitizer.XXXXXX)}
mkdir -p "$out"
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
preload=$stage/lib/librmm_preload.so
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -n 1)
[ -x "$sanitizer" ] || { echo "gpu-sanitizer.sh: compute-sanitizer not found" >&2; exit 2; }
section "versions"
"$sanitizer" --version | tail -n 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
work=$(mktemp -d /tmp/rmm-planted.XXXXXX)
"$nvcc" -O1 -arch="${CUDA_ARCH:-sm_90}" cxx_tests/sanitizer_planted.cu -o "$work/planted"
"$nvcc" -O1 -arch="${CUDA_ARCH:-sm_90}" -cudart shared cxx_tests/sanitizer_planted.cu -o "$work/planted_shared"
"$nvcc" -O1 -arch="${CUDA_ARCH:-sm_90}" -DRMM_LINKED -I"$stage/include" cxx_tests/sanitizer_planted.cu \
  -L"$stage/lib" -lrmm -Xlinker -rpath="$stage/lib" -o "$work/planted_linked"

# Runs the sanitizer: sanitize LABEL TOOL PRELOAD PROGRAM MODE [OPTIONS...]; the log goes to
# $out/LABEL.log and the tool's exit status (99 when it found errors) to $status.
sanitize() {
  local label=$1 tool=$2 with_preload=$3 program=$4 mode=$5
  shift 5
  local log=$out/$label.log
  status=0
  LD_PRELOAD="$with_preload" timeout 180 "$sanitizer" --tool "$tool" --error-exitcode 99 "$@" "$work/$program" "$mode" >"$log" 2>&1 || status=$?
}

if [ "${SANITIZER_DIAGNOSE:-0}" != 0 ]; then
  section "diagnose: the pool registration (RMM_NVTX unset and 0), preload, static runtime"
  for nvtx in 1 0; do
    RMM_NVTX=$nvtx RMM_LOG_LEVEL=${SANITIZER_LOG_LEVEL:-debug} sanitize "diag-nvtx$nvtx" memcheck "$preload" planted clean --print-level info
    echo "-- RMM_NVTX=$nvtx: status $status"
    grep -v "^=========     " "$out/diag-nvtx$nvtx.log" | tail -n 40 | cut -c1-220
  done
  [ "$SANITIZER_DIAGNOSE" = nvtx ] && exit 0
  if [ "$SANITIZER_DIAGNOSE" = heaps ]; then
    section "diagnose: which memory the tool takes as an NVTX heap (cxx_tests/nvtx_heap_probe.cu)"
    "$nvcc" -O1 -arch="${CUDA_ARCH:-sm_90}" cxx_tests/nvtx_heap_probe.cu -lcuda -o "$work/nvtx_heap_probe"
    printf '%-11s %-8s %s\n' init memory "what the tool said"
    for init in ${PROBE_INITS:-popped push setcurrent runtime}; do
      for kind in ${PROBE_KINDS:-device inner managed pinned async vmm vmm2}; do
        log=$out/probe-$init-$kind.log
        timeout 120 "$sanitizer" --tool memcheck --error-exitcode 99 "$work/nvtx_heap_probe" "$init" "$kind" >"$log" 2>&1
        code=$?
        said=$(grep -o "Call to nvtx[A-Za-z]* failed: .*" "$log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
        printf '%-11s %-8s exit %s; %s %s\n' "$init" "$kind" "$code" "${said:-accepted;}" "$(grep -o 'kernel [A-Za-z]*' "$log")"
      done
    done
    exit 0
  fi
  section "diagnose: without the preload library"
  sanitize diag-plain memcheck "" planted clean
  echo "status $status"; tail -n 3 "$out/diag-plain.log"
  for probe in "$stage/lib/librmm.so" "$preload"; do
    name=$(basename "$probe" .so)
    section "diagnose: LD_PRELOAD=$name, static runtime"
    LD_DEBUG=files LD_DEBUG_OUTPUT="$out/lddebug-$name" LD_PRELOAD="$probe" \
      timeout 60 "$sanitizer" --tool memcheck --launch-timeout 20 "$work/planted" clean >"$out/diag-$name.log" 2>&1 &
    runner=$!
    sleep 12
    ps -eo pid,ppid,stat,wchan:30,args --forest | grep -v grep | grep -E "sanitizer|planted" || true
    for pid in $(pgrep -f "$work/planted" || true); do
      echo "-- pid $pid: environment"
      tr '\0' '\n' </proc/"$pid"/environ | grep -E "PRELOAD|INJECTION|NV_|TREE|COMPUTE|SANITIZER" | cut -c1-300
      echo "-- pid $pid: libraries"
      awk '$6 ~ /\.so/ {print $6}' /proc/"$pid"/maps | sort -u | grep -v -E "/lib/x86_64-linux-gnu/lib(c|m|dl|pthread|rt|gcc_s|stdc\+\+)\." || true
      echo "-- pid $pid: threads"
      for task in /proc/"$pid"/task/*; do echo "$(basename "$task") $(cat "$task"/wchan) $(cat "$task"/stat | cut -d' ' -f3)"; done
      if command -v gdb >/dev/null; then
        timeout 40 gdb -p "$pid" -batch -ex "thread apply all bt 25" 2>&1 | grep -E "^#|^Thread" | head -n 120
      elif command -v cuda-gdb >/dev/null; then
        timeout 40 cuda-gdb -p "$pid" -batch -ex "thread apply all bt 25" 2>&1 | grep -E "^#|^Thread" | head -n 120
      fi
    done
    wait "$runner"; echo "status $?"
    tail -n 5 "$out/diag-$name.log"
    echo "-- libraries the processes loaded (LD_DEBUG=files), per process:"
    for file in "$out"/lddebug-"$name".*; do
      echo "$file: $(grep -c 'file=' "$file") loads; $(grep -o 'file=[^ ]*' "$file" | sort -u | grep -i -E 'sanitizer|tree|inject|cuda|rmm' | tr '\n' ' ')"
    done
  done
  section "diagnose: env LD_PRELOAD inside the sanitizer, shared runtime"
  timeout 60 "$sanitizer" --tool memcheck --launch-timeout 20 env LD_PRELOAD="$preload" "$work/planted_shared" clean >"$out/diag-inside.log" 2>&1
  echo "status $?"; tail -n 4 "$out/diag-inside.log"
  section "diagnose: the preload library without the sanitizer"
  LD_PRELOAD="$preload" RMM_LOG_LEVEL=info "$work/planted" clean 2>&1 | tail -n 5
fi

# The planted errors: each under its tool, without the preload library (what the sanitizer sees
# with cudaMalloc), under it with the static and the shared CUDA runtime, and linked (the
# program calls rmmCudaMalloc/rmmCudaFree on the default pooled stack). A row fails when the
# tool does not attach, when a clean run reports an error, or when an error the tool finds
# without the preload library is not found with rmm-rs. Errors inside a pool's chunk (overflow,
# use-after-free) are seen only because the pools register their blocks with the sanitizer
# (NVTX); SANITIZER_POOL_VISIBLE=0 reports them as hidden instead of failing.
section "planted errors (found = the tool reported errors, exit 99)"
failures=0
printf '%-10s %-15s %-16s %-16s %-16s %-16s\n' tool mode "without rmm" "preload, static" "preload, shared" linked
verdict() {
  if grep -q "No attachable process" "$out/$1.log"; then echo "NOT ATTACHED"
  elif [ "$status" = 99 ]; then echo found
  elif [ "$status" = 0 ]; then echo clean
  else echo "status $status"; fi
}
for row in memcheck:clean memcheck:far-overflow memcheck:overflow memcheck:use-after-free memcheck:stream-ordered \
  racecheck:clean racecheck:race synccheck:clean synccheck:sync initcheck:clean initcheck:uninit; do
  tool=${row%%:*} mode=${row#*:}
  options=()
  [ "$tool" = racecheck ] && options=(--racecheck-report hazard)
  sanitize "$tool-$mode-plain" "$tool" "" planted "$mode" "${options[@]}"
  plain=$(verdict "$tool-$mode-plain")
  sanitize "$tool-$mode-static" "$tool" "$preload" planted "$mode" "${options[@]}"
  static=$(verdict "$tool-$mode-static")
  sanitize "$tool-$mode-shared" "$tool" "$preload" planted_shared "$mode" "${options[@]}"
  shared=$(verdict "$tool-$mode-shared")
  sanitize "$tool-$mode-linked" "$tool" "" planted_linked "$mode" "${options[@]}"
  linked=$(verdict "$tool-$mode-linked")
  printf '%-10s %-15s %-16s %-16s %-16s %-16s\n' "$tool" "$mode" "$plain" "$static" "$shared" "$linked"
  for result in "$static" "$shared" "$linked"; do
    case "$mode:$result" in
      *:"NOT ATTACHED" | clean:found | stream-ordered:found | *:status*) failures=$((failures + 1)) ;;
      overflow:clean | use-after-free:clean)
        [ "${SANITIZER_POOL_VISIBLE:-1}" = 1 ] && failures=$((failures + 1)) ;;
      *:clean) [ "$plain" = found ] && failures=$((failures + 1)) ;;
    esac
  done
  case $mode in clean | stream-ordered) [ "$plain" != clean ] && failures=$((failures + 1)) ;; esac
done
for mode in overflow use-after-free stream-ordered; do
  echo "-- memcheck, $mode, preload with the static runtime: what it says"
  grep -E "Invalid|Address|is out of bounds|nvtx|NVTX|region|heap" "$out/memcheck-$mode-static.log" | head -n 6
done
section "env LD_PRELOAD inside the sanitizer's command line"
LD_PRELOAD= timeout 180 "$sanitizer" --tool memcheck --error-exitcode 99 env LD_PRELOAD="$preload" "$work/planted_shared" far-overflow >"$out/inside.log" 2>&1
status=$?
echo "memcheck env LD_PRELOAD=... planted_shared far-overflow: $(verdict inside)"
[ "$(verdict inside)" = found ] || failures=$((failures + 1))
# Every suballocator and upstream under memcheck (preload, static runtime). A clean run must
# stay clean: a heap the tool refuses would be an error to it. The overflow and the
# use-after-free inside a chunk are found where the stack's chunks are whole allocations of the
# driver; the tool takes no other memory as a heap (SANITIZER_DIAGNOSE=heaps shows which), so
# over the expandable resource and the driver's pools they stay hidden, as documented.
section "memcheck over each stack (RMM_ALLOC_CONF; preload, static runtime)"
printf '%-28s %-10s %-10s %-15s\n' stack clean overflow use-after-free
for stack in ${SANITIZER_STACKS:-pool pool/managed pool/pinned_host pool/cuda_async arena binning fixed_size expandable pool/expandable async_free/pool}; do
  row=()
  for mode in clean overflow use-after-free; do
    label=stack-$(echo "$stack" | tr '/:=,' '____')-$mode
    RMM_ALLOC_CONF=$stack sanitize "$label" memcheck "$preload" planted "$mode"
    verdict=$(verdict "$label")
    case "$mode:$verdict:$stack" in
      clean:clean:*) ;;
      *:"NOT ATTACHED":* | clean:found:* | *:status*) failures=$((failures + 1)) ;;
      *:clean:*expandable* | *:clean:*cuda_async*) verdict=hidden ;;
      *:clean:*) [ "${SANITIZER_POOL_VISIBLE:-1}" = 1 ] && failures=$((failures + 1)) ;;
    esac
    row+=("$verdict")
  done
  printf '%-28s %-10s %-10s %-15s\n' "$stack" "${row[@]}"
  grep -ho "Call to nvtx[A-Za-z]* failed: .*" "$out"/stack-"$(echo "$stack" | tr '/:=,' '____')"-*.log | sort | uniq -c | sed 's/^/    /'
done
# What the registration costs with the tool attached: bench/preload_loop.cu (two allocations,
# four kernels and two frees an iteration) under memcheck, without rmm-rs (cudaMalloc: the
# sanitizer tracks each allocation itself) and under the preload library (pool blocks
# registered as NVTX regions).
section "cost under memcheck: bench/preload_loop.cu, ${SANITIZER_LOOP:-300} iterations"
"$nvcc" -O3 -arch="${CUDA_ARCH:-sm_90}" bench/preload_loop.cu -o "$work/preload_loop"
for with_preload in "" "$preload"; do
  began=$(date +%s.%N)
  LD_PRELOAD="$with_preload" timeout 300 "$sanitizer" --tool memcheck "$work/preload_loop" "${SANITIZER_LOOP:-300}" >"$out/loop-memcheck-${with_preload:+preload}.log" 2>&1
  ended=$(date +%s.%N)
  label="without rmm-rs"
  [ -n "$with_preload" ] && label="under the preload library"
  echo "memcheck $label: $(awk "BEGIN { printf \"%.1f\", $ended - $began }") s wall; $(grep -h RESULT "$out/loop-memcheck-${with_preload:+preload}.log")"
done

echo "gpu-sanitizer.sh: $failures failure(s)"
[ "$failures" = 0 ]
