#!/usr/bin/env bash
# RAPIDS RMM's Python API of the rmm_rs package (python/rmm_rs/) on a GPU machine that has no
# Rust, with the real CuPy, Numba and PyTorch: librmm.so comes from stage/ (made by
# scripts/stage.sh where Rust is; carry stage/ here with the work tree).
#
#   scripts/gpu-python-api.sh            run from anywhere inside the repository
#
# 1. python/tests/test_seed_snippets.py on the real GPU (RMM_RS_TEST_GPU=1): every Python and
#    shell snippet of the seeds (RMM's user guide, programming guide and 2019 README) with
#    `import rmm_rs as rmm`, the CuPy, Numba and PyTorch ones included (NUMBA_CUDA_MEMORY_MANAGER=
#    rmm_rs.allocators.numba, rmm_torch_allocator, rmm_cupy_allocator, librmm_cffi's Numba
#    device arrays and kernels). A missing CuPy, Numba, PyTorch or NumPy fails it
#    (RMM_RS_REQUIRE); cuda-python (the multi-device snippet) is optional.
# 2. python/tests/test_rmm_api.py on the real GPU: DeviceBuffer, Stream, CudaStreamPool, rmm.mr.
# 3. python/check_python_api.py: cupy.asarray(DeviceBuffer) (__cuda_array_interface__),
#    torch.from_dlpack(DeviceBuffer) (DLPack), numba.cuda.as_cuda_array(DeviceBuffer), and
#    DeviceBuffers on CuPy's, PyTorch's and Numba's streams (__cuda_stream__).
# 4. python/check_pressure.py: rmm-rs and CuPy's default pool in one process near the device's
#    limit, each getting the memory the other keeps (a failure callback, rmm_rs.release_device_memory).
# 4. RAPIDS RMM's own Python tests, unchanged, with `import rmm` meaning rmm_rs
#    (scripts/rapids-python-suite.sh with RAPIDS_SUITE_ON=gpu): their table and RESULT line
#    (files loaded; tests passed, failed, expected differences, listed limits, skipped). Needs
#    legacy-suites/rapids-26.08-python (scripts/fetch-rapids-python-suite.sh where there is a
#    network; carry it with the work tree) and, where this Python lacks pytest, pytest's wheels
#    in .whl/ (PYTEST_WHEELS=.whl scripts/fetch-rapids-python-suite.sh). Without the tests it is
#    reported as SKIP.
#
# Environment: STAGE_DIR (default: stage/), PYTHON (default: python3), RMM_RS_REQUIRE (default:
# "cupy numba torch numpy"). Exit status: 0 when everything passed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
python=${PYTHON:-python3}

# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-python-api.sh "$stage/lib/librmm.so"
export RMM_RS_LIBRARY=$stage/lib/librmm.so
unset RMM_SIM_DEVICES RMM_SIM_ON_RACE RMM_ALLOC_CONF
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 RMM_RS_TEST_GPU=1
export RMM_RS_REQUIRE=${RMM_RS_REQUIRE-cupy numba torch numpy}

section "machine"
if command -v nvidia-smi >/dev/null; then nvidia-smi -L || echo "nvidia-smi -L failed"; else echo "nvidia-smi not found"; fi
if [ -f "$stage/STAGED.txt" ]; then cat "$stage/STAGED.txt"; fi
"$python" - <<'PY'
import sys
print("python", sys.version.split()[0], sys.executable)
for name in ("torch", "cupy", "numba", "numba_cuda", "numpy", "cuda"):
    try:
        module = __import__(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as error:  # noqa: BLE001
        print(f"{name}: not importable ({type(error).__name__}: {error})")
PY

failed=()
run() {  # NAME COMMAND...: runs one part, records it
  local name=$1 start=$SECONDS
  shift
  section "$name"
  if "$@"; then
    results+=("PASS $name ($((SECONDS - start)) s)")
  else
    results+=("FAIL $name ($((SECONDS - start)) s)")
    failed+=("$name")
  fi
}
results=()
run "seed snippets (python/tests/test_seed_snippets.py)" "$python" python/tests/test_seed_snippets.py -v
run "RAPIDS API (python/tests/test_rmm_api.py)" "$python" python/tests/test_rmm_api.py -v
run "interop (python/check_python_api.py)" "$python" python/check_python_api.py
run "rmm-rs and CuPy's pool near the device's limit (python/check_pressure.py)" "$python" python/check_pressure.py
rapids_tree=${RAPIDS_PYTHON_TREE:-$root/legacy-suites/rapids-26.08-python}
if [ -d "$rapids_tree/python/rmm/rmm/tests" ]; then
  run "RAPIDS RMM's Python suite (scripts/rapids-python-suite.sh)" \
    env RAPIDS_SUITE_ON=gpu PYTHON="$python" scripts/rapids-python-suite.sh "$rapids_tree"
else
  results+=("SKIP RAPIDS RMM's Python suite: no $rapids_tree (scripts/fetch-rapids-python-suite.sh, then carry it here)")
fi

section "gpu-python-api summary"
printf '  %s\n' "${results[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all passed"
