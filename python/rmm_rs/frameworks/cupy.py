"""rmm_rs.frameworks.cupy: rmm-rs as CuPy's device allocator (:func:`use_for_cupy`,
:func:`cupy_allocator`). Importing it does not import CuPy; RAPIDS' name,
``rmm_rs.allocators.cupy.rmm_cupy_allocator``, allocates through ``rmm_rs.DeviceBuffer``."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional

from .. import _bindings, _core
from .._bindings import SUCCESS, _raise, library
from .._core import Resource

__all__ = ["cupy_allocator", "use_for_cupy"]


class _CupyAllocation:
    """The owner of one rmm-rs allocation behind a CuPy ``UnownedMemory``: frees it on the
    stream it was allocated on when CuPy drops the memory. Keeps the CuPy stream object
    alive until then, so the stream handle stays valid for the free."""

    __slots__ = ("ptr", "size", "stream", "stream_object", "__weakref__")

    def __init__(self, ptr: int, size: int, stream: Optional[int], stream_object: Any):
        self.ptr = ptr
        self.size = size
        self.stream = stream
        self.stream_object = stream_object

    def __del__(self):
        ptr, self.ptr = self.ptr, 0
        if ptr and _bindings._lib is not None:
            _bindings._lib.rmmFree(ptr, self.stream, None, 0)


def cupy_allocator(nbytes: int) -> Any:
    """A CuPy allocator (``cupy.cuda.set_allocator(rmm_rs.cupy_allocator)``): `nbytes`
    from the current device's rmm-rs resource, ordered on CuPy's CURRENT stream
    (``cupy.cuda.get_current_stream()``) and freed on it when CuPy releases the memory.
    Raises :class:`RmmOutOfMemoryError` (a MemoryError) when the resource is exhausted."""
    import cupy

    stream_object = cupy.cuda.get_current_stream()
    stream = stream_object.ptr or None
    ptr = ctypes.c_void_p()
    code = library().rmmAlloc(ctypes.byref(ptr), nbytes, stream, None, 0)
    if code != SUCCESS:
        _raise(code, "rmmAlloc")
    owner = _CupyAllocation(ptr.value or 0, nbytes, stream, stream_object)
    device_id = cupy.cuda.runtime.getDevice()
    memory = cupy.cuda.UnownedMemory(owner.ptr, nbytes, owner, device_id)
    return cupy.cuda.MemoryPointer(memory, 0)


def use_for_cupy(c_function: bool = False, resource: Optional[Resource] = None) -> Callable[[int], Any]:
    """Makes rmm-rs CuPy's device allocator (``cupy.cuda.set_allocator``).

    Default: :func:`cupy_allocator`, a Python function that allocates on CuPy's current
    stream (``with cupy.cuda.Stream(): ...`` included). ``c_function=True``: CuPy's
    ``CFunctionAllocator`` over ``rmmCupyAllocate``/``rmmCupyDeallocate``, with no Python in
    the allocation path but ordered on the legacy default stream, from `resource` (None:
    the device's current resource). Two caveats of that fast path: memory is allocated and
    freed in the order of the legacy default stream, which does not order work on
    non-blocking streams (``cupy.cuda.Stream(non_blocking=True)``): a block freed while a
    kernel on such a stream still uses it can be handed out again at once; and CuPy does
    not check that allocator's result, so an allocation that fails gives CuPy a NULL
    pointer instead of an OutOfMemoryError. Prefer the default allocator with non-blocking
    streams or where memory may run out. Returns the allocator function given to CuPy.
    """
    import cupy

    _core._ensure_configured()
    if not c_function:
        if resource is not None:
            raise ValueError("use_for_cupy: `resource` needs c_function=True (the default allocates from the device's current resource)")
        cupy.cuda.set_allocator(cupy_allocator)
        return cupy_allocator
    lib = library()
    malloc_address = ctypes.cast(lib.rmmCupyAllocate, ctypes.c_void_p).value
    free_address = ctypes.cast(lib.rmmCupyDeallocate, ctypes.c_void_p).value
    param = resource.handle if resource is not None else 0
    allocator = cupy.cuda.memory.CFunctionAllocator(param, malloc_address, free_address, (lib, resource))
    cupy.cuda.set_allocator(allocator.malloc)
    return allocator.malloc
