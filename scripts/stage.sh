#!/usr/bin/env bash
# Builds the library with cargo and stages what a machine without Rust needs to build and run
# the C/C++/CUDA tests (scripts/gpu-test.sh): stage/lib/librmm.so, stage/lib/librmm.a,
# stage/lib/librmm_preload.so, stage/include/rmm.h and the log replay tool stage/bin/rmm-replay.
# stage/ is git-ignored; carry it to the GPU machine with the work tree.
#
#   scripts/stage.sh [STAGE_DIR]     (default: stage/ at the repository root)
#
# The staged copies have their debug info stripped (about 30 MiB instead of 60 MiB, so the
# folder travels light); STAGE_KEEP_DEBUG=1 keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${1:-$root/stage}

cargo build --release --workspace --lib
cargo build --release --bin rmm-replay
target_dir=${CARGO_TARGET_DIR:-$root/target}
release=$target_dir/release

for file in "$release/librmm.so" "$release/librmm.a" "$release/librmm_preload.so" "$root/include/rmm.h"; do
  if [ ! -f "$file" ]; then
    echo "stage.sh: missing $file" >&2
    exit 1
  fi
done

rm -rf "$stage"
mkdir -p "$stage/lib" "$stage/include" "$stage/bin"
cp "$release/librmm.so" "$release/librmm.a" "$release/librmm_preload.so" "$stage/lib/"
cp "$root/include/rmm.h" "$root/include/rmm.hpp" "$root/include/rmm.f90" "$stage/include/"
rm -rf "$stage/include/rmm" "$stage/include/rapids_logger"
cp -r "$root/include/rmm" "$root/include/rapids_logger" "$stage/include/"
cp "$release/rmm-replay" "$stage/bin/"
if [ "${STAGE_KEEP_DEBUG:-0}" != 1 ] && command -v strip >/dev/null; then
  strip --strip-debug "$stage/lib/librmm.so" "$stage/lib/librmm.a" "$stage/lib/librmm_preload.so" "$stage/bin/rmm-replay"
fi
# Record what was staged, so a run on another machine can say which build it tested.
{
  echo "staged: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "rustc: $(rustc --version 2>/dev/null || echo unknown)"
} >"$stage/STAGED.txt"

echo "staged into $stage:"
ls -l "$stage/lib" "$stage/include"
cat "$stage/STAGED.txt"
