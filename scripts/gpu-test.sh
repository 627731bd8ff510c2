#!/usr/bin/env bash
# Builds and runs the C/C++/CUDA test suite on a GPU machine that has no Rust: the library
# comes from stage/ (made by scripts/stage.sh on a machine with Rust), the tests run on the
# real GPU(s) (RMM_TESTS_ON_GPU=ON), and the CUDA tests are built when nvcc is found.
#
#   scripts/gpu-test.sh              run from the repository root (or anywhere inside it)
#
# Environment: STAGE_DIR (default: stage/), BUILD_DIR (default: a fresh folder under /tmp),
# CUDA_ARCHS (CMAKE_CUDA_ARCHITECTURES, default 90), CTEST_ARGS (extra ctest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-gpu-test.XXXXXX)}
archs=${CUDA_ARCHS:-90}

# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-test.sh "$stage/lib/librmm.so" "$stage/lib/librmm.a" "$stage/include/rmm.h"

section "machine"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L || echo "nvidia-smi -L failed"
else
  echo "nvidia-smi not found"
fi
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null; then
  for dir in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$dir/nvcc" ]; then
      export CUDACXX=$dir/nvcc
      break
    fi
  done
fi
command -v "${CUDACXX:-nvcc}" >/dev/null && "${CUDACXX:-nvcc}" --version | tail -n 2 || echo "nvcc not found: the CUDA tests will not be built"
cmake --version | head -n 1
if [ -f "$stage/STAGED.txt" ]; then cat "$stage/STAGED.txt"; fi
unset RMM_SIM_DEVICES

# CCCL's headers as CI uses them (scripts/fetch-cccl.sh makes build/cccl/cccl.tar.gz; carry it
# here), with the toolkit's CUDA runtime headers: cxx.rapids_style and cuda.rapids_style.
cccl_args=()
if [ -f "$root/build/cccl/cccl.tar.gz" ] && command -v "${CUDACXX:-nvcc}" >/dev/null; then
  toolkit=$(dirname "$(dirname "$(readlink -f "$(command -v "${CUDACXX:-nvcc}")")")")
  mkdir -p "$build/cccl"
  tar -xzf "$root/build/cccl/cccl.tar.gz" -C "$build/cccl"
  ln -sfn "$toolkit/include" "$build/cccl/include"
  cccl_args=(-DRMM_CCCL_DIR="$build/cccl")
  echo "CCCL headers: $(grep -m1 'define CCCL_VERSION ' "$build/cccl/cccl/cuda/std/__cccl/version.h"); toolkit's: $(grep -m1 'define CCCL_VERSION ' "$toolkit/include/cccl/cuda/std/__cccl/version.h" 2>/dev/null || grep -m1 'define CCCL_VERSION ' "$toolkit/include/cuda/std/__cccl/version.h" 2>/dev/null || echo unknown)"
else
  echo "build/cccl/cccl.tar.gz not carried (scripts/fetch-cccl.sh): the RAPIDS-shaped tests use the toolkit's CCCL"
fi

section "configure ($build)"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" ${generator[@]+"${generator[@]}"} \
  -DCMAKE_BUILD_TYPE=Release \
  -DRMM_BUILD_TESTS=ON \
  -DRMM_PREBUILT_DIR="$stage" \
  -DRMM_TESTS_ON_GPU=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$archs" ${cccl_args[@]+"${cccl_args[@]}"}

section "build"
cmake --build "$build" --parallel

section "ctest"
log=$build/ctest.log
status=0
# shellcheck disable=SC2086
(cd "$build" && ctest --output-on-failure --timeout 300 ${CTEST_ARGS:-}) 2>&1 | tee "$log" || status=$?

section "driver with only libcuda.so.1"
# Driver-only machines have no libcuda.so link. A folder first on LD_LIBRARY_PATH holding an
# unloadable libcuda.so stands in for that here: the library must fall back to libcuda.so.1.
shadow=$build/no-libcuda-link
mkdir -p "$shadow" && : >"$shadow/libcuda.so"
shadowed() { LD_LIBRARY_PATH="$shadow${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }
if shadowed python3 -c 'import ctypes; ctypes.CDLL("libcuda.so")' 2>/dev/null; then
  echo "the dynamic loader still finds a loadable libcuda.so: check inconclusive"
elif ! shadowed python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")'; then
  echo "libcuda.so.1 does not load either: check inconclusive"
elif shadowed "$build/c_tests/c11_test_devices" >"$build/libcuda1-only.log" 2>&1; then
  echo "libcuda.so unloadable, libcuda.so.1 present: c11_test_devices passed"
else
  echo "FAILED with only libcuda.so.1:"; cat "$build/libcuda1-only.log"; status=1
fi

section "log replay on the GPU"
# A RAPIDS-style log (2 threads, 2 streams) against the default stacks and an adaptor stack,
# on the real device. Its logged 93 GB allocation failure would succeed on a large GPU, so
# failures are left out; the logging adaptor must then log exactly the 84 allocations.
if [ -x "$stage/bin/rmm-replay" ]; then
  if ! "$stage/bin/rmm-replay" --skip-failures --resource pool --resource binning/pool --resource arena --resource cuda_async \
      --resource "statistics+logging:path=$build/replayed.csv+pool" "$root/tests/data/rapids_sample.log"; then
    echo "FAILED: rmm-replay"; status=1
  elif [ "$(grep -c ',allocate,' "$build/replayed.csv")" -ne 84 ]; then
    echo "FAILED: the logging adaptor under the replay did not log the 84 allocations"; status=1
  fi
else
  echo "no stage/bin/rmm-replay: skipped"
fi

section "CUDA programs under LD_PRELOAD=librmm_preload.so"
# ctest ran these; their output (times and rmm's counts) is shown here.
for app in "$build"/c_tests/cuda/preload_app_shared "$build"/c_tests/cuda/preload_app_static; do
  [ -x "$app" ] && "$root/c_tests/cuda/preload_check.sh" "$app" "$stage/lib/librmm_preload.so" || status=1
done

section "PyTorch under LD_PRELOAD=librmm_preload.so"
# The training run of python/check_frameworks.py with PyTorch's own allocator, without and with
# the preload: identical losses, and rmm's report must count PyTorch's cudaMalloc calls.
if [ -f "$stage/lib/librmm_preload.so" ] && python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  train() { python3 "$root/python/check_frameworks.py" torch-train native | sed -n 's/^RESULT //p'; }
  plain=$(train)
  preloaded=$(LD_PRELOAD="$stage/lib/librmm_preload.so" RMM_ALLOC_CONF="resource:pool,report:1" train 2>"$build/torch-report.txt")
  cat "$build/torch-report.txt"
  counted=$(sed -n 's/^ *\([0-9]*\) allocations, .*/\1/p' "$build/torch-report.txt" | head -n 1)
  if ! python3 - "$plain" "$preloaded" <<'PY'
import json, sys
plain, preloaded = (json.loads(text) for text in sys.argv[1:3])
print(f"without preload: final loss {plain['losses'][-1]!r}, {plain['seconds']:.3f} s")
print(f"with preload:    final loss {preloaded['losses'][-1]!r}, {preloaded['seconds']:.3f} s")
sys.exit(0 if plain["losses"] == preloaded["losses"] else 1)
PY
  then
    echo "FAILED: the losses differ under the preload"; status=1
  elif [ -z "$counted" ] || [ "$counted" -eq 0 ]; then
    echo "FAILED: rmm counted no allocations of PyTorch"; status=1
  else
    echo "PyTorch: same losses at every step, $counted allocations through rmm"
  fi
else
  echo "no PyTorch with CUDA here (or no staged preload): skipped"
fi

section "Python module: PyTorch, CuPy, Numba (scripts/gpu-frameworks.sh)"
STAGE_DIR="$stage" "$root/scripts/gpu-frameworks.sh" || { echo "FAILED: gpu-frameworks.sh"; status=1; }

if [ "${RMM_MEMCHECK:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  section "compute-sanitizer memcheck"
  memcheck_failed=()
  # API errors are expected (the tests ask for impossible sizes on purpose); memory errors
  # and leaks of device memory are not.
  while IFS= read -r test_binary; do
    memcheck_log="$build/memcheck.$(basename "$test_binary").log"
    code=0
    # The exit-path cases exit with a pool alive on purpose, and rmm leaves driver calls alone
    # once the process exits (the driver takes the memory back), so only their leak check is off.
    leak_check=full
    case $(basename "$test_binary") in *_test_exit_paths) leak_check=no ;; esac
    compute-sanitizer --tool memcheck --report-api-errors no --leak-check "$leak_check" --error-exitcode 99 \
      "$test_binary" >"$memcheck_log" 2>&1 || code=$?
    grep -h "iterations" "$memcheck_log" || true
    if [ "$code" -ne 0 ] && [ "$code" -ne 77 ]; then
      memcheck_failed+=("$(basename "$test_binary") (exit $code)")
      tail -n 20 "$memcheck_log"
    fi
  done < <(find "$build/c_tests" -maxdepth 2 -type f -perm -u+x \( -name 'cuda_*' -o -name 'c11_test_*' \) | sort)
  if [ ${#memcheck_failed[@]} -gt 0 ]; then
    echo "memcheck failed: ${memcheck_failed[*]}"
    status=1
  else
    echo "memcheck: no errors in $(find "$build" -maxdepth 1 -name 'memcheck.*.log' | wc -l) test programs"
  fi
fi

section "summary"
grep -E "tests passed|tests failed" "$log" || true
echo "CUDA tests: $(grep -cE 'Test +#[0-9]+: cuda\.' "$log" || true) run ($(grep -cE 'Test +#[0-9]+: cuda\..*Passed' "$log" || true) passed)"
if grep -qE "\*\*\*Skipped|Not Run" "$log"; then
  echo "skipped:"
  grep -E "\*\*\*Skipped|Not Run" "$log" | sed 's/^/  /' || true
fi
if [ "$status" -ne 0 ]; then
  echo "failed:"
  sed -n '/The following tests FAILED/,$p' "$log" | tail -n +2 | sed 's/^/  /'
  echo "RESULT: FAIL (build dir: $build)"
  exit 1
fi
echo "RESULT: PASS (build dir: $build)"
