#!/usr/bin/env bash
# Two GPUs and expandable memory (docs/src/ipc.md, "Peer access"): c_tests/cuda/
# cuda_peer_access.cu, built against stage/ (scripts/stage.sh), allocates from device 0's
# expandable resource and copies to and from device 1 (cudaMemcpyPeer), reads and writes it
# with kernels on device 1 after cudaDeviceEnablePeerAccess, and checks the bytes; with one GPU
# it says it skipped. Then the cost of access: the same map-heavy loop with one GPU visible
# (CUDA_VISIBLE_DEVICES=0: access for one device per cuMemSetAccess) and with every GPU
# visible (access for each device that reaches device 0), from the snapshot's counters.
#
#   scripts/gpu-multi-gpu.sh        run from anywhere inside the repository
#
# Environment: STAGE_DIR (default: stage/), BUILD_DIR (default: a fresh folder under /tmp),
# CUDA_ARCHS (default 90), ROUNDS (map-heavy rounds, default 200).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-gpu-multi.XXXXXX)}
arch=${CUDA_ARCHS:-90}
rounds=${ROUNDS:-200}

# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-multi-gpu.sh "$stage/lib/librmm.so" "$stage/include/rmm.h"
find_nvcc gpu-multi-gpu.sh
unset RMM_SIM_DEVICES

echo "== machine"
nvidia-smi -L || true
nvidia-smi topo -m 2>/dev/null || true

echo "== build ($build)"
"$nvcc" -std=c++17 -O2 -arch=sm_"$arch" -Xcompiler=-Wall,-Wextra,-Werror \
  -I "$stage/include" -I "$root/c_tests" -I "$root/c_tests/cuda" \
  "$root/c_tests/cuda/cuda_peer_access.cu" -o "$build/cuda_peer_access" \
  -L "$stage/lib" -lrmm -Xlinker -rpath="$stage/lib"

echo "== device 0's expandable memory used from device 1"
status=0
"$build/cuda_peer_access" || status=$?
if [ "$status" -eq 77 ]; then
  echo "gpu-multi-gpu.sh: skipped the two-GPU check: fewer than 2 GPUs"
  status=0
fi

echo "== the cost of access: one GPU visible, then every GPU"
CUDA_VISIBLE_DEVICES=0 "$build/cuda_peer_access" --cost "$rounds" || status=$?
"$build/cuda_peer_access" --cost "$rounds" || status=$?
exit "$status"
