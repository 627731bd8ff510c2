#!/usr/bin/env bash
# CI's check of the offline route (scripts/offline-cache.sh, RMM_OFFLINE_CACHE): makes the cache,
# then, in a network namespace with no network at all (unshare -n; as root), type-checks every
# crate and target from the vendored crates alone and compiles the PyTorch backend against the
# cached headers. A crate or header the cache lacks fails here, not on a user's offline machine.
# Then, without the cache, each fetcher must fail with one readable line (no raw tool errors).
#
#   scripts/offline-check.sh [DIR]      (default build/offline)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build/offline}
scripts/offline-cache.sh "$dir"
dir=$(cd "$dir" && pwd)
isolate=()
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
  isolate=(unshare -n)
else
  echo "offline-check: cannot make a namespace without network here; cargo's own offline mode only"
fi
"${isolate[@]}" env CARGO_HOME="$dir/cargo-home" RMM_OFFLINE_CACHE="$dir" bash -c '
  set -euo pipefail
  cargo check --workspace --all-targets --quiet --target-dir "$RMM_OFFLINE_CACHE/target"
  scripts/fetch-cccl.sh "$RMM_OFFLINE_CACHE/cccl"
  CUDA_INCLUDE="$RMM_OFFLINE_CACHE/cccl/include" scripts/check-torch-backend.sh
'
# Without the cache and without network, the fetchers of other people's sources say why in a
# line of their own, not with curl's, gzip's, tar's or pip's messages.
if [ ${#isolate[@]} -gt 0 ]; then
  scratch=$(mktemp -d /tmp/offline-fetch.XXXXXX)
  for fetch in fetch-rapids-suite.sh fetch-rapids-python-suite.sh fetch-cccl.sh; do
    if "${isolate[@]}" scripts/$fetch "$scratch/$fetch" >"$scratch/out" 2>&1; then
      echo "offline-check: scripts/$fetch succeeded without network" >&2
      exit 1
    fi
    if [ "$(wc -l <"$scratch/out")" -ne 1 ] || grep -Eq '^(curl|gzip|tar|ERROR|WARNING): |Traceback' "$scratch/out"; then
      echo "offline-check: scripts/$fetch without network printed more than its one line of why:" >&2
      cat "$scratch/out" >&2
      exit 1
    fi
    echo "offline, scripts/$fetch says: $(cat "$scratch/out")"
  done
  rm -rf "$scratch"
fi
echo "offline route: every crate and header came from $dir, with no network"
