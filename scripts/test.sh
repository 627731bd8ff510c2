#!/usr/bin/env bash
# Runs every test: cargo tests (with the header drift check), then the C, C++ and Fortran
# suites under ctest and the Python module's tests, on simulated devices. Installs what it needs (cmake, ninja, a C/C++ compiler, gfortran) on a
# fresh Debian/Ubuntu machine.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v cc >/dev/null || missing+=(gcc)
command -v c++ >/dev/null || missing+=(g++)
command -v gfortran >/dev/null || missing+=(gfortran)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

echo "== cargo test"
cargo test

echo "== C/C++ suite (ctest, simulated devices)"
build=build/test
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j2

echo "== Python module (simulated devices)"
RMM_RS_LIBRARY="${CARGO_TARGET_DIR:-$PWD/target}/release/librmm.so" python3 python/test_rmm_rs.py
