"""rmm_rs.allocators.cupy: RAPIDS RMM's ``rmm_cupy_allocator``: CuPy's device memory as
:class:`rmm_rs.DeviceBuffer` objects from the current device's resource, on CuPy's current
stream (``cupy.cuda.set_allocator(rmm_cupy_allocator)``)."""

from __future__ import annotations

from typing import Any

from ..pylibrmm.device_buffer import DeviceBuffer
from ..pylibrmm.stream import Stream

try:
    import cupy
except ImportError:
    cupy = None

__all__ = ["rmm_cupy_allocator"]


def rmm_cupy_allocator(nbytes: int) -> Any:
    """`nbytes` of device memory for CuPy (a ``cupy.cuda.MemoryPointer`` whose memory is a
    DeviceBuffer, freed in the order of CuPy's current stream when CuPy drops it). MemoryError
    when the resource cannot give them."""
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")
    stream = Stream(cupy.cuda.get_current_stream())
    buffer = DeviceBuffer(size=nbytes, stream=stream)
    memory = cupy.cuda.UnownedMemory(buffer.ptr, buffer.size, buffer, cupy.cuda.runtime.getDevice())
    return cupy.cuda.MemoryPointer(memory, 0)
