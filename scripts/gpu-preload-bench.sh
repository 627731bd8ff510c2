#!/usr/bin/env bash
# Programs that cannot be rebuilt under LD_PRELOAD=librmm_preload.so (stage/ from
# scripts/stage.sh), on a GPU machine: PyTorch with its cache off (ResNet-50), CuPy with its
# pool off, bench/preload_loop.cu and the multi-threaded bench/preload_threads.cu linked with
# the static CUDA runtime, each without the
# preload library, with it and nothing configured, and on each stack; see
# bench/frameworks/preload_bench.py (PRELOAD_PROGRAMS, PRELOAD_SPECS, PRELOAD_STEPS). Specs go
# to RMM_ALLOC_CONF as written, async_free's bound included: for the ResNet rows' time, memory
# held at the end and peak under several bounds,
#   PRELOAD_PROGRAMS=torch-nocache,torch-nocache-amp \
#   PRELOAD_SPECS=async_free/statistics/pool,async_free:pending=1%/statistics/pool,async_free:pending=5%/statistics/pool \
#   scripts/gpu-preload-bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${STAGE_DIR:-$PWD/stage}
[ -f "$stage/lib/librmm_preload.so" ] || { echo "gpu-preload-bench.sh: run scripts/stage.sh first" >&2; exit 2; }
out=$(mktemp -d /tmp/rmm-preload.XXXXXX)
unset RMM_SIM_DEVICES RMM_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
nvcc -O3 -arch="${CUDA_ARCH:-sm_90}" bench/preload_loop.cu -o "$out/preload_loop"
nvcc -O3 -arch="${CUDA_ARCH:-sm_90}" -std=c++17 bench/preload_threads.cu -o "$out/preload_threads"
"${PYTHON:-python3}" bench/frameworks/preload_bench.py "$stage/lib/librmm_preload.so" "$out/preload_loop" "$out/preload_threads"
# PRELOAD_SANITIZE=1: the loop again under compute-sanitizer's racecheck and synccheck, freeing
# without waiting (async_free), few iterations: under the preload library with the static and
# the shared CUDA runtime, and linked (rmmCudaMalloc/rmmCudaFree called by the program), which
# the sanitizer attaches to (SANITIZE_PROGRAMS: preload_loop, preload_loop_shared,
# preload_loop_linked; default all three). scripts/gpu-sanitizer.sh checks the tools themselves.
if [ "${PRELOAD_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  nvcc -O3 -arch="${CUDA_ARCH:-sm_90}" -cudart shared bench/preload_loop.cu -o "$out/preload_loop_shared"
  nvcc -O3 -arch="${CUDA_ARCH:-sm_90}" -DRMM_LINKED -I"$stage/include" bench/preload_loop.cu \
    -L"$stage/lib" -lrmm -Xlinker -rpath="$stage/lib" -o "$out/preload_loop_linked"
  sanitized=0 attached=0
  for tool in racecheck synccheck; do
    for program in ${SANITIZE_PROGRAMS:-preload_loop preload_loop_shared preload_loop_linked}; do
      preload="$stage/lib/librmm_preload.so"
      [ "$program" = preload_loop_linked ] && preload=
      echo "== compute-sanitizer --tool $tool, $program${preload:+, LD_PRELOAD}, RMM_ALLOC_CONF=async_free/statistics/pool"
      # The sanitizer injects itself through the environment it passes on: the preload library
      # goes in that environment, not through a wrapper that would replace it.
      log="$out/sanitize-$tool-$program.log"
      status=0
      LD_PRELOAD="$preload" RMM_ALLOC_CONF=async_free/statistics/pool \
        timeout 180 compute-sanitizer --tool "$tool" --error-exitcode 99 "$out/$program" 50 >"$log" 2>&1 || status=$?
      tail -n 4 "$log"
      if grep -q "No attachable process" "$log"; then
        echo "   FAILED: the sanitizer did not attach"
        sanitized=1
      elif [ "$status" = 0 ]; then
        attached=$((attached + 1))
      else
        echo "   FAILED (status $status)"
        sanitized=1
      fi
    done
  done
  echo "compute-sanitizer: $attached runs attached and clean"
  [ "$sanitized" = 0 ] || exit 1
fi
