#!/usr/bin/env bash
# CI's check of the offline route (scripts/offline-cache.sh, RMM_OFFLINE_CACHE): makes the cache,
# then, in a network namespace with no network at all (unshare -n; as root), type-checks every
# crate and target from the vendored crates alone and compiles the PyTorch backend against the
# cached headers. A crate or header the cache lacks fails here, not on a user's offline machine.
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
echo "offline route: every crate and header came from $dir, with no network"
