"""rmm_rs: the rmm-rs memory manager (``librmm.so``) from Python, through ctypes alone.

No compiled extension: the package loads ``librmm.so`` and calls its C API (``rmm.h``). It has
two faces over one configuration (the C library's per-device resources):

rmm_rs's own API builds resource stacks, installs them as the devices' current resources, reads
their statistics, and installs rmm-rs as the device allocator of PyTorch, CuPy and Numba::

    import rmm_rs
    rmm_rs.configure("pool", initial_pool_size="1GiB")  # cuda -> pool -> statistics
    rmm_rs.use_for_torch()       # before PyTorch touches the GPU
    rmm_rs.use_for_cupy()        # allocates on CuPy's current stream
    rmm_rs.use_for_numba()       # an EMM plugin (or NUMBA_CUDA_MEMORY_MANAGER=rmm_rs)
    ...
    print(rmm_rs.statistics())   # Statistics(current_bytes=..., peak_bytes=..., ...)

RAPIDS RMM's Python API, under the same names, so that ``import rmm_rs as rmm`` runs code
written for RAPIDS RMM::

    import rmm_rs as rmm
    rmm.reinitialize(pool_allocator=True, initial_pool_size=2**30)
    buf = rmm.DeviceBuffer(size=100)
    rmm.mr.set_current_device_resource(rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaAsyncMemoryResource()))
    from rmm_rs.allocators.cupy import rmm_cupy_allocator

and RMM's 2019 interface as ``librmm_cffi`` (:mod:`rmm_rs.legacy`).

The modules: :mod:`rmm_rs._bindings` (the library and its errors), :mod:`rmm_rs._core`
(devices, streams, :class:`Resource`, :func:`configure`, statistics, :func:`sleep_device` /
:func:`wake_device`), :mod:`rmm_rs.sleep` (tags that sleep and wake, as torch_memory_saver's:
``region``, ``pause``, ``resume``), :mod:`rmm_rs.frameworks`
(``torch``, ``cupy``, ``numba``, ``dask``), :mod:`rmm_rs.timeline` (the memory timeline page),
RAPIDS' :mod:`rmm_rs.mr`, :mod:`rmm_rs.pylibrmm`, :mod:`rmm_rs.rmm`, :mod:`rmm_rs.statistics`,
:mod:`rmm_rs.allocators`, :mod:`rmm_rs._cuda` and :mod:`rmm_rs._version`, and
:mod:`rmm_rs.legacy`. With ``python/as_rmm`` on the path, ``import rmm`` is this package (RAPIDS
code then runs unchanged; docs/src/python.md). Where the library is found: see
:mod:`rmm_rs._bindings` (``$RMM_RS_LIBRARY`` first). It is loaded on first use, so environment
variables the library reads when it loads (``RMM_SIM_DEVICES``, ``RMM_ALLOC_CONF``, ...) may be
set after ``import rmm_rs``.

Every failed call raises :class:`RmmError` (``.code``, ``.name``, ``.message``: the
library's ``rmmGetErrorString`` and ``rmmGetLastErrorMessage``), which is also RAPIDS'
:class:`RMMError`; out of memory raises :class:`RmmOutOfMemoryError`, which is also a
:class:`MemoryError`.
"""

from typing import Any

from ._bindings import (
    _SIGNATURES,
    ERROR_ALREADY_INITIALIZED,
    ERROR_CUDA_ERROR,
    ERROR_INVALID_ARGUMENT,
    ERROR_INVALID_HANDLE,
    ERROR_IO,
    ERROR_NOT_INITIALIZED,
    ERROR_NOT_SUPPORTED,
    ERROR_OUT_OF_MEMORY,
    ERROR_UNKNOWN,
    SUCCESS,
    RMMError,
    RmmError,
    RmmOutOfMemoryError,
    _call,
    _lock,
    library,
    library_path,
)
from ._core import (
    DEFAULT_SPEC,
    RESOURCES,
    SLEEP_DISCARD,
    SLEEP_KEEP,
    TORCH_DEFAULT_SPEC,
    Resource,
    Statistics,
    _ensure_configured,
    _size,
    _stacks,
    _stream,
    alloc,
    allocation_offset,
    configure,
    configure_from_string,
    device_asleep,
    device_count,
    flush_log,
    free,
    get_device,
    ipc_allow_openers,
    ipc_close_handle,
    ipc_get_handle,
    ipc_open_handle,
    is_simulated,
    release_device_memory,
    memory_info,
    pop_statistics,
    push_statistics,
    report,
    set_device,
    sim_race_count,
    sleep_device,
    stream_create,
    stream_destroy,
    stream_synchronize,
    wake_device,
)
from .frameworks.cupy import cupy_allocator, use_for_cupy
from .frameworks.numba import use_for_numba
from .frameworks.torch import build_torch_backend, use_for_torch, write_torch_history_log
from .timeline import write_timeline_report

# RAPIDS RMM's names.
from . import mr, pylibrmm  # noqa: E402  (after the core: they build on it)
from .pylibrmm.cuda_stream_pool import CudaStreamPool
from .pylibrmm.device_buffer import DeviceBuffer
from .pylibrmm.logger import (
    flush_logger,
    get_flush_level,
    get_logging_level,
    level_enum,
    set_flush_level,
    set_logging_level,
    should_log,
)
from .pylibrmm.memory_resource import disable_logging, enable_logging, get_log_filenames
from .pylibrmm.stream import Stream
from .rmm import is_initialized, register_reinitialize_hook, reinitialize, unregister_reinitialize_hook

# rmm_rs.statistics is the module of RAPIDS' statistics helpers, and callable as rmm_rs's
# statistics(device=None) was: imported last, it replaces the function of that name.
from . import statistics  # noqa: E402,F811

# Tags that sleep and wake, as torch_memory_saver's (rmm_rs.sleep.region / pause / resume).
from . import sleep  # noqa: E402

from . import _cuda  # noqa: E402  (rmm._cuda.gpu, rmm._cuda.stream)
from ._version import __git_commit__, __version__  # noqa: E402

__all__ = [
    # rmm_rs's own API
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
    "release_device_memory",
    "sleep_device",
    "wake_device",
    "device_asleep",
    "SLEEP_KEEP",
    "SLEEP_DISCARD",
    # not "sleep": `from rmm_rs import *` must not hide time.sleep (rmm_rs.sleep is the module)
    "stream_create",
    "stream_destroy",
    "stream_synchronize",
    "use_for_torch",
    "build_torch_backend",
    "use_for_cupy",
    "cupy_allocator",
    "use_for_numba",
    "RMMNumbaManager",
    "write_timeline_report",
    "write_torch_history_log",
    # RAPIDS RMM's
    "CudaStreamPool",
    "DeviceBuffer",
    "RMMError",
    "Stream",
    "disable_logging",
    "enable_logging",
    "flush_logger",
    "get_flush_level",
    "get_log_filenames",
    "get_logging_level",
    "is_initialized",
    "level_enum",
    "mr",
    "pylibrmm",
    "register_reinitialize_hook",
    "reinitialize",
    "set_flush_level",
    "set_logging_level",
    "should_log",
    "unregister_reinitialize_hook",
]


def __getattr__(name: str) -> Any:
    # PEP 562: `rmm_rs.dask` (and `from rmm_rs import dask`) is rmm_rs.frameworks.dask, imported
    # on first access so that `import rmm_rs` never imports Dask (docs/src/distributed.md).
    if name == "dask":
        # ImportError, not AttributeError: `from rmm_rs import dask` turns an AttributeError
        # into "cannot import name" and drops the reason (which module is missing).
        import importlib

        try:
            return importlib.import_module(".frameworks.dask", __name__)
        except ImportError as error:
            raise ImportError(f"rmm_rs.dask needs Dask's distributed: {error}") from error
    # RMMNumbaManager and `_numba_memory_manager` (what NUMBA_CUDA_MEMORY_MANAGER=rmm_rs
    # looks up) are made on first access, importing Numba then.
    if name in ("RMMNumbaManager", "_numba_memory_manager"):
        from .frameworks.numba import make_numba_manager

        try:
            return make_numba_manager()
        except ImportError as error:
            raise AttributeError(f"rmm_rs.{name} needs numba-cuda: {error}") from error
    raise AttributeError(f"module 'rmm_rs' has no attribute {name!r}")
