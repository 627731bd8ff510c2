#!/usr/bin/env bash
# Compares builds of the library by what the statistics adaptor adds over the pool
# (bench/adaptor_probe.cpp) on a GPU machine. The lent hosts change speed in spells of
# seconds, more than a change to the adaptor moves it; so the builds run round-robin, one
# sample per process, and each gets the median of its samples.
#
#   scripts/gpu-compare-builds.sh DIR     DIR holds librmm_<name>.a (or .a.gz, to carry less)
#
# Make one with e.g. `objcopy --strip-debug target/release/librmm.a DIR/librmm_mine.a` per
# build, carry DIR with the work tree, and run this from the repository root. ROUNDS (default
# 30) samples per build.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/gpu-compare-builds.sh DIR}
for gz in "$dir"/librmm_*.a.gz; do [ -e "$gz" ] && gunzip -kf "$gz"; done
out=$(mktemp -d /tmp/rmm-compare.XXXXXX)
builds=()
for lib in "$dir"/librmm_*.a; do
  name=$(basename "$lib" .a)
  name=${name#librmm_}
  nvcc -std=c++17 -O3 -Iinclude -Ibench bench/adaptor_probe.cpp "$lib" -lpthread -ldl -lm -o "$out/probe_$name"
  builds+=("$name")
done
for _ in $(seq "${ROUNDS:-30}"); do
  for name in "${builds[@]}"; do echo "$name $(SAMPLES=1 "$out/probe_$name")"; done
done > "$out/samples.txt"
python3 - "$out/samples.txt" <<'PY'
import collections, statistics, sys
by = collections.defaultdict(lambda: ([], []))
for line in open(sys.argv[1]):
    name, _, pair, _, random = line.split()
    by[name][0].append(float(pair))
    by[name][1].append(float(random))
def describe(values):
    q1, q2, q3 = statistics.quantiles(values)
    return f"{q2:.2f} ns (quartiles {q1:.2f} .. {q3:.2f})"
for name, (pair, random) in by.items():
    print(f"{name}: pair {describe(pair)}; random_allocations {describe(random)}; {len(pair)} samples")
PY
