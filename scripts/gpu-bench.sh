#!/usr/bin/env bash
# Allocation benchmark on a GPU machine (no Rust needed): rmm-rs resources from stage/ (see
# scripts/stage.sh) next to cudaMalloc and cudaMallocAsync, and next to RAPIDS RMM 26.10 when
# its wheels (librmm-cu13, rapids-logger) lie in .whl/. Prints a Markdown table, then the
# framework entry points' table (bench/frameworks/entry_points.py: CuPy and PyTorch
# allocate+free through their own pools and through rmm-rs; ENTRY_POINTS=0 skips it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-/tmp/rmm-bench}
mkdir -p "$out"
arch=${CUDA_ARCH:-sm_90}
nvidia-smi -L
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
lscpu | grep -E "^Model name|^CPU\(s\)" || true
nvcc -std=c++17 -O3 -arch="$arch" -Istage/include bench/bench_rmm_rs.cu stage/lib/librmm.a \
  -lpthread -ldl -lm -o "$out/bench_rmm_rs"
# What this host's CPU charges for the pieces of an allocation (figures vary by host).
cc -O2 -Istage/include bench/host_probe.c stage/lib/librmm.a -lpthread -ldl -lm -o "$out/host_probe"
"$out/host_probe"
for biased in 0 1 0; do RMM_BIASED_LOCKS=$biased "$out/host_probe" | grep "pool pair"; done
"$out/bench_rmm_rs" | tee "$out/rmm_rs.csv"
csvs=("$out/rmm_rs.csv")
# shellcheck source=scripts/rapids-bench.sh
. scripts/rapids-bench.sh
if CUDA_ARCH=$arch rapids_bench bench/bench_rapids.cu "$out/bench_rapids"; then
  "$out/bench_rapids" | tee "$out/rapids.csv"
  csvs+=("$out/rapids.csv")
fi
python3 bench/table.py "${csvs[@]}" | tee "$out/table.md"
if [ "${ENTRY_POINTS:-1}" != 0 ]; then
  RMM_RS_LIBRARY=$PWD/stage/lib/librmm.so python3 bench/frameworks/entry_points.py | tee "$out/entry_points.md"
fi
