#!/usr/bin/env bash
# RAPIDS RMM's own Python tests (python/rmm/rmm/tests of the commit
# scripts/fetch-rapids-python-suite.sh pins), run unchanged against rmm_rs with `import rmm`
# meaning rmm_rs (python/as_rmm, the one shim: the name): the yardstick of "code written for
# RAPIDS RMM's Python API runs the same". python/tests/rapids_suite.py runs them under pytest,
# prints one table (per file: loaded, passed, failed, listed failures, skipped) and a line
# `RESULT ...`, and fails on any failure python/tests/rapids-python-suite-expected.txt does not
# list (each listed one with its reason; it says which listed ones pass now).
#
#   scripts/rapids-python-suite.sh [RAPIDS_TREE] [pytest arguments...]
#
# RAPIDS_TREE: a folder holding python/rmm/rmm/tests (default legacy-suites/rapids-26.08-python,
# fetched there when missing). Environment:
#   RAPIDS_SUITE_ON  sim (default; simulated devices, RMM_SIM_DEVICES=1:4GiB unless set) or gpu
#                    (scripts/gpu-python-api.sh sets it).
#   PYTHON           the Python to run (default: on sim, a virtual environment in
#                    build/rapids-python-venv with python/tests/rapids-python-suite-requirements.txt,
#                    from PyPI or, with RMM_OFFLINE_CACHE=DIR, from DIR/python-wheels; on gpu,
#                    python3 with the machine's CuPy, Numba, cuda-python and PyTorch).
#   WHEELS           where pytest's wheels are when PYTHON lacks pytest (default .whl; made by
#                    PYTEST_WHEELS=.whl scripts/fetch-rapids-python-suite.sh): installed offline
#                    into a folder of its own.
#   RMM_RS_LIBRARY   librmm.so (default: the cargo release build, built when missing).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tree=${1:-$root/legacy-suites/rapids-26.08-python}
[ $# -gt 0 ] && shift
on=${RAPIDS_SUITE_ON:-sim}
die() { echo "rapids-python-suite.sh: $*" >&2; exit 2; }

if [ ! -d "$tree/python/rmm/rmm/tests" ]; then
  scripts/fetch-rapids-python-suite.sh "$tree" || die "could not fetch RAPIDS' Python tests into $tree"
fi
tests=$(cd "$tree/python/rmm/rmm/tests" && pwd)

if [ -z "${RMM_RS_LIBRARY:-}" ]; then
  RMM_RS_LIBRARY=${CARGO_TARGET_DIR:-$root/target}/release/librmm.so
  [ -f "$RMM_RS_LIBRARY" ] || cargo build --release --lib || die "librmm does not build"
fi
export RMM_RS_LIBRARY

requirements=$root/python/tests/rapids-python-suite-requirements.txt
if [ -n "${PYTHON:-}" ]; then
  python=$PYTHON
elif [ "$on" = sim ]; then
  venv=$root/build/rapids-python-venv
  python=$venv/bin/python
  # Made again when the requirements change (their copy in the environment says what it has).
  if ! cmp -s "$requirements" "$venv/requirements.txt"; then
    rm -rf "$venv"
    python3 -m venv "$venv" || die "cannot make a virtual environment (python3 -m venv; apt-get install python3-venv)"
    source=()
    [ -n "${RMM_OFFLINE_CACHE:-}" ] && source=(--no-index --find-links "$RMM_OFFLINE_CACHE/python-wheels")
    "$python" -m pip install --quiet --disable-pip-version-check "${source[@]}" -r "$requirements" \
      || die "cannot install $requirements"
    cp "$requirements" "$venv/requirements.txt"
  fi
else
  python=python3
fi

site=""
if ! "$python" -c "import pytest" 2>/dev/null; then
  wheels=${WHEELS:-$root/.whl}
  site=$(mktemp -d /tmp/rapids-python-site.XXXXXX)
  "$python" -m pip install --quiet --disable-pip-version-check --no-index --find-links "$wheels" --target "$site" pytest \
    || die "$python has no pytest and $wheels has no wheels of it (PYTEST_WHEELS=.whl scripts/fetch-rapids-python-suite.sh where there is a network)"
fi

if [ "$on" = sim ]; then
  export RMM_SIM_DEVICES=${RMM_SIM_DEVICES:-1:4GiB} RMM_SIM_ON_RACE=${RMM_SIM_ON_RACE:-count}
else
  unset RMM_SIM_DEVICES RMM_SIM_ON_RACE
  export RMM_RS_TEST_GPU=1
fi
unset RMM_ALLOC_CONF
# python/as_rmm makes `import rmm` rmm_rs; python/ is rmm_rs itself; python/tests/compat holds
# the shims for third-party version skew every test Python gets.
export PYTHONPATH=$root/python/as_rmm:$root/python:$root/python/tests/compat${site:+:$site}${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
echo "RAPIDS tree: $tree ($(cat "$tree/.commit" 2>/dev/null || echo 'commit unknown')); $($python --version 2>&1) ($python); librmm: $RMM_RS_LIBRARY; on $on"
"$python" "$root/python/tests/rapids_suite.py" "$tests" --on "$on" "$@"
status=$?
[ -z "$site" ] || rm -rf "$site"
exit $status
