"""rmm-rs and CuPy's own memory pool side by side in one process, near the device's limit, on a
real GPU (scripts/gpu-python-api.sh runs it): each library keeps memory cached that the other
needs, and the program gets it through them.

1. CuPy fills most of the device and frees it: CuPy's default pool keeps it cached.
2. An rmm-rs pool (the current device resource, under a failure-callback adaptor that asks CuPy
   to empty its pool) allocates most of the device: the device refuses, rmm-rs gives back what
   it keeps and calls the callback, CuPy empties its pool, and the allocation succeeds.
3. rmm-rs frees it (its pool keeps the chunks); CuPy allocates most of the device again: CuPy
   runs out, the program asks rmm-rs to give every free byte back
   (``rmm_rs.release_device_memory``), and CuPy's retry succeeds.
4. Both hold less than the device afterwards, and the contents written were read back intact.

Prints ``RESULT {...}`` and exits 0 when every phase completed.
"""

import json
import sys

import cupy

import rmm_rs as rmm

MIB = 1 << 20


def main():
    device = cupy.cuda.Device(0)
    free, total = cupy.cuda.runtime.memGetInfo()
    # Most of what is free now, in blocks of 256 MiB.
    block = 256 * MIB
    blocks = int(free * 0.8) // block
    cupy_pool = cupy.get_default_memory_pool()
    asked = []

    def empty_cupy(nbytes):
        asked.append(nbytes)
        cupy_pool.free_all_blocks()
        return len(asked) < 8  # retry; give up after a few tries

    # 1. CuPy fills and frees: its pool keeps it. (Before the rmm-rs pool exists: a pool made
    # without a size takes half the free memory at once, as RAPIDS' does, which CuPy would then
    # miss; seen on an H100.)
    arrays = [cupy.full(block // 4, i, dtype=cupy.float32) for i in range(blocks)]
    del arrays
    device.synchronize()
    cupy_kept = cupy_pool.total_bytes()

    upstream = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(rmm.mr.FailureCallbackResourceAdaptor(upstream, empty_cupy))

    # 2. rmm-rs needs what CuPy keeps.
    buffers = [rmm.DeviceBuffer(size=block) for _ in range(blocks)]
    view = cupy.asarray(buffers[-1]).view(cupy.uint8)
    view.fill(7)
    device.synchronize()
    rmm_checked = int((view == 7).all())
    rmm_held = upstream.pool_size()
    del view
    del buffers
    device.synchronize()

    # 3. CuPy needs what rmm-rs keeps: it runs out, the program has rmm-rs give back, CuPy retries.
    released = 0
    try:
        arrays = [cupy.full(block // 4, i, dtype=cupy.float32) for i in range(blocks)]
        cupy_needed_release = False
    except cupy.cuda.memory.OutOfMemoryError:
        cupy_needed_release = True
        released = rmm.release_device_memory()
        arrays = [cupy.full(block // 4, i, dtype=cupy.float32) for i in range(blocks)]
    cupy_checked = int(all(float(a[0]) == i for i, a in enumerate(arrays)))
    del arrays
    cupy_pool.free_all_blocks()
    rmm.release_device_memory()
    free_after, _ = cupy.cuda.runtime.memGetInfo()
    result = {
        "device_total_mib": total // MIB,
        "blocks_mib": blocks * block // MIB,
        "cupy_kept_mib": cupy_kept // MIB,
        "rmm_asked_cupy": len(asked),
        "rmm_held_mib": rmm_held // MIB,
        "cupy_needed_release": cupy_needed_release,
        "rmm_released_mib": released // MIB,
        "contents_intact": bool(rmm_checked and cupy_checked),
        "free_after_mib": free_after // MIB,
    }
    print("RESULT " + json.dumps(result))
    ok = (
        cupy_kept >= blocks * block  # phase 1 left CuPy's pool holding the memory
        and len(asked) >= 1  # phase 2 needed CuPy's memory and got it through the callback
        and (released > 0 or not cupy_needed_release)
        and result["contents_intact"]
        and free_after >= free * 0.9
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
