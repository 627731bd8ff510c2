#!/usr/bin/env bash
# Memory that follows the program (issue 48) on a GPU machine, in one call: what rmm-rs holds
# against what it costs, before and after, in the same run.
#
#   scripts/gpu-memory.sh [BEFORE_DIR]
#
# 1. PyTorch's ResNet-50 with its cache off under LD_PRELOAD (bench/frameworks/preload_bench.py):
#    PyTorch's own caching allocator, async_free/statistics/pool of this build (stage/) and of
#    BEFORE_DIR's librmm_preload.so when given, and this build with a tighter bound
#    (GPU_MEMORY_SPECS adds specs); fp32 and bf16 autocast channels-last. Step time, held at
#    the end, peak.
# 2. rmm-rs and CuPy's default pool near the device's limit (python/check_pressure.py).
# 3. The C tests of giving memory back (c_tests/test_device_release.c) and of a replaced
#    resource going without idle threads (c_tests/test_replace_resource.c), on the GPU.
# 4. The threads matrix (1, 8, 16 threads; NULL and rmmStreamCreate streams; the three sizes),
#    time and what each build's pool holds after each cell, when BEFORE_DIR holds librmm.so.
#
# Needs stage/ (scripts/stage.sh). Exit status 0 when every part ran and passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
before=${1:-}
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-memory.sh "$stage/lib/librmm.so" "$stage/lib/librmm_preload.so"
export PYTHONUNBUFFERED=1
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
failed=()

section "ResNet-50 under LD_PRELOAD: held and step time"
specs="async_free/statistics/pool,async_free:pending=1%/statistics/pool${GPU_MEMORY_SPECS:+,$GPU_MEMORY_SPECS}"
if [ -n "$before" ] && [ -f "$before/librmm_preload.so" ]; then
  export PRELOAD_BEFORE=$before/librmm_preload.so PRELOAD_BEFORE_SPECS=async_free/statistics/pool
fi
PRELOAD_BASELINES=cache PRELOAD_PROGRAMS=${GPU_MEMORY_PROGRAMS:-torch-nocache,torch-nocache-amp} PRELOAD_SPECS=$specs \
  STAGE_DIR=$stage scripts/gpu-preload-bench.sh || failed+=("preload bench")

section "rmm-rs and CuPy's pool near the device's limit"
RMM_RS_LIBRARY=$stage/lib/librmm.so PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH} "${PYTHON:-python3}" python/check_pressure.py \
  || failed+=("check_pressure.py")

section "C tests of giving memory back"
work=$(mktemp -d /tmp/rmm-memory.XXXXXX)
for test in test_device_release test_replace_resource; do
  cc -std=c11 -O2 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -I"$stage/include" -Ic_tests "c_tests/$test.c" \
    -L"$stage/lib" -lrmm -Wl,-rpath,"$stage/lib" -lpthread -lm -o "$work/$test" && "$work/$test" || failed+=("$test")
done

if [ -n "$before" ] && [ -f "$before/librmm.so" ]; then
  section "threads matrix, before and after"
  matrix=$(mktemp -d /tmp/rmm-matrix.XXXXXX)
  cp "$before/librmm.so" "$matrix/librmm_a_before.so"
  cp "$stage/lib/librmm.so" "$matrix/librmm_b_after.so"
  MATRIX_THREADS=${MATRIX_THREADS:-1,8,16} MATRIX_STREAMS=${MATRIX_STREAMS:-null,rmm} MATRIX_SIZES=${MATRIX_SIZES:-256,mixed,random4m} \
    MATRIX_APIS=${MATRIX_APIS:-resource} BENCH_RUNS=${BENCH_RUNS:-3} MATRIX_PAIRS=${MATRIX_PAIRS:-80000} \
    scripts/gpu-threads-matrix.sh "$matrix" || failed+=("threads matrix")
fi

section "gpu-memory summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all passed"
