#!/usr/bin/env bash
# Programs that cannot be rebuilt under LD_PRELOAD=librmm_preload.so (stage/ from
# scripts/stage.sh), on a GPU machine: PyTorch with its cache off (ResNet-50), CuPy with its
# pool off, and bench/preload_loop.cu linked with the static CUDA runtime, each without the
# preload library, with it and nothing configured, and on each stack; see
# bench/frameworks/preload_bench.py (PRELOAD_PROGRAMS, PRELOAD_SPECS, PRELOAD_STEPS).
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${STAGE_DIR:-$PWD/stage}
[ -f "$stage/lib/librmm_preload.so" ] || { echo "gpu-preload-bench.sh: run scripts/stage.sh first" >&2; exit 2; }
out=$(mktemp -d /tmp/rmm-preload.XXXXXX)
unset RMM_SIM_DEVICES RMM_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
nvcc -O3 -arch="${CUDA_ARCH:-sm_90}" bench/preload_loop.cu -o "$out/preload_loop"
"${PYTHON:-python3}" bench/frameworks/preload_bench.py "$stage/lib/librmm_preload.so" "$out/preload_loop"
# PRELOAD_SANITIZE=1: the loop again under compute-sanitizer's racecheck and synccheck, with the
# preload library freeing without waiting (async_free), few iterations.
if [ "${PRELOAD_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer --tool $tool, LD_PRELOAD, RMM_ALLOC_CONF=async_free/statistics/pool"
    # The sanitizer injects itself through the environment it passes on: the preload library
    # goes in that environment, not through a wrapper that would replace it.
    LD_PRELOAD="$stage/lib/librmm_preload.so" RMM_ALLOC_CONF=async_free/statistics/pool \
      timeout 120 compute-sanitizer --tool "$tool" --error-exitcode 99 "$out/preload_loop" 50
  done
fi
