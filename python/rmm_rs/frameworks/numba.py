"""rmm_rs.frameworks.numba: rmm-rs as Numba's memory manager, an External Memory Management
(EMM) plugin made on first use so that importing this module does not import Numba
(:func:`make_numba_manager`, :func:`use_for_numba`; ``NUMBA_CUDA_MEMORY_MANAGER=rmm_rs`` or
``=rmm_rs.allocators.numba``, RAPIDS' name)."""

from __future__ import annotations

import contextlib
import ctypes
from typing import Any

from .. import _bindings, _core

__all__ = ["make_numba_manager", "use_for_numba"]


_numba_class: Any = None


def _nv_binding(numba_driver: Any) -> bool:
    # numba-cuda uses NVIDIA's cuda-bindings (`binding`); old Numba had a ctypes binding.
    return bool(getattr(numba_driver, "USE_NV_BINDING", True) and hasattr(numba_driver, "binding"))


def _device_pointer(ptr: int) -> Any:
    """A device address as Numba's driver binding takes it."""
    from numba.cuda.cudadrv import driver as numba_driver

    if _nv_binding(numba_driver):
        return numba_driver.binding.CUdeviceptr(ptr)
    return ctypes.c_uint64(ptr)


def _ipc_mem_handle(base: int) -> Any:
    """The driver's IPC handle of the allocation that starts at `base`, through Numba's driver."""
    from numba.cuda.cudadrv import driver as numba_driver

    if _nv_binding(numba_driver):
        return numba_driver.driver.cuIpcGetMemHandle(numba_driver.binding.CUdeviceptr(base))
    handle = numba_driver.drvapi.cu_ipc_mem_handle()
    numba_driver.driver.cuIpcGetMemHandle(ctypes.byref(handle), base)
    return handle


def make_numba_manager() -> Any:
    """Defines RMMNumbaManager on first use, so that importing rmm_rs needs no Numba."""
    global _numba_class
    if _numba_class is not None:
        return _numba_class
    from numba.cuda import HostOnlyCUDAMemoryManager, IpcHandle, MemoryPointer
    from numba.cuda.cudadrv import driver as numba_driver

    MemoryInfo = getattr(numba_driver, "MemoryInfo", None)
    device_pointer = _device_pointer
    ipc_mem_handle = _ipc_mem_handle

    def pointer_value(memory) -> int:
        value = memory.device_ctypes_pointer.value
        return int(value or 0)

    class RMMNumbaManager(HostOnlyCUDAMemoryManager):
        """Numba EMM plugin: device memory from the current device's rmm-rs resource
        (on the legacy default stream, as Numba orders its own frees); host memory stays
        Numba's. IPC handles name the ``cuMemAlloc`` block that holds the array (a pool's
        chunk) with the array's offset in it, from ``rmmGetAllocationOffset``."""

        def initialize(self):
            _core._ensure_configured()

        def memalloc(self, size):
            ptr = _core.alloc(size, None)

            def finalizer(ptr=ptr):
                if ptr and _bindings._lib is not None:
                    _bindings._lib.rmmFree(ptr, None, None, 0)

            return MemoryPointer(self.context, device_pointer(ptr), size, finalizer=finalizer)

        def get_memory_info(self):
            free_bytes, total = _core.memory_info()
            return MemoryInfo(free=free_bytes, total=total) if MemoryInfo else (free_bytes, total)

        def get_ipc_handle(self, memory):
            ptr = pointer_value(memory)
            offset = _core.allocation_offset(ptr)
            handle = ipc_mem_handle(ptr - offset)
            source_info = self.context.device.get_device_identity()
            return IpcHandle(memory, handle, memory.size, source_info, offset=offset)

        def reset(self):
            # Device memory is owned by the MemoryPointers (freed by their finalizers); the
            # rmm-rs resources outlive Numba's contexts. Host allocations are Numba's.
            super().reset()

        @contextlib.contextmanager
        def defer_cleanup(self):
            # rmm-rs frees are stream-ordered, so there is nothing to defer on the device.
            with super().defer_cleanup():
                yield

        @property
        def interface_version(self):
            return 1

    RMMNumbaManager.__module__ = "rmm_rs"
    RMMNumbaManager.__qualname__ = "RMMNumbaManager"
    _numba_class = RMMNumbaManager
    return RMMNumbaManager


def use_for_numba() -> Any:
    """``numba.cuda.set_memory_manager(RMMNumbaManager)``. Call before Numba creates its
    CUDA context (before the first device array or kernel launch); or set
    ``NUMBA_CUDA_MEMORY_MANAGER=rmm_rs`` in the environment. Returns the plugin class."""
    from numba import cuda

    manager = make_numba_manager()
    cuda.set_memory_manager(manager)
    return manager
