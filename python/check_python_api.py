"""RAPIDS RMM's Python API of rmm_rs with the real frameworks on a GPU (run by
scripts/gpu-python-api.sh).

    python3 python/check_python_api.py [cupy] [torch] [numba] [streams]   (default: all)

Each check runs in a child process of its own and prints RESULT lines; a summary follows. Exit
status 1 if any check failed (a framework that is not installed fails its check: this runs where
they are meant to be). Checks:

cupy     cupy.asarray(DeviceBuffer) reads the buffer through __cuda_array_interface__ (same
         address, same bytes), CuPy writes into it, and DeviceBuffer.copy_from_device takes a
         CuPy array; rmm_cupy_allocator's arrays are DeviceBuffers of the current resource.
torch    torch.from_dlpack(DeviceBuffer) shares the buffer's memory (same address, uint8, the
         same bytes, writes visible to tobytes()) and keeps it alive after the buffer is
         dropped; torch.as_tensor through __cuda_array_interface__ too.
numba    numba.cuda.as_cuda_array(DeviceBuffer) shares the memory; a kernel writes it.
streams  DeviceBuffers on CuPy's, PyTorch's and Numba's streams and on rmm Streams passed to
         them (__cuda_stream__ both ways), ordered on those streams.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))

CHECKS = {
    "cupy": """
        import cupy, rmm_rs as rmm
        from rmm_rs.allocators.cupy import rmm_cupy_allocator
        buf = rmm.DeviceBuffer.to_device(bytes(range(16)))
        view = cupy.asarray(buf)
        assert view.data.ptr == buf.ptr and view.dtype == cupy.uint8 and view.shape == (16,), (view.data.ptr, buf.ptr)
        assert view.get().tobytes() == bytes(range(16))
        view += 1
        cupy.cuda.Device().synchronize()
        assert buf.tobytes() == bytes(range(1, 17)), buf.tobytes()
        other = cupy.arange(8, dtype=cupy.uint8)
        buf.copy_from_device(other)
        assert buf.tobytes()[:8] == bytes(range(8))
        stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
        rmm.mr.set_current_device_resource(stats)
        cupy.cuda.set_allocator(rmm_cupy_allocator)
        a = cupy.ones(1000, dtype=cupy.float32)
        assert type(a.data.mem).__name__ == "UnownedMemory", type(a.data.mem)  # not CuPy's pool
        assert stats.allocation_counts.current_bytes >= 4000, stats.allocation_counts
        print("RESULT cupy: __cuda_array_interface__ shared, written and copied; rmm_cupy_allocator counted",
              stats.allocation_counts.current_bytes, "bytes")
    """,
    "torch": """
        import gc, torch, rmm_rs as rmm
        buf = rmm.DeviceBuffer.to_device(bytes(range(32)))
        t = torch.from_dlpack(buf)
        assert t.device.type == "cuda" and t.dtype == torch.uint8 and t.shape == (32,)
        assert t.data_ptr() == buf.ptr, (t.data_ptr(), buf.ptr)
        assert bytes(t.cpu().tolist()) == bytes(range(32))
        t += 2
        torch.cuda.synchronize()
        assert buf.tobytes() == bytes(range(2, 34))
        ptr = buf.ptr
        del buf
        gc.collect()
        assert t.data_ptr() == ptr and int(t.sum()) == sum(range(2, 34))  # the capsule keeps it alive
        del t
        buf = rmm.DeviceBuffer.to_device(bytes(8))
        u = torch.as_tensor(buf, device="cuda")
        assert u.data_ptr() == buf.ptr
        print("RESULT torch: from_dlpack and as_tensor share the buffer; it lives while the tensor does")
    """,
    "numba": """
        import numpy as np, rmm_rs as rmm
        from numba import cuda
        buf = rmm.DeviceBuffer(size=64)
        arr = cuda.as_cuda_array(buf)
        assert arr.device_ctypes_pointer.value == buf.ptr and arr.shape == (64,)

        @cuda.jit
        def fill(out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = i * 3 % 256

        fill.forall(64)(arr)
        cuda.synchronize()
        assert buf.tobytes() == bytes(i * 3 % 256 for i in range(64))
        print("RESULT numba: as_cuda_array shares the buffer; a kernel wrote it")
    """,
    "streams": """
        import rmm_rs as rmm
        from rmm_rs.pylibrmm.stream import Stream
        done = []
        try:
            import cupy
            s = cupy.cuda.Stream(non_blocking=True)
            b = rmm.DeviceBuffer.to_device(b"cupy", stream=s)
            s.synchronize()
            assert b.tobytes(stream=s) == b"cupy" and b.stream.__cuda_stream__()[1] == s.ptr
            r = Stream()
            with cupy.cuda.ExternalStream(r.__cuda_stream__()[1]):
                x = cupy.arange(10).sum()
            r.synchronize()
            done.append("cupy")
        except ImportError:
            pass
        try:
            import torch
            s = torch.cuda.Stream()
            b = rmm.DeviceBuffer(size=100, stream=s)
            b.resize(200, stream=s)
            assert b.stream.__cuda_stream__()[1] == s.cuda_stream
            r = Stream()
            with torch.cuda.stream(torch.cuda.ExternalStream(r.__cuda_stream__()[1])):
                y = torch.ones(10, device="cuda").sum()
            r.synchronize()
            done.append("torch")
        except ImportError:
            pass
        try:
            from numba import cuda
            s = cuda.stream()
            b = rmm.DeviceBuffer.to_device(b"numba", stream=s)
            s.synchronize()
            assert b.tobytes() == b"numba"
            done.append("numba")
        except ImportError:
            pass
        assert done, "no framework installed"
        print("RESULT streams: DeviceBuffers on the streams of", ", ".join(done))
    """,
}


def main() -> int:
    wanted = sys.argv[1:] or list(CHECKS)
    env = dict(os.environ)
    compat = os.path.join(HERE, "tests", "compat")  # third-party version skew (sitecustomize.py)
    env["PYTHONPATH"] = os.pathsep.join([HERE, compat, env.get("PYTHONPATH", "")])
    failed = []
    for name in wanted:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(CHECKS[name])], env=env, capture_output=True,
                              text=True, timeout=600)
        sys.stdout.write(done.stdout)
        if done.returncode != 0:
            sys.stdout.write(done.stderr[-4000:])
            print(f"FAIL {name}")
            failed.append(name)
        else:
            print(f"PASS {name}")
    print("summary:", "all passed" if not failed else "failed: " + " ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
