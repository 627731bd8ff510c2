#!/usr/bin/env bash
# preload_check.sh APP PRELOAD: runs the CUDA program APP without and with
# LD_PRELOAD=PRELOAD; the output must be the same, and rmm's exit report (report:1) must
# count the program's allocations. Prints the wall time of both runs.
set -euo pipefail
app=$1
preload=$2
now() { date +%s%N; }
start=$(now)
plain=$("$app")
plain_ms=$(( ($(now) - start) / 1000000 ))
report=$(mktemp)
start=$(now)
preloaded=$(LD_PRELOAD="$preload" RMM_ALLOC_CONF="resource:pool,report:1" "$app" 2>"$report")
preloaded_ms=$(( ($(now) - start) / 1000000 ))
echo "without preload (${plain_ms} ms): $plain"
echo "with preload    (${preloaded_ms} ms): $preloaded"
cat "$report"
if [ "$plain" != "$preloaded" ]; then
  echo "FAILED: the output differs under the preload"; exit 1
fi
expected=$(sed -n 's/.* after \([0-9]*\) allocations/\1/p' <<<"$plain")
counted=$(sed -n 's/^ *\([0-9]*\) allocations, .*/\1/p' "$report" | head -n 1)
if [ -z "$counted" ] || [ "$counted" -lt "$expected" ]; then
  echo "FAILED: rmm counted '${counted}' allocations; the program made $expected"; exit 1
fi
if grep -q "outstanding" "$report"; then
  echo "FAILED: the program freed everything, yet rmm reports allocations outstanding"; exit 1
fi
echo "PASS: $(basename "$app"): same output, $counted allocations through rmm"
