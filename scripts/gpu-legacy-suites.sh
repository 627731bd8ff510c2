#!/usr/bin/env bash
# Builds legacy RMM's own test suites and its random_allocate program unchanged against the
# staged rmm-rs (stage/, from scripts/stage.sh) and runs them: the yardstick of "legacy code
# builds unchanged". The sources come from scripts/fetch-legacy-suites.sh (legacy-suites/,
# git-ignored); carry legacy-suites and stage to the GPU machine.
#
#   scripts/gpu-legacy-suites.sh          on the GPU, against the CUDA runtime
#   LEGACY_SIM=1 scripts/gpu-legacy-suites.sh
#                                         without a GPU: the suites (not random_allocate) against
#                                         c_tests/legacy/sim_cudart over simulated devices
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
suites=$root/legacy-suites
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-legacy.XXXXXX)}
[ -d "$suites/googletest" ] || { echo "gpu-legacy-suites.sh: run scripts/fetch-legacy-suites.sh first" >&2; exit 2; }
[ -f "$stage/lib/librmm.so" ] || { echo "gpu-legacy-suites.sh: run scripts/stage.sh first" >&2; exit 2; }

cmake -S "$suites/googletest" -B "$build/gtest" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=OFF -DINSTALL_GTEST=OFF >/dev/null
cmake --build "$build/gtest" >/dev/null
gtest_flags=(-I"$suites/googletest/googletest/include" -L"$build/gtest/lib" -lgtest_main -lgtest -pthread)

if [ "${LEGACY_SIM:-0}" = 1 ]; then
  export RMM_SIM_DEVICES=${RMM_SIM_DEVICES:-2:4GiB} RMM_SIM_ON_RACE=count
  cc -O2 -c -I"$stage/include" "$root/c_tests/legacy/sim_cudart/sim_cudart.c" -o "$build/sim_cudart.o"
  cuda_flags=(-I"$root/c_tests/legacy/sim_cudart" "$build/sim_cudart.o")
else
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
  cuda_home=$(dirname "$(dirname "$nvcc")")
  cuda_flags=(-I"$cuda_home/include" -L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64")
  nvidia-smi -L
fi
rmm_flags=(-I"$stage/include" -L"$stage/lib" -lrmm -Wl,-rpath,"$stage/lib")

status=0
for suite in v0.9 v0.14 dev-5fd6d91a; do
  printf '\n== %s: tests/memory_tests.cpp, unchanged\n' "$suite"
  exe=$build/memory_tests_$suite
  if ! g++ -std=c++17 -O1 -w -I"$suites/$suite/tests" "$suites/$suite/tests/memory_tests.cpp" \
      -o "$exe" "${rmm_flags[@]}" "${cuda_flags[@]}" "${gtest_flags[@]}"; then
    echo "$suite: does not compile"
    status=1
    continue
  fi
  "$exe" --gtest_brief=1 2>&1 | tail -n 25 || status=1
done

if [ "${LEGACY_SIM:-0}" != 1 ]; then
  printf '\n== v0.14: tests/performance/random_allocate.cpp, unchanged\n'
  exe=$build/random_allocate
  g++ -std=c++17 -O2 -w "$suites/v0.14/tests/performance/random_allocate.cpp" -o "$exe" "${rmm_flags[@]}" "${cuda_flags[@]}"
  for allocator in cudaDefault rmmDefault rmmManaged rmmDefaultPool rmmManagedPool; do
    if "$exe" "$allocator" 2000 100 1000 >"$build/random_$allocator.log" 2>&1; then
      echo "$allocator: $(grep -E '^sum (malloc|free)' "$build/random_$allocator.log" | tr '\n' ' ')"
    else
      echo "$allocator: FAILED"; tail -n 5 "$build/random_$allocator.log"; status=1
    fi
  done
fi
exit $status
