#!/usr/bin/env bash
# rmm-rs under PyTorch, CuPy and Numba on a GPU machine that has no Rust: librmm.so comes from
# stage/ (made by scripts/stage.sh where Rust is; carry stage/ here with the work tree).
#
#   scripts/gpu-frameworks.sh            run from anywhere inside the repository
#
# 1. python/test_rmm_rs.py on the real GPU (RMM_RS_TEST_GPU=1, RMM_SIM_DEVICES unset): the
#    module's unit tests plus short PyTorch/CuPy/Numba checks in child processes.
# 2. python/check_frameworks.py: an MLP trained with PyTorch's allocator and with rmm-rs
#    (identical losses, statistics, both times), CuPy array math on rmm-rs memory (default
#    and non-blocking streams, Python and C function allocators), a Numba kernel on memory
#    from the EMM plugin and an IPC round trip through a spawned process.
#
# Environment: STAGE_DIR (default: stage/), PYTHON (default: python3), RMM_CHECK_STEPS
# (training steps, default 300). Exit status: 0 when everything passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
python=${PYTHON:-python3}


# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-frameworks.sh "$stage/lib/librmm.so"
export RMM_RS_LIBRARY=$stage/lib/librmm.so
unset RMM_SIM_DEVICES RMM_SIM_ON_RACE RMM_ALLOC_CONF
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export CUBLAS_WORKSPACE_CONFIG=:4096:8

section "machine"
if command -v nvidia-smi >/dev/null; then nvidia-smi -L || echo "nvidia-smi -L failed"; else echo "nvidia-smi not found"; fi
if [ -f "$stage/STAGED.txt" ]; then cat "$stage/STAGED.txt"; fi
"$python" - <<'PY'
import sys
print("python", sys.version.split()[0], sys.executable)
for name in ("torch", "cupy", "numba", "numba_cuda", "numpy"):
    try:
        module = __import__(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001
        print(f"{name}: not importable ({type(error).__name__}: {error})")
PY

failed=()
section "python/test_rmm_rs.py on the GPU"
start=$SECONDS
if RMM_RS_TEST_GPU=1 "$python" python/test_rmm_rs.py; then
  unit="PASS"
else
  unit="FAIL"; failed+=("test_rmm_rs.py")
fi
unit_time=$((SECONDS - start))

section "python/check_frameworks.py"
start=$SECONDS
if "$python" python/check_frameworks.py; then
  frameworks="PASS"
else
  frameworks="FAIL"; failed+=("check_frameworks.py")
fi
frameworks_time=$((SECONDS - start))

section "gpu-frameworks summary"
echo "  $unit python/test_rmm_rs.py (${unit_time} s)"
echo "  $frameworks python/check_frameworks.py (${frameworks_time} s)"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all passed"
