#!/usr/bin/env bash
# Pairs on the streams programs use (bench/bench_streams.cu: NULL, rmmStreamCreate, an
# application's cudaStreamCreateWithFlags stream, the per-thread default stream) through
# rmm-rs's pool (resource API and RMM_ALLOC), its expandable resource and cudaMallocAsync, and
# RAPIDS RMM's pool on the same streams when its wheels (librmm-cu13, rapids-logger) lie in
# .whl/ (see gpu-bench.sh). Prints the driver call costs, then a Markdown table.
#
#   scripts/gpu-stream-bench.sh [DIR]   DIR holds librmm_<name>.a builds to compare (as for
#                                       gpu-compare-builds.sh); default: stage/lib/librmm.a
# BENCH_ROUNDS (default 3) rounds over the resources.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-$(mktemp -d /tmp/rmm-streams.XXXXXX)}
mkdir -p "$out"
arch=${CUDA_ARCH:-sm_90}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
# shellcheck source=scripts/bench-libs.sh
. scripts/bench-libs.sh
declare -A libs=()
bench_libs "${1:-}"
csvs=()
for name in "${!libs[@]}"; do
  nvcc -std=c++17 -O3 -arch="$arch" -Iinclude -Ibench bench/bench_streams.cu "${libs[$name]}" \
    -lcuda -lpthread -ldl -lm -o "$out/streams_$name"
  echo "== build $name"
  "$out/streams_$name" | sed "s/,rmm-rs /,rmm-rs[$name] /" > "$out/streams_$name.csv"
  csvs+=("$out/streams_$name.csv")
done
# shellcheck source=scripts/rapids-bench.sh
. scripts/rapids-bench.sh
if CUDA_ARCH=$arch rapids_bench bench/bench_streams_rapids.cu "$out/streams_rapids"; then
  "$out/streams_rapids" > "$out/streams_rapids.csv"
  csvs+=("$out/streams_rapids.csv")
fi
python3 bench/table.py "${csvs[@]}" | tee "$out/streams.md"
