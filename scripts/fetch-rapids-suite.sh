#!/usr/bin/env bash
# Fetches RAPIDS RMM's own C++ test suite at one pinned commit: cpp/tests and
# cpp/benchmarks/utilities (logger_tests.cpp includes <benchmarks/utilities/log_parser.hpp>)
# into DEST/cpp (default legacy-suites/rapids-26.08, git-ignored). It is the yardstick of the
# RAPIDS-shaped <rmm/...> headers, built unchanged against ours by scripts/rapids-suite.sh
# (g++, simulated devices, CI) and scripts/gpu-rapids-suites.sh (nvcc, the GPU); it is other
# people's code and is never committed here.
#
#   scripts/fetch-rapids-suite.sh [DEST] [RMM_GIT_DIR]
#
# With RMM_GIT_DIR (a clone or bare mirror of github.com/rapidsai/rmm holding the commit) the
# files come from it; without, from GitHub's tarball of the commit (network). An existing DEST
# whose stamp names the commit is kept as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/fetch-common.sh
. scripts/fetch-common.sh
# RAPIDS RMM 26.08 (VERSION 26.08): "Require C++20 (#2410)".
commit=5d50a37b9612e29d53f8202fba792b1a36f88a79
dest=${1:-legacy-suites/rapids-26.08}
repo=${2:-}
paths=(cpp/tests cpp/benchmarks/utilities)
if [ -f "$dest/.commit" ] && [ "$(cat "$dest/.commit")" = "$commit" ] && [ -d "$dest/cpp/tests" ]; then
  exit 0
fi
rm -rf "$dest" && mkdir -p "$dest"
if [ -n "$repo" ]; then
  git --git-dir="$repo" archive --format=tar "$commit" "${paths[@]}" | tar -x -C "$dest"
else
  extract_rapids_rmm "$commit" "$dest" "${paths[@]}" || { rm -rf "$dest"; exit 1; }
fi
test -f "$dest/cpp/tests/CMakeLists.txt" && test -d "$dest/cpp/benchmarks/utilities"
echo "$commit" > "$dest/.commit"
echo "RAPIDS RMM ${commit:0:7}'s cpp/tests and cpp/benchmarks/utilities in $dest ($(find "$dest/cpp" -type f | wc -l) files)"
