"""Programs that cannot be rebuilt, under ``LD_PRELOAD=librmm_preload.so``: each runs without
the preload library, with it and nothing configured, and with it on each stack, every run a
process of its own. Prints one JSON line per run, then a Markdown table.

    python3 bench/frameworks/preload_bench.py PRELOAD_LIBRARY LOOP_PROGRAM THREADS_PROGRAM

Programs:
- ``torch-nocache``: PyTorch with its caching allocator off (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``,
  so every tensor is a ``cudaMalloc`` and a ``cudaFree``, as in many legacy solvers), training
  torchvision's ResNet-50 on synthetic data, batch 64; the median step time, the device
  memory held at the end above the process's start, and the most in use above the start
  (``peak_mib``: ``mem_get_info`` after every forward pass, backward pass and optimizer step;
  ``torch.cuda.max_memory_reserved`` does not see ``cudaMalloc`` with PyTorch's cache off). ``torch-cache`` is PyTorch's own caching
  allocator, without the preload library, for comparison. ``torch-nocache-amp`` and
  ``torch-cache-amp``: the same with bf16 autocast and channels-last tensors.
- ``cupy-nopool``: CuPy with its memory pool off (every array a ``cudaMalloc``), a loop of
  element-wise and reduction work on arrays of changing sizes; ms per iteration.
- ``loop-static``: ``bench/preload_loop.cu`` (``cudaMalloc``, kernels, ``cudaFree``), linked with
  the static CUDA runtime, which the preload library reaches through the driver; us per
  iteration, and its checksum, which must match the run without the preload library.
- ``threads-1``, ``threads-8``: ``bench/preload_threads.cu``, a legacy multi-threaded program
  (each thread ``cudaMalloc`` 256 B-1 MiB, a kernel and a copy every 16th iteration,
  ``cudaFree``; static runtime), on 1 and 8 threads; us per pair over all threads, and its
  checksum, which must match the run without the preload library.

Configurations: ``none`` (no preload), ``unset`` (preload, ``RMM_ALLOC_CONF`` unset), and each
spec of PRELOAD_SPECS (default: cuda, statistics/pool, statistics/expandable,
async_free/statistics/pool, async_free/statistics/expandable).
Environment: PRELOAD_PROGRAMS (comma list), PRELOAD_SPECS (comma list, specs without commas,
passed to ``RMM_ALLOC_CONF`` as written, e.g. ``async_free:pending=2%/statistics/pool``),
PRELOAD_STEPS (timed ResNet steps, default 10), PRELOAD_BASELINES (which of none, unset and
cache run; default all three), PRELOAD_BEFORE (another build's preload library: each spec runs
under it too, just before, as "before: SPEC", for a before/after in one run; PRELOAD_BEFORE_SPECS:
only these specs, e.g. those the other build can parse).
"""

import json
import os
import statistics
import subprocess
import sys
import time

SPECS = ["cuda", "statistics/pool", "statistics/expandable", "async_free/statistics/pool", "async_free/statistics/expandable"]
PROGRAMS = ["torch-nocache", "torch-nocache-amp", "cupy-nopool", "loop-static", "threads-1", "threads-8"]
# The programs that run a compiled binary (argv after the binary), and their result unit.
NATIVE = {"loop-static": [], "threads-1": ["1"], "threads-8": ["8"]}


def held_mib(torch):
    free, total = torch.cuda.mem_get_info()
    return (total - free) / (1 << 20)


def torch_child(cache, amp):
    if not cache:
        os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    import torch
    import torchvision

    torch.manual_seed(0)
    torch.cuda.init()
    start_held = held_mib(torch)
    model = torchvision.models.resnet50().cuda()
    if amp:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = torch.randn(64, 3, 224, 224, device="cuda")
    if amp:
        data = data.to(memory_format=torch.channels_last)
    target = torch.randint(0, 1000, (64,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    peak = start_held
    steps = int(os.environ.get("PRELOAD_STEPS", "10"))
    for step in range(steps + 3):
        torch.cuda.synchronize()
        began = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(data), target)
        # The activations are all live here; a reading costs a few microseconds of a ~30 ms
        # step and needs no synchronization (allocations reserve memory when they return).
        peak = max(peak, held_mib(torch))
        loss.backward()
        peak = max(peak, held_mib(torch))
        optimizer.step()
        peak = max(peak, held_mib(torch))
        torch.cuda.synchronize()
        if step >= 3:
            times.append((time.perf_counter() - began) * 1000)
    return {
        "ms": statistics.median(times),
        "held_mib": round(held_mib(torch) - start_held),
        "peak_mib": round(peak - start_held),
        "loss": float(loss),
    }


def cupy_child():
    import cupy

    cupy.cuda.set_allocator(None)
    cupy.cuda.set_pinned_memory_allocator(None)
    sizes = [1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22]

    def iteration(i):
        n = sizes[i % len(sizes)]
        a = cupy.arange(n, dtype=cupy.float32)
        b = a * 2 + 1
        c = cupy.sqrt(b) - a
        return float(c[:16].sum())

    for i in range(200):
        iteration(i)
    cupy.cuda.Device().synchronize()
    began = time.perf_counter()
    total = 0.0
    count = 2000
    for i in range(count):
        total += iteration(i)
    cupy.cuda.Device().synchronize()
    return {"ms": (time.perf_counter() - began) * 1000 / count, "checksum": total}


def child(program):
    if program.startswith("torch-"):
        return torch_child(program.startswith("torch-cache"), program.endswith("-amp"))
    if program == "cupy-nopool":
        return cupy_child()
    raise SystemExit(f"unknown program {program}")


def run(program, config, preload, binaries):
    env = dict(os.environ)
    env.pop("RMM_ALLOC_CONF", None)
    env.pop("LD_PRELOAD", None)
    if config != "none":
        env["LD_PRELOAD"] = preload
        if config != "unset":
            env["RMM_ALLOC_CONF"] = config
    if program in NATIVE:
        command = [binaries[program.split("-")[0]]] + NATIVE[program]
    else:
        command = [sys.executable, __file__, "--child", program]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - began
    result = {"program": program, "config": config, "wall_s": round(wall, 1), "status": done.returncode}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            fields = line.split()
            if program in NATIVE:
                result.update({"us": float(fields[1]), "checksum": float(fields[2])})
            else:
                result.update(json.loads(line[len("RESULT "):]))
    if done.returncode != 0:
        result["error"] = (done.stderr or done.stdout)[-400:]
    print(json.dumps(result), flush=True)
    return result


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        print("RESULT " + json.dumps(child(sys.argv[2])), flush=True)
        return
    preload = sys.argv[1]
    binaries = {"loop": sys.argv[2], "threads": sys.argv[3]}
    programs = [p for p in os.environ.get("PRELOAD_PROGRAMS", ",".join(PROGRAMS)).split(",") if p]
    specs = [s for s in os.environ.get("PRELOAD_SPECS", ",".join(SPECS)).split(",") if s]
    baselines = [b for b in os.environ.get("PRELOAD_BASELINES", "none,unset,cache").split(",") if b]
    configs = [b for b in baselines if b in ("none", "unset")] + specs
    # PRELOAD_BEFORE=LIB: each spec also under another build of the preload library, run just
    # before this one's (configuration "before: SPEC"), for a before/after in one run.
    before = os.environ.get("PRELOAD_BEFORE")
    before_specs = [s for s in os.environ.get("PRELOAD_BEFORE_SPECS", ",".join(specs)).split(",") if s]
    results = []
    for program in programs:
        if program.startswith("torch-nocache") and "cache" in baselines:
            results.append(run(program.replace("nocache", "cache"), "none", preload, binaries))
        for config in configs:
            if before and config in before_specs:
                result = run(program, config, before, binaries)
                result["config"] = "before: " + config
                results.append(result)
            results.append(run(program, config, preload, binaries))
    print()
    print("| program | configuration | time | vs. no preload | held MiB | peak MiB | check |")
    print("|---|---|---|---|---|---|---|")
    for program in programs:
        rows = [r for r in results if r["program"] == program]
        base = next((r for r in rows if r["config"] == "none"), None)
        key, unit = ("us", "us/iteration" if program == "loop-static" else "us/pair") if program in NATIVE else ("ms", "ms/step" if "torch" in program else "ms/iteration")
        cached = program.replace("nocache", "cache")
        for r in [x for x in results if x["program"] == cached] if cached != program else []:
            print(f"| {cached} (its own caching allocator) | none | {r.get(key, 0):.2f} {unit} | - | {r.get('held_mib', '-')} | {r.get('peak_mib', '-')} | |")
        for r in rows:
            if key not in r:
                print(f"| {program} | {r['config']} | failed: {r.get('error', '')[:120]!r} | | | | |")
                continue
            speedup = f"{base[key] / r[key]:.2f}x faster" if base and key in base else "-"
            check = ""
            if "checksum" in r and base and "checksum" in base:
                check = "same result" if abs(r["checksum"] - base["checksum"]) <= 1e-3 * abs(base["checksum"]) + 1e-6 else "RESULT DIFFERS"
            if "loss" in r:
                check = f"loss {r['loss']:.3f}"
            print(f"| {program} | {r['config']} | {r[key]:.2f} {unit} | {speedup} | {r.get('held_mib', '-')} | {r.get('peak_mib', '-')} | {check} |")


if __name__ == "__main__":
    main()
