#!/usr/bin/env bash
# Sleep and wake on a GPU machine (docs/src/sleep.md), in one call:
# 1. bench/sleep_bench.cu: SLEEP_GIB (default 10) GiB of live blocks in an expandable resource
#    slept and woken in keep and discard modes, against a plain pinned cudaMemcpyAsync of the
#    same bytes both ways; the memory the process holds while asleep against its CUDA
#    context's; the contents after each wake.
# 2. bench/frameworks/sleep_gpt.py: the GPT bench model trains under the PyTorch backend with
#    its weights and optimizer state in a keep tag and the rest in a discard tag, sleeps,
#    another process takes most of the GPU and frees it, and training goes on: losses and
#    weights bit-identical to a run without the sleep.
# 3. Whether torch_memory_saver is installed (the yardstick of the issue), and its numbers if so.
#
# Needs stage/ (scripts/stage.sh). Exit status 0 when every part ran and passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-sleep.sh "$stage/lib/librmm.so" "$stage/include/rmm.h"
find_nvcc gpu-sleep.sh
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
export PYTHONUNBUFFERED=1
failed=()
work=$(mktemp -d /tmp/rmm-sleep.XXXXXX)

section "sleep and wake of ${SLEEP_GIB:-10} GiB against a pinned copy both ways"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$nvcc" -O2 -arch="${CUDA_ARCH:-sm_90}" -std=c++17 -I"$stage/include" bench/sleep_bench.cu -L"$stage/lib" -lrmm \
  -Xlinker -rpath="$stage/lib" -o "$work/sleep_bench" && "$work/sleep_bench" "${SLEEP_GIB:-10}" "${SLEEP_BLOCK_MIB:-256}" "${SLEEP_CYCLES:-3}" \
  || failed+=("sleep_bench")

section "GPT trains on over a sleep (PyTorch backend)"
RMM_RS_LIBRARY=$stage/lib/librmm.so PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH} \
  "${PYTHON:-python3}" bench/frameworks/sleep_gpt.py || failed+=("sleep_gpt.py")

section "torch_memory_saver"
"${PYTHON:-python3}" -c "import torch_memory_saver; print('installed:', torch_memory_saver.__file__)" 2>&1 | tail -n 1

section "gpu-sleep summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all passed"
