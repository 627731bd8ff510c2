#!/usr/bin/env bash
# Long fuzzing runs, on simulated devices: the three C API fuzzers (sequential, threaded, out
# of memory) in release builds, then the suballocator indexes' cargo-fuzz targets (with
# AddressSanitizer) when cargo-fuzz and a nightly toolchain are there. CI runs a short slice of
# the API fuzzers from scripts/test.sh.
#
#   scripts/fuzz.sh                         10 million calls per API fuzzer, 60 s per target
#   RMM_FUZZ_CALLS=50000000 RMM_FUZZ_SEED=7 scripts/fuzz.sh
#   RMM_FUZZ_TARGET_SECONDS=600 scripts/fuzz.sh
#
# A failure names its seed (and step): RMM_FUZZ_SEED=<seed> RMM_FUZZ_STEPS=<step> reproduces it.
set -euo pipefail
cd "$(dirname "$0")/.."

export RMM_FUZZ_CALLS="${RMM_FUZZ_CALLS:-10000000}"
export RMM_FUZZ_SEED="${RMM_FUZZ_SEED:-$(date +%s)}"
echo "== C API fuzzers: $RMM_FUZZ_CALLS calls each, seed $RMM_FUZZ_SEED"
cargo test --release --test fuzz_api --test fuzz_api_threads --test fuzz_api_oom -- --nocapture 2>&1 \
  | grep -E '^fuzz_api|^test |panicked|assertion|seed [0-9]+'

seconds="${RMM_FUZZ_TARGET_SECONDS:-60}"
if cargo +nightly fuzz --version >/dev/null 2>&1; then
  for target in $(cd crates/suballoc/fuzz && cargo +nightly fuzz list); do
    echo "== cargo fuzz: $target, $seconds s"
    (cd crates/suballoc/fuzz && cargo +nightly fuzz run "$target" -- -max_total_time="$seconds" 2>&1 | tail -3)
  done
else
  echo "== cargo-fuzz targets skipped: install with 'cargo install cargo-fuzz' (needs a nightly toolchain)"
fi
