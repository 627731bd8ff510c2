#!/usr/bin/env bash
# Builds RAPIDS RMM v26.06.00's own C++ test suite (cpp/tests, from scripts/fetch-legacy-suites.sh,
# in legacy-suites/rapids-26.06) unchanged against the staged rmm-rs and its RAPIDS-shaped
# <rmm/...> headers, with nvcc and CI's CCCL (build/cccl/cccl.tar.gz from scripts/fetch-cccl.sh),
# and runs every test program that compiles: the yardstick of "code written for RAPIDS RMM 26.x
# compiles by swapping the include path and the link line". Prints, per test file, whether it
# compiled and how many of its tests passed. Carry stage, legacy-suites and
# build/cccl/cccl.tar.gz to the GPU machine.
#
# Environment: JOBS (parallel compiles, default the CPU count), ONLY (a regular expression of
# test files to build), LOGS (a folder to write every build and run log to, as one .tar.gz).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
tests=$root/legacy-suites/rapids-26.06/cpp/tests
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-rapids.XXXXXX)}
jobs=${JOBS:-$(nproc)}
[ -d "$tests" ] || { echo "gpu-rapids-suites.sh: run scripts/fetch-legacy-suites.sh first" >&2; exit 2; }
[ -f "$stage/lib/librmm.so" ] || { echo "gpu-rapids-suites.sh: run scripts/stage.sh first" >&2; exit 2; }
[ -f "$root/build/cccl/cccl.tar.gz" ] || { echo "gpu-rapids-suites.sh: run scripts/fetch-cccl.sh first" >&2; exit 2; }

nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc)
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
mkdir -p "$build/cccl" && tar -xzf "$root/build/cccl/cccl.tar.gz" -C "$build/cccl"
cmake -S "$root/legacy-suites/googletest" -B "$build/gtest" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=ON \
  -DINSTALL_GTEST=OFF >/dev/null && cmake --build "$build/gtest" >/dev/null || { echo "googletest does not build" >&2; exit 2; }
gtest=$root/legacy-suites/googletest
nvidia-smi -L
"$nvcc" --version | tail -n 1

compile() { # <test source>: builds $build/bin/<name>, its log beside it
  local source=$1 name
  name=$(echo "${source#"$tests"/}" | tr '/' '_' | sed 's/\.[^.]*$//')
  mkdir -p "$build/bin"
  if "$nvcc" -std=c++20 -O1 -arch=sm_90 --expt-extended-lambda --expt-relaxed-constexpr -x cu "$source" \
      -I"$build/cccl/cccl" -I"$stage/include" -I"$tests" -I"$tests/mr" \
      -I"$gtest/googletest/include" -I"$gtest/googlemock/include" \
      -L"$stage/lib" -lrmm -Xlinker -rpath -Xlinker "$stage/lib" \
      -L"$build/gtest/lib" -lgmock -lgtest_main -lgtest -lpthread \
      -o "$build/bin/$name" >"$build/bin/$name.build.log" 2>&1; then
    echo "built $name"
  else
    echo "does not compile: $name"
  fi
}
export -f compile
export nvcc tests build stage gtest
find "$tests" \( -name '*_tests.cpp' -o -name '*_tests.cu' -o -name '*_test.cpp' -o -name '*_test.cu' \) | sort \
  | grep -E "${ONLY:-.}" | xargs -P "$jobs" -I{} bash -c 'compile "$@"' _ {} | sort > "$build/compiled.txt"

printf '\n== compiled\n'
grep -c '^built' "$build/compiled.txt" | sed 's/$/ test programs built/'
grep '^does not compile' "$build/compiled.txt" | while read -r _ _ _ name; do
  echo "does not compile: $name: $(grep -m1 -E 'error' "$build/bin/$name.build.log" | sed "s|$tests/||")"
done

printf '\n== run\n'
total_pass=0 total_fail=0
for exe in $(find "$build/bin" -type f -executable | sort); do
  name=$(basename "$exe")
  # Line-buffered, so that a crash or a hang still shows which test was running.
  timeout 120 stdbuf -oL -eL "$exe" >"$exe.run.log" 2>&1
  status=$?
  passed=$(grep -oE '\[  PASSED  \] [0-9]+' "$exe.run.log" | grep -oE '[0-9]+$' || echo 0)
  failed=$(grep -E '^\[  FAILED  \] [A-Za-z]' "$exe.run.log" | sed 's/ (.*//' | sort -u | wc -l)
  skipped=$(grep -oE '\[  SKIPPED \] [0-9]+' "$exe.run.log" | grep -oE '[0-9]+$' || echo 0)
  total_pass=$((total_pass + ${passed:-0})); total_fail=$((total_fail + ${failed:-0}))
  echo "$name: passed ${passed:-0}, failed ${failed:-0}, skipped ${skipped:-0} (exit $status)"
  grep -E '^\[  FAILED  \] [A-Za-z]' "$exe.run.log" | sed 's/ (.*//' | sort -u | head -n 8 | sed 's/^/    /'
  [ "$status" -gt 1 ] && tail -n 3 "$exe.run.log" | sed 's/^/    | /'
done
if [ -n "${LOGS:-}" ]; then mkdir -p "$LOGS" && tar -C "$build/bin" -czf "$LOGS/rapids-suite-logs.tar.gz" $(cd "$build/bin" && ls ./*.log); fi
printf '\nRESULT rapids-26.06 suite: %s tests passed, %s failed, in %s programs built of %s\n' "$total_pass" "$total_fail" \
  "$(grep -c '^built' "$build/compiled.txt")" "$(wc -l < "$build/compiled.txt")"
