#!/usr/bin/env bash
# Runs every check CI runs, on simulated devices: formatting, clippy and rustdoc with warnings
# as errors; the cargo tests of every crate (with the header drift check); a million calls of
# each C API fuzzer; the C, C++ and Fortran suites under ctest; the C tests again under
# AddressSanitizer and UndefinedBehaviorSanitizer; RAPIDS RMM's own C++ test suite (cpp/tests at
# a pinned commit, from GitHub) built with g++ and run on simulated devices; the Python
# package's tests (python/test_rmm_rs.py, which runs python/tests/ too); RAPIDS RMM's own
# Python tests (python/rmm/rmm/tests at the same commit) run unchanged under pytest on
# simulated devices (scripts/rapids-python-suite.sh, in a virtual environment of its own
# with pytest, NumPy, Numba and cuda-python from PyPI); and a compile of the
# PyTorch backend against PyTorch's headers. Installs what it needs (cmake, ninja, a C/C++
# compiler, gfortran, GoogleTest; CCCL's and PyTorch's headers from PyPI) on a fresh
# Debian/Ubuntu machine.
#
# Offline: RMM_OFFLINE_CACHE=DIR takes the crates and headers from DIR (made with network once
# by scripts/offline-cache.sh DIR) and never touches the network for them.
#
# It ends with one line, also written to build/test-summary.txt: PASSED or FAILED (and in which
# step), the time, each step with what it counted (tests passed, skipped, ignored), and what
# was skipped and why.
set -euo pipefail
cd "$(dirname "$0")/.."

# --- The summary line ---------------------------------------------------------------------
started=$SECONDS
current="setup"   # the step under way
ran=()            # "what: result" of each step that passed
skipped=()        # "what (why)"
logs=$(mktemp -d)
step() { current=$1; echo "== $2"; }
passed() { ran+=("$current${1:+: $1}"); }
join() { local out="" item; for item in "$@"; do out+="${out:+; }$item"; done; echo "$out"; }
# cargo's "test result:" lines: tests passed, and ignored ones (#[ignore]: GPU or long runs).
cargo_counts() {
  awk '/^test result:/ { p += $4; i += $8 } END { printf "%d passed%s", p, i ? ", " i " ignored (#[ignore])" : "" }' "$@"
}
# ctest's totals; skipped tests (exit 77) by name, with the reasons they printed ("SKIP: why",
# in ctest's LastTest.log under BUILD).
ctest_counts() {
  local total names reasons
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -1)
  names=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Skipped)$/\1/p' "$1")
  if [ -z "$names" ]; then
    echo "$total of $total passed"
    return
  fi
  reasons=$(awk 'NR == FNR { skip[$0] = 1; next }
                 /^[0-9]+\/[0-9]+ Test: / { name = $3 }
                 /^SKIP: / && skip[name] { sub(/^SKIP: /, ""); print }' \
              <(echo "$names") "$2"/Testing/Temporary/LastTest.log 2>/dev/null | sort -u | paste -sd'|' - | sed 's/|/, /g')
  echo "$((total - $(echo "$names" | wc -l))) of $total passed, skipped: $(echo "$names" | paste -sd'|' - | sed 's/|/, /g')" \
    "(${reasons:-exit 77})"
}
# unittest's count, and its skipped tests grouped by reason.
python_counts() {
  local ran skips reasons
  ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$1")
  skips=$(sed -n 's/^OK (.*skipped=\([0-9]*\).*/\1/p' "$1")
  reasons=$(sed -n "s/.* \.\.\. skipped [\"']\(.*\)[\"']$/\1/p" "$1" | sort | uniq -c \
    | sed 's/^ *\([0-9]*\) \(.*\)/\2 (\1)/' | paste -sd'|' - | sed 's/|/, /g')
  echo "$((ran - ${skips:-0})) of $ran passed${reasons:+, skipped: $reasons}"
}
summary() {
  local status=$? elapsed line
  elapsed="$(((SECONDS - started) / 60))m$(((SECONDS - started) % 60))s"
  if [ "$status" -eq 0 ]; then
    line="test.sh: PASSED in $elapsed: $(join "${ran[@]}")"
  else
    line="test.sh: FAILED (exit $status) in step '$current' after $elapsed; passed before it: $(join "${ran[@]:-nothing}")"
  fi
  [ ${#skipped[@]} -eq 0 ] || line+="; SKIPPED: $(join "${skipped[@]}")"
  rm -rf "$logs"
  mkdir -p build && echo "$line" > build/test-summary.txt
  echo "$line"
}
trap summary EXIT
cccl=build/cccl
if [ -n "${RMM_OFFLINE_CACHE:-}" ]; then
  RMM_OFFLINE_CACHE=$(cd "$RMM_OFFLINE_CACHE" && pwd)
  export RMM_OFFLINE_CACHE CARGO_HOME=$RMM_OFFLINE_CACHE/cargo-home
  cccl=$RMM_OFFLINE_CACHE/cccl
  echo "offline: crates and headers from $RMM_OFFLINE_CACHE"
fi

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v gfortran >/dev/null || missing+=(gfortran)
python3 -c "import ensurepip, venv" 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

step "fmt, clippy, rustdoc" "format, lints, docs"
cargo fmt --all --check
cargo clippy --all-targets --workspace -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --quiet
scripts/gpu.sh --help >/dev/null  # every GPU suite is listed with what it does
passed

step "cargo tests" "cargo test (every crate)"
cargo test --workspace 2>&1 | tee "$logs/cargo.log"
passed "$(cargo_counts "$logs/cargo.log")"

step "logging order tests" "the logging adaptor's numbered order (where the time-stamp counter cannot order events)"
RMM_LOG_CLOCK=system cargo test --release --test adaptors --test replay --test release_on_oom 2>&1 \
  | grep -E '^test result|panicked' | tee "$logs/clock.log"
passed "$(cargo_counts "$logs/clock.log")"

step "C API fuzzers" "C API fuzzers, a slice, on two simulated devices with the current one switched between calls (scripts/fuzz.sh runs them long)"
# fuzz CMD...: the fuzzer's lines of interest (FUZZ_SHOW: more), kept for the summary; when it
# fails, the last 200 lines of its whole output too (the seed, step, panic and the
# simulator's reports, to replay it with RMM_FUZZ_SEED).
fuzz() {
  local status=0
  "$@" >"$logs/fuzz-run.log" 2>&1 || status=$?
  grep -E "^fuzz_api|^test result|panicked|assertion|stream-ordering race|rmm-rs simulator${FUZZ_SHOW:-}" "$logs/fuzz-run.log" | tee -a "$logs/fuzz.log" || true
  if [ "$status" != 0 ]; then
    echo "== the failing fuzzer's output, its last 200 lines; it ran with: $(env | grep -E '^RMM_(FUZZ|SIM|LANES)' | tr '\n' ' ')"
    echo "   (tests/fuzz_api.rs replays with that environment; the threaded fuzzers do not replay)"
    tail -n 200 "$logs/fuzz-run.log"
    return "$status"
  fi
}
RMM_FUZZ_CALLS=1000000 fuzz cargo test --release --test fuzz_api --test fuzz_api_threads --test fuzz_api_oom -- --nocapture
echo "== the C API fuzzer in sequences of about 20,000 calls on two devices (issue 39's shape), then on one device"
RMM_FUZZ_SEED=1001 RMM_FUZZ_STEPS=8000 RMM_FUZZ_CALLS=400000 fuzz cargo test --release --test fuzz_api -- --nocapture
RMM_FUZZ_DEVICES=1 RMM_FUZZ_CALLS=400000 fuzz cargo test --release --test fuzz_api -- --nocapture
echo "== the threaded C API fuzzer with a stream split into lanes as soon as two threads allocate there"
RMM_LANES_SPLIT_AT=0 RMM_FUZZ_CALLS=300000 fuzz cargo test --release --test fuzz_api_threads -- --nocapture
echo "== the threaded C API fuzzer's growth mode: stacks rebuilt empty every round, 16 threads growing them at once"
FUZZ_SHOW='|out of memory' RMM_FUZZ_GROWTH=1 RMM_FUZZ_SECONDS=10 RMM_FUZZ_CALLS=400000 fuzz cargo test --release --test fuzz_api_threads -- --nocapture
passed "$(grep -c '^test result: ok' "$logs/fuzz.log") runs ok"

step "ctest" "C/C++ suite (ctest, simulated devices)"
# CCCL's and the CUDA runtime's headers from PyPI, for the RAPIDS-shaped C++ test.
scripts/fetch-cccl.sh "$cccl"
build=build/test
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRMM_BUILD_TESTS=ON -DRMM_CCCL_DIR="$(cd "$cccl" && pwd)" >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j2 2>&1 | tee "$logs/ctest.log"
passed "$(ctest_counts "$logs/ctest.log" "$build")"

step "ctest under ASan+UBSan" "C tests under AddressSanitizer and UndefinedBehaviorSanitizer"
asan=build/asan
cmake -S . -B "$asan" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRMM_BUILD_TESTS=ON -DRMM_SANITIZE=address,undefined >/dev/null
cmake --build "$asan"
RMM_SIM_HOST_MEMORY=malloc ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$asan" --output-on-failure -j2 -L '^c$' 2>&1 | tee "$logs/asan.log"
passed "$(ctest_counts "$logs/asan.log" "$asan")"

step "RAPIDS RMM's C++ suite" "RAPIDS RMM's own C++ suite, g++ on simulated devices (fails on what cxx_tests/rapids-suite-expected.txt does not list)"
rapids_tree=legacy-suites/rapids-26.08
[ -n "${RMM_OFFLINE_CACHE:-}" ] && rapids_tree=$RMM_OFFLINE_CACHE/rapids-26.08
# Other people's code, fetched from GitHub (kept as it is when it holds the pinned commit). A
# machine that cannot reach GitHub skips the suite and says so; RMM_OFFLINE_CACHE brings it.
if scripts/fetch-rapids-suite.sh "$rapids_tree"; then
  JOBS=2 CCCL_DIR="$cccl" scripts/rapids-suite.sh "$rapids_tree" 2>&1 | tee "$logs/rapids.log"
  passed "$(sed -n 's/^RESULT //p' "$logs/rapids.log")"
else
  echo "SKIPPED RAPIDS RMM's C++ suite: its sources could not be fetched from GitHub (scripts/offline-cache.sh DIR on a machine with access, then RMM_OFFLINE_CACHE=DIR)"
  skipped+=("RAPIDS RMM's C++ suite (GitHub could not be reached; RMM_OFFLINE_CACHE brings it)")
fi

step "Python package" "Python package rmm_rs (simulated devices): its own API, RAPIDS RMM's Python API, the seeds' Python snippets, librmm_cffi"
RMM_RS_LIBRARY="${CARGO_TARGET_DIR:-$PWD/target}/release/librmm.so" python3 python/test_rmm_rs.py 2>&1 | tee "$logs/python.log"
passed "$(python_counts "$logs/python.log")"

step "RAPIDS RMM's Python suite" "RAPIDS RMM's own Python tests, unchanged, on simulated devices (fails on what python/tests/rapids-python-suite-expected.txt does not list)"
rapids_python_tree=legacy-suites/rapids-26.08-python
[ -n "${RMM_OFFLINE_CACHE:-}" ] && rapids_python_tree=$RMM_OFFLINE_CACHE/rapids-26.08-python
if scripts/fetch-rapids-python-suite.sh "$rapids_python_tree"; then
  RMM_RS_LIBRARY="${CARGO_TARGET_DIR:-$PWD/target}/release/librmm.so" scripts/rapids-python-suite.sh "$rapids_python_tree" 2>&1 \
    | tee "$logs/rapids-python.log"
  passed "$(sed -n 's/^RESULT //p' "$logs/rapids-python.log")"
else
  echo "SKIPPED RAPIDS RMM's Python suite: its sources could not be fetched from GitHub (scripts/offline-cache.sh DIR on a machine with access, then RMM_OFFLINE_CACHE=DIR)"
  skipped+=("RAPIDS RMM's Python suite (GitHub could not be reached; RMM_OFFLINE_CACHE brings it)")
fi

step "pair_ab benchmark" "the build comparison benchmark still builds and runs (scripts/gpu-pair-ab.sh, a tiny run)"
ab=$(mktemp -d)
cp "${CARGO_TARGET_DIR:-$PWD/target}/release/librmm.so" "$ab/librmm_this.so"
compared=$(RMM_SIM_DEVICES=1 RMM_SIM_ON_RACE=off ROUNDS=4 PAIRS=100 THREADS=2 STEPS=20 scripts/gpu-pair-ab.sh "$ab" | grep -c quartiles)
rm -rf "$ab"
# Three pair cases and the threads case, each for the build and its copy.
[ "$compared" -eq 8 ] || { echo "pair_ab compared $compared figures, not 8" >&2; exit 1; }
passed "8 figures"

step "PyTorch backend compile" "PyTorch backend against PyTorch's headers (from its wheel)"
CUDA_INCLUDE=$cccl/include scripts/check-torch-backend.sh
passed
