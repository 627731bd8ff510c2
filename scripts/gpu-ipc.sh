#!/usr/bin/env bash
# IPC on a real GPU (docs/src/ipc.md): c_tests/cuda/cuda_ipc.cu, built against stage/ (made by
# scripts/stage.sh on a machine with Rust), exports a 1 GiB block from a shareable expandable
# resource and one from a pool, opens each in a second process, verifies the content both
# ways, checks that expandable memory freed while open elsewhere stays out of the pool until
# it is closed there, and prints the bandwidth of a device-to-device copy from the opened
# block against the same copy from cudaMalloc memory (target: within 5%), and what mapping
# exportable pages costs. Then the Python module's IPC test on the GPU, and where PyTorch is
# installed, a tensor of expandable memory sent with torch.multiprocessing to a child on the
# backend and to one on PyTorch's own allocator (python/check_torch_ipc.py), and the
# conformance cases ipc (a child on PyTorch's allocator opens each stack's tensor) and
# ipc_from_expandable (a child on PyTorch's expandable segments sends, each stack opens).
#
#   scripts/gpu-ipc.sh              run from anywhere inside the repository
#
# Environment: STAGE_DIR (default: stage/), BUILD_DIR (default: a fresh folder under /tmp),
# CUDA_ARCHS (default 90).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-gpu-ipc.XXXXXX)}
arch=${CUDA_ARCHS:-90}

# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-ipc.sh "$stage/lib/librmm.so" "$stage/include/rmm.h"
find_nvcc gpu-ipc.sh
unset RMM_SIM_DEVICES

echo "== machine"
nvidia-smi -L || true
echo "kernel $(uname -r); Yama ptrace scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 'none (no Yama)')"
"$nvcc" --version | tail -n 1

echo "== build ($build)"
"$nvcc" -std=c++17 -O2 -arch=sm_"$arch" -Xcompiler=-Wall,-Wextra,-Werror \
  -I "$stage/include" -I "$root/c_tests" -I "$root/c_tests/cuda" \
  "$root/c_tests/cuda/cuda_ipc.cu" -o "$build/cuda_ipc" \
  -L "$stage/lib" -lrmm -Xlinker -rpath="$stage/lib"

echo "== two processes, 1 GiB from an expandable resource and from a pool"
status=0
"$build/cuda_ipc" || status=$?
if [ "$status" -eq 77 ]; then
  echo "gpu-ipc.sh: skipped (no GPU)"
  exit 0
fi

echo "== Python: rmm_rs.ipc_get_handle / ipc_open_handle in a child process"
if command -v python3 >/dev/null; then
  RMM_RS_LIBRARY="$stage/lib/librmm.so" python3 python/test_rmm_rs.py --gpu IpcTest || status=$?
  echo "== PyTorch: torch.multiprocessing with a shareable expandable resource (python/check_torch_ipc.py)"
  torch_status=0
  RMM_RS_LIBRARY="$stage/lib/librmm.so" python3 python/check_torch_ipc.py || torch_status=$?
  case "$torch_status" in
    0) ;;
    77) echo "skipped" ;;
    *) status=$torch_status ;;
  esac
  if [ "$torch_status" != 77 ]; then
    echo "== PyTorch: PyTorch's own allocator opens tensors of rmm-rs's stacks, rmm-rs opens PyTorch's expandable segments"
    RMM_RS_LIBRARY="$stage/lib/librmm.so" python3 bench/frameworks/torch_conformance.py \
      --configs native,native-expandable,rmm-default,rmm-expandable,rmm-pool --cases ipc,ipc_from_expandable || status=$?
  fi
else
  echo "python3 not found: skipped"
fi
exit "$status"
