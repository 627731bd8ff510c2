#!/usr/bin/env bash
# Gathers the yardstick for legacy compatibility into legacy-suites/ (git-ignored, never
# committed: it is other people's code, run against ours, not part of our tests): legacy RMM's
# own gtest suites (tests/memory_tests.cpp of v0.9.0, of v0.14.0 and of the 2019 development
# commit 5fd6d91a that tests RMM_REALLOC's data preservation, each with its test_fixtures.h),
# v0.14.0's random_allocate program, and GoogleTest's sources (the GPU machine has no network).
# scripts/gpu-legacy-suites.sh builds and runs them unchanged against stage/. Also RAPIDS RMM
# 26.08's C++ test suite at the commit scripts/fetch-rapids-suite.sh pins (cpp/tests and
# cpp/benchmarks/utilities, in legacy-suites/rapids-26.08), the yardstick of the RAPIDS-shaped
# <rmm/...> headers, which scripts/gpu-rapids-suites.sh (nvcc) and scripts/rapids-suite.sh
# (g++, simulated devices) build and run unchanged.
#
#   scripts/fetch-legacy-suites.sh [RMM_GIT_DIR]   (default: clone github.com/rapidsai/rmm)
#
# Environment: GTEST_SRC (default /usr/src/googletest, Debian's `googletest` package).
set -euo pipefail
cd "$(dirname "$0")/.."
out=legacy-suites
repo=${1:-}
if [ -z "$repo" ]; then
  repo=$(mktemp -d /tmp/rapids-rmm.XXXXXX)
  git clone --quiet --bare https://github.com/rapidsai/rmm "$repo"
fi
gtest=${GTEST_SRC:-/usr/src/googletest}
[ -f "$gtest/CMakeLists.txt" ] || { echo "fetch-legacy-suites.sh: no GoogleTest sources at $gtest (apt-get install googletest)" >&2; exit 2; }

rm -rf "$out" && mkdir -p "$out"
extract() { # <name> <commit> <path>...
  local name=$1 commit=$2
  shift 2
  for path in "$@"; do
    mkdir -p "$out/$name/$(dirname "$path")"
    git --git-dir="$repo" show "$commit:$path" >"$out/$name/$path"
  done
}
extract v0.9 v0.9.0 tests/memory_tests.cpp tests/test_fixtures.h
extract v0.14 v0.14.0 tests/memory_tests.cpp tests/test_fixtures.h tests/performance/random_allocate.cpp
extract dev-5fd6d91a 5fd6d91a tests/memory_tests.cpp tests/test_fixtures.h
scripts/fetch-rapids-suite.sh "$out/rapids-26.08" "$repo"
cp -r "$gtest" "$out/googletest"
find "$out" -type f | sort
