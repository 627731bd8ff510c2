"""rmm_rs: the rmm-rs memory manager (``librmm.so``) from Python, through ctypes alone.

No compiled extension: this one file loads ``librmm.so`` and calls its C API (``rmm.h``).
It builds resource stacks, installs them as the devices' current resources, reads their
statistics, and installs rmm-rs as the device allocator of PyTorch, CuPy and Numba::

    import rmm_rs
    rmm_rs.configure("pool", initial_pool_size="1GiB")  # cuda -> pool -> statistics
    rmm_rs.use_for_torch()       # before PyTorch touches the GPU
    rmm_rs.use_for_cupy()        # allocates on CuPy's current stream
    rmm_rs.use_for_numba()       # an EMM plugin (or NUMBA_CUDA_MEMORY_MANAGER=rmm_rs)
    ...
    print(rmm_rs.statistics())   # Statistics(current_bytes=..., peak_bytes=..., ...)

The library is found, in this order, at ``$RMM_RS_LIBRARY``; as ``librmm.so`` next to this
file; at ``../stage/lib/librmm.so``, ``../target/release/librmm.so`` or
``../target/debug/librmm.so`` relative to this file (the repository's layout); in the Python
environment's ``lib/`` (``cmake --install build --prefix "$VIRTUAL_ENV"``); and last by
the dynamic loader's search (``ctypes.util.find_library("rmm")``, then ``librmm.so``). It
is loaded on first use, so environment variables the library reads when it loads
(``RMM_SIM_DEVICES``, ``RMM_ALLOC_CONF``, ...) may be set after ``import rmm_rs``.

Every failed call raises :class:`RmmError` (``.code``, ``.name``, ``.message``: the
library's ``rmmGetErrorString`` and ``rmmGetLastErrorMessage``); out of memory raises
:class:`RmmOutOfMemoryError`, which is also a :class:`MemoryError`.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import json
import os
import sys
import threading
from typing import Any, Dict, Iterable, List, Optional, Union

__all__ = [
    "RmmError",
    "RmmOutOfMemoryError",
    "Resource",
    "Statistics",
    "library",
    "library_path",
    "configure",
    "configure_from_string",
    "statistics",
    "push_statistics",
    "pop_statistics",
    "flush_log",
    "report",
    "alloc",
    "free",
    "allocation_offset",
    "memory_info",
    "ipc_get_handle",
    "ipc_open_handle",
    "ipc_close_handle",
    "ipc_allow_openers",
    "device_count",
    "get_device",
    "set_device",
    "is_simulated",
    "sim_race_count",
    "stream_create",
    "stream_destroy",
    "stream_synchronize",
    "use_for_torch",
    "build_torch_backend",
    "use_for_cupy",
    "cupy_allocator",
    "use_for_numba",
    "RMMNumbaManager",
]

# BEGIN GENERATED BINDINGS (scripts/generate_bindings.py; do not edit by hand)
# Error codes of rmm.h (rmmError_t).
SUCCESS = 0
ERROR_CUDA_ERROR = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_NOT_INITIALIZED = 3
ERROR_OUT_OF_MEMORY = 4
ERROR_UNKNOWN = 5
ERROR_IO = 6
ERROR_NOT_SUPPORTED = 7
ERROR_INVALID_HANDLE = 8
ERROR_ALREADY_INITIALIZED = 9


class _CStatistics(ctypes.Structure):
    _fields_ = [
        ("current_bytes", ctypes.c_int64),
        ("peak_bytes", ctypes.c_int64),
        ("total_bytes", ctypes.c_int64),
        ("current_count", ctypes.c_int64),
        ("peak_count", ctypes.c_int64),
        ("total_count", ctypes.c_int64),
    ]


class _CExpandableOptions(ctypes.Structure):
    _fields_ = [
        ("initial_size", ctypes.c_size_t),
        ("maximum_size", ctypes.c_size_t),
        ("release_free_pages", ctypes.c_int),
        ("release_threshold", ctypes.c_size_t),
        ("page_size", ctypes.c_size_t),
        ("peers", ctypes.POINTER(ctypes.c_int)),
        ("num_peers", ctypes.c_size_t),
    ]


class _CIpcMemHandle(ctypes.Structure):
    _fields_ = [
        ("reserved", ctypes.c_char * 128),
    ]


class _CFootprint(ctypes.Structure):
    _fields_ = [
        ("reserved_bytes", ctypes.c_size_t),
        ("peak_reserved_bytes", ctypes.c_size_t),
        ("live_bytes", ctypes.c_size_t),
        ("peak_live_bytes", ctypes.c_size_t),
        ("largest_free_block", ctypes.c_size_t),
        ("fragmentation", ctypes.c_double),
    ]


# name: (restype, argtypes) of each function of rmm.h this module names.
_SIGNATURES = {
    "rmmStatisticsAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p]),
    "rmmStatisticsAdaptorGetCounts": (ctypes.c_int, [ctypes.c_void_p,
        ctypes.POINTER(_CStatistics)]),
    "rmmStatisticsAdaptorPushCounters": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmStatisticsAdaptorPopCounters": (ctypes.c_int, [ctypes.c_void_p,
        ctypes.POINTER(_CStatistics)]),
    "rmmLoggingAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_char_p]),
    "rmmLoggingAdaptorFlush": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmLimitingAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t]),
    "rmmLimitingAdaptorGetAllocatedBytes": (ctypes.c_int, [ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t)]),
    "rmmTrackingAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_bool]),
    "rmmTrackingAdaptorGetReport": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
        ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmAlignedAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t, ctypes.c_size_t]),
    "rmmPrefetchAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]),
    "rmmConfigure": (ctypes.c_int, [ctypes.c_char_p]),
    "rmmGetReport": (ctypes.c_int, [ctypes.POINTER(ctypes.c_char), ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t)]),
    "rmmSetPerDeviceResource": (ctypes.c_int, [ctypes.c_int, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetPerDeviceResource": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetCurrentDeviceResource": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetDevice": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "rmmSetDevice": (ctypes.c_int, [ctypes.c_int]),
    "rmmGetDeviceCount": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "rmmIsSimulated": (ctypes.c_int, [ctypes.POINTER(ctypes.c_bool)]),
    "rmmSimGetRaceCount": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t)]),
    "rmmTorchAllocate": (ctypes.c_void_p, [ctypes.c_ssize_t, ctypes.c_int32, ctypes.c_void_p]),
    "rmmTorchDeallocate": (None, [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int32,
        ctypes.c_void_p]),
    "rmmCupyAllocate": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32]),
    "rmmCupyDeallocate": (None, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32]),
    "rmmIpcExpandableResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(_CExpandableOptions)]),
    "rmmExpandableResourceGrantPeerAccess": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int]),
    "rmmIpcGetMemHandle": (ctypes.c_int, [ctypes.POINTER(_CIpcMemHandle), ctypes.c_void_p]),
    "rmmIpcOpenMemHandle": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(_CIpcMemHandle)]),
    "rmmIpcCloseMemHandle": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmIpcAllowOpeners": (ctypes.c_int, []),
    "rmmAlloc": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p,
        ctypes.c_char_p, ctypes.c_uint]),
    "rmmFree": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint]),
    "rmmGetInfo": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_void_p]),
    "rmmGetAllocationOffset": (ctypes.c_int, [ctypes.POINTER(ctypes.c_ssize_t), ctypes.c_void_p,
        ctypes.c_void_p]),
    "rmmGetErrorString": (ctypes.c_char_p, [ctypes.c_int32]),
    "rmmGetErrorName": (ctypes.c_char_p, [ctypes.c_int32]),
    "rmmGetLastErrorMessage": (ctypes.c_char_p, []),
    "rmmTimelineReportWrite": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]),
    "rmmCudaResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmManagedResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmAsyncResourceCreateWithFlags": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32]),
    "rmmAsyncViewResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p]),
    "rmmAsyncManagedResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmAsyncPinnedHostResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t, ctypes.c_size_t]),
    "rmmSystemResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmSamHeadroomResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t]),
    "rmmAsyncResourceGetPool": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]),
    "rmmExpandableResourceCreateWithOptions": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(_CExpandableOptions)]),
    "rmmResourceCreateFromSpec": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p)]),
    "rmmPinnedHostResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmResourceDestroy": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmResourceAllocate": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t, ctypes.c_void_p]),
    "rmmResourceDeallocate": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.c_void_p]),
    "rmmResourceGetDevice": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
    "rmmResourceGetName": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]),
    "rmmResourceGetSnapshot": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
        ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmResourceWriteSnapshot": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "rmmResourceGetFootprint": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_CFootprint)]),
    "rmmStreamCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmStreamDestroy": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmStreamSynchronize": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmPoolResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t, ctypes.c_size_t]),
    "rmmPoolResourceGetSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmPoolResourceGetFree": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmResourceRelease": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmArenaResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t]),
    "rmmBinningResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_int8, ctypes.c_int8]),
    "rmmBinningResourceAddBin": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
    "rmmFixedSizeResourceCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t, ctypes.c_size_t]),
}
# END GENERATED BINDINGS


def _error_name(code: int) -> str:
    """The enumerator's name of an error code (``RMM_ERROR_OUT_OF_MEMORY``), as the library's
    ``rmmGetErrorName`` spells it. Until the library is loaded (an error made or unpickled
    before any call) the module's own constants answer: naming an error must not load it."""
    if _lib is not None and -(1 << 31) <= code < (1 << 31):
        return _lib.rmmGetErrorName(code).decode("ascii", "replace")
    for name, value in globals().items():
        if (name == "SUCCESS" or name.startswith("ERROR_")) and value == code:
            return "RMM_" + name
    return f"rmmError_t({code})"


class RmmError(RuntimeError):
    """A failed rmm-rs call: ``code`` (an ``rmmError_t``), ``name`` (``rmmGetErrorName``, e.g.
    ``RMM_ERROR_INVALID_ARGUMENT``), ``description`` (``rmmGetErrorString``), ``message``
    (``rmmGetLastErrorMessage``) and ``function`` (the C function that failed)."""

    def __init__(self, code: int, message: str = "", function: str = "", description: str = ""):
        self.code = int(code)
        self.name = _error_name(self.code)
        self.message = message
        self.function = function
        self.description = description
        detail = message or description or "failed"
        if function and function not in detail:
            detail = f"{function}: {detail}"
        super().__init__(f"{self.name}: {detail}")

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.function, self.description))


class RmmOutOfMemoryError(RmmError, MemoryError):
    """``RMM_ERROR_OUT_OF_MEMORY``: the resource could not satisfy the allocation."""


# --------------------------------------------------------------------------------------
# Loading the library
# --------------------------------------------------------------------------------------

_here = os.path.dirname(os.path.abspath(__file__))
_lock = threading.RLock()
_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None

def _candidates() -> List[str]:
    found = []
    env = os.environ.get("RMM_RS_LIBRARY")
    if env:
        return [env]  # an explicit choice: no fallback that would hide a typo
    repo = os.path.dirname(_here)
    for path in (
        os.path.join(_here, "librmm.so"),
        os.path.join(repo, "stage", "lib", "librmm.so"),
        os.path.join(repo, "target", "release", "librmm.so"),
        os.path.join(repo, "target", "debug", "librmm.so"),
        os.path.join(sys.prefix, "lib", "librmm.so"),
    ):
        if os.path.isfile(path):
            found.append(path)
    system = ctypes.util.find_library("rmm")
    if system:
        found.append(system)
    found.append("librmm.so")
    return found


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _loaded_path(lib: ctypes.CDLL, name: str) -> str:
    """The file the dynamic loader mapped for `lib` (`name` may be a bare soname)."""
    address = ctypes.cast(lib.rmmConfigure, ctypes.c_void_p)
    for libc in (None, "libc.so.6", "libdl.so.2"):
        try:
            dladdr = ctypes.CDLL(libc).dladdr
        except (OSError, AttributeError):
            continue
        dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        dladdr.restype = ctypes.c_int
        info = _DlInfo()
        if dladdr(address, ctypes.byref(info)) and info.dli_fname:
            return os.path.realpath(os.fsdecode(info.dli_fname))
    return os.path.realpath(name) if os.path.sep in name else name


def library() -> ctypes.CDLL:
    """The loaded ``librmm.so`` (loaded on the first call), with every function this module
    uses declared (argtypes and restype)."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        errors = []
        for candidate in _candidates():
            try:
                lib = ctypes.CDLL(candidate)
            except OSError as error:
                errors.append(f"{candidate}: {error}")
                continue
            if not hasattr(lib, "rmmConfigure"):
                # RAPIDS' C++ librmm.so has the same file name but no C API.
                errors.append(f"{candidate}: not rmm-rs (no rmmConfigure)")
                continue
            missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
            if missing:
                errors.append(f"{candidate}: too old, lacks {', '.join(missing)}")
                continue
            for name, (restype, argtypes) in _SIGNATURES.items():
                function = getattr(lib, name)
                function.restype = restype
                function.argtypes = argtypes
            _lib_path = _loaded_path(lib, candidate)
            _lib = lib
            return lib
        raise OSError(
            "rmm_rs: cannot load librmm.so (set RMM_RS_LIBRARY to its path, or run "
            "scripts/stage.sh):\n  " + "\n  ".join(errors)
        )


def library_path() -> str:
    """The path of the loaded ``librmm.so`` (what PyTorch's pluggable allocator opens)."""
    library()
    assert _lib_path is not None
    return _lib_path


def _raise(code: int, function: str) -> None:
    lib = library()
    message = (lib.rmmGetLastErrorMessage() or b"").decode("utf-8", "replace")
    description = (lib.rmmGetErrorString(code) or b"").decode("utf-8", "replace")
    cls = RmmOutOfMemoryError if code == ERROR_OUT_OF_MEMORY else RmmError
    raise cls(code, message, function, description)


def _call(function: str, *args) -> None:
    code = getattr(library(), function)(*args)
    if code != SUCCESS:
        _raise(code, function)


def _stream(stream: Any) -> Optional[int]:
    """A ``cudaStream_t`` value from None/0 (the legacy default stream), an int, or a stream
    object of CuPy (``.ptr``), PyTorch (``.cuda_stream``) or Numba (``.handle``)."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream or None
    for attribute in ("ptr", "cuda_stream"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value or None
    handle = getattr(stream, "handle", None)
    if handle is not None:
        value = getattr(handle, "value", handle)  # ctypes c_void_p or a cuda-bindings CUstream
        return int(value or 0) or None
    return int(stream) or None


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20,
               "mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
               "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def _size(value: Union[int, str, None], what: str) -> int:
    """Bytes from an int or a string such as "4GiB" / "512MiB" (units of 1024, as
    RMM_ALLOC_CONF); None is 0."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected a size, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what}: {value} is negative")
        return value
    text = str(value).strip()
    digits = len(text) - len(text.lstrip("0123456789"))
    unit = text[digits:].strip().lower()
    if digits == 0 or unit not in _SIZE_UNITS:
        raise ValueError(f"{what}: {value!r} is not a size (e.g. 4GiB, 512MiB, 1048576)")
    return int(text[:digits]) * _SIZE_UNITS[unit]


# --------------------------------------------------------------------------------------
# Devices, streams, raw allocations
# --------------------------------------------------------------------------------------


def device_count() -> int:
    count = ctypes.c_int()
    _call("rmmGetDeviceCount", ctypes.byref(count))
    return count.value


def get_device() -> int:
    """The calling thread's current device (as rmm-rs sees it: the driver's current
    context, or the simulator's)."""
    device = ctypes.c_int()
    _call("rmmGetDevice", ctypes.byref(device))
    return device.value


def set_device(device: int) -> None:
    _call("rmmSetDevice", int(device))


def is_simulated() -> bool:
    """True when rmm-rs runs on simulated devices (``RMM_SIM_DEVICES``)."""
    value = ctypes.c_bool()
    _call("rmmIsSimulated", ctypes.byref(value))
    return value.value


def sim_race_count() -> int:
    """Stream-ordering races the simulator found (``RMM_SIM_ON_RACE=count``)."""
    count = ctypes.c_size_t()
    _call("rmmSimGetRaceCount", ctypes.byref(count))
    return count.value


def stream_create() -> int:
    """A new stream of the current device (``rmmStreamCreate``); destroy it with
    :func:`stream_destroy`."""
    stream = ctypes.c_void_p()
    _call("rmmStreamCreate", ctypes.byref(stream))
    return stream.value or 0


def stream_destroy(stream: Any) -> None:
    _call("rmmStreamDestroy", _stream(stream))


def stream_synchronize(stream: Any = None) -> None:
    _call("rmmStreamSynchronize", _stream(stream))


def ipc_get_handle(ptr: int) -> bytes:
    """The IPC handle (``RMM_IPC_HANDLE_SIZE`` bytes) another process opens the allocation at
    `ptr` with (:func:`ipc_open_handle`): an allocation rmm-rs handed out, of a pool over
    ``cudaMalloc`` memory, the cuda resource, or a :meth:`Resource.shareable_expandable`
    resource (``rmmIpcGetMemHandle``). Send the bytes any way you like."""
    handle = _CIpcMemHandle()
    _call("rmmIpcGetMemHandle", ctypes.byref(handle), ptr or None)
    return bytes(handle)  # the raw bytes: `.reserved` would stop at the first NUL


def ipc_open_handle(handle: bytes) -> int:
    """Maps the allocation another process's :func:`ipc_get_handle` named into this process,
    for the current device; its address here, until :func:`ipc_close_handle`
    (``rmmIpcOpenMemHandle``)."""
    raw = bytes(handle)
    if len(raw) != ctypes.sizeof(_CIpcMemHandle):
        raise ValueError(f"an IPC handle has {ctypes.sizeof(_CIpcMemHandle)} bytes, not {len(raw)}")
    c_handle = _CIpcMemHandle.from_buffer_copy(raw)
    ptr = ctypes.c_void_p()
    _call("rmmIpcOpenMemHandle", ctypes.byref(ptr), ctypes.byref(c_handle))
    return ptr.value or 0


def ipc_close_handle(ptr: int) -> None:
    """Unmaps what :func:`ipc_open_handle` mapped at `ptr` (synchronize its users first)."""
    _call("rmmIpcCloseMemHandle", ptr or None)


def ipc_allow_openers() -> None:
    """Lets every process of this user open this process's expandable-memory handles where
    the kernel's Yama ptrace scope is 1 (``rmmIpcAllowOpeners``); see docs/src/ipc.md."""
    _call("rmmIpcAllowOpeners")


def _legacy_call(function: str, *args) -> None:
    """A legacy call (``rmmAlloc``, ``rmmGetInfo``), which the library refuses before rmm is
    set up: the first one sets up the stacks ``RMM_ALLOC_CONF`` names (unset: the defaults of
    :func:`configure_from_string`), as the preload library does, then is made again."""
    try:
        _call(function, *args)
    except RmmError as error:
        if error.code != ERROR_NOT_INITIALIZED:
            raise
        configure_from_string(None)
        _call(function, *args)


def alloc(size: int, stream: Any = None) -> int:
    """``rmmAlloc``: `size` bytes from the current device's resource, for use on `stream`.
    Returns the address (0 for 0 bytes); give it back with :func:`free`. Before any
    :func:`configure`, the first call sets rmm up from ``$RMM_ALLOC_CONF``."""
    ptr = ctypes.c_void_p()
    _legacy_call("rmmAlloc", ctypes.byref(ptr), _size(size, "size"), _stream(stream), None, 0)
    return ptr.value or 0


def free(ptr: int, stream: Any = None) -> None:
    """``rmmFree``: returns memory rmm handed out (by :func:`alloc` or
    :meth:`Resource.allocate`) in the order of `stream`. 0 is a no-op."""
    _call("rmmFree", ptr or None, _stream(stream), None, 0)


def allocation_offset(ptr: int) -> int:
    """``rmmGetAllocationOffset``: how far `ptr` lies from the start of the device
    allocation (``cuMemAlloc`` block, e.g. a pool's chunk) that holds it."""
    offset = ctypes.c_ssize_t()
    _call("rmmGetAllocationOffset", ctypes.byref(offset), ptr or None, None)
    return offset.value


def memory_info() -> "tuple[int, int]":
    """``rmmGetInfo``: (free, total) bytes of the current device."""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    _legacy_call("rmmGetInfo", ctypes.byref(free_bytes), ctypes.byref(total), None)
    return free_bytes.value, total.value


def _text(function: str, *args) -> str:
    """Calls a (..., buffer, size, length) function of rmm.h twice: length, then text."""
    length = ctypes.c_size_t()
    _call(function, *args, None, 0, ctypes.byref(length))
    buffer = ctypes.create_string_buffer(length.value + 1)
    _call(function, *args, buffer, length.value + 1, None)
    return buffer.value.decode("utf-8", "replace")


def report() -> str:
    """``rmmGetReport``: the ``report:1`` text of :func:`configure_from_string` ("" unless
    ``report:1``)."""
    return _text("rmmGetReport")


# --------------------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Statistics:
    """A statistics adaptor's counts (bytes as requested, allocations as calls)."""

    current_bytes: int
    peak_bytes: int
    total_bytes: int
    current_count: int
    peak_count: int
    total_count: int

    @classmethod
    def _from_c(cls, c: _CStatistics) -> "Statistics":
        return cls(c.current_bytes, c.peak_bytes, c.total_bytes, c.current_count, c.peak_count, c.total_count)

    def as_dict(self) -> Dict[str, int]:
        return dataclasses.asdict(self)


class Resource:
    """One counted reference (an ``rmmResource_t``) to an rmm-rs memory resource.

    The handle is released by :meth:`close` (or when the object is collected); the
    resource itself lives on while adaptors, the per-device registry or live allocations
    use it. Create resources with the class methods (:meth:`cuda`, :meth:`pool`,
    :meth:`statistics_adaptor`, ...); each binds to the device current when it is made.
    """

    __slots__ = ("_handle", "_keep", "__weakref__")

    def __init__(self, handle: int, keep: Any = None):
        if not handle:
            raise ValueError("Resource: NULL handle")
        self._handle = int(handle)
        self._keep = keep  # Python objects the C side calls back into

    # --- construction ---------------------------------------------------------------

    @staticmethod
    def _create(function: str, *args, keep: Any = None) -> "Resource":
        handle = ctypes.c_void_p()
        _call(function, ctypes.byref(handle), *args)
        return Resource(handle.value, keep)

    @classmethod
    def from_spec(cls, spec: str, device: Optional[int] = None) -> "Resource":
        """The stack a stack spec names, built on `device` (None: the current device); the
        handle is its outermost layer (``rmmResourceCreateFromSpec``). The language of
        ``RMM_ALLOC_CONF``: layers from the outermost to the device, e.g.
        ``"statistics/pool:initial=1GiB,maximum=8GiB/cuda"`` (the grammar, every layer and
        its defaults: docs/src/configuration.md). A spec that does not parse raises
        :class:`RmmError` (``ERROR_INVALID_ARGUMENT``) whose message points at the bad text."""
        handle = ctypes.c_void_p()
        target = get_device() if device is None else int(device)
        _call("rmmResourceCreateFromSpec", str(spec).encode(), target, ctypes.byref(handle))
        return cls(handle.value)

    @classmethod
    def cuda(cls) -> "Resource":
        """Device memory of the current device (``cuMemAlloc``)."""
        return cls._create("rmmCudaResourceCreate")

    @classmethod
    def managed(cls) -> "Resource":
        """Managed (unified) memory."""
        return cls._create("rmmManagedResourceCreate")

    @classmethod
    def cuda_async(cls, initial_pool_size: Union[int, str] = 0, release_threshold: Union[int, str, None] = None,
                   enable_hw_decompress: bool = False) -> "Resource":
        """The driver's stream-ordered allocator over a pool of its own (None: keep all).
        `enable_hw_decompress`: memory for hardware decompression (a CUDA 12.8 driver;
        ``ERROR_NOT_SUPPORTED`` where there is none)."""
        threshold = _SIZE_MAX if release_threshold is None else _size(release_threshold, "release_threshold")
        flags = 1 if enable_hw_decompress else 0  # RMM_ASYNC_HW_DECOMPRESS
        return cls._create("rmmAsyncResourceCreateWithFlags", _size(initial_pool_size, "initial_pool_size"), threshold, 0, flags)

    @classmethod
    def cuda_async_view(cls, pool_handle: int) -> "Resource":
        """Stream-ordered allocation from a driver memory pool of this process that the caller
        made and keeps (a ``cudaMemPool_t`` as an int, e.g. :meth:`pool_handle` of another
        resource); never destroyed here. NULL, a resource handle, or (simulated devices) a value that is no pool:
        ``ERROR_INVALID_ARGUMENT``; the driver itself does not check a pool handle."""
        return cls._create("rmmAsyncViewResourceCreate", ctypes.c_void_p(int(pool_handle)))

    @classmethod
    def cuda_async_managed(cls) -> "Resource":
        """Managed memory from the current device's default managed pool (CUDA 13;
        ``ERROR_NOT_SUPPORTED`` before)."""
        return cls._create("rmmAsyncManagedResourceCreate")

    @classmethod
    def cuda_async_pinned_host(cls, initial_pool_size: Union[int, str] = 0,
                               release_threshold: Union[int, str, None] = None) -> "Resource":
        """Stream-ordered pinned host memory from a driver pool on the host (CUDA 12.6+ where
        the device offers it; ``ERROR_NOT_SUPPORTED`` elsewhere). None: keep all."""
        threshold = _SIZE_MAX if release_threshold is None else _size(release_threshold, "release_threshold")
        return cls._create("rmmAsyncPinnedHostResourceCreate", _size(initial_pool_size, "initial_pool_size"), threshold)

    @classmethod
    def system(cls) -> "Resource":
        """System (pageable) memory, on devices that reach it (HMM or ATS; ``ERROR_NOT_SUPPORTED``
        elsewhere)."""
        return cls._create("rmmSystemResourceCreate")

    @classmethod
    def sam_headroom(cls, headroom: Union[int, str]) -> "Resource":
        """:meth:`system` memory that prefers the device only while `headroom` bytes of it stay free."""
        return cls._create("rmmSamHeadroomResourceCreate", _size(headroom, "headroom"))

    def pool_handle(self) -> int:
        """The driver memory pool (``cudaMemPool_t``) of a resource over one, as an int."""
        pool = ctypes.c_void_p()
        _call("rmmAsyncResourceGetPool", self._h(), ctypes.byref(pool))
        return int(pool.value or 0)

    @classmethod
    def expandable(cls, maximum_size: Union[int, str, None] = None, initial_size: Union[int, str, None] = None,
                   release_threshold: Union[int, str, None] = None, page_size: Union[int, str, None] = None,
                   peers: Iterable[int] = ()) -> "Resource":
        """A pool over the CUDA virtual-memory API on the current device: physical memory is
        mapped in pages into one reserved range as it grows (`maximum_size`, None: room for
        the device's memory; `initial_size` mapped at once), each chunk growing in place by
        what a request needs beyond its free end. With `release_threshold` (bytes), free pages
        go back to the device while more than that is mapped (None: kept until ``release()``).
        `page_size`: a multiple of the device's granularity (None: 1/4096 of the maximum
        size, from the granularity up to 20 MiB). `peers`: other devices given access."""
        peer_list = [int(peer) for peer in peers]
        peer_array = (ctypes.c_int * max(1, len(peer_list)))(*peer_list)
        options = _CExpandableOptions(
            initial_size=_size(initial_size, "initial_size"),
            maximum_size=_size(maximum_size, "maximum_size"),
            release_free_pages=0 if release_threshold is None else 1,
            release_threshold=_size(release_threshold, "release_threshold"),
            page_size=_size(page_size, "page_size"),
            peers=ctypes.cast(peer_array, ctypes.POINTER(ctypes.c_int)),
            num_peers=len(peer_list),
        )
        return cls._create("rmmExpandableResourceCreateWithOptions", ctypes.byref(options))

    @classmethod
    def shareable_expandable(cls, maximum_size: Union[int, str, None] = None, page_size: Union[int, str, None] = None) -> "Resource":
        """:meth:`expandable` whose memory other processes can open (``rmmIpcExpandableResourceCreate``):
        pages are created exportable, and :func:`ipc_get_handle` gives a handle for any of its
        allocations. See docs/src/ipc.md."""
        options = _CExpandableOptions(maximum_size=_size(maximum_size, "maximum_size"), page_size=_size(page_size, "page_size"))
        return cls._create("rmmIpcExpandableResourceCreate", ctypes.byref(options))

    def grant_peer_access(self, peer: int) -> None:
        """Gives device `peer` access to what the expandable resource in this stack maps, now
        and later (``rmmExpandableResourceGrantPeerAccess``)."""
        _call("rmmExpandableResourceGrantPeerAccess", self._h(), int(peer))

    @classmethod
    def pinned_host(cls) -> "Resource":
        return cls._create("rmmPinnedHostResourceCreate")

    @classmethod
    def pool(cls, upstream: "Resource", initial_size: Union[int, str] = 0, maximum_size: Union[int, str, None] = None) -> "Resource":
        """A coalescing, stream-ordered pool over `upstream` (maximum None or 0: no limit)."""
        return cls._create("rmmPoolResourceCreate", upstream._h(), _size(initial_size, "initial_size"), _size(maximum_size, "maximum_size"))

    @classmethod
    def arena(cls, upstream: "Resource", arena_size: Union[int, str] = 0) -> "Resource":
        return cls._create("rmmArenaResourceCreate", upstream._h(), _size(arena_size, "arena_size"))

    @classmethod
    def binning(cls, upstream: "Resource", min_size_exponent: int = 8, max_size_exponent: int = 20) -> "Resource":
        return cls._create("rmmBinningResourceCreate", upstream._h(), int(min_size_exponent), int(max_size_exponent))

    def add_bin(self, allocation_size: Union[int, str], bin: Optional["Resource"] = None) -> None:
        _call("rmmBinningResourceAddBin", self._h(), _size(allocation_size, "allocation_size"), bin._h() if bin else None)

    @classmethod
    def fixed_size(cls, upstream: "Resource", block_size: Union[int, str] = 1 << 20, blocks_to_preallocate: int = 128) -> "Resource":
        return cls._create("rmmFixedSizeResourceCreate", upstream._h(), _size(block_size, "block_size"), int(blocks_to_preallocate))

    @classmethod
    def statistics_adaptor(cls, upstream: "Resource") -> "Resource":
        return cls._create("rmmStatisticsAdaptorCreate", upstream._h())

    @classmethod
    def logging_adaptor(cls, upstream: "Resource", path: Optional[str] = None) -> "Resource":
        """RAPIDS RMM's CSV log (None: the file ``$RMM_LOG_FILE`` names)."""
        return cls._create("rmmLoggingAdaptorCreate", upstream._h(), os.fsencode(path) if path is not None else None)

    @classmethod
    def limiting_adaptor(cls, upstream: "Resource", limit: Union[int, str]) -> "Resource":
        return cls._create("rmmLimitingAdaptorCreate", upstream._h(), _size(limit, "limit"))

    @classmethod
    def tracking_adaptor(cls, upstream: "Resource", capture_stacks: bool = False) -> "Resource":
        return cls._create("rmmTrackingAdaptorCreate", upstream._h(), bool(capture_stacks))

    @classmethod
    def aligned_adaptor(cls, upstream: "Resource", alignment: Union[int, str],
                        threshold: Union[int, str] = 64 << 10) -> "Resource":
        """Aligns allocations of `threshold` bytes or more (default 64 KiB, as the spec's
        ``aligned`` layer and RAPIDS) to `alignment`."""
        return cls._create("rmmAlignedAdaptorCreate", upstream._h(), _size(alignment, "alignment"), _size(threshold, "threshold"))

    @classmethod
    def prefetch_adaptor(cls, upstream: "Resource") -> "Resource":
        return cls._create("rmmPrefetchAdaptorCreate", upstream._h())

    @classmethod
    def of_device(cls, device: Optional[int] = None) -> "Resource":
        """A new handle to `device`'s current resource (None: the current device)."""
        handle = ctypes.c_void_p()
        if device is None:
            _call("rmmGetCurrentDeviceResource", ctypes.byref(handle))
        else:
            _call("rmmGetPerDeviceResource", int(device), ctypes.byref(handle))
        return cls(handle.value)

    # --- the handle -------------------------------------------------------------------

    def _h(self) -> int:
        if not self._handle:
            raise ValueError("Resource is closed")
        return self._handle

    @property
    def handle(self) -> int:
        """The ``rmmResource_t`` as an int (e.g. CuPy's CFunctionAllocator ``param``)."""
        return self._h()

    @property
    def closed(self) -> bool:
        return not self._handle

    def close(self) -> None:
        """Releases this handle (``rmmResourceDestroy``); idempotent."""
        handle, self._handle = self._handle, 0
        if handle and _lib is not None:
            code = _lib.rmmResourceDestroy(handle)
            if code != SUCCESS:
                _raise(code, "rmmResourceDestroy")

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self) -> "Resource":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if not self._handle:
            return "<rmm_rs.Resource closed>"
        try:
            return f"<rmm_rs.Resource {self.name} on device {self.device} at {self._handle:#x}>"
        except RmmError:
            return f"<rmm_rs.Resource at {self._handle:#x}>"

    # --- queries and use --------------------------------------------------------------

    @property
    def name(self) -> str:
        name = ctypes.c_char_p()
        _call("rmmResourceGetName", self._h(), ctypes.byref(name))
        return (name.value or b"").decode()

    @property
    def device(self) -> int:
        device = ctypes.c_int()
        _call("rmmResourceGetDevice", self._h(), ctypes.byref(device))
        return device.value

    def allocate(self, size: int, stream: Any = None) -> int:
        ptr = ctypes.c_void_p()
        _call("rmmResourceAllocate", self._h(), ctypes.byref(ptr), _size(size, "size"), _stream(stream))
        return ptr.value or 0

    def deallocate(self, ptr: int, size: int, stream: Any = None) -> None:
        _call("rmmResourceDeallocate", self._h(), ptr or None, _size(size, "size"), _stream(stream))

    def snapshot(self) -> Dict[str, Any]:
        """The stack below this resource as a dict (``rmmResourceGetSnapshot``)."""
        return json.loads(_text("rmmResourceGetSnapshot", self._h()))

    def write_snapshot(self, path: str) -> None:
        _call("rmmResourceWriteSnapshot", self._h(), os.fsencode(path))

    def release(self) -> int:
        """Gives wholly free pool chunks back upstream; returns the bytes released."""
        released = ctypes.c_size_t()
        _call("rmmResourceRelease", self._h(), ctypes.byref(released))
        return released.value

    def footprint(self) -> Dict[str, Any]:
        """What the resource (or the one beneath this adaptor) holds from the device and hands
        out, now and at the peak, its largest free block, and fragmentation = 1 - live /
        reserved (``rmmResourceGetFootprint``)."""
        f = _CFootprint()
        _call("rmmResourceGetFootprint", self._h(), ctypes.byref(f))
        return {name: getattr(f, name) for name, _ in _CFootprint._fields_}

    def pool_size(self) -> int:
        size = ctypes.c_size_t()
        _call("rmmPoolResourceGetSize", self._h(), ctypes.byref(size))
        return size.value

    def pool_free(self) -> int:
        size = ctypes.c_size_t()
        _call("rmmPoolResourceGetFree", self._h(), ctypes.byref(size))
        return size.value

    # statistics adaptor
    def counts(self) -> Statistics:
        c = _CStatistics()
        _call("rmmStatisticsAdaptorGetCounts", self._h(), ctypes.byref(c))
        return Statistics._from_c(c)

    def push_counters(self) -> None:
        _call("rmmStatisticsAdaptorPushCounters", self._h())

    def pop_counters(self) -> Statistics:
        c = _CStatistics()
        _call("rmmStatisticsAdaptorPopCounters", self._h(), ctypes.byref(c))
        return Statistics._from_c(c)

    # logging / limiting / tracking adaptors
    def flush(self) -> None:
        _call("rmmLoggingAdaptorFlush", self._h())

    def allocated_bytes(self) -> int:
        size = ctypes.c_size_t()
        _call("rmmLimitingAdaptorGetAllocatedBytes", self._h(), ctypes.byref(size))
        return size.value

    def leak_report(self) -> str:
        return _text("rmmTrackingAdaptorGetReport", self._h())


# --------------------------------------------------------------------------------------
# Configuration of the devices' resources
# --------------------------------------------------------------------------------------

RESOURCES = ("pool", "arena", "binning", "cuda", "cuda_async", "managed", "managed_pool", "expandable")


@dataclasses.dataclass
class _Stack:
    device: int
    top: Resource
    statistics: Optional[Resource]
    logging: Optional[Resource]
    layers: List[Resource]

    def close(self) -> None:
        for layer in reversed(self.layers):
            layer.close()


_stacks: Dict[int, _Stack] = {}
_configured = False  # configure(), configure_from_string() or a use_for_*() default ran


def _resolve_devices(devices: Union[None, int, str, Iterable[int]]) -> List[int]:
    if devices is None:
        return [get_device()]
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"devices={devices!r}: expected None, 'all', an int or a list of ints")
        return list(range(device_count()))
    if isinstance(devices, int):
        return [devices]
    return list(dict.fromkeys(int(device) for device in devices))


_SIZE_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_size_t))) - 1


def _base_spec(resource: str, initial: int, maximum: int, release_threshold: Optional[int]) -> str:
    """The stack spec of `resource` in :func:`configure`'s terms (below its adaptors)."""
    pool = f"pool:initial={initial},maximum={maximum}"
    kept = "unlimited" if release_threshold is None else release_threshold
    return {
        "pool": f"{pool}/cuda",
        "managed_pool": f"{pool}/managed",
        "arena": f"arena:size={initial}/cuda",
        "binning": f"binning/{pool}/cuda",
        "cuda": "cuda",
        "managed": "managed",
        "cuda_async": f"cuda_async:initial={initial},release_threshold={maximum or kept}",
        "expandable": f"expandable:initial={initial},maximum={maximum},release_threshold={kept}",
    }[resource]


def _build_stack(device: int, resource: str, initial: int, maximum: int, statistics: bool,
                 log: Optional[str], release_threshold: Optional[int] = None) -> _Stack:
    layers: List[Resource] = []

    def push(layer: Resource) -> Resource:
        layers.append(layer)
        return layer

    try:
        top = push(Resource.from_spec(_base_spec(resource, initial, maximum, release_threshold), device))
        stats = None
        if statistics:
            stats = top = push(Resource.statistics_adaptor(top))
        logging = None
        if log:
            path = log if device == 0 else f"{log}.{device}"
            logging = top = push(Resource.logging_adaptor(top, path))
        return _Stack(device, top, stats, logging, layers)
    except BaseException:
        for layer in reversed(layers):
            layer.close()
        raise


def configure(resource: str = "pool", initial_pool_size: Union[int, str, None] = None,
              maximum_pool_size: Union[int, str, None] = None, statistics: bool = True,
              log: Optional[str] = None,
              devices: Union[None, int, str, Iterable[int]] = None,
              release_threshold: Union[int, str, None] = None) -> Dict[int, Resource]:
    """Builds a resource stack on each device and makes it the device's current resource
    (``rmmSetPerDeviceResource``), replacing what the device had (memory allocated before
    stays valid: ``rmmFree`` returns it to the resource that made it).

    The stack, bottom up: ``cuda`` (``managed`` for ``managed*``; the driver's own pool for
    ``cuda_async``) -> the suballocator `resource` names (``pool``: a pool of
    `initial_pool_size` bytes growing up to `maximum_pool_size`; ``arena``: an arena starting
    with `initial_pool_size`; ``binning``: bins of 256 B..1 MiB over such a pool; ``cuda``,
    ``managed``, ``cuda_async``: none; ``managed_pool``: a pool over managed memory;
    ``expandable``: the virtual-memory resource, reserving `maximum_pool_size` (None: the device),
    mapping `initial_pool_size` at once and, with `release_threshold`, giving free pages back
    while more than that is mapped) ->
    a statistics adaptor (``statistics=True``) -> a logging adaptor (``log``: a CSV path;
    device N > 0 logs to ``<log>.N``).

    Sizes are ints or strings such as ``"4GiB"``; None is 0 (pool: grow on demand / no
    limit). `devices`: None (the current device), an int, a list of ints, or ``"all"``.
    Returns ``{device: top Resource}`` (the module keeps these handles; don't close them).
    """
    global _configured
    resource = str(resource).lower()
    if resource == "async":
        resource = "cuda_async"
    if resource not in RESOURCES:
        raise ValueError(f"resource={resource!r}: expected one of {', '.join(RESOURCES)}")
    initial = _size(initial_pool_size, "initial_pool_size")
    maximum = _size(maximum_pool_size, "maximum_pool_size")
    if maximum and initial > maximum:
        raise ValueError(f"initial_pool_size {initial} exceeds maximum_pool_size {maximum}")
    with _lock:
        targets = _resolve_devices(devices)
        original = get_device()
        built: List[_Stack] = []
        try:
            for device in targets:
                set_device(device)  # resources bind to the device current at creation
                threshold = None if release_threshold is None else _size(release_threshold, "release_threshold")
                built.append(_build_stack(device, resource, initial, maximum, statistics, log, threshold))
            while built:
                stack = built[0]
                previous = ctypes.c_void_p()
                _call("rmmSetPerDeviceResource", stack.device, stack.top._h(), ctypes.byref(previous))
                built.pop(0)
                old = _stacks.pop(stack.device, None)
                _stacks[stack.device] = stack
                if old is not None:
                    old.close()
                if previous.value:
                    Resource(previous.value).close()
        finally:
            for stack in built:  # built but not installed: an error came first
                stack.close()
            set_device(original)
        _configured = True
        return {device: _stacks[device].top for device in targets}


def configure_from_string(conf: Optional[str] = None) -> None:
    """``rmmConfigure``: the stack every device gets on first use, from a stack spec, the
    language of ``RMM_ALLOC_CONF`` and :meth:`Resource.from_spec` (None: ``$RMM_ALLOC_CONF``;
    unset or "": :data:`DEFAULT_SPEC`, a pool with statistics; ``"cuda"`` does not pool), e.g.
    ``"report/statistics/pool:initial=4GiB,maximum=60GiB/cuda"`` or, in the older form,
    ``"resource:pool,initial_pool_size:4GiB,maximum_pool_size:60GiB,log:/tmp/rmm.csv,stats:1"``.

    Devices that already have a resource keep it: call this before anything allocates
    through rmm-rs (and before :func:`configure`, which sets resources at once). An
    unparsable string raises :class:`RmmError` (``RMM_ERROR_INVALID_ARGUMENT``).
    """
    global _configured
    with _lock:
        _call("rmmConfigure", conf.encode() if conf is not None else None)
        _configured = True
        if _stacks:
            import warnings

            warnings.warn(
                f"rmm_rs.configure_from_string: devices {sorted(_stacks)} keep the stacks "
                "rmm_rs.configure() set (rmmConfigure applies only to devices with no resource)",
                RuntimeWarning, stacklevel=2)


# What the module sets up when neither configure() nor RMM_ALLOC_CONF chose a stack (the
# library's own choice for rmmConfigure(NULL), which the preload library makes too): a pool
# with statistics. It is the library's constant; this name only shows it.
DEFAULT_SPEC = "statistics/pool"

# What use_for_torch() sets up instead: the virtual-memory resource held 1 to 36% less than
# the pool under PyTorch training and decoding at the same step time (docs/src/performance.md).
# The legacy IPC API refuses memory that the virtual-memory API maps, so CuPy and Numba, which
# share arrays that way, keep the pool, and PyTorch programs that share CUDA tensors between
# processes configure it (docs/src/frameworks.md).
TORCH_DEFAULT_SPEC = "statistics/expandable"


def _usable_default(spec: Optional[str]) -> Optional[str]:
    """`spec`, or None (the library's default, :data:`DEFAULT_SPEC`, with a warning) when its
    resource cannot be made on the current device (a driver without the virtual-memory API)."""
    if spec is None:
        return spec
    try:
        Resource.from_spec(spec).close()
        return spec
    except RmmError as error:
        import warnings

        warnings.warn(f"rmm_rs: {spec!r} cannot be used here ({error}); using {DEFAULT_SPEC!r}",
                      RuntimeWarning, stacklevel=3)
        return None


def _ensure_configured(default_spec: Optional[str] = None) -> None:
    """For the use_for_*() functions: without an earlier configure() or
    configure_from_string(), apply ``$RMM_ALLOC_CONF``, or when it is unset or empty
    `default_spec` (None: :data:`DEFAULT_SPEC`, a pool with statistics; for PyTorch
    :data:`TORCH_DEFAULT_SPEC`), to devices that have no resource yet."""
    if not _configured:
        configure_from_string(None if os.environ.get("RMM_ALLOC_CONF") else _usable_default(default_spec))


def _find_statistics(node: Any) -> Optional[Dict[str, int]]:
    while isinstance(node, dict):
        if node.get("resource") == "statistics":
            return node
        node = node.get("upstream")
    return None


def statistics(device: Optional[int] = None) -> Optional[Statistics]:
    """The counts of `device`'s statistics adaptor (None: the current device): the one
    :func:`configure` built, else the device's current resource if it is one, else the
    first statistics adaptor in its stack (read from its snapshot). None when the stack has
    no statistics adaptor."""
    if device is None:
        device = get_device()
    stack = _stacks.get(device)
    if stack is not None and stack.statistics is not None:
        return stack.statistics.counts()
    with Resource.of_device(device) as top:
        try:
            return top.counts()
        except RmmError as error:
            if error.code != ERROR_INVALID_ARGUMENT:
                raise
        node = _find_statistics(top.snapshot())
        if node is None:
            return None
        return Statistics(*(int(node[field.name]) for field in dataclasses.fields(Statistics)))


def _statistics_adaptor(device: Optional[int]) -> Resource:
    if device is None:
        device = get_device()
    stack = _stacks.get(device)
    if stack is None or stack.statistics is None:
        raise LookupError(f"device {device}: no statistics adaptor built by rmm_rs.configure()")
    return stack.statistics


def push_statistics(device: Optional[int] = None) -> None:
    """Starts a nested statistics scope on `device`'s adaptor (built by :func:`configure`)."""
    _statistics_adaptor(device).push_counters()


def pop_statistics(device: Optional[int] = None) -> Statistics:
    """Ends the innermost scope; returns its counts."""
    return _statistics_adaptor(device).pop_counters()


def flush_log(device: Optional[int] = None) -> None:
    """Writes out the buffered lines of the logging adaptor :func:`configure` built."""
    if device is None:
        device = get_device()
    stack = _stacks.get(device)
    if stack is None or stack.logging is None:
        raise LookupError(f"device {device}: no logging adaptor built by rmm_rs.configure()")
    stack.logging.flush()


# --------------------------------------------------------------------------------------
# Memory timeline report
# --------------------------------------------------------------------------------------

def write_timeline_report(path: Union[str, "os.PathLike[str]"], resource: Optional[Resource] = None,
                          spec: Optional[str] = None) -> str:
    """Writes a memory timeline of this process to the HTML file `path`
    (``rmmTimelineReportWrite``): the page ``rmm-replay report`` makes from a log, one
    self-contained file that any browser opens offline.

    The page comes from the log of a logging adaptor: `resource` is a stack with one (None:
    the current device's resource, e.g. what ``configure(log=...)`` built). Every logging
    adaptor is flushed, then the log is replayed against a fresh stack built from `spec`
    (``rmm-replay``'s resource spec, e.g. ``"binning/pool"``; None: ``"pool"``) on the current
    device, to learn what a stack reserves for it: while the replay runs it holds up to that
    stack's peak footprint of device memory. A tracking adaptor in the stack names the call
    sites of allocations alive at the peak and still alive now. Raises :class:`RmmError`
    (``RMM_ERROR_INVALID_ARGUMENT`` when the stack has no logging adaptor). Returns `path`.
    """
    target = os.fspath(path)
    encoded_spec = spec.encode() if spec is not None else None
    if resource is None:
        with Resource.of_device() as current:
            _call("rmmTimelineReportWrite", current._h(), encoded_spec, os.fsencode(target))
    else:
        _call("rmmTimelineReportWrite", resource._h(), encoded_spec, os.fsencode(target))
    return target


__all__.append("write_timeline_report")


# --------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------

_torch_allocator = None

# The PyTorch backend's source, shipped beside this module; built against the installed
# PyTorch into a library whose name carries PyTorch's version.
_TORCH_BACKEND_SOURCE = "rmm_rs_torch.cpp"


def _torch_backend_cache() -> str:
    """Where the backend is built when the module's own folder is not writable."""
    return os.path.join(os.path.expanduser("~"), ".cache", "rmm_rs")


def _torch_backend_name(torch_version: str) -> str:
    return "rmm_rs_torch-%s.so" % "".join(c if c.isalnum() else "_" for c in torch_version)


def _torch_cuda_includes(torch: Any) -> List[str]:
    """Folders that hold cuda_runtime_api.h for building against `torch`: the CUDA toolkit
    PyTorch finds (CUDA_HOME), then the CUDA runtime wheels PyTorch depends on."""
    folders = []
    try:
        from torch.utils import cpp_extension

        if cpp_extension.CUDA_HOME:
            folders.append(os.path.join(cpp_extension.CUDA_HOME, "include"))
    except Exception:  # noqa: BLE001 - an unusable cpp_extension only removes one candidate
        pass
    for root in sys.path:
        nvidia = os.path.join(root, "nvidia")
        if os.path.isdir(nvidia):
            for sub in sorted(os.listdir(nvidia)):
                for candidate in (os.path.join(nvidia, sub, "include"), os.path.join(nvidia, sub, "cuda_runtime", "include")):
                    folders.append(candidate)
    return [f for f in folders if os.path.isfile(os.path.join(f, "cuda_runtime_api.h"))]


def build_torch_backend(directory: Optional[str] = None, compiler: Optional[str] = None) -> str:
    """Builds the PyTorch backend (``rmm_rs_torch.cpp``) against the installed PyTorch, as
    PyTorch's C++ extensions are built, into `directory` (None: beside this module when it is
    writable, else ``~/.cache/rmm_rs``), and returns the library's path. `compiler`: the C++
    compiler (None: ``$CXX``, else ``c++``). Needs PyTorch's headers (every CUDA wheel has them)
    and the CUDA runtime's (a CUDA toolkit or the nvidia-cuda-runtime wheel). Raises
    RuntimeError saying what is missing or what the compiler printed."""
    import subprocess

    import torch

    here = os.path.dirname(os.path.abspath(__file__))
    source = os.path.join(here, _TORCH_BACKEND_SOURCE)
    if not os.path.isfile(source):
        raise RuntimeError(f"the PyTorch backend's source {source} is missing")
    if torch.version.cuda is None:
        raise RuntimeError(f"PyTorch {torch.__version__} is not a CUDA build")
    if directory is None:
        directory = here if os.access(here, os.W_OK) else _torch_backend_cache()
    os.makedirs(directory, exist_ok=True)
    output = os.path.join(directory, _torch_backend_name(torch.__version__))
    torch_root = os.path.dirname(os.path.abspath(torch.__file__))
    includes = [os.path.join(torch_root, "include"), os.path.join(torch_root, "include", "torch", "csrc", "api", "include")]
    cuda = _torch_cuda_includes(torch)
    if not cuda:
        raise RuntimeError("no CUDA runtime headers (cuda_runtime_api.h): install the CUDA toolkit or set CUDA_HOME")
    library = os.path.join(torch_root, "lib")
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    command = [compiler or os.environ.get("CXX", "c++"), "-std=c++17", "-O2", "-fPIC", "-shared",
               "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    for folder in includes + cuda[:1]:
        command += ["-isystem", folder]
    temporary = "%s.%d.tmp" % (output, os.getpid())
    command += [source, "-L" + library, "-lc10", "-lc10_cuda", "-ltorch_cuda", "-ldl",
                "-Wl,-rpath," + library, "-o", temporary]
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise RuntimeError(f"cannot run the C++ compiler {command[0]!r}: {error}") from error
    if result.returncode != 0:
        raise RuntimeError("building the PyTorch backend failed:\n" + " ".join(command) + "\n" + result.stderr[-4000:])
    os.replace(temporary, output)
    return output


def _torch_backend_library(torch: Any) -> str:
    """The backend library built for the installed PyTorch: the one pip installed beside this
    module, one built earlier in ``~/.cache/rmm_rs``, or one built now."""
    name = _torch_backend_name(torch.__version__)
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (here, _torch_backend_cache()):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.path.getmtime(path) >= os.path.getmtime(os.path.join(here, _TORCH_BACKEND_SOURCE)):
            return path
    return build_torch_backend()


def _install_torch_backend(torch: Any) -> None:
    path = _torch_backend_library(torch)
    backend = ctypes.CDLL(path)
    backend.rmm_rs_torch_install.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    backend.rmm_rs_torch_install.restype = ctypes.c_int
    message = ctypes.create_string_buffer(1024)
    if backend.rmm_rs_torch_install(os.fsencode(library_path()), message, len(message)) != 0:
        raise RuntimeError(message.value.decode(errors="replace"))


def use_for_torch():
    """Makes rmm-rs PyTorch's CUDA allocator. Each allocation comes from the device's rmm-rs
    resource, on PyTorch's current stream, and is freed in that stream's order.

    The allocator is rmm-rs's PyTorch backend (``rmm_rs_torch.cpp``), which implements
    PyTorch's own allocator interface: ``torch.cuda.memory_allocated()`` and the other
    statistics, ``cudnn.benchmark``, CUDA graphs and ``torch.cuda.MemPool``, memory snapshots,
    ``torch.OutOfMemoryError`` and CUDA IPC behave as under PyTorch's allocator
    (docs/src/torch.md lists what differs). It is built against the installed PyTorch when the
    package is installed with ``-C torch-backend=1``, else on first use into
    ``~/.cache/rmm_rs``. If it cannot be built (no C++ compiler, no CUDA headers), this warns
    why and falls back to ``CUDAPluggableAllocator(librmm.so, "rmmTorchAllocate",
    "rmmTorchDeallocate")``, which lacks those features. ``RMM_RS_TORCH_BACKEND=shim`` asks for
    that fallback.

    Must run before PyTorch initializes CUDA (before the first tensor on the GPU,
    ``torch.cuda.init()`` or ``torch.cuda.set_device()``, which every ``torch.distributed``
    script calls): afterwards PyTorch cannot swap its allocator and this raises RuntimeError.
    Without :func:`configure` first, ``$RMM_ALLOC_CONF`` applies (unset:
    :data:`TORCH_DEFAULT_SPEC`, the expandable resource with statistics on each device, or
    where the driver lacks the virtual-memory API, :data:`DEFAULT_SPEC`). Returns PyTorch's
    allocator object.
    """
    global _torch_allocator
    import torch

    with _lock:
        if _torch_allocator is not None:
            return _torch_allocator
        if torch.cuda.is_initialized():
            raise RuntimeError(
                "rmm_rs.use_for_torch() must be called before PyTorch initializes CUDA "
                "(before the first CUDA tensor, torch.cuda.init() or torch.cuda.set_device()); "
                "PyTorch's own caching allocator is already in use in this process"
            )
        _ensure_configured(TORCH_DEFAULT_SPEC)
        why = "RMM_RS_TORCH_BACKEND=shim" if os.environ.get("RMM_RS_TORCH_BACKEND") == "shim" else None
        if why is None:
            try:
                _install_torch_backend(torch)
                _torch_allocator = torch.cuda.memory._get_current_allocator()
                return _torch_allocator
            except Exception as error:  # noqa: BLE001 - any failure falls back, with its reason
                if torch.cuda.is_initialized():
                    raise RuntimeError(f"rmm_rs.use_for_torch(): PyTorch refused to change its allocator ({error})") from error
                lines = str(error).strip().splitlines()
                import warnings

                warnings.warn(
                    "rmm_rs.use_for_torch(): the PyTorch backend is not available (%s); using "
                    "CUDAPluggableAllocator instead, which lacks memory statistics, "
                    "cudnn.benchmark, CUDA graphs, MemPool, snapshots, a typed out-of-memory error "
                    "and IPC" % (lines[-1] if lines else type(error).__name__),
                    RuntimeWarning, stacklevel=2)
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library_path(), "rmmTorchAllocate", "rmmTorchDeallocate")
        try:
            torch.cuda.memory.change_current_allocator(allocator)
        except RuntimeError as error:
            raise RuntimeError(
                f"rmm_rs.use_for_torch(): PyTorch refused to change its allocator ({error}); "
                "call it before anything uses CUDA in PyTorch (torch.cuda.init(), "
                "torch.cuda.set_device(), the first CUDA tensor)"
            ) from error
        _torch_allocator = allocator
        return allocator


def write_torch_history_log(snapshot: Dict[str, Any], path: Union[str, "os.PathLike[str]"], device: int = 0) -> int:
    """Writes the allocation history of a PyTorch memory snapshot (``torch.cuda.memory._snapshot()``
    after ``torch.cuda.memory._record_memory_history()``) as an RMM log at `path`
    (``Thread,Time,Action,Pointer,Size,Stream``): ``alloc`` is ``allocate``, ``free_completed``
    is ``free``, ``oom`` is ``allocate failure``. ``rmm-replay report -o page.html LOG`` then
    draws rmm-rs's memory timeline from the same history that ``torch.cuda._memory_viz`` draws,
    and ``rmm-replay`` replays it against other stacks. Returns the number of events written."""
    import datetime

    traces = snapshot.get("device_traces") or []
    if device >= len(traces):
        raise ValueError(f"the snapshot has no history for device {device} ({len(traces)} devices)")
    actions = {"alloc": "allocate", "free_completed": "free", "oom": "allocate failure"}
    lines = ["Thread,Time,Action,Pointer,Size,Stream"]
    for entry in traces[device]:
        action = actions.get(entry.get("action"))
        if action is None:
            continue
        when = datetime.datetime.fromtimestamp(entry.get("time_us", 0) / 1e6).strftime("%H:%M:%S.%f")
        pointer = "(nil)" if action == "allocate failure" else "0x%x" % entry["addr"]
        lines.append("0,%s,%s,%s,%d,0x%x" % (when, action, pointer, entry["size"], entry.get("stream", 0)))
    with open(os.fspath(path), "w", encoding="utf-8") as log:
        log.write("\n".join(lines) + "\n")
    return len(lines) - 1


__all__.append("write_torch_history_log")


# --------------------------------------------------------------------------------------
# CuPy
# --------------------------------------------------------------------------------------


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
        if ptr and _lib is not None:
            _lib.rmmFree(ptr, self.stream, None, 0)


def cupy_allocator(nbytes: int):
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


def use_for_cupy(c_function: bool = False, resource: Optional[Resource] = None):
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

    _ensure_configured()
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


# --------------------------------------------------------------------------------------
# Numba (an External Memory Management plugin)
# --------------------------------------------------------------------------------------

_numba_class = None


def _make_numba_manager():
    """Defines RMMNumbaManager on first use, so that importing rmm_rs needs no Numba."""
    global _numba_class
    if _numba_class is not None:
        return _numba_class
    from numba import cuda
    from numba.cuda import HostOnlyCUDAMemoryManager, IpcHandle, MemoryPointer
    from numba.cuda.cudadrv import driver as numba_driver

    MemoryInfo = getattr(numba_driver, "MemoryInfo", None)
    # numba-cuda uses NVIDIA's cuda-bindings (`binding`); old Numba had a ctypes binding.
    nv_binding = getattr(numba_driver, "USE_NV_BINDING", True) and hasattr(numba_driver, "binding")

    def device_pointer(ptr: int):
        if nv_binding:
            return numba_driver.binding.CUdeviceptr(ptr)
        return ctypes.c_uint64(ptr)

    def ipc_mem_handle(base: int):
        if nv_binding:
            return numba_driver.driver.cuIpcGetMemHandle(numba_driver.binding.CUdeviceptr(base))
        handle = numba_driver.drvapi.cu_ipc_mem_handle()
        numba_driver.driver.cuIpcGetMemHandle(ctypes.byref(handle), base)
        return handle

    def pointer_value(memory) -> int:
        value = memory.device_ctypes_pointer.value
        return int(value or 0)

    class RMMNumbaManager(HostOnlyCUDAMemoryManager):
        """Numba EMM plugin: device memory from the current device's rmm-rs resource
        (on the legacy default stream, as Numba orders its own frees); host memory stays
        Numba's. IPC handles name the ``cuMemAlloc`` block that holds the array (a pool's
        chunk) with the array's offset in it, from ``rmmGetAllocationOffset``."""

        def initialize(self):
            _ensure_configured()

        def memalloc(self, size):
            ptr = alloc(size, None)

            def finalizer(ptr=ptr):
                if ptr and _lib is not None:
                    _lib.rmmFree(ptr, None, None, 0)

            return MemoryPointer(self.context, device_pointer(ptr), size, finalizer=finalizer)

        def get_memory_info(self):
            free_bytes, total = memory_info()
            return MemoryInfo(free=free_bytes, total=total) if MemoryInfo else (free_bytes, total)

        def get_ipc_handle(self, memory):
            ptr = pointer_value(memory)
            offset = allocation_offset(ptr)
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

    RMMNumbaManager.__module__ = __name__
    RMMNumbaManager.__qualname__ = "RMMNumbaManager"
    _numba_class = RMMNumbaManager
    return RMMNumbaManager


def use_for_numba():
    """``numba.cuda.set_memory_manager(RMMNumbaManager)``. Call before Numba creates its
    CUDA context (before the first device array or kernel launch); or set
    ``NUMBA_CUDA_MEMORY_MANAGER=rmm_rs`` in the environment. Returns the plugin class."""
    from numba import cuda

    manager = _make_numba_manager()
    cuda.set_memory_manager(manager)
    return manager


def __getattr__(name: str):
    # PEP 562: `rmm_rs.dask` (and `from rmm_rs import dask`) is the sibling module rmm_rs_dask,
    # imported on first access so that `import rmm_rs` never imports Dask; this module is one
    # file, not a package, so the submodule lives beside it (docs/src/distributed.md).
    if name == "dask":
        # ImportError, not AttributeError: `from rmm_rs import dask` turns an AttributeError
        # into "cannot import name" and drops the reason (which module is missing).
        try:
            import rmm_rs_dask
        except ImportError as error:
            raise ImportError(f"rmm_rs.dask needs Dask's distributed: {error}") from error
        return rmm_rs_dask
    # RMMNumbaManager and `_numba_memory_manager` (what NUMBA_CUDA_MEMORY_MANAGER=rmm_rs
    # looks up) are made on first access, importing Numba then.
    if name in ("RMMNumbaManager", "_numba_memory_manager"):
        try:
            return _make_numba_manager()
        except ImportError as error:
            raise AttributeError(f"rmm_rs.{name} needs numba-cuda: {error}") from error
    raise AttributeError(f"module 'rmm_rs' has no attribute {name!r}")
