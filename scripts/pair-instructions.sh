#!/usr/bin/env bash
# Instructions per allocate+free pair (256 B through a pool, one thread), counted by callgrind
# on a simulated device with the race checker off, for the resource API and for
# RMM_ALLOC/RMM_FREE, on the NULL stream and on a stream from rmmStreamCreate. Linked statically, as the GPU benchmark is. The count is the difference
# between runs of 200,000 and 100,000 pairs, so set-up and exit cancel out. Needs valgrind and
# target/release/librmm.a (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "pair-instructions: install valgrind" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -Iinclude bench/pair_instructions.c target/release/librmm.a -lpthread -ldl -lm -o "$work/pairs"
count() {
  valgrind --tool=callgrind --callgrind-out-file="$work/out" "$work/pairs" "$@" 2>&1 | sed -n 's/.*Collected : //p'
}
export RMM_SIM_DEVICES=1 RMM_SIM_ON_RACE=off
for stream in "" created; do
  for api in resource legacy; do
    small=$(count "$api" 100000 $stream)
    large=$(count "$api" 200000 $stream)
    echo "$api pair on ${stream:-the NULL} stream: $(((large - small) / 100000)) instructions"
  done
done
