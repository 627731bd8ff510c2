# Sourced by the GPU scripts that run against a staged build: the checks they all make first,
# and their section headings.

# Prints a section heading of the script's output.
section() { printf '\n== %s\n' "$*"; }

# Exits 2 with a message unless every one of FILES (paths under the stage folder) exists.
#   require_staged SCRIPT FILE...
require_staged() {
  local script=$1 file
  shift
  for file in "$@"; do
    if [ ! -f "$file" ]; then
      echo "$script: $file is missing: run scripts/stage.sh on a machine with Rust and carry stage/ here" >&2
      exit 2
    fi
  done
}

# Sets `nvcc` to the CUDA compiler (CUDACXX, else the PATH's, else the toolkit's), or exits 2.
#   find_nvcc SCRIPT
find_nvcc() {
  nvcc=${CUDACXX:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc 2>/dev/null | head -n 1 || true)}
  if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
    echo "$1: nvcc not found (set CUDACXX)" >&2
    exit 2
  fi
}
