#!/usr/bin/env bash
# Fetches RAPIDS RMM's own Python tests (python/rmm/rmm/tests) at the commit
# scripts/fetch-rapids-suite.sh pins for the C++ suite, into DEST/python/rmm/rmm/tests (default
# legacy-suites/rapids-26.08-python, git-ignored). scripts/rapids-python-suite.sh runs them
# unchanged against rmm_rs (simulated devices in CI, the GPU in scripts/gpu-python-api.sh); they
# are other people's code and are never committed here. Only the tests are taken, not RAPIDS'
# package beside them, so that `import rmm` can only be rmm_rs (python/as_rmm).
#
#   scripts/fetch-rapids-python-suite.sh [DEST] [RMM_GIT_DIR]
#
# With RMM_GIT_DIR (a clone or bare mirror of github.com/rapidsai/rmm holding the commit) the
# files come from it; without, from GitHub's tarball of the commit (network). An existing DEST
# whose stamp names the commit is kept as it is. PYTEST_WHEELS=DIR also downloads pytest's
# wheels (pure Python) into DIR, for a GPU machine with no network and no pytest
# (scripts/rapids-python-suite.sh installs them from .whl/ there; carry .whl/ with the work tree).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/fetch-common.sh
. scripts/fetch-common.sh
# One RAPIDS commit for both suites.
commit=$(sed -n 's/^commit=\([0-9a-f]\{40\}\)$/\1/p' scripts/fetch-rapids-suite.sh)
[ -n "$commit" ] || { echo "fetch-rapids-python-suite.sh: no commit in scripts/fetch-rapids-suite.sh" >&2; exit 2; }
dest=${1:-legacy-suites/rapids-26.08-python}
repo=${2:-}
path=python/rmm/rmm/tests
if [ -n "${PYTEST_WHEELS:-}" ]; then
  python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: --dest "$PYTEST_WHEELS" \
    "$(grep '^pytest==' python/tests/rapids-python-suite-requirements.txt)"
  echo "pytest's wheels in $PYTEST_WHEELS"
fi
if [ -f "$dest/.commit" ] && [ "$(cat "$dest/.commit")" = "$commit" ] && [ -d "$dest/$path" ]; then
  exit 0
fi
rm -rf "$dest" && mkdir -p "$dest"
if [ -n "$repo" ]; then
  git --git-dir="$repo" archive --format=tar "$commit" "$path" | tar -x -C "$dest"
else
  extract_rapids_rmm "$commit" "$dest" "$path" || { rm -rf "$dest"; exit 1; }
fi
test -f "$dest/$path/conftest.py"
echo "$commit" > "$dest/.commit"
echo "RAPIDS RMM ${commit:0:7}'s $path in $dest ($(find "$dest/$path" -name '*.py' | wc -l) files)"
