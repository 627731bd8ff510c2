#!/usr/bin/env bash
# Stale stream handles on a GPU (issue 51): c_tests/test_stale_streams.c, built against the
# staged library, passes handles of streams destroyed long ago (the first of BATCHES batches of
# 256 made and destroyed: 4, then 64), destroyed just now, forgotten by rmm-rs and destroyed,
# and made up, to every kind of resource and adaptor, without configuration and with
# `registered_streams`. A CUDA driver asked about such handles crashed an H200; rmm-rs must
# hand none of them to the driver, so every run must end with "PASS" and exit 0. Linked
# dynamically and statically, and under compute-sanitizer's memcheck when it is installed.
# ctest runs the same test (c11.test_stale_streams) in scripts/gpu-test.sh.
#
#   scripts/gpu-stale-streams.sh        needs stage/ (scripts/stage.sh) and a C compiler
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${STAGE_DIR:-$root/stage}
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
require_staged gpu-stale-streams.sh "$stage/lib/librmm.so" "$stage/lib/librmm.a" "$stage/include/rmm.h"
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
work=$(mktemp -d /tmp/rmm-stale-streams.XXXXXX)
failed=()
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true

section "build"
flags=(-std=c11 -O2 -Wall -Wextra -Werror -I"$stage/include" -Ic_tests)
for batches in 4 64; do
  cc "${flags[@]}" -DBATCHES=$batches c_tests/test_stale_streams.c -L"$stage/lib" -lrmm -Wl,-rpath,"$stage/lib" \
    -o "$work/stale_streams_$batches" || failed+=("build ($batches batches)")
  cc "${flags[@]}" -DBATCHES=$batches c_tests/test_stale_streams.c "$stage/lib/librmm.a" -lpthread -ldl -lm \
    -o "$work/stale_streams_static_$batches" || failed+=("static build ($batches batches)")
done

for program in stale_streams_4 stale_streams_static_4 stale_streams_64 stale_streams_static_64; do
  section "$program"
  [ -x "$work/$program" ] || continue
  "$work/$program" || failed+=("$program (exit $?)")
done

if command -v compute-sanitizer >/dev/null; then
  section "compute-sanitizer memcheck (stale_streams_4)"
  compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 99 "$work/stale_streams_4" \
    || failed+=("memcheck (exit $?)")
fi

section "gpu-stale-streams summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]} (programs in $work)"
  exit 1
fi
echo "PASS: no stale stream handle reached the driver (programs in $work)"
