#!/usr/bin/env bash
# Every check of the docs CI runs (after scripts/test.sh): the C API reference is what
# scripts/generate_api_docs.py writes from include/rmm.h; the book (docs/) builds with mdBook
# and has no broken link; every sample of the book and README.md compiles and runs on a
# simulated device. Installs mdBook with cargo when it is missing (about 3 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== API reference up to date with rmm.h"
python3 scripts/generate_api_docs.py
git diff --exit-code -- docs/src/api
untracked=$(git ls-files --others --exclude-standard -- docs/src/api)
if [ -n "$untracked" ]; then
  echo "not committed: $untracked" >&2
  exit 1
fi

echo "== the book"
command -v mdbook >/dev/null || cargo install --locked mdbook
mdbook build docs
python3 scripts/check-docs.py docs/book

echo "== samples of the book and README.md"
cargo build --release --workspace --lib --bins
python3 scripts/check-doc-samples.py
