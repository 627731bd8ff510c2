#!/usr/bin/env bash
# Builds RAPIDS RMM's own C++ test suite (cpp/tests of the commit scripts/fetch-rapids-suite.sh
# pins) unchanged against the staged rmm-rs and its RAPIDS-shaped <rmm/...> headers, as RAPIDS
# builds it for a GPU: the .cpp files with g++, the .cu files with nvcc, RAPIDS's warning flags
# as errors, C++20, each file also with CUDA_API_PER_THREAD_DEFAULT_STREAM (PTDS=0 leaves that
# out), linked with libcudart; runs every program that builds on the GPU(s) and prints one
# table (scripts/rapids-suite.sh, RAPIDS_SUITE_ON=gpu): per file, compiled or its first error,
# tests passed, failed and skipped, and the failing tests' names (* where
# cxx_tests/rapids-suite-expected.txt, the simulator's list, does not name them).
#
#   scripts/gpu-rapids-suites.sh [RAPIDS_TREE]    (default legacy-suites/rapids-26.08)
#
# Carry stage/ (scripts/stage.sh), build/cccl/cccl.tar.gz (scripts/fetch-cccl.sh) and the
# RAPIDS tree (scripts/fetch-rapids-suite.sh, or scripts/fetch-legacy-suites.sh, which also
# brings legacy-suites/googletest for a machine without libgtest) to the GPU machine.
# Environment: JOBS (parallel compiles, default the CPU count), ONLY (a regular expression of
# test files), PTDS (default 1), CUDA_ARCH (default native), LOGS (a folder for every build
# and run log, as one .tar.gz), BUILD_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
tree=${1:-$root/legacy-suites/rapids-26.08}
[ -d "$tree/cpp/tests" ] || { echo "gpu-rapids-suites.sh: no cpp/tests in $tree (scripts/fetch-rapids-suite.sh)" >&2; exit 2; }
[ -f "$stage/lib/librmm.so" ] || { echo "gpu-rapids-suites.sh: run scripts/stage.sh first" >&2; exit 2; }
[ -f "$root/build/cccl/cccl.tar.gz" ] || { echo "gpu-rapids-suites.sh: run scripts/fetch-cccl.sh first" >&2; exit 2; }
head -n 2 "$stage/STAGED.txt" 2>/dev/null
cccl=$(mktemp -d /tmp/rmm-rapids-cccl.XXXXXX)
tar -xzf "$root/build/cccl/cccl.tar.gz" -C "$cccl"
gtest_dir=""
[ -f /usr/include/gtest/gtest.h ] && [ -f /usr/include/gmock/gmock.h ] || gtest_dir=$root/legacy-suites/googletest
RAPIDS_SUITE_ON=gpu RMM_LIB_DIR=$stage/lib CCCL_DIR=$cccl GTEST_DIR=$gtest_dir JOBS=${JOBS:-$(nproc)} PTDS=${PTDS:-1} \
  scripts/rapids-suite.sh "$tree"
status=$?
rm -rf "$cccl"
exit $status
