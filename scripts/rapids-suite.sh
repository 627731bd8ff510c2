#!/usr/bin/env bash
# RAPIDS RMM's own C++ test suite (cpp/tests of the commit scripts/fetch-rapids-suite.sh pins),
# built unchanged with the host compiler against rmm-rs's RAPIDS-shaped <rmm/...> headers and
# run on simulated devices: CI's yardstick of "code written for RAPIDS RMM builds and behaves
# the same". Each test file is compiled with RAPIDS's own warning flags (cpp/tests/
# CMakeLists.txt: -Wall -Werror -Wextra -Wsign-conversion -Wno-unknown-pragmas, C++20) against
# CCCL's and the CUDA runtime's headers (scripts/fetch-cccl.sh), linked with GoogleTest, librmm
# and cxx_tests/sim_cudart/ (the CUDA runtime calls the tests make, over rmm.h), and run with
# RMM_SIM_DEVICES=1 (files matching MULTI_DEVICE on two devices). The .cu files that run Thrust
# algorithms on the device cannot build with a host compiler; that is expected.
#
# RAPIDS_SUITE_ON=gpu (scripts/gpu-rapids-suites.sh sets it) builds as RAPIDS does for a GPU
# instead: the .cpp files with g++ and the .cu files with nvcc (-Werror=all-warnings
# -Xcompiler=-Wall,-Werror,-Wextra,-Wsign-conversion), linked with libcudart, run on the real
# GPU(s); the expected list there is for reading (it names the simulator's limits too).
#
# It fails when a test fails, or a file does not compile, that cxx_tests/rapids-suite-expected.txt
# does not list (each listed one with its reason), and says which listed ones pass now (take
# them off the list). It ends with one table: per file, whether it compiled (else its first
# error), its tests passed, failed and skipped, and the failing tests' names.
#
#   scripts/rapids-suite.sh [RAPIDS_TREE]
#
# RAPIDS_TREE: a folder holding cpp/tests and cpp/benchmarks/utilities (default
# legacy-suites/rapids-26.08, fetched there by scripts/fetch-rapids-suite.sh when missing).
# Environment: CCCL_DIR (default build/cccl, fetched when missing), RMM_LIB_DIR (librmm.so's
# folder; default the cargo release build, built when missing), JOBS (parallel compiles,
# default 2), OPT (default -O1), ONLY (a regular expression of test files), PTDS=1 (also each
# file with CUDA_API_PER_THREAD_DEFAULT_STREAM, as RAPIDS's *_PTDS_TEST), BUILD_DIR (kept),
# EXPECTED (the list), MULTI_DEVICE (regular expression, default multidevice), GTEST_DIR
# (GoogleTest's sources, built when the system has no libgtest, e.g. legacy-suites/googletest).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tree=${1:-$root/legacy-suites/rapids-26.08}
cccl=${CCCL_DIR:-$root/build/cccl}
lib=${RMM_LIB_DIR:-${CARGO_TARGET_DIR:-$root/target}/release}
jobs=${JOBS:-2}
opt=${OPT:--O1}
expected=${EXPECTED:-$root/cxx_tests/rapids-suite-expected.txt}
multi=${MULTI_DEVICE:-multidevice}
build=${BUILD_DIR:-$(mktemp -d /tmp/rmm-rapids-sim.XXXXXX)}
mkdir -p "$build/bin" && rm -f "$build"/bin/*.status
build=$(cd "$build" && pwd)

die() { echo "rapids-suite.sh: $*" >&2; exit 2; }
if [ ! -d "$tree/cpp/tests" ]; then
  [ -z "${1:-}" ] || die "$tree holds no cpp/tests"
  scripts/fetch-rapids-suite.sh "$tree" || die "could not fetch the RAPIDS tree"
fi
tree=$(cd "$tree" && pwd)
if [ "${RAPIDS_SUITE_ON:-sim}" = gpu ]; then
  [ -f "$cccl/cccl/cuda/memory_resource" ] || die "no CCCL headers in $cccl/cccl"
else
  [ -f "$cccl/include/cuda_runtime_api.h" ] || scripts/fetch-cccl.sh "$cccl" || die "no CCCL headers in $cccl"
fi
cccl=$(cd "$cccl" && pwd)
if [ ! -f "$lib/librmm.so" ]; then
  [ -z "${RMM_LIB_DIR:-}" ] || die "no librmm.so in $lib"
  cargo build --release --lib || die "librmm does not build"
fi
[ -f "$expected" ] || die "no list of expected failures at $expected"
on=${RAPIDS_SUITE_ON:-sim}
gtest=() gtest_libs=(-lgmock -lgtest_main -lgtest)
if [ -n "${GTEST_DIR:-}" ]; then
  cmake -S "$GTEST_DIR" -B "$build/gtest" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_GMOCK=ON -DINSTALL_GTEST=OFF >/dev/null \
    && cmake --build "$build/gtest" >/dev/null || die "GoogleTest does not build from $GTEST_DIR"
  gtest=(-isystem "$GTEST_DIR/googletest/include" -isystem "$GTEST_DIR/googlemock/include")
  gtest_libs=(-L"$build/gtest/lib" "${gtest_libs[@]}")
elif [ ! -f /usr/include/gtest/gtest.h ] || [ ! -f /usr/include/gmock/gmock.h ]; then
  echo "installing: libgtest-dev libgmock-dev"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libgtest-dev libgmock-dev >/dev/null \
    || die "could not install GoogleTest"
fi

tests=$tree/cpp/tests
common=(-std=c++20 "$opt" -DRMM_LOG_ACTIVE_LEVEL=RAPIDS_LOGGER_LOG_LEVEL_INFO)
if [ "$on" = gpu ]; then
  nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc) || die "no nvcc"
  cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  # CCCL's headers ahead of the toolkit's with -I (nvcc passes the toolkit's with -I too).
  flags=("${common[@]}" -Wall -Werror -Wextra -Wsign-conversion -Wno-unknown-pragmas
    -isystem "$cccl/cccl" -isystem "$cuda_home/include" -I"$root/include" -I"$tree/cpp" "${gtest[@]}")
  cuda_flags=("${common[@]}" -arch="${CUDA_ARCH:-native}" -Werror=all-warnings
    -Xcompiler=-Wall,-Werror,-Wextra,-Wsign-conversion --expt-extended-lambda --expt-relaxed-constexpr
    -I"$cccl/cccl" -I"$root/include" -I"$tree/cpp" "${gtest[@]}")
  # libcuda too: some tests call the driver API (RAPIDS links them with CUDA::cuda_driver).
  runtime=(-L"$cuda_home/lib64" -lcudart -Wl,-rpath,"$cuda_home/lib64" -L"$cuda_home/lib64/stubs" -lcuda "${gtest_libs[@]}")
  nvidia-smi -L
  "$nvcc" --version | tail -n 1
else
  nvcc="" cuda_flags=()
  flags=("${common[@]}" -Wall -Werror -Wextra -Wsign-conversion -Wno-unknown-pragmas
    -isystem "$cccl/cccl" -isystem "$cccl/include" -I"$root/include" -I"$tree/cpp" "${gtest[@]}")
  g++ "${flags[@]}" -c "$root/cxx_tests/sim_cudart/sim_cuda_runtime.cpp" -o "$build/sim_cuda_runtime.o" \
    || die "the CUDA runtime stand-in does not build"
  runtime=("$build/sim_cuda_runtime.o" "${gtest_libs[@]}")
fi
echo "RAPIDS tree: $tree ($(cat "$tree/.commit" 2>/dev/null || echo 'commit unknown'))"
echo "$(g++ --version | head -n 1); librmm: $lib; $jobs parallel compiles, $opt"

# compile <file> <variant>: builds $build/bin/<name>; writes "<file>\t<variant>\tok" or
# "<file>\t<variant>\tno\t<first error>" to $build/bin/<name>.status.
compile() {
  local file=$1 variant=$2 name defines=()
  name=$(echo "$file" | tr '/' '_' | sed 's/\.[^.]*$//')$([ "$variant" = ptds ] && echo _ptds)
  [ "$variant" = ptds ] && defines=(-DCUDA_API_PER_THREAD_DEFAULT_STREAM)
  local log=$build/bin/$name.build.log
  local compiler=(g++ "${flags[@]}" -x c++)
  # .cu files are CUDA C++: nvcc builds them on the GPU; on simulated devices g++ takes them
  # as C++.
  [ -n "$nvcc" ] && [[ $file == *.cu ]] && compiler=("$nvcc" "${cuda_flags[@]}" -x cu)
  if "${compiler[@]}" "${defines[@]}" -c "$tests/$file" -o "$build/bin/$name.o" >"$log" 2>&1 \
    && g++ "$build/bin/$name.o" "${runtime[@]}" -o "$build/bin/$name" -L"$lib" -lrmm -Wl,-rpath,"$lib" \
      -pthread >>"$log" 2>&1; then
    printf '%s\t%s\tok\n' "$file" "$variant" >"$build/bin/$name.status"
  else
    printf '%s\t%s\tno\t%s\n' "$file" "$variant" \
      "$(grep -m1 -E 'error|undefined reference' "$log" | sed "s|$tree/||; s|$cccl/||" | cut -c1-200)" >"$build/bin/$name.status"
  fi
  rm -f "$build/bin/$name.o"
  echo "$name"
}
export -f compile
export tests build tree cccl lib nvcc
export flags_str="${flags[*]}" cuda_flags_str="${cuda_flags[*]}" runtime_str="${runtime[*]}"
variants=(legacy)
[ "${PTDS:-0}" = 1 ] && variants+=(ptds)
files=$(cd "$tests" && find . \( -name '*.cpp' -o -name '*.cu' \) | sed 's|^\./||' | sort | grep -E "${ONLY:-.}")
[ -n "$files" ] || die "no test files in $tests${ONLY:+ matching $ONLY}"
start=$SECONDS
for variant in "${variants[@]}"; do
  for file in $files; do printf '%s %s\n' "$file" "$variant"; done
done | xargs -P "$jobs" -n 2 bash -c 'read -ra flags <<<"$flags_str"; read -ra cuda_flags <<<"$cuda_flags_str"
  read -ra runtime <<<"$runtime_str"; compile "$1" "$2" >/dev/null' _
echo "compiled in $((SECONDS - start)) s"

# Runs each program; gtest's own lines say which tests passed, failed and were skipped. A
# program that dies or hangs fails the test that was running (or "<exit-N>" after the last).
start=$SECONDS
results=$build/results.tsv
: >"$results"
for status in "$build"/bin/*.status; do
  name=$(basename "$status" .status)
  IFS=$'\t' read -r file variant compiled error <"$status"
  if [ "$compiled" != ok ]; then
    printf '%s\t%s\tno\t0\t0\t0\t%s\n' "$file" "$variant" "$error" >>"$results"
    continue
  fi
  devices=1
  [[ $file =~ $multi ]] && devices=2
  log=$build/bin/$name.run.log
  if [ "$on" = gpu ]; then
    (cd "$build/bin" && timeout 300 stdbuf -oL -eL "./$name" >"$log" 2>&1)
  else
    (cd "$build/bin" && RMM_SIM_DEVICES=$devices timeout 300 stdbuf -oL -eL "./$name" >"$log" 2>&1)
  fi
  code=$?
  passed=$(grep -cE '^\[       OK \]' "$log")
  skipped=$(grep -cE '^\[  SKIPPED \] [A-Za-z]' "$log")
  failed_names=$(grep -E '^\[  FAILED  \] [A-Za-z_0-9/.]+(, where .*)? \(' "$log" | sed 's/^\[  FAILED  \] //; s/[, ].*//' | sort -u)
  running=$(grep -E '^\[ RUN      \]' "$log" | tail -n 1 | sed 's/^\[ RUN      \] //')
  if [ -n "$running" ] && ! grep -qE "^\[ *(OK|FAILED|SKIPPED) *\] $running( |$)" "$log"; then
    failed_names=$(printf '%s\n%s' "$failed_names" "$running" | sed '/^$/d' | sort -u)
  elif [ "$code" -ne 0 ] && [ -z "$failed_names" ]; then
    failed_names="<exit-$code>"
  fi
  failed=$(printf '%s' "$failed_names" | grep -c . || true)
  printf '%s\t%s\tok\t%s\t%s\t%s\t%s\n' "$file" "$variant" "$passed" "$failed" "$skipped" \
    "$(printf '%s' "$failed_names" | tr '\n' ' ')" >>"$results"
done
echo "ran in $((SECONDS - start)) s"

# The expected list: "<file> <test>  -- <reason>", <test> being a gtest name or
# does-not-compile; a PTDS variant's entries are its file's.
listed() { # <file> <test>
  awk -v f="$1" -v t="$2" '$1 == f && $2 == t { found = 1 } END { exit !found }' "$expected"
}
new=0 now_passing=0
declare -A seen=()
printf '\n== RAPIDS RMM suite (%s)\n' "$([ "$on" = gpu ] && echo 'nvcc and g++, the GPU' || echo 'g++, simulated devices')"
printf '%-44s %-9s %6s %6s %7s  %s\n' file compiled passed failed skipped "failing tests (* = not on the expected list)"
while IFS=$'\t' read -r file variant compiled passed failed skipped names; do
  label=$file$([ "$variant" = ptds ] && echo ' [ptds]')
  if [ "$compiled" != ok ]; then
    mark=""
    if listed "$file" does-not-compile; then seen["$file does-not-compile"]=1; else mark="*"; new=$((new + 1)); fi
    printf '%-44s %-9s %6s %6s %7s  %s\n' "$label" "no$mark" - - - "$names"
    continue
  fi
  shown=""
  for test in $names; do
    if listed "$file" "$test"; then seen["$file $test"]=1; shown+="$test "
    else shown+="$test* "; new=$((new + 1)); fi
  done
  printf '%-44s %-9s %6s %6s %7s  %s\n' "$label" yes "$passed" "$failed" "$skipped" "$shown"
done <"$results"

# Listed entries that no longer fail (for files that were built and run).
while read -r file test _; do
  [ -z "$file" ] || [[ $file == \#* ]] && continue
  printf '%s\n' "$files" | grep -qxF "$file" || continue
  if [ -z "${seen["$file $test"]:-}" ]; then
    echo "now passes: $file $test (take it off $(basename "$expected"))"
    now_passing=$((now_passing + 1))
  fi
done <"$expected"

total() { awk -F'\t' -v c="$1" '$3 == "ok" { s += $c } END { print s + 0 }' "$results"; }
printf '\nRESULT %s of %s builds compiled; tests %s passed, %s failed, %s skipped; %s unexpected, %s listed now passing\n' \
  "$(awk -F'\t' '$3 == "ok"' "$results" | wc -l)" "$(wc -l <"$results")" "$(total 4)" "$(total 5)" "$(total 6)" \
  "$new" "$now_passing"
if [ -n "${LOGS:-}" ]; then
  mkdir -p "$LOGS" && logs=$(cd "$LOGS" && pwd) && (cd "$build/bin" && tar -czf "$logs/rapids-suite-logs.tar.gz" ./*.log)
fi
[ -n "${BUILD_DIR:-}" ] || rm -rf "$build"
[ "$new" -eq 0 ] || { echo "rapids-suite.sh: $new failure(s) not on $expected (marked *)" >&2; exit 1; }
