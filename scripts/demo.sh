#!/usr/bin/env bash
# Builds librmm and runs examples/demo.c: on the GPU when a CUDA driver is present, otherwise
# on a simulated device (and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
# cargo's own progress, so that the first build (about a minute and a half on 2 cores, from a
# fresh clone: the crates download and compile) is not silence.
echo "Building librmm (cargo build --release)..."
cargo build --release --lib
mkdir -p target/demo
cc -std=c11 -Wall -Wextra -Werror -Iinclude examples/demo.c -Ltarget/release -lrmm \
   -Wl,-rpath,"$PWD/target/release" -o target/demo/demo
if [ -z "${RMM_SIM_DEVICES:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  echo "No CUDA driver found: running on a simulated device (RMM_SIM_DEVICES=1:4GiB)."
  export RMM_SIM_DEVICES=1:4GiB
fi
exec target/demo/demo
