#!/usr/bin/env bash
# Compares builds of librmm.so by their 256-byte pair (bench/pair_ab.c): every build loaded
# into one process, taking turns every few milliseconds, so that the host's drifts hit them
# alike. The first build (in name order) is the baseline; a copy of the last build runs too,
# as a control: its ratio to that build shows how precise the comparison is.
#
#   scripts/gpu-pair-ab.sh DIR     DIR holds librmm_<name>.so (or .so.gz, to carry less)
#
# ROUNDS (default 1000) turns, PAIRS (default 20000) pairs a batch; then, in a process of its
# own, THREADS (default 16; 0: none) churning threads on streams of their own, STEPS
# (default 2000) churn steps per thread a batch; see bench/pair_ab.c.
# Runs on simulated devices too (RMM_SIM_DEVICES=1), for trying it without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/gpu-pair-ab.sh DIR}
for gz in "$dir"/librmm_*.so.gz; do [ -e "$gz" ] && gunzip -kf "$gz"; done
out=$(mktemp -d /tmp/rmm-pair-ab.XXXXXX)
libs=()
for lib in "$dir"/librmm_*.so; do
  cp "$lib" "$out/"
  libs+=("$out/$(basename "$lib")")
done
[ ${#libs[@]} -gt 0 ] || { echo "gpu-pair-ab: no librmm_*.so in $dir" >&2; exit 1; }
last=${libs[${#libs[@]}-1]}
cp "$last" "${last%.so}_copy.so"
libs+=("${last%.so}_copy.so")
cc -O2 -Wall -Wextra -Werror -Iinclude bench/pair_ab.c -ldl -lm -lpthread -o "$out/pair_ab"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
# The pairs alone, then the threads alone: idle threads in the process disturb the pairs.
ROUNDS=${ROUNDS:-1000} PAIRS=${PAIRS:-20000} THREADS=0 "$out/pair_ab" "${libs[@]}"
if [ "${THREADS:-16}" -gt 0 ]; then
  ROUNDS=${ROUNDS:-1000} PAIRS=0 THREADS=${THREADS:-16} STEPS=${STEPS:-2000} "$out/pair_ab" "${libs[@]}"
fi
