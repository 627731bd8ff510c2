#!/usr/bin/env bash
# Threads allocating at once (bench/bench_threads.cu): one thread on the NULL stream, eight
# threads sharing it, and eight and sixteen threads on streams of their own, through rmm-rs's
# pool and cudaMallocAsync, and RAPIDS RMM's pool when its wheels (librmm-cu13, rapids-logger)
# lie in .whl/ (see gpu-bench.sh). Prints a Markdown table (ns per allocation in aggregate:
# wall time over all the threads' allocations).
#
#   scripts/gpu-threads-bench.sh [DIR]   DIR holds librmm_<name>.a builds to compare (as for
#                                        gpu-compare-builds.sh); default: stage/lib/librmm.a
# BENCH_ROUNDS (default 3) rounds; the builds run in turn within each round.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-${OUT:-$(mktemp -d /tmp/rmm-threads.XXXXXX)}}
mkdir -p "$out"
arch=${CUDA_ARCH:-sm_90}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
lscpu | grep -E "^Model name|^CPU\(s\)" || true
# shellcheck source=scripts/bench-libs.sh
. scripts/bench-libs.sh
declare -A libs=()
bench_libs "${1:-}"
csvs=()
for name in "${!libs[@]}"; do
  nvcc -std=c++17 -O3 -arch="$arch" -Iinclude -Ibench bench/bench_threads.cu "${libs[$name]}" \
    -lcuda -lpthread -ldl -lm -o "$out/threads_$name"
done
for name in "${!libs[@]}"; do
  echo "== build $name"
  "$out/threads_$name" | sed "s/,rmm-rs /,rmm-rs[$name] /" > "$out/threads_$name.csv"
  csvs+=("$out/threads_$name.csv")
done
# shellcheck source=scripts/rapids-bench.sh
. scripts/rapids-bench.sh
if CUDA_ARCH=$arch rapids_bench bench/bench_threads_rapids.cu "$out/threads_rapids"; then
  "$out/threads_rapids" > "$out/threads_rapids.csv"
  csvs+=("$out/threads_rapids.csv")
fi
python3 bench/table.py "${csvs[@]}" | tee "$out/threads.md"
