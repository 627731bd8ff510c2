#!/usr/bin/env bash
# Prepares what scripts/test.sh downloads, so that it can run on a machine with no network:
#
#   scripts/offline-cache.sh DIR        (with network, once; DIR: e.g. ../rmm-offline)
#   RMM_OFFLINE_CACHE=DIR scripts/test.sh   (then anywhere, offline)
#
# What the test command fetches, and where it goes in DIR:
#   - the crates of Cargo.lock (crates.io)          -> DIR/vendor, with DIR/cargo-home/config.toml
#     pointing cargo at it and turning cargo's network off;
#   - CCCL's and the CUDA runtime's headers (PyPI)  -> DIR/cccl     (scripts/fetch-cccl.sh);
#   - PyTorch's headers (the torch wheel, PyPI)     -> DIR/torch    (scripts/check-torch-backend.sh);
#   - RAPIDS RMM's C++ test suite (GitHub)          -> DIR/rapids-26.08 (scripts/fetch-rapids-suite.sh;
#     optional: left out, saying so, where GitHub cannot be reached);
#   - RAPIDS RMM's Python tests (GitHub)            -> DIR/rapids-26.08-python (optional, as above),
#     and the wheels they run with (PyPI)           -> DIR/python-wheels
#     (python/tests/rapids-python-suite-requirements.txt; scripts/rapids-python-suite.sh).
# The Debian packages it installs when missing (cmake, ninja-build, g++, gfortran,
# libgtest-dev, libgmock-dev) are not in DIR: install them beforehand (apt-get install cmake
# ninja-build g++ gfortran libgtest-dev libgmock-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/offline-cache.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cargo vendor --locked --versioned-dirs --quiet "$dir/vendor" >/dev/null
mkdir -p "$dir/cargo-home"
cat > "$dir/cargo-home/config.toml" <<TOML
# Written by scripts/offline-cache.sh: every crate from the vendored copy, never the network.
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "$dir/vendor"

[net]
offline = true
TOML
scripts/fetch-cccl.sh "$dir/cccl"
TORCH_FETCH_ONLY=1 scripts/check-torch-backend.sh "$dir/torch"
# Optional: scripts/test.sh skips the RAPIDS suite, saying so, where it is missing.
scripts/fetch-rapids-suite.sh "$dir/rapids-26.08" \
  || echo "offline cache: without RAPIDS RMM's C++ suite (GitHub could not be reached); scripts/test.sh will skip it"
python3 -m pip download --quiet --disable-pip-version-check --dest "$dir/python-wheels" \
  -r python/tests/rapids-python-suite-requirements.txt
scripts/fetch-rapids-python-suite.sh "$dir/rapids-26.08-python" \
  || echo "offline cache: without RAPIDS RMM's Python tests (GitHub could not be reached); scripts/test.sh will skip them"
echo "offline cache ready: RMM_OFFLINE_CACHE=$dir scripts/test.sh"
