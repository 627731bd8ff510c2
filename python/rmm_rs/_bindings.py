"""The C library under the rmm_rs package: loading ``librmm.so``, the ctypes signatures of the
functions of ``rmm.h`` that the package names (generated from the header by
scripts/generate_bindings.py, which reads every module of the package), and the errors its
calls raise. Every other module of the package calls the library through :func:`_call`.

The library is found, in this order, at ``$RMM_RS_LIBRARY``; as ``librmm.so`` in this package's
folder (a wheel built with ``-C bundle-library=...`` ships it there); at
``stage/lib/librmm.so``, ``target/release/librmm.so`` or ``target/debug/librmm.so`` of the
repository that holds ``python/rmm_rs/`` (the repository's layout); in the Python environment's
``lib/`` (``cmake --install build --prefix "$VIRTUAL_ENV"``); and last by the dynamic loader's
search (``ctypes.util.find_library("rmm")``, then ``librmm.so``). It is loaded on first use, so
environment variables the library reads when it loads (``RMM_SIM_DEVICES``, ``RMM_ALLOC_CONF``,
...) may be set after ``import rmm_rs``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from typing import Any, List, Optional

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

# The other constants of rmm.h (RMM_ dropped), and C's SIZE_MAX.
LOG_LEVEL_TRACE = 0
LOG_LEVEL_DEBUG = 1
LOG_LEVEL_INFO = 2
LOG_LEVEL_WARN = 3
LOG_LEVEL_ERROR = 4
LOG_LEVEL_CRITICAL = 5
LOG_LEVEL_OFF = 6
IPC_HANDLE_SIZE = 128
STREAM_DEFAULT = 0
STREAM_NON_BLOCKING = 1
HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
HANDLE_TYPE_WIN32 = 2
HANDLE_TYPE_WIN32_KMT = 4
HANDLE_TYPE_FABRIC = 8
ASYNC_HW_DECOMPRESS = 1
CAPABILITY_PAGEABLE_MEMORY_ACCESS = 1
CAPABILITY_MANAGED_MEMORY_POOLS = 2
CAPABILITY_HOST_MEMORY_POOLS = 3
CAPABILITY_HW_DECOMPRESS = 4
MAX_DEVICES = 64
SLEEP_DISCARD = 0
SLEEP_KEEP = 1
VERSION_MAJOR = 0
VERSION_MINOR = 1
VERSION_PATCH = 0
VERSION = 100
CudaDefaultAllocation = 0
PoolAllocation = 1
CudaManagedMemory = 2
CudaAsyncAllocation = 4
# C's SIZE_MAX, which rmm.h's functions take as "no limit" / "keep everything".
SIZE_MAX = ctypes.c_size_t(-1).value


class _CStatistics(ctypes.Structure):
    _fields_ = [
        ("current_bytes", ctypes.c_int64),
        ("peak_bytes", ctypes.c_int64),
        ("total_bytes", ctypes.c_int64),
        ("current_count", ctypes.c_int64),
        ("peak_count", ctypes.c_int64),
        ("total_count", ctypes.c_int64),
    ]


_CReleaseCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _CAllocationRecord(ctypes.Structure):
    _fields_ = [
        ("ptr", ctypes.c_void_p),
        ("size", ctypes.c_size_t),
        ("stream", ctypes.c_void_p),
        ("thread", ctypes.c_uint64),
        ("line", ctypes.c_uint32),
        ("file", ctypes.c_char * 256),
    ]


_CFailureCallback = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_size_t, ctypes.c_void_p)


_CLogCallback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p)


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


class _CDeviceList(ctypes.Structure):
    _fields_ = [
        ("count", ctypes.c_int32),
        ("ids", ctypes.c_int32 * 64),
    ]


class _COptions(ctypes.Structure):
    _fields_ = [
        ("allocation_mode", ctypes.c_uint32),
        ("initial_pool_size", ctypes.c_size_t),
        ("enable_logging", ctypes.c_bool),
        ("devices", _CDeviceList),
        ("maximum_pool_size", ctypes.c_size_t),
    ]


_CAllocateCallback = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)


_CDeallocateCallback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p)


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
    "rmmTrackingAdaptorGetOutstanding": (ctypes.c_int, [ctypes.c_void_p,
        ctypes.POINTER(_CAllocationRecord), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmTrackingAdaptorGetReport": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
        ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmFailureCallbackAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p, _CFailureCallback, ctypes.c_void_p]),
    "rmmAlignedAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_size_t, ctypes.c_size_t]),
    "rmmPrefetchAdaptorCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]),
    "rmmConfigure": (ctypes.c_int, [ctypes.c_char_p]),
    "rmmGetReport": (ctypes.c_int, [ctypes.POINTER(ctypes.c_char), ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_size_t)]),
    "rmmParseSize": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p]),
    "rmmDeviceBufferCreate": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t,
        ctypes.c_void_p, ctypes.c_void_p]),
    "rmmDeviceBufferCreateFromHost": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]),
    "rmmDeviceBufferResize": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
    "rmmDeviceBufferShrinkToFit": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "rmmDeviceBufferCopy": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
        ctypes.c_void_p, ctypes.c_void_p]),
    "rmmDeviceBufferData": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]),
    "rmmDeviceBufferSize": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_size_t)]),
    "rmmDeviceBufferDestroy": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmSetPerDeviceResource": (ctypes.c_int, [ctypes.c_int, ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetPerDeviceResource": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetCurrentDeviceResource": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
    "rmmGetDevice": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "rmmSetDevice": (ctypes.c_int, [ctypes.c_int]),
    "rmmGetDeviceCount": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "rmmGetDeviceMemInfo": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t),
        ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]),
    "rmmIsSimulated": (ctypes.c_int, [ctypes.POINTER(ctypes.c_bool)]),
    "rmmPrefetch": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
        ctypes.c_void_p]),
    "rmmDeviceRelease": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmSimGetRaceCount": (ctypes.c_int, [ctypes.POINTER(ctypes.c_size_t)]),
    "rmmLogSetLevel": (ctypes.c_int, [ctypes.c_int]),
    "rmmLogGetLevel": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]),
    "rmmLogSinkAdd": (ctypes.c_int, [ctypes.POINTER(ctypes.c_uint64), _CLogCallback,
        ctypes.c_void_p]),
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
    "rmmInitialize": (ctypes.c_int, [ctypes.POINTER(_COptions)]),
    "rmmFinalize": (ctypes.c_int, []),
    "rmmIsInitialized": (ctypes.c_bool, [ctypes.POINTER(_COptions)]),
    "rmmAlloc": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p,
        ctypes.c_char_p, ctypes.c_uint]),
    "rmmRealloc": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_void_p,
        ctypes.c_char_p, ctypes.c_uint]),
    "rmmFree": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint]),
    "rmmWriteLog": (ctypes.c_int, [ctypes.c_char_p]),
    "rmmLogSize": (ctypes.c_size_t, []),
    "rmmGetLog": (ctypes.c_int, [ctypes.POINTER(ctypes.c_char), ctypes.c_size_t]),
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
    "rmmCallbackResourceCreateWithRelease": (ctypes.c_int, [_CAllocateCallback,
        _CDeallocateCallback, _CReleaseCallback, ctypes.c_void_p, ctypes.c_int,
        ctypes.POINTER(ctypes.c_void_p)]),
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
    "rmmDeviceSupports": (ctypes.c_int, [ctypes.POINTER(ctypes.c_int), ctypes.c_uint32,
        ctypes.c_int]),
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
    "rmmResourceAllocateAligned": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]),
    "rmmResourceGetDevice": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
    "rmmResourceGetName": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]),
    "rmmResourceSleep": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p]),
    "rmmResourceWake": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p]),
    "rmmResourceIsAsleep": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]),
    "rmmDeviceSleep": (ctypes.c_int, [ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p]),
    "rmmDeviceWake": (ctypes.c_int, [ctypes.c_int, ctypes.c_void_p]),
    "rmmResourceGetSnapshot": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
        ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
    "rmmResourceWriteSnapshot": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "rmmResourceGetFootprint": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_CFootprint)]),
    "rmmStreamCreateWithFlags": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]),
    "rmmStreamDestroy": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmStreamSynchronize": (ctypes.c_int, [ctypes.c_void_p]),
    "rmmMemcpyAsync": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
        ctypes.c_void_p]),
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


class RMMError(Exception):
    """RAPIDS RMM's error class (``rmm.RMMError``): ``errcode`` and a message. Every failed
    rmm-rs call raises :class:`RmmError`, which is one."""

    def __init__(self, errcode: int, msg: str) -> None:
        self.errcode = errcode
        super().__init__(msg)


class RmmError(RuntimeError, RMMError):
    """A failed rmm-rs call: ``code`` (an ``rmmError_t``; RAPIDS' ``errcode`` too), ``name``
    (``rmmGetErrorName``, e.g. ``RMM_ERROR_INVALID_ARGUMENT``), ``description``
    (``rmmGetErrorString``), ``message`` (``rmmGetLastErrorMessage``) and ``function`` (the C
    function that failed)."""

    def __init__(self, code: int, message: str = "", function: str = "", description: str = ""):
        self.code = self.errcode = int(code)
        self.name = _error_name(self.code)
        self.message = message
        self.function = function
        self.description = description
        detail = message or description or "failed"
        if function and function not in detail:
            detail = f"{function}: {detail}"
        RuntimeError.__init__(self, f"{self.name}: {detail}")

    def __reduce__(self):
        return (type(self), (self.code, self.message, self.function, self.description))


class RmmOutOfMemoryError(RmmError, MemoryError):
    """``RMM_ERROR_OUT_OF_MEMORY``: the resource could not satisfy the allocation."""


class RmmAllocationError(RmmError, MemoryError):
    """Any other failure of a call that allocates (``RMM_ERROR_CUDA_ERROR`` from the driver,
    e.g. a memory pool that was destroyed under a ``CudaAsyncViewMemoryResource``): RAPIDS RMM
    raises ``rmm::bad_alloc`` there, which Python sees as ``MemoryError``."""


# The calls that allocate memory, whose driver failures are RmmAllocationError.
_ALLOCATING = frozenset({"rmmAlloc", "rmmRealloc", "rmmResourceAllocate", "rmmResourceAllocateAligned",
                         "rmmDeviceBufferCreate", "rmmDeviceBufferCreateFromHost", "rmmDeviceBufferCopy",
                         "rmmDeviceBufferResize", "rmmDeviceBufferShrinkToFit"})


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
    repo = os.path.dirname(os.path.dirname(_here))  # python/rmm_rs/ -> the repository
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


# An exception a Python callback raised inside a C call (a callback resource's allocate
# function, a failure callback): it cannot unwind through the C library, so the callback
# catches it, keeps it here for its thread and reports failure (NULL, False); the C call's
# failure then raises it, as RAPIDS RMM translates it (_callback_exception). A call that
# succeeds anyway (the library recovered) drops it.
_callback_error = threading.local()


def _keep_callback_error(error: BaseException) -> None:
    _callback_error.error = error


def _callback_exception(error: BaseException) -> BaseException:
    """What RAPIDS RMM raises for an exception from a Python callback: a MemoryError stays one,
    anything else becomes a RuntimeError with its message (and, here, the original as its
    cause). An interrupt (KeyboardInterrupt, SystemExit) stays itself."""
    if isinstance(error, (MemoryError, KeyboardInterrupt, SystemExit)):
        return error
    translated = RuntimeError(str(error))
    translated.__cause__ = error
    return translated


def _raise(code: int, function: str) -> None:
    kept = getattr(_callback_error, "error", None)
    if kept is not None:
        _callback_error.error = None
        raise _callback_exception(kept)
    lib = library()
    message = (lib.rmmGetLastErrorMessage() or b"").decode("utf-8", "replace")
    description = (lib.rmmGetErrorString(code) or b"").decode("utf-8", "replace")
    cls = RmmError
    if code == ERROR_OUT_OF_MEMORY:
        cls = RmmOutOfMemoryError
    elif code == ERROR_CUDA_ERROR and function in _ALLOCATING:
        cls = RmmAllocationError
    raise cls(code, message, function, description)


def _call(function: str, *args: Any) -> None:
    code = getattr(library(), function)(*args)
    if code != SUCCESS:
        _raise(code, function)
    elif getattr(_callback_error, "error", None) is not None:
        _callback_error.error = None
