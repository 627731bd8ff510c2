#!/usr/bin/env bash
# Compares builds of the library on a GPU machine by the figures bench/adaptor_probe.cpp
# prints (the pool pair, the RMM_ALLOC pair, what the statistics adaptor adds). The lent hosts
# change speed in spells of seconds, more than a change to the library moves them; so the
# builds run round-robin, one sample per process, and each gets the median of its samples.
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
by = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    name, *figures = line.split()
    for key, value in zip(figures[::2], figures[1::2]):
        by[name][key].append(float(value))
for name, figures in by.items():
    described = []
    for key, values in figures.items():
        q1, q2, q3 = statistics.quantiles(values)
        described.append(f"{key} {q2:.2f} ns (quartiles {q1:.2f} .. {q3:.2f})")
    print(f"{name}: " + "; ".join(described) + f"; {len(next(iter(figures.values())))} samples")
PY
