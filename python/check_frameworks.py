"""rmm-rs under PyTorch, CuPy and Numba on a real GPU (run by scripts/gpu-frameworks.sh).

    python3 python/check_frameworks.py [torch] [cupy] [numba]     (default: all three)

Each check runs in child processes of its own (an allocator must be installed before the
framework touches the GPU) and prints what it measured; a summary follows. Exit status 1 if
any check failed. Checks:

torch  a 3-layer MLP trained for STEPS steps with fixed seeds and deterministic algorithms
       (CUBLAS_WORKSPACE_CONFIG=:4096:8), once with PyTorch's own caching allocator and once
       with rmm_rs.use_for_torch() over an rmm-rs pool: every loss must be bit-identical and
       rmm-rs's statistics must show the allocations. Prints both times.
cupy   matmul, sum, sort, cumsum and elementwise math on rmm-rs memory equal NumPy's, with
       the Python allocator (on CuPy's current stream: a non-default stream's allocations
       must be logged with that stream) and with the CFunctionAllocator; statistics count
       CuPy's allocations. Also times allocate+free pairs against CuPy's own pool.
numba  a @cuda.jit kernel writes an array allocated through the EMM plugin (checked on the
       host); an IPC handle of an array placed at an offset inside a pool chunk is opened in
       a spawned process, which must read the same values; NUMBA_CUDA_MEMORY_MANAGER=rmm_rs
       works.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

STEPS = int(os.environ.get("RMM_CHECK_STEPS", "300"))


def child_env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    env.update(extra)
    return env


def run_child(args, timeout=240, **extra):
    """Runs this file with `args` in a child; returns (returncode, stdout+stderr, result)
    where result is the JSON of its last 'RESULT ' line (or None)."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *args], env=child_env(**extra),
                          capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    result = None
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[len("RESULT "):])
    return done.returncode, output, result


def emit(result):
    print("RESULT " + json.dumps(result), flush=True)


# --------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------


def torch_train(mode):
    """Child: trains the MLP with PyTorch's allocator ('native') or rmm-rs ('rmm')."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import rmm_rs

    if mode == "rmm":
        rmm_rs.configure("pool")  # cuda -> pool (grows on demand) -> statistics
    import torch

    if mode == "rmm":
        rmm_rs.use_for_torch()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    device = torch.device("cuda")
    inputs = torch.randn(4096, 512, device=device)
    targets = torch.randn(4096, 10, device=device)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10),
    ).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    torch.cuda.synchronize()
    start = time.perf_counter()
    steady = None
    for step in range(STEPS):
        if step == 20:
            torch.cuda.synchronize()
            steady = time.perf_counter()
        batch = torch.randint(0, inputs.shape[0], (256,), device=device)
        loss = torch.nn.functional.mse_loss(model(inputs[batch]), targets[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    torch.cuda.synchronize()
    end = time.perf_counter()
    losses = [float(x) for x in torch.stack(losses).cpu()]
    result = {
        "mode": mode,
        "losses": losses,
        "seconds": end - start,
        "steady_ms_per_step": (end - steady) * 1000 / (STEPS - 20),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
    }
    if mode == "rmm":
        stats = rmm_rs.statistics()
        result["statistics"] = stats.as_dict() if stats else None
        with rmm_rs.Resource.of_device() as top:
            snapshot = top.snapshot()
        result["pool_reserved_bytes"] = snapshot["upstream"]["reserved_bytes"]
    else:
        result["max_memory_allocated"] = torch.cuda.max_memory_allocated()
        result["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    emit(result)


def check_torch(report):
    runs = {}
    for mode in ("native", "rmm"):
        code, output, result = run_child(["torch-train", mode])
        if code != 0 or result is None:
            report("torch", False, f"{mode} run failed ({code}):\n{output[-3000:]}")
            return
        runs[mode] = result
    native, rmm = runs["native"], runs["rmm"]
    print(f"  device {native['device']}, torch {native['torch']}, {STEPS} steps")
    for step in sorted({0, 1, 50, 100, STEPS // 2, STEPS - 1}):
        print(f"  step {step:4d}: loss native {native['losses'][step]!r:<22} rmm {rmm['losses'][step]!r}")
    print(f"  time: native {native['seconds']:.3f} s ({native['steady_ms_per_step']:.3f} ms/step after step 20), "
          f"rmm {rmm['seconds']:.3f} s ({rmm['steady_ms_per_step']:.3f} ms/step)")
    print(f"  PyTorch's allocator: peak allocated {native['max_memory_allocated']} B, "
          f"peak reserved {native['max_memory_reserved']} B")
    stats = rmm["statistics"] or {}
    print(f"  rmm-rs statistics: {stats}; pool reserved {rmm['pool_reserved_bytes']} B")
    same = native["losses"] == rmm["losses"]
    differing = [i for i, (a, b) in enumerate(zip(native["losses"], rmm["losses"])) if a != b]
    counted = stats.get("total_count", 0) > 0 and stats.get("peak_bytes", 0) > 0
    detail = (f"losses {'identical' if same else f'DIFFER at {len(differing)} steps (first {differing[:5]})'} "
              f"over {STEPS} steps (final {rmm['losses'][-1]!r}); rmm-rs counted {stats.get('total_count')} "
              f"allocations, peak {stats.get('peak_bytes')} B; time native {native['seconds']:.2f} s, "
              f"rmm {rmm['seconds']:.2f} s")
    report("torch", same and counted, detail)


# --------------------------------------------------------------------------------------
# CuPy
# --------------------------------------------------------------------------------------


def cupy_child():
    import numpy as np
    import cupy

    import rmm_rs

    failures = []

    def check(name, ok):
        print(f"  {'ok  ' if ok else 'FAIL'} {name}", flush=True)
        if not ok:
            failures.append(name)

    # CuPy's own pool first, for the timing comparison (before rmm-rs is installed).
    def time_pairs(n=20000, nbytes=4096):
        for _ in range(100):
            cupy.empty(nbytes, dtype=cupy.uint8)
        start = time.perf_counter()
        for _ in range(n):
            cupy.empty(nbytes, dtype=cupy.uint8)
        return (time.perf_counter() - start) / n * 1e6

    cupy_pool_us = time_pairs()

    log = os.path.join(tempfile.mkdtemp(), "cupy.csv")
    rmm_rs.configure("pool", log=log)
    rmm_rs.use_for_cupy()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 384))
    b = rng.standard_normal((384, 256))
    v = rng.integers(-1000000, 1000000, 1000003)

    def compute(xp, a, b, v):
        return {
            "matmul": xp.matmul(a, b),
            "sum": a.sum(axis=0),
            "sort": xp.sort(v),
            "cumsum": xp.cumsum(v),
            "elementwise": xp.sqrt(xp.abs(a)) * 3 - a ** 2,
        }

    expected = compute(np, a, b, v)
    before = rmm_rs.statistics().total_count
    got = compute(cupy, cupy.asarray(a), cupy.asarray(b), cupy.asarray(v))
    for name, value in got.items():
        host = cupy.asnumpy(value)
        exact = name in ("sort", "cumsum")
        check(f"{name} (default stream) equals NumPy",
              np.array_equal(host, expected[name]) if exact else np.allclose(host, expected[name], rtol=1e-12, atol=1e-12))
    counted = rmm_rs.statistics().total_count - before
    check(f"statistics count CuPy's allocations ({counted})", counted >= len(got))

    # A non-default stream: the allocations must be ordered on it.
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        got = compute(cupy, cupy.asarray(a), cupy.asarray(b), cupy.asarray(v))
        hosts = {name: cupy.asnumpy(value, stream=stream) for name, value in got.items()}
        stream.synchronize()
    for name, host in hosts.items():
        exact = name in ("sort", "cumsum")
        check(f"{name} (non-blocking stream) equals NumPy",
              np.array_equal(host, expected[name]) if exact else np.allclose(host, expected[name], rtol=1e-12, atol=1e-12))
    del got
    rmm_rs.flush_log()
    with open(log) as f:
        rows = [line.split(",") for line in f.read().splitlines()[1:]]
    on_stream = [r for r in rows if r[2] == "allocate" and r[5] != "0" and int(r[5], 16) == stream.ptr]
    check(f"allocations inside `with stream` logged on that stream ({len(on_stream)} of {len(rows)} log lines)",
          len(on_stream) >= 5)

    python_us = time_pairs()
    stats = rmm_rs.statistics()

    # The C function allocator (legacy default stream).
    rmm_rs.use_for_cupy(c_function=True)
    before = rmm_rs.statistics().total_count
    got = compute(cupy, cupy.asarray(a), cupy.asarray(b), cupy.asarray(v))
    for name, value in got.items():
        host = cupy.asnumpy(value)
        exact = name in ("sort", "cumsum")
        check(f"{name} (CFunctionAllocator) equals NumPy",
              np.array_equal(host, expected[name]) if exact else np.allclose(host, expected[name], rtol=1e-12, atol=1e-12))
    check("statistics count the CFunctionAllocator's allocations", rmm_rs.statistics().total_count - before >= len(got))
    del got
    c_us = time_pairs()
    final = rmm_rs.statistics()
    print(f"  rmm-rs statistics after the Python allocator: {stats.as_dict()}")
    print(f"  rmm-rs statistics at the end: {final.as_dict()}")
    print(f"  cupy.empty(4096) allocate+free: CuPy's pool {cupy_pool_us:.2f} us, rmm_rs Python allocator "
          f"{python_us:.2f} us, rmm_rs CFunctionAllocator {c_us:.2f} us")
    emit({"failures": failures, "statistics": final.as_dict(), "cupy": cupy.__version__,
          "us_cupy_pool": cupy_pool_us, "us_python": python_us, "us_cfunction": c_us})
    sys.exit(1 if failures else 0)


def check_cupy(report):
    code, output, result = run_child(["cupy-child"])
    print(output.rstrip())
    if result is None:
        report("cupy", False, f"child failed ({code})")
        return
    stats = result["statistics"]
    detail = (f"cupy {result['cupy']}: {len(result['failures'])} failures; rmm-rs counted {stats['total_count']} "
              f"allocations ({stats['total_bytes']} B); allocate+free {result['us_python']:.2f} us (Python allocator), "
              f"{result['us_cfunction']:.2f} us (C function), {result['us_cupy_pool']:.2f} us (CuPy's pool)")
    report("cupy", code == 0 and not result["failures"], detail)


# --------------------------------------------------------------------------------------
# Numba
# --------------------------------------------------------------------------------------


def ipc_reader(handle):
    """Runs in a spawned process: opens the IPC array handle, returns its values."""
    from numba import cuda

    with handle as array:
        values = array.copy_to_host()
    cuda.synchronize()
    return values


def numba_child():
    import multiprocessing

    import numpy as np

    if not hasattr(np, "row_stack"):
        # numba-cuda (0.30) registers np.row_stack when it compiles its first kernel; NumPy
        # 2.5 removed that alias of vstack. Not an rmm-rs matter: restore it for the check.
        np.row_stack = np.vstack
    from numba import cuda

    import rmm_rs

    failures = []
    notes = {}

    def check(name, ok):
        print(f"  {'ok  ' if ok else 'FAIL'} {name}", flush=True)
        if not ok:
            failures.append(name)

    rmm_rs.configure("pool", initial_pool_size="64MiB")
    rmm_rs.use_for_numba()

    @cuda.jit
    def fill(out, k):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = i * k + 1

    n = 1 << 20
    array = cuda.device_array(n, dtype=np.int64)
    check("the EMM plugin is Numba's memory manager",
          type(cuda.current_context().memory_manager).__name__ == "RMMNumbaManager")
    stats = rmm_rs.statistics()
    check(f"statistics show the device array ({stats.current_bytes} B live)", stats.current_bytes >= n * 8)
    fill[(n + 255) // 256, 256](array, 3)
    host = array.copy_to_host()
    check("kernel output on rmm-rs memory is right", np.array_equal(host, np.arange(n, dtype=np.int64) * 3 + 1))
    del array
    import gc

    gc.collect()
    check("freed when the array dies", rmm_rs.statistics().current_bytes == 0)

    # IPC: an array placed after another in the pool's chunk.
    small = cuda.device_array(16, dtype=np.int64)
    values = np.arange(100000, dtype=np.int64) * 7 - 5
    big = cuda.to_device(values)
    handle = cuda.current_context().get_ipc_handle(big.gpu_data)
    pointer = big.device_ctypes_pointer.value
    start, _ = cuda.cudadrv.driver.device_extents(big.gpu_data)
    print(f"  pool chunk at {int(start):#x}, small array at {small.device_ctypes_pointer.value:#x}, "
          f"big array at {pointer:#x}: IPC offset {handle.offset}")
    notes["ipc_offset"] = handle.offset
    check("the IPC handle's offset is the array's place in the pool chunk",
          handle.offset > 0 and handle.offset == pointer - int(start) == rmm_rs.allocation_offset(pointer))
    array_handle = big.get_ipc_handle()
    try:
        context = multiprocessing.get_context("spawn")
        with context.Pool(1) as pool:
            seen = pool.apply_async(ipc_reader, (array_handle,)).get(timeout=90)
    except Exception as error:  # noqa: BLE001: report why IPC is impossible here
        notes["ipc"] = f"not possible here: {type(error).__name__}: {error}"
        print(f"  SKIP opening the IPC handle in another process: {notes['ipc']}")
    else:
        notes["ipc"] = "opened in a spawned process"
        check("a spawned process reads the array through the IPC handle", np.array_equal(seen, values))
    del small, big

    # The environment variable route.
    code = (
        "import numpy as np, rmm_rs\n"
        "from numba import cuda\n"
        "a = cuda.to_device(np.arange(10))\n"
        "print(type(cuda.current_context().memory_manager).__name__, rmm_rs.statistics().total_count)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=child_env(NUMBA_CUDA_MEMORY_MANAGER="rmm_rs"),
                          capture_output=True, text=True, timeout=120)
    words = done.stdout.split()
    check(f"NUMBA_CUDA_MEMORY_MANAGER=rmm_rs ({done.stdout.strip() or done.stderr.strip()[-300:]})",
          done.returncode == 0 and words[:1] == ["RMMNumbaManager"] and int(words[1]) >= 1)
    final = rmm_rs.statistics()
    print(f"  rmm-rs statistics: {final.as_dict()}")
    import numba

    emit({"failures": failures, "statistics": final.as_dict(), "numba": numba.__version__, **notes})
    sys.exit(1 if failures else 0)


def check_numba(report):
    code, output, result = run_child(["numba-child"])
    print(output.rstrip())
    if result is None:
        report("numba", False, f"child failed ({code})")
        return
    detail = (f"numba {result['numba']}: {len(result['failures'])} failures; IPC offset {result.get('ipc_offset')} "
              f"({result.get('ipc')}); rmm-rs counted {result['statistics']['total_count']} allocations")
    report("numba", code == 0 and not result["failures"], detail)


# --------------------------------------------------------------------------------------


def main(argv):
    if argv[:1] == ["torch-train"]:
        return torch_train(argv[1])
    if argv[:1] == ["cupy-child"]:
        return cupy_child()
    if argv[:1] == ["numba-child"]:
        return numba_child()
    checks = {"torch": check_torch, "cupy": check_cupy, "numba": check_numba}
    names = argv or list(checks)
    unknown = [name for name in names if name not in checks]
    if unknown:
        sys.exit(f"unknown checks {unknown}: choose from {list(checks)}")
    results = []

    def report(name, ok, detail):
        results.append((name, ok, detail))

    for name in names:
        print(f"\n== {name}", flush=True)
        start = time.perf_counter()
        try:
            checks[name](report)
        except Exception as error:  # noqa: BLE001
            report(name, False, f"{type(error).__name__}: {error}")
        print(f"  ({time.perf_counter() - start:.1f} s)", flush=True)
    print("\n== summary")
    for name, ok, detail in results:
        print(f"  {'PASS' if ok else 'FAIL'} {name}: {detail}")
    sys.exit(0 if results and all(ok for _, ok, _ in results) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
