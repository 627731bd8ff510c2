#!/usr/bin/env bash
# A stream per iteration on the GPU (bench/stream_churn.cu): N iterations (default 100,000) of
# {make a stream; allocate 4 KiB on it; free it on it; destroy the stream} with
# rmmStreamCreate/rmmStreamDestroy on an rmm-rs pool, with cudaStreamCreate/cudaStreamDestroy
# (streams rmm-rs is not told of) on the same pool through rmmResourceAllocate and through
# RMM_ALLOC, and with cudaMallocAsync. Prints us per iteration for each fifth of the run, the
# process's RSS after it, and the pool's reserved bytes at the end: flat means destroyed
# streams cost nothing once gone. Needs stage/ from scripts/stage.sh.
#
#   scripts/gpu-stream-churn.sh [N]      VARIANTS=unannounced,cudaMallocAsync runs a subset
#                                        (announced, unannounced, RMM_ALLOC, cudaMallocAsync, batches)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
stage=${STAGE_DIR:-$PWD/stage}
require_staged gpu-stream-churn.sh "$stage/lib/librmm.a" "$stage/include/rmm.h"
find_nvcc gpu-stream-churn.sh
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
out=${OUT:-$(mktemp -d /tmp/rmm-stream-churn.XXXXXX)}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
section "build"
"$nvcc" -std=c++17 -O3 -arch="${CUDA_ARCH:-sm_90}" -I"$stage/include" bench/stream_churn.cu "$stage/lib/librmm.a" \
  -lcuda -lpthread -ldl -lm -o "$out/stream_churn"
section "stream churn"
"$out/stream_churn" "${1:-100000}" | tee "$out/stream_churn.txt"
