"""Dask on GPUs through rmm-rs: a LocalCluster of one worker process per GPU, each set up by
rmm_rs.dask.RmmRsPlugin (its GPU chosen by worker name, a pool stack built there, CuPy's
and Numba's allocators hooked), then a dask.array computation on CuPy chunks checked against
NumPy.
scripts/gpu-distributed.sh runs it; Dask-CUDA is not needed.

    python3 bench/frameworks/dask_cupy.py [--workers N] [--spec SPEC] [--size N]

Checks, each a failure when it does not hold: every worker sees exactly one GPU, and they are
all different GPUs (PCI bus ids); each worker's stack is the spec's; CuPy allocates through it
(the statistics adaptor counts the allocations of a task pinned to that worker); x @ x.T and
column sums of a dask.array with CuPy chunks equal NumPy's. Prints a Markdown table per
worker. Exit status 0 when every check held.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(HERE, "..", "..", "python")
sys.path.insert(0, PYTHON_DIR)
# The worker processes import rmm_rs.frameworks.dask (the plugin is pickled by reference) and rmm_rs.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.abspath(PYTHON_DIR), os.environ.get("PYTHONPATH")]))


def gpu_identity():
    """Runs on a worker: the PCI bus id of its device 0 and how many devices it sees."""
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    bus = "%04x:%02x:%02x" % (props["pciDomainID"], props["pciBusID"], props["pciDeviceID"])
    return {"pci": bus, "cupy_devices": cupy.cuda.runtime.getDeviceCount(), "name": props["name"].decode()}


def pinned_task(n):
    """Runs on one worker: CuPy work whose memory must come from the worker's rmm-rs stack."""
    import cupy

    import rmm_rs

    before = rmm_rs.statistics(0).total_count
    a = cupy.arange(n, dtype=cupy.float64)
    total = float((a * 2).sum())
    del a
    cupy.cuda.Device(0).synchronize()
    return total, rmm_rs.statistics(0).total_count - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=0, help="0: one per GPU")
    parser.add_argument("--spec", default="statistics/pool:initial=256MiB")
    parser.add_argument("--size", type=int, default=4096, help="the matrix is SIZE x SIZE float64")
    args = parser.parse_args()

    import dask
    import dask.array as da
    import distributed
    import numpy as np
    from distributed import Client, LocalCluster

    import rmm_rs

    gpus = rmm_rs.device_count()
    workers = args.workers or gpus
    print(f"dask {dask.__version__}, distributed {distributed.__version__}; {gpus} GPUs, {workers} workers; "
          f"spec {args.spec}", flush=True)
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)
            print("FAILED:", what, flush=True)

    start = time.time()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        started = time.time() - start
        # register_plugin since distributed 2023.9; register_worker_plugin before it.
        register = getattr(client, "register_plugin", None) or client.register_worker_plugin
        register(rmm_rs.dask.RmmRsPlugin(args.spec, device="name"))
        info = client.run(rmm_rs.dask.describe)
        identity = client.run(gpu_identity)
        by_name = sorted(info, key=lambda address: int(info[address]["worker"]))
        for address in by_name:
            worker = info[address]
            check(worker["device_count"] == 1 and identity[address]["cupy_devices"] == 1,
                  f"worker {worker['worker']} sees {worker['device_count']} devices (CuPy: {identity[address]['cupy_devices']})")
            check(worker["stack"] == "statistics/pool/cuda", f"worker {worker['worker']}: stack {worker['stack']}")
            check(worker["cupy"], f"worker {worker['worker']}: CuPy not hooked")
        buses = [identity[address]["pci"] for address in by_name]
        check(len(set(buses)) == min(workers, gpus), f"workers share GPUs: {buses}")

        # CuPy memory on each worker comes from its stack: a task pinned there is counted.
        pinned = {address: client.submit(pinned_task, 1 << 20, workers=[address], pure=False) for address in by_name}
        expected_total = float(2 * sum(range(1 << 20)))
        for address, future in pinned.items():
            total, counted = future.result()
            check(total == expected_total, f"worker {info[address]['worker']}: sum {total} != {expected_total}")
            check(counted >= 1, f"worker {info[address]['worker']}: CuPy's allocations did not reach rmm-rs ({counted})")

        # A dask.array on CuPy chunks: rows split over the workers.
        import cupy

        rng = np.random.default_rng(0)
        host = rng.standard_normal((args.size, args.size))
        x = da.from_array(host, chunks=(max(1, args.size // (2 * workers)), args.size)).map_blocks(cupy.asarray)
        compute_start = time.time()
        gram, column_sums = dask.compute((x @ x.T).map_blocks(cupy.asnumpy), x.sum(axis=0).map_blocks(cupy.asnumpy))
        compute_time = time.time() - compute_start
        check(isinstance(gram, np.ndarray), f"the result came back as {type(gram)}")
        check(np.allclose(gram, host @ host.T, rtol=1e-9, atol=1e-8), "x @ x.T differs from NumPy's")
        check(np.allclose(column_sums, host.sum(axis=0), rtol=1e-9, atol=1e-8), "x.sum(axis=0) differs from NumPy's")

        after = client.run(rmm_rs.dask.describe)
        print(f"\ncluster started in {started:.1f} s; x @ x.T and sums of {args.size}x{args.size} float64 in "
              f"{compute_time:.2f} s\n")
        print("| worker | GPU (PCI) | sees | stack | allocations | peak bytes | CuPy, Numba hooked |")
        print("|---|---|---|---|---|---|---|")
        for address in by_name:
            worker = after[address]
            stats = worker["statistics"] or {}
            print(f"| {worker['worker']} | {identity[address]['pci']} {identity[address]['name']} | {worker['visible']} | "
                  f"{worker['stack']} | {stats.get('total_count')} | {stats.get('peak_bytes')} | {worker['cupy']}, {worker['numba']} |")
    print()
    if failures:
        print(f"dask_cupy: {len(failures)} checks failed")
        return 1
    print("dask_cupy: every check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
