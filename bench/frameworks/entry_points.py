"""What an allocate+free costs a framework user, through each framework's own pool and through
rmm-rs's entry points, measured in one run (PyTorch picks its allocator once per process, so
each PyTorch variant runs in a process of its own; CuPy's allocators take turns in one).

    python3 bench/frameworks/entry_points.py            every variant, then a Markdown table
    python3 bench/frameworks/entry_points.py --child torch-rmm   one variant (what the parent runs)

Variants:
- ``cupy``: ``cupy.cuda.alloc(4096)`` and ``cupy.empty(4096, uint8)`` and their release,
  through CuPy's default MemoryPool (pool), through ``CFunctionAllocator`` over
  ``rmmCupyAllocate``/``rmmCupyDeallocate`` (``rmm_rs.use_for_cupy(c_function=True)``) on an
  rmm-rs pool (rmm), and through ``CFunctionAllocator`` over C functions that do nothing but
  hand out one address (noop): what CuPy's own path costs with no allocator at all. The
  three take turns in one process, slice by slice;
- ``torch-native``: ``torch.empty(4096, dtype=uint8, device="cuda")`` and its release with
  PyTorch's caching allocator; ``torch-rmm``: the same through ``CUDAPluggableAllocator``
  over ``rmmTorchAllocate``/``rmmTorchDeallocate`` (``rmm_rs.use_for_torch()`` with nothing
  configured: its default stack, ``rmm_rs.TORCH_DEFAULT_SPEC``); ``torch-noop``: the pluggable
  allocator over do-nothing functions.

rmm-rs minus noop is what rmm-rs adds; noop minus the framework's own pool is what the
framework charges an external allocator whatever it does. A variant's process reports the
median of ROUNDS (default 15) rounds of PAIRS (default 20000) pairs; every variant runs in
each of REPEATS (default 3) rounds, in turn, and the table gives the median of its rounds.

Environment: RMM_RS_LIBRARY (librmm.so; scripts/gpu-frameworks-bench.sh sets it), CC (the C
compiler for the do-nothing allocator, default cc), ENTRY_VARIANTS (a comma list).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = ["cupy", "torch-native", "torch-rmm", "torch-noop"]
SIZE = 4096

# Hands out one address, never touched (each pair frees before the next allocation): a fixed
# one, or a real device block the caller names (CuPy's variant takes one from its own pool).
NOOP_SOURCE = r"""
#include <stddef.h>
#include <sys/types.h>
static void *fixed = (void *)0x7f0000000000;
void noop_set_address(void *address) { fixed = address; }
void *noop_cupy_malloc(void *param, size_t size, int device) { (void)param; (void)size; (void)device; return fixed; }
void noop_cupy_free(void *param, void *ptr, int device) { (void)param; (void)ptr; (void)device; }
void *noop_torch_malloc(ssize_t size, int device, void *stream) { (void)size; (void)device; (void)stream; return fixed; }
void noop_torch_free(void *ptr, ssize_t size, int device, void *stream) { (void)ptr; (void)size; (void)device; (void)stream; }
"""


def build_noop(folder):
    source = os.path.join(folder, "noop.c")
    library = os.path.join(folder, "libnoop.so")
    with open(source, "w") as f:
        f.write(NOOP_SOURCE)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", source, "-o", library], check=True)
    return library


def rmm_rs():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import rmm_rs as module

    module.configure("pool", statistics=False)
    return module


def time_pairs(pair, pairs, rounds):
    for _ in range(pairs // 10):
        pair()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(pairs):
            pair()
        samples.append((time.perf_counter() - start) / pairs * 1e9)
    return statistics.median(samples)


def cupy_child(noop_library, pairs, rounds):
    """CuPy can change its allocator at any time: the three allocators take turns in one
    process, slice by slice, so a slow spell of the host falls on all of them alike."""
    import ctypes

    import cupy

    pool = cupy.cuda.get_allocator()
    noop = ctypes.CDLL(noop_library)
    held = cupy.empty(1 << 20, dtype=cupy.uint8)  # a real block from CuPy's pool
    noop.noop_set_address(ctypes.c_void_p(held.data.ptr))
    address = lambda f: ctypes.cast(f, ctypes.c_void_p).value  # noqa: E731
    noop_allocator = cupy.cuda.memory.CFunctionAllocator(0, address(noop.noop_cupy_malloc), address(noop.noop_cupy_free), noop)
    allocators = {"pool": pool, "rmm": rmm_rs().use_for_cupy(c_function=True), "noop": noop_allocator.malloc}
    alloc, empty, uint8 = cupy.cuda.alloc, cupy.empty, cupy.uint8
    samples = {name: ([], []) for name in allocators}
    for round_number in range(rounds + 1):
        names = list(allocators)
        names = names[round_number % len(names):] + names[:round_number % len(names)]
        for name in names:
            cupy.cuda.set_allocator(allocators[name])
            pair_ns = time_pairs(lambda: alloc(SIZE), pairs, 1)
            empty_ns = time_pairs(lambda: empty(SIZE, dtype=uint8), pairs, 1)
            if round_number > 0:  # the first round warms up
                samples[name][0].append(pair_ns)
                samples[name][1].append(empty_ns)
    cupy.cuda.set_allocator(pool)
    for name, (pair_samples, empty_samples) in samples.items():
        print(json.dumps({"variant": f"cupy-{name}", "ns_per_pair": statistics.median(pair_samples),
                          "ns_per_empty": statistics.median(empty_samples), "version": cupy.__version__}))


def child(variant, noop_library):
    pairs = int(os.environ.get("PAIRS", "20000"))
    rounds = int(os.environ.get("ROUNDS", "15"))
    if variant == "cupy":
        return cupy_child(noop_library, pairs, rounds)
    import torch

    allocator = variant.split("-", 1)[1]
    if allocator == "rmm":
        rmm_rs().use_for_torch()
    elif allocator == "noop":
        chosen = torch.cuda.memory.CUDAPluggableAllocator(noop_library, "noop_torch_malloc", "noop_torch_free")
        torch.cuda.memory.change_current_allocator(chosen)
    device = torch.device("cuda")
    empty, uint8 = torch.empty, torch.uint8
    ns = time_pairs(lambda: empty(SIZE, dtype=uint8, device=device), pairs, rounds)
    print(json.dumps({"variant": variant, "ns_per_pair": ns, "ns_per_empty": ns, "version": torch.__version__}))


ROWS = [("cupy", "pool", "ns_per_pair", "CuPy: cupy.cuda.alloc(4096) and its release"),
        ("cupy", "pool", "ns_per_empty", "CuPy: cupy.empty(4096, uint8) and its release"),
        ("torch", "native", "ns_per_empty", "PyTorch: torch.empty(4096, uint8) and its release")]


def table(results):
    by = {r["variant"]: r for r in results}
    lines = ["| ns per allocate+free | the framework's own pool | rmm-rs | do-nothing allocator | rmm-rs adds | the framework charges an external allocator |",
             "|---|---|---|---|---|---|"]
    for framework, own, key, label in ROWS:
        own_ns, rmm_ns, noop_ns = (by.get(f"{framework}-{a}", {}).get(key) for a in (own, "rmm", "noop"))
        if None in (own_ns, rmm_ns, noop_ns):
            continue
        lines.append(f"| {label} | {own_ns:.0f} | {rmm_ns:.0f} | {noop_ns:.0f} | {rmm_ns - noop_ns:+.0f} | {noop_ns - own_ns:+.0f} |")
    return "\n".join(lines)


def main(argv):
    if argv[:1] == ["--child"]:
        return child(argv[1], argv[2] if len(argv) > 2 else "")
    variants = [v for v in os.environ.get("ENTRY_VARIANTS", ",".join(VARIANTS)).split(",") if v]
    # The hosts change speed for seconds at a time: every variant runs in each of REPEATS
    # rounds, in turn, and reports the median of its rounds.
    repeats = int(os.environ.get("REPEATS", "3"))
    runs = {}
    with tempfile.TemporaryDirectory() as folder:
        noop_library = build_noop(folder)
        for _ in range(repeats):
            for variant in variants:
                done = subprocess.run([sys.executable, __file__, "--child", variant, noop_library], capture_output=True, text=True)
                if done.returncode != 0:
                    print(f"{variant}: failed ({done.returncode})\n{done.stderr[-2000:]}", file=sys.stderr)
                    continue
                for line in done.stdout.strip().splitlines():
                    result = json.loads(line)
                    print(json.dumps(result), flush=True)
                    runs.setdefault(result["variant"], []).append(result)
    results = [{"variant": variant, "version": done[0]["version"],
                **{key: statistics.median(r[key] for r in done) for key in ("ns_per_pair", "ns_per_empty")}}
               for variant, done in runs.items() if done]
    print(table(results))
    return 0 if all(len(done) == repeats for done in runs.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
