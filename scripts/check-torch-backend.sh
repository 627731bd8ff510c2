#!/usr/bin/env bash
# Compiles the PyTorch backend (python/rmm_rs_torch.cpp) against PyTorch's headers with
# -Wall -Wextra -Werror, on a machine without a GPU or PyTorch: the headers come from the
# PyTorch wheel on PyPI (the version the GPU machines run, TORCH_VERSION), the CUDA runtime's
# from scripts/fetch-cccl.sh (CUDA_INCLUDE). Only the compile is checked; the backend runs in
# scripts/gpu-torch-conformance.sh.
#
#   scripts/check-torch-backend.sh [DEST]   DEST caches the headers (default build/torch;
#                                           $RMM_OFFLINE_CACHE/torch under scripts/test.sh's
#                                           offline route); TORCH_FETCH_ONLY=1 only fetches
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-${RMM_OFFLINE_CACHE:+$RMM_OFFLINE_CACHE/torch}}
dest=${dest:-build/torch}
version=${TORCH_VERSION:-2.11.0}
cuda_include=${CUDA_INCLUDE:-build/cccl/include}
[ "${TORCH_FETCH_ONLY:-0}" = 1 ] || [ -f "$cuda_include/cuda_runtime_api.h" ] || scripts/fetch-cccl.sh build/cccl
if [ ! -f "$dest/$version/torch/include/c10/cuda/CUDACachingAllocator.h" ]; then
  rm -rf "$dest/wheel" && mkdir -p "$dest/wheel"
  # About 530 MB, of which only torch/include/ is kept; scripts/pip-download.py shows progress.
  python3 scripts/pip-download.py "$dest/wheel" "torch==$version"
  python3 - "$dest/wheel" "$dest/$version" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/torch-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith("torch/include/")])
PY
  rm -rf "$dest/wheel"
fi
[ "${TORCH_FETCH_ONLY:-0}" = 1 ] && exit 0
include=$dest/$version/torch/include
c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=1 \
  -isystem "$include" -isystem "$include/torch/csrc/api/include" -isystem "$cuda_include" \
  python/rmm_rs_torch.cpp
echo "python/rmm_rs_torch.cpp compiles against PyTorch $version's headers"
