"""MPI ranks on rmm-rs: one GPU per rank (mpi4py), each rank's own rmm-rs stack on its GPU and
CuPy allocating from it, then an allreduce and a ring of send/recv on those GPU buffers.
scripts/gpu-distributed.sh runs it:

    mpirun -n N python3 bench/frameworks/mpi_cupy.py [--spec SPEC] [--elements N]

A rank's GPU is its rank on its node (MPI_COMM_TYPE_SHARED), modulo the GPUs it sees. MPI
built with CUDA support takes the GPU buffers themselves; other builds would crash on a device
pointer, so the buffers are then staged through host memory (printed: "host staging").
RMM_MPI_CUDA_AWARE=1 or 0 overrides the detection (MPI.Query_cuda_support where mpi4py has
it, else Open MPI's ompi_info).

Checks, on every rank (exit status 1 on every rank when one fails anywhere): the rank's stack
is on its GPU and CuPy's allocations reach it (its statistics count them); the allreduce sum
of rank-filled buffers is N(N+1)/2 everywhere; each rank receives its left neighbour's buffer
in the ring. Rank 0 prints a Markdown table.
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def cuda_aware(MPI):
    """Whether this MPI takes device pointers, and how that was decided."""
    forced = os.environ.get("RMM_MPI_CUDA_AWARE")
    if forced in ("0", "1"):
        return forced == "1", f"RMM_MPI_CUDA_AWARE={forced}"
    query = getattr(MPI, "Query_cuda_support", None)
    if query is not None:
        try:
            return bool(query()), "MPI.Query_cuda_support()"
        except Exception as error:  # noqa: BLE001 - an MPI without the extension: ask ompi_info
            reason = f"MPI.Query_cuda_support() failed ({error})"
    else:
        reason = "mpi4py has no Query_cuda_support"
    try:
        info = subprocess.run(["ompi_info", "--parsable", "--all"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False, reason + "; no ompi_info"
    return "mpi_built_with_cuda_support:value:true" in info, reason + "; ompi_info"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", default="statistics/pool:initial=256MiB")
    parser.add_argument("--elements", type=int, default=1 << 24, help="float32 elements per buffer")
    args = parser.parse_args()

    from mpi4py import MPI

    import rmm_rs

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    local_rank = comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()
    failures = []

    def check(condition, what):
        if not condition:
            failures.append(what)
            print(f"rank {rank}: FAILED: {what}", flush=True)

    # The rank's GPU current for rmm-rs before anything is built, so that its stack and its
    # CUDA context are there and nowhere else; then CuPy on the same GPU, allocating from it.
    device = local_rank % rmm_rs.device_count()
    rmm_rs.set_device(device)
    rmm_rs.configure_from_string(args.spec)
    import cupy

    cupy.cuda.Device(device).use()
    rmm_rs.use_for_cupy()

    aware, how = cuda_aware(MPI) if rank == 0 else (None, None)
    aware, how = comm.bcast((aware, how), root=0)

    n = args.elements
    before = rmm_rs.statistics(device).total_count
    mine = cupy.full(n, rank + 1, dtype=cupy.float32)
    total = cupy.empty_like(mine)
    received = cupy.empty_like(mine)
    check(rmm_rs.statistics(device).total_count - before >= 3, "CuPy's buffers did not come from rmm-rs")
    cupy.cuda.get_current_stream().synchronize()  # MPI reads the buffers outside CuPy's stream order

    right, left = (rank + 1) % size, (rank - 1) % size
    start = time.perf_counter()
    if aware:
        comm.Allreduce(mine, total, op=MPI.SUM)
        comm.Sendrecv(mine, dest=right, sendtag=7, recvbuf=received, source=left, recvtag=7)
    else:
        host = cupy.asnumpy(mine)
        host_total, host_received = host.copy(), host.copy()
        comm.Allreduce(host, host_total, op=MPI.SUM)
        comm.Sendrecv(host, dest=right, sendtag=7, recvbuf=host_received, source=left, recvtag=7)
        total.set(host_total)
        received.set(host_received)
    cupy.cuda.get_current_stream().synchronize()
    seconds = time.perf_counter() - start

    expected_total = size * (size + 1) / 2
    check(bool((total == expected_total).all()), f"allreduce gave {float(total[0])}, expected {expected_total}")
    check(bool((received == left + 1).all()), f"received {float(received[0])} from rank {left}, expected {left + 1}")

    props = cupy.cuda.runtime.getDeviceProperties(device)
    counts = rmm_rs.statistics(device)
    with rmm_rs.Resource.of_device(device) as top:
        node, names = top.snapshot(), []
    while isinstance(node, dict):
        names.append(node["resource"])
        node = node.get("upstream")
    row = {"rank": rank, "device": device, "pci": "%04x:%02x:%02x" % (props["pciDomainID"], props["pciBusID"], props["pciDeviceID"]),
           "stack": "/".join(names), "allocations": counts.total_count, "peak_mib": counts.peak_bytes / (1 << 20),
           "seconds": seconds, "failures": failures}
    rows = comm.gather(row, root=0)
    failed = comm.allreduce(len(failures), op=MPI.SUM)
    if rank == 0:
        path = "CUDA-aware MPI on the GPU buffers" if aware else "host staging (this MPI is not CUDA-aware)"
        print(f"MPI {MPI.Get_library_version().splitlines()[0].strip()}; mpi4py {__import__('mpi4py').__version__}; "
              f"{size} ranks; {path}, decided by {how}; {n} float32 per buffer\n")
        print("| rank | GPU | PCI | stack | allocations | peak MiB | allreduce + sendrecv s | checks |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['rank']} | {r['device']} | {r['pci']} | {r['stack']} | {r['allocations']} | {r['peak_mib']:.0f} | "
                  f"{r['seconds']:.3f} | {'pass' if not r['failures'] else 'FAIL: ' + '; '.join(r['failures'])} |")
        print("\nmpi_cupy: " + ("every check held on every rank" if not failed else f"{failed} checks failed"), flush=True)
    del mine, total, received
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
