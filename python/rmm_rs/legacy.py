"""rmm_rs.legacy: the 2019 ``librmm_cffi`` interface of RMM (importable as ``librmm_cffi``,
a module the package installs), over the same rmm-rs stacks::

    from librmm_cffi import librmm_config as rmm_cfg
    rmm_cfg.use_pool_allocator = True   # default False
    rmm_cfg.initial_pool_size = 2 << 30 # default: half the free memory
    rmm_cfg.enable_logging = True       # default False

    from librmm_cffi import librmm as rmm
    rmm.finalize(); rmm.initialize()    # apply the options (legacy rmmInitialize)
    dev = rmm.to_device(np.arange(10))  # Numba device arrays whose memory is rmm-rs's
    out = rmm.device_array(10, dtype=np.float64)

``librmm.initialize()`` is the C library's legacy ``rmmInitialize`` with the options of
``librmm_config``: it installs the resource they name as each device's resource until
``librmm.finalize()`` (``rmmFinalize``) gives the devices back what they had, so what
``rmm_rs.configure()`` or ``rmm.mr`` set before is what runs again after finalize. Arrays come
from ``rmmAlloc`` (which needs ``initialize()`` first, as legacy RMM did; without it the first
allocation initializes with the options as they are). ``device_array``, ``device_array_like``,
``to_device``, ``auto_device`` and ``get_ipc_handle`` return Numba device arrays and import
Numba (and NumPy) when called: without it they raise ImportError saying so.
"""

from __future__ import annotations

import ctypes
import sys
import types
from typing import Any, Optional, Sequence, Tuple, Union

from . import _bindings, _core
from ._bindings import (
    ERROR_NOT_INITIALIZED,
    CudaDefaultAllocation,
    CudaManagedMemory,
    PoolAllocation,
    RmmError,
    _call,
    _COptions,
    _lock,
)

__all__ = ["librmm", "librmm_config"]

# --- librmm_config: the options, as module attributes ----------------------------------------

librmm_config = types.ModuleType("librmm_cffi.librmm_config", "The options librmm.initialize() applies "
                                 "(legacy librmm_cffi's librmm_config).")
librmm_config.use_pool_allocator = False  # type: ignore[attr-defined]
librmm_config.use_managed_memory = False  # type: ignore[attr-defined]
librmm_config.initial_pool_size = None  # type: ignore[attr-defined]  # None or 0: half the free memory
librmm_config.maximum_pool_size = None  # type: ignore[attr-defined]  # rmm-rs's addition: None, no limit
librmm_config.enable_logging = False  # type: ignore[attr-defined]
librmm_config.devices = None  # type: ignore[attr-defined]  # rmm-rs's addition: None, the current device


def _options() -> Any:
    config = librmm_config
    options = _COptions()
    mode = CudaDefaultAllocation
    if getattr(config, "use_pool_allocator", False):
        mode |= PoolAllocation
    if getattr(config, "use_managed_memory", False):
        mode |= CudaManagedMemory
    options.allocation_mode = mode
    options.initial_pool_size = _core._size(getattr(config, "initial_pool_size", None), "initial_pool_size")
    options.maximum_pool_size = _core._size(getattr(config, "maximum_pool_size", None), "maximum_pool_size")
    options.enable_logging = bool(getattr(config, "enable_logging", False))
    devices = getattr(config, "devices", None)
    if devices is not None:
        ids = [int(devices)] if isinstance(devices, int) else [int(d) for d in devices]
        if len(ids) > len(options.devices.ids):
            raise ValueError(f"librmm_config.devices: at most {len(options.devices.ids)} devices")
        options.devices.count = len(ids)
        for i, device in enumerate(ids):
            options.devices.ids[i] = device
    return options


# --- librmm: the functions ---------------------------------------------------------------

def initialize() -> int:
    """Sets rmm up with the options of ``librmm_config`` (``rmmInitialize``); returns 0, as
    legacy librmm did (RMM_SUCCESS). Already initialized: RmmError
    ``RMM_ERROR_ALREADY_INITIALIZED`` (call :func:`finalize` first)."""
    with _lock:
        _call("rmmInitialize", ctypes.byref(_options()))
        _core._forget_devices()
    return 0


def finalize() -> int:
    """Ends what :func:`initialize` set up (``rmmFinalize``): each device gets back the resource
    it had before; live arrays stay valid. Returns 0."""
    with _lock:
        _call("rmmFinalize")
        _core._forget_devices()
    return 0


def is_initialized() -> bool:
    """Whether :func:`initialize` is in force (``rmmIsInitialized``)."""
    return bool(_bindings.library().rmmIsInitialized(None))


def _alloc(size: int, stream: Any) -> int:
    ptr = ctypes.c_void_p()
    try:
        _call("rmmAlloc", ctypes.byref(ptr), size, _core._stream(stream), None, 0)
    except RmmError as error:
        if error.code != ERROR_NOT_INITIALIZED:
            raise
        initialize()  # legacy code often allocates without initializing first
        _call("rmmAlloc", ctypes.byref(ptr), size, _core._stream(stream), None, 0)
    return ptr.value or 0


def csv_log() -> str:
    """The event log (``librmm_config.enable_logging``) as legacy RMM's CSV (``rmmGetLog``)."""
    lib = _bindings.library()
    size = lib.rmmLogSize()
    buffer = ctypes.create_string_buffer(size + 1)
    _call("rmmGetLog", buffer, size + 1)
    return buffer.value.decode("utf-8", "replace")


def write_log(filename: str) -> None:
    """Writes the event log to `filename` (``rmmWriteLog``)."""
    import os

    _call("rmmWriteLog", os.fsencode(filename))


def get_info(stream: Any = 0) -> Tuple[int, int]:
    """(free, total) bytes of the current device (``rmmGetInfo``)."""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    _call("rmmGetInfo", ctypes.byref(free_bytes), ctypes.byref(total), _core._stream(stream))
    return free_bytes.value, total.value


def _numba() -> Tuple[Any, Any]:
    try:
        import numpy
        from numba import cuda
    except ImportError as error:
        raise ImportError(f"librmm's device arrays are Numba device arrays: install numba-cuda (and NumPy) "
                          f"to use them ({error})") from error
    return numpy, cuda


def _contiguous_strides(shape: Tuple[int, ...], itemsize: int, order: str) -> Tuple[int, ...]:
    strides = [0] * len(shape)
    step = itemsize
    axes = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    for axis in axes:
        strides[axis] = step
        step *= max(shape[axis], 1)
    return tuple(strides)


def _span(shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int) -> int:
    """Bytes from the first to past the last element of an array (0 when it is empty)."""
    if any(extent == 0 for extent in shape):
        return 0
    return itemsize + sum((extent - 1) * abs(stride) for extent, stride in zip(shape, strides))


def device_array(shape: Union[int, Sequence[int]], dtype: Any = None, strides: Optional[Sequence[int]] = None,
                 order: str = "C", stream: Any = 0) -> Any:
    """An uninitialized Numba device array (``numba.cuda.device_array``'s arguments; dtype
    None is float64) whose memory comes from ``rmmAlloc`` and goes back with ``rmmFree`` when
    Numba drops it."""
    numpy, cuda = _numba()
    from numba.cuda.cudadrv import devicearray, driver

    dtype = numpy.dtype(numpy.float64 if dtype is None else dtype)
    shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(int(n) for n in shape)
    if order not in ("C", "F"):
        raise ValueError(f"order={order!r}: expected 'C' or 'F'")
    strides = _contiguous_strides(shape, dtype.itemsize, order) if strides is None else tuple(int(s) for s in strides)
    size = _span(shape, strides, dtype.itemsize)
    handle = _core._stream(stream)
    ptr = _alloc(size, stream) if size else 0

    def finalizer(ptr: int = ptr, handle: Optional[int] = handle) -> None:
        if ptr and _bindings._lib is not None:
            _bindings._lib.rmmFree(ptr, handle, None, 0)

    from .frameworks.numba import _device_pointer

    memory = driver.MemoryPointer(cuda.current_context(), _device_pointer(ptr), size, finalizer=finalizer)
    return devicearray.DeviceNDArray(shape, strides, dtype, stream=_numba_stream(stream), gpu_data=memory)


def _numba_stream(stream: Any) -> Any:
    # Numba takes its own stream objects (or 0) for a device array's stream.
    if stream is None or isinstance(stream, int):
        return 0
    return stream


def _flag(ary: Any, name: str) -> bool:
    """A layout flag of `ary`: NumPy's flags object, or the dict Numba's device arrays have."""
    flags = getattr(ary, "flags", None)
    if isinstance(flags, dict):
        return bool(flags.get(name))
    return bool(getattr(flags, name.lower(), False))


def device_array_like(ary: Any, stream: Any = 0) -> Any:
    """An uninitialized device array of the shape and dtype of `ary` (its layout when it is
    contiguous)."""
    numpy, _ = _numba()
    order = "F" if _flag(ary, "F_CONTIGUOUS") and not _flag(ary, "C_CONTIGUOUS") else "C"
    return device_array(ary.shape, dtype=ary.dtype, order=order, stream=stream)


def to_device(ary: Any, stream: Any = 0, copy: bool = True, to: Any = None) -> Any:
    """A device array holding a copy of the host array `ary` (into `to` when given)."""
    numpy, _ = _numba()
    host = numpy.asarray(ary)
    target = device_array_like(host, stream=stream) if to is None else to
    if copy:
        target.copy_to_device(host, stream=_numba_stream(stream))
    return target


def auto_device(obj: Any, stream: Any = 0, copy: bool = True) -> Tuple[Any, bool]:
    """(a device array of `obj`, whether it was copied): `obj` itself when it is on the device
    already, else a copy of it made with :func:`to_device`."""
    numpy, cuda = _numba()
    if cuda.is_cuda_array(obj):
        return (obj if hasattr(obj, "copy_to_host") else cuda.as_cuda_array(obj)), False
    return to_device(numpy.asarray(obj), stream=stream, copy=copy), True


def get_ipc_handle(ary: Any, stream: Any = 0) -> Any:
    """The IPC handle of a device array: of the device allocation that holds it (a pool's chunk),
    with the array's offset in it (``rmmGetAllocationOffset``), as legacy librmm gave it."""
    _, cuda = _numba()
    from numba.cuda import IpcHandle

    from .frameworks.numba import _ipc_mem_handle

    ptr = int(ary.device_ctypes_pointer.value or 0)
    offset = _core.allocation_offset(ptr)
    handle = _ipc_mem_handle(ptr - offset)
    source_info = cuda.current_context().device.get_device_identity()
    return IpcHandle(ary, handle, ary.alloc_size, source_info, offset=offset)


librmm = types.ModuleType("librmm_cffi.librmm", "Legacy librmm_cffi's librmm: initialize/finalize and "
                          "Numba device arrays from rmm-rs.")
for _name in ("initialize", "finalize", "is_initialized", "csv_log", "write_log", "get_info", "device_array",
              "device_array_like", "to_device", "auto_device", "get_ipc_handle"):
    setattr(librmm, _name, globals()[_name])
del _name


def _install_legacy_modules() -> None:
    """Registers ``librmm_cffi.librmm`` and ``librmm_cffi.librmm_config`` so that
    ``import librmm_cffi.librmm_config`` works too (the shim module ``librmm_cffi`` calls this)."""
    sys.modules.setdefault("librmm_cffi.librmm", librmm)
    sys.modules.setdefault("librmm_cffi.librmm_config", librmm_config)
