#!/usr/bin/env bash
# PyTorch's everyday features under PyTorch's allocator and under rmm-rs, each case in its own
# process (bench/frameworks/torch_conformance.py), on a GPU machine. librmm.so comes from
# stage/ (scripts/stage.sh); the PyTorch backend is built here first against the installed
# PyTorch (rmm_rs.build_torch_backend), as `pip install -C torch-backend=1` would.
#
#   scripts/gpu-torch-conformance.sh [torch_conformance.py options]
#       e.g. --configs native,rmm-default --cases cuda_graph,ipc --jobs 8
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${STAGE_DIR:-$PWD/stage}
[ -f "$stage/lib/librmm.so" ] || { echo "gpu-torch-conformance.sh: run scripts/stage.sh first" >&2; exit 2; }
export RMM_RS_LIBRARY=$stage/lib/librmm.so PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
unset RMM_SIM_DEVICES RMM_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"${PYTHON:-python3}" - <<'PY'
import sys, time
sys.path.insert(0, "python")
import torch, rmm_rs
start = time.time()
print("PyTorch", torch.__version__, "backend built:", rmm_rs.build_torch_backend(), "in %.1f s" % (time.time() - start))
PY
status=0
"${PYTHON:-python3}" bench/frameworks/torch_conformance.py "$@" || status=$?
# CONFORMANCE_BENCH=1: then torch.empty(4096) pairs under each configuration, in the same run.
if [ "${CONFORMANCE_BENCH:-0}" = 1 ]; then
  "${PYTHON:-python3}" bench/frameworks/torch_conformance.py --bench --configs native,rmm-default,rmm-pool,rmm-shim
fi
exit $status
