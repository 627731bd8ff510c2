#!/usr/bin/env bash
# The real-client benchmark on a GPU machine (no Rust needed): PyTorch training and decoding
# with PyTorch's own allocator, with its expandable segments, and with rmm-rs's suballocators
# (librmm.so from stage/, made by scripts/stage.sh). Prints one JSON line per run, then a
# Markdown table; see bench/frameworks/bench.py. First, whether CUDA IPC works on memory from
# rmm-rs's pool and expandable resources under PyTorch and CuPy (bench/frameworks/ipc_probe.py;
# IPC_PROBE=0 skips it).
#
#   scripts/gpu-frameworks-bench.sh
#
# Environment: STAGE_DIR (default: stage/), PYTHON (default: python3), and bench.py's
# BENCH_ALLOCATORS, BENCH_WORKLOADS, BENCH_STEPS, BENCH_MAX_BATCH, BENCH_GPT_BATCH.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${STAGE_DIR:-$PWD/stage}
if [ ! -f "$stage/lib/librmm.so" ]; then
  echo "gpu-frameworks-bench.sh: $stage/lib/librmm.so is missing: run scripts/stage.sh where Rust is and carry stage/ here" >&2
  exit 2
fi
export RMM_RS_LIBRARY=$stage/lib/librmm.so
unset RMM_SIM_DEVICES RMM_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
if [ "${IPC_PROBE:-1}" != 0 ]; then
  "${PYTHON:-python3}" bench/frameworks/ipc_probe.py
fi
"${PYTHON:-python3}" bench/frameworks/bench.py
