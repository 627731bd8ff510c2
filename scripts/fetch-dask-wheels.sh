#!/usr/bin/env bash
# Downloads Dask's wheels (dask, distributed and every dependency of theirs, pure Python or
# built for x86_64 Linux) into .whl/, for a GPU machine with no network:
# scripts/gpu-distributed.sh installs them there offline (pip install --no-index --find-links
# .whl) when the machine lacks Dask. Carry .whl/ with the work tree.
#
#   scripts/fetch-dask-wheels.sh [DEST]     DEST: default .whl
#
# The GPU machine's Python version is not known here, so the wheels of each CPython in
# DASK_PYTHON_VERSIONS (default 3.10 to 3.14) are fetched; pure-Python ones are shared.
# DASK_REQUIREMENTS overrides what is fetched (default: the versions the CPU test ran with).
# Every dependency is fetched, even ones the GPU machine has (numpy is not one: dask.array
# needs it, but PyTorch and CuPy bring it there): gpu-distributed.sh installs into a folder of
# its own with --target, which does not see the machine's packages.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.whl}
versions=${DASK_PYTHON_VERSIONS:-3.10 3.11 3.12 3.13 3.14}
read -r -a requirements <<<"${DASK_REQUIREMENTS:-dask==2026.8.0 distributed==2026.8.0}"
mkdir -p "$dest"
fetched=()
for version in $versions; do
  if python3 -m pip download --quiet --disable-pip-version-check --dest "$dest" --only-binary=:all: \
      --implementation cp --python-version "$version" --platform manylinux2014_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 "${requirements[@]}"; then
    fetched+=("$version")
  else
    echo "fetch-dask-wheels.sh: no complete set of wheels for CPython $version (see pip's message above)" >&2
  fi
done
[ ${#fetched[@]} -gt 0 ] || { echo "fetch-dask-wheels.sh: nothing fetched" >&2; exit 1; }
echo "wheels for CPython ${fetched[*]} in $dest:"
ls "$dest" | grep -E '\.whl$' | sort
du -sh "$dest"
