#!/usr/bin/env bash
# The threads matrix on a GPU machine (bench/threads_matrix.hpp): threads {1, 2, 4, 8, 16} x
# streams {NULL, per-thread default, rmmStreamCreate, one application stream shared by all,
# a cudaStreamCreate stream of its own per thread, a short-lived stream each thread makes and
# destroys inside the timing with the pool warm or given back first, producers handing blocks
# to consumer threads that free them} x sizes {256 B, 256 B-32 KiB, random up to 4 MiB}, ns
# per allocate+free pair in aggregate (wall time over all pairs of all threads), and what each
# allocator held after each cell.
# Columns: rmm-rs's pool of each build through rmmResourceAllocate and through RMM_ALLOC, and
# cudaMallocAsync, in one process (bench/threads_matrix.cu: the builds' librmm.so loaded side
# by side, taking turns run by run, as bench/pair_ab.c does); then RAPIDS RMM's pool
# (bench/threads_matrix_rapids.cu, a process of its own) when its wheels (librmm-cu13,
# rapids-logger) lie in .whl/ (docs/src/performance.md says how to get them). Prints a
# Markdown table: rows (threads, stream, sizes), a column per allocator, each figure with its
# ratio to one thread on the same streams and sizes.
#
#   scripts/gpu-threads-matrix.sh [DIR]   DIR holds librmm_<name>.so (or .so.gz, to carry
#                                         less) builds to compare, in name order, the first
#                                         the baseline; default: stage/lib/librmm.so (from
#                                         scripts/stage.sh)
#
# Subsets (comma-separated): MATRIX_THREADS=1,8 MATRIX_STREAMS=null,ptds,rmm,app,own,short,short-cold,handoff
# MATRIX_SIZES=256,mixed,random4m MATRIX_APIS=resource,legacy,async,rapids (async:
# cudaMallocAsync, rapids: RAPIDS RMM's pool); BENCH_RUNS (default 5) timed runs after a
# warm-up; MATRIX_PAIRS (default 160000) pairs per cell and run, MATRIX_SLOW (default 8) the
# divisor of them for cudaMallocAsync and RAPIDS. MATRIX_SEPARATE=1 runs each build in a
# process of its own instead (with its own cudaMallocAsync column). Output in BENCH_OUT, else
# OUT, else a new folder under /tmp: the CSV rows of each process and matrix.md.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/gpu-common.sh
. scripts/gpu-common.sh
find_nvcc gpu-threads-matrix.sh
PATH="$(dirname "$nvcc"):$PATH"  # rapids-bench.sh calls nvcc by name
unset RMM_SIM_DEVICES RMM_ALLOC_CONF
out=${BENCH_OUT:-${OUT:-$(mktemp -d /tmp/rmm-threads-matrix.XXXXXX)}}
mkdir -p "$out"
arch=${CUDA_ARCH:-sm_90}
apis=",${MATRIX_APIS:-resource,legacy,async,rapids},"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
lscpu | grep -E "^Model name|^CPU\(s\)" || true

# The builds, copied into $out/libs (two builds never share one loaded file): NAME=PATH each.
libs=$out/libs
rm -rf "$libs"
mkdir -p "$libs"
if [ -n "${1:-}" ]; then
  [ -d "$1" ] || { echo "gpu-threads-matrix.sh: $1 is not a folder" >&2; exit 2; }
  shopt -s nullglob
  for lib in "$1"/librmm_*.so.gz; do gunzip -c "$lib" >"$libs/$(basename "$lib" .gz)"; done
  for lib in "$1"/librmm_*.so; do cp "$lib" "$libs/"; done
  shopt -u nullglob
else
  require_staged gpu-threads-matrix.sh stage/lib/librmm.so
  cp stage/lib/librmm.so "$libs/librmm_stage.so"
  if [ -f stage/STAGED.txt ]; then cat stage/STAGED.txt; fi
fi
builds=()
for lib in "$libs"/librmm_*.so; do
  [ -e "$lib" ] || { echo "gpu-threads-matrix.sh: no librmm_<name>.so or .so.gz in $1" >&2; exit 2; }
  name=$(basename "$lib" .so)
  builds+=("${name#librmm_}=$lib")
done
echo "builds: ${builds[*]}"

csvs=()
if [[ $apis == *,resource,* || $apis == *,legacy,* || $apis == *,async,* ]]; then
  section "build bench/threads_matrix.cu"
  "$nvcc" -std=c++17 -O3 -arch="$arch" -Iinclude -Ibench bench/threads_matrix.cu -ldl -lpthread \
    -o "$out/threads_matrix"
  if [ "${MATRIX_SEPARATE:-0}" = 1 ]; then
    for build in "${builds[@]}"; do
      name=${build%%=*}
      section "rmm-rs build $name and cudaMallocAsync"
      "$out/threads_matrix" "$build" | sed "s/,cudaMallocAsync,/,cudaMallocAsync[$name],/" >"$out/matrix_$name.csv"
      csvs+=("$out/matrix_$name.csv")
    done
  else
    section "rmm-rs builds and cudaMallocAsync"
    "$out/threads_matrix" "${builds[@]}" >"$out/matrix_rmm_rs.csv"
    csvs+=("$out/matrix_rmm_rs.csv")
  fi
fi
if [[ $apis == *,rapids,* ]]; then
  section "RAPIDS RMM's pool"
  # shellcheck source=scripts/rapids-bench.sh
  . scripts/rapids-bench.sh
  if ! CUDA_ARCH=$arch rapids_bench bench/threads_matrix_rapids.cu "$out/threads_matrix_rapids"; then
    echo "no RAPIDS column: its program was not built"
  elif ! "$out/threads_matrix_rapids" >"$out/matrix_rapids.csv"; then
    echo "no RAPIDS column: its program failed"
  else
    csvs+=("$out/matrix_rapids.csv")
  fi
fi
[ ${#csvs[@]} -gt 0 ] || { echo "gpu-threads-matrix.sh: MATRIX_APIS selected nothing that ran" >&2; exit 2; }

section "threads matrix"
python3 - "${csvs[@]}" <<'PY' | tee "$out/matrix.md"
"""The CSV rows of the matrix programs as Markdown: ns per pair in aggregate (median of the
timed runs) with the ratio to one thread on the same streams and sizes; each build against the
first, run by run; and the fastest and slowest run."""
import csv
import sys

STREAMS = {"null": "NULL", "ptds": "per-thread default", "rmm": "rmmStreamCreate, each its own",
           "app": "one application stream", "own": "cudaStreamCreate, each its own",
           "short": "short-lived, each its own (walk)", "short-cold": "short-lived, pool given back first (walk)",
           "handoff": "NULL, half allocate, half free (hand-off)"}
SIZES = {"256": "256 B", "mixed": "256 B-32 KiB", "random4m": "random ≤ 4 MiB"}
rows = []
for path in sys.argv[1:]:
    with open(path) as f:
        rows += [r for r in csv.DictReader(f) if r.get("workload")]


def key(workload):
    cell = dict(part.split("=") for part in workload.split())
    return int(cell["threads"]), cell["stream"], cell["sizes"]


def order(k):  # grouped by sizes and streams, threads ascending within
    threads, stream, sizes = k
    return list(SIZES).index(sizes), list(STREAMS).index(stream), threads


ratios = [r for r in rows if r["workload"].startswith("ratio% ")]
held = [r for r in rows if r["workload"].startswith("held_MiB ")]
rows = [r for r in rows if not r["workload"].startswith(("ratio% ", "held_MiB "))]
allocators = list(dict.fromkeys(r["allocator"] for r in rows))
cell = {(key(r["workload"]), r["allocator"]): r for r in rows}
cells = sorted({key(r["workload"]) for r in rows}, key=order)


def table(title, names, value):
    print(f"{title}\n")
    print(f"| threads | stream | sizes | {' | '.join(names)} |")
    print("|---" * (len(names) + 3) + "|")
    for k in cells:
        values = [value(k, a) for a in names]
        if any(v != "-" for v in values):
            print(f"| {k[0]} | {STREAMS[k[1]]} | {SIZES[k[2]]} | " + " | ".join(values) + " |")
    print()


def with_ratio(k, a):
    r = cell.get((k, a))
    if not r:
        return "-"
    one = cell.get(((1,) + k[1:], a))
    ns = float(r["ns_per_alloc"])
    return f"{ns:.1f}" + (f" ({ns / float(one['ns_per_alloc']):.2f})" if one and k[0] != 1 else "")


table("ns per allocate+free pair in aggregate (wall time over all pairs of all threads), median "
      "of the timed runs; in brackets: over one thread on the same streams and sizes.",
      allocators, with_ratio)
if ratios:
    by = {(key(r["workload"][len("ratio% "):]), r["allocator"]): r for r in ratios}
    names = list(dict.fromkeys(r["allocator"] for r in ratios))

    def build_ratio(k, a):
        if (k, a) not in by:
            return "-"
        r = {field: float(by[(k, a)][field]) / 100 for field in ("ns_per_alloc", "ns_min", "ns_max")}
        return f"{r['ns_per_alloc']:.3f} ({r['ns_min']:.2f}-{r['ns_max']:.2f})"

    table("Each build over the first build in the same run: median (lowest-highest) of the runs.", names, build_ratio)
if held:
    held_by = {(key(r["workload"][len("held_MiB "):]), r["allocator"]): r for r in held}
    table("MiB held from the driver after a run of the cell: median (lowest-highest) of the runs.",
          list(dict.fromkeys(r["allocator"] for r in held)),
          lambda k, a: (f"{float(held_by[(k, a)]['ns_per_alloc']):.0f} ({float(held_by[(k, a)]['ns_min']):.0f}-"
                        f"{float(held_by[(k, a)]['ns_max']):.0f})") if (k, a) in held_by else "-")
table("Fastest - slowest run, ns per pair.", allocators,
      lambda k, a: f"{cell[(k, a)]['ns_min']} - {cell[(k, a)]['ns_max']}" if (k, a) in cell else "-")
PY
echo "CSV and matrix.md in $out"
