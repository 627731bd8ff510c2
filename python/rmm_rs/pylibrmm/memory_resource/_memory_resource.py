"""rmm_rs.pylibrmm.memory_resource._memory_resource (RAPIDS' module of that name; the package
rmm_rs.pylibrmm.memory_resource and rmm_rs.mr hold its names): RAPIDS RMM's memory resources,
adaptors and per-device functions, over rmm-rs's resources.

Each object holds one :class:`rmm_rs.Resource` (``.resource``), the rmm-rs handle it was made
as; setting it as a device's resource installs that handle in the C library's per-device
registry, the one that :func:`rmm_rs.configure`, the framework hooks and every C, C++ and
Fortran caller of ``librmm.so`` in the process use. So there is one configuration:
``rmm_rs.statistics()`` reads a ``StatisticsResourceAdaptor`` set here, and
``get_current_device_resource()`` after ``rmm_rs.configure()`` wraps the stack it built.
"""

from __future__ import annotations

import ctypes
import operator
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, Union

from ... import _core
from ..._bindings import (
    ERROR_INVALID_ARGUMENT,
    ERROR_NOT_SUPPORTED,
    HANDLE_TYPE_FABRIC,
    HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    SIZE_MAX,
    RmmError,
    _call,
    _CAllocateCallback,
    _CAllocationRecord,
    _CDeallocateCallback,
    _CFailureCallback,
    _CReleaseCallback,
    _keep_callback_error,
    _lock,
)
from ..._core import Resource, Statistics
from ..helper import parse_bytes
from ..stream import DEFAULT_STREAM, Stream, as_stream

__all__ = [
    "ArenaMemoryResource",
    "BinningMemoryResource",
    "CallbackMemoryResource",
    "CudaAsyncMemoryResource",
    "CudaAsyncViewMemoryResource",
    "CudaMemoryResource",
    "DeviceMemoryResource",
    "ExpandableMemoryResource",
    "FailureCallbackResourceAdaptor",
    "FixedSizeMemoryResource",
    "LimitingResourceAdaptor",
    "LoggingResourceAdaptor",
    "ManagedMemoryResource",
    "PinnedHostMemoryResource",
    "PoolMemoryResource",
    "PrefetchResourceAdaptor",
    "SamHeadroomMemoryResource",
    "StatisticsResourceAdaptor",
    "SystemMemoryResource",
    "TrackingResourceAdaptor",
    "UpstreamResourceAdaptor",
    "available_device_memory",
    "disable_logging",
    "enable_logging",
    "get_current_device_resource",
    "get_current_device_resource_type",
    "get_log_filenames",
    "get_per_device_resource",
    "is_initialized",
    "set_current_device_resource",
    "set_per_device_resource",
]


def _size_t(value: Any, what: str = "size") -> int:
    """An unsigned size as RAPIDS' Cython takes it: an integer (TypeError for anything else),
    OverflowError when negative or too large."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: an integer is required, not {type(value).__name__}") from None
    if number < 0:
        raise OverflowError("can't convert negative value to size_t")
    if number > SIZE_MAX:
        raise OverflowError("value too large to convert to size_t")
    return number


def _free_device_bytes(device: Optional[int] = None) -> Tuple[int, int]:
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    _call("rmmGetDeviceMemInfo", ctypes.byref(free_bytes), ctypes.byref(total),
          _core.get_device() if device is None else int(device))
    return free_bytes.value, total.value


def _half_of_free_memory() -> int:
    """RAPIDS' default pool and arena size: half the current device's free memory (in 256-byte
    units)."""
    return (_free_device_bytes()[0] // 2) // 256 * 256


class DeviceMemoryResource:
    """The base class of every memory resource (RAPIDS' ``DeviceMemoryResource``):
    :meth:`allocate` and :meth:`deallocate` in the order of a stream, and ``resource``, the
    rmm-rs handle."""

    _resource: Optional[Resource] = None

    def _set(self, resource: Resource) -> None:
        self._resource = resource

    @property
    def resource(self) -> Resource:
        """The :class:`rmm_rs.Resource` this object is (for rmm_rs's own functions, e.g.
        ``rmm_rs.use_for_cupy(c_function=True, resource=mr.resource)``)."""
        if self._resource is None:
            raise ValueError(f"{type(self).__name__} holds no resource")
        return self._resource

    def allocate(self, nbytes: int, stream: Any = DEFAULT_STREAM) -> int:
        """`nbytes` bytes for use in the order of `stream`; the address as an int. MemoryError
        when the resource cannot give them."""
        size = _size_t(nbytes, "nbytes")
        handle = as_stream(stream).handle
        ptr = ctypes.c_void_p()
        _call("rmmResourceAllocate", self.resource._h(), ctypes.byref(ptr), size, handle or None)
        return ptr.value or 0

    def deallocate(self, ptr: int, nbytes: int, stream: Any = DEFAULT_STREAM) -> None:
        """Gives back `ptr` (from :meth:`allocate` of this resource, `nbytes` long) in the order
        of `stream`."""
        size = _size_t(nbytes, "nbytes")
        handle = as_stream(stream).handle
        _call("rmmResourceDeallocate", self.resource._h(), int(ptr) or None, size, handle or None)

    # rmm-rs's own (RAPIDS RMM has no sleep): docs/src/sleep.md, rmm_rs.sleep for tags.
    def sleep(self, mode: Union[str, int] = "keep", stream: Any = None) -> None:
        """Gives back all the device memory of the resource, live blocks' included, keeping
        every address for after :meth:`wake` (rmm-rs's ``rmmResourceSleep``; RAPIDS RMM has no
        such call). Only a resource that is, or sits over, an :class:`ExpandableMemoryResource`
        can sleep: a pool, arena, binning resource or adaptor over one sleeps through it.
        `mode` ``"keep"`` copies the contents of live blocks to pinned host memory (on `stream`,
        None: the default stream) and back at :meth:`wake`; ``"discard"`` drops them. While
        asleep, :meth:`allocate` (and a DeviceBuffer, CuPy array or tensor made from the
        resource) raises :class:`rmm_rs.RmmError` (``RMM_ERROR_INVALID_ARGUMENT``, "the
        resource sleeps"); :meth:`deallocate` works.

        Errors: :class:`rmm_rs.RmmError` with ``code`` ``ERROR_NOT_SUPPORTED`` for a resource
        over no expandable resource (``CudaMemoryResource``, a pool over it),
        ``ERROR_INVALID_ARGUMENT`` for one asleep already; :class:`rmm_rs.RmmOutOfMemoryError`
        (a MemoryError) when pinned host memory for the copy runs out; ValueError for another
        mode. On an error nothing sleeps."""
        self.resource.sleep(mode, _stream_handle(stream))

    def wake(self, stream: Any = None) -> None:
        """Takes device memory again for everything :meth:`sleep` gave back, at the same
        addresses, and copies back what it kept (on `stream`, synchronized before this
        returns). :class:`rmm_rs.RmmOutOfMemoryError` when the device cannot give the memory
        now: the resource stays asleep, its copy intact; call again later. A resource that is
        awake: :class:`rmm_rs.RmmError` ``ERROR_INVALID_ARGUMENT``."""
        self.resource.wake(_stream_handle(stream))

    @property
    def asleep(self) -> bool:
        """True between :meth:`sleep` and :meth:`wake` (of this resource or of the expandable
        resource under it). A resource that cannot sleep: :class:`rmm_rs.RmmError`
        ``ERROR_NOT_SUPPORTED``."""
        return self.resource.asleep

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} {self._resource!r}>"

    @classmethod
    def _adopt(cls, resource: Resource) -> "DeviceMemoryResource":
        """An object of this class for a resource made elsewhere (rmm_rs.configure, the C API)."""
        obj = cls.__new__(cls)
        obj._set(resource)
        return obj


class UpstreamResourceAdaptor(DeviceMemoryResource):
    """A resource over another one, `upstream_mr` (kept alive as ``upstream_mr``). A resource
    made elsewhere (``get_current_device_resource()`` after ``rmm_rs.configure()``) has
    ``upstream_mr`` None: its layers below are the C library's."""

    upstream_mr: Optional[DeviceMemoryResource] = None

    def __init__(self, upstream_mr: DeviceMemoryResource, *args: Any, **kwargs: Any) -> None:
        self.upstream_mr = _upstream(upstream_mr)

    def get_upstream(self) -> Optional[DeviceMemoryResource]:
        return self.upstream_mr


def _stream_handle(stream: Any) -> Optional[int]:
    """The stream handle of `stream` for the sleep calls: None (the default stream), a
    :class:`Stream`, or anything :class:`Stream` wraps."""
    if stream is None:
        return None
    return as_stream(stream).handle or None


def _upstream(upstream_mr: Any) -> DeviceMemoryResource:
    if upstream_mr is None:
        raise TypeError("Argument `upstream_mr` must not be None")
    if not isinstance(upstream_mr, DeviceMemoryResource):
        raise TypeError("Argument 'upstream_mr' has incorrect type (expected DeviceMemoryResource, got "
                        f"{type(upstream_mr).__name__})")
    return upstream_mr


class CudaMemoryResource(DeviceMemoryResource):
    """Device memory of the current device (``cudaMalloc``; rmm-rs's ``cuda`` resource)."""

    def __init__(self) -> None:
        self._set(Resource.cuda())


class ManagedMemoryResource(DeviceMemoryResource):
    """Managed (unified) memory (``cudaMallocManaged``)."""

    def __init__(self) -> None:
        self._set(Resource.managed())


class SystemMemoryResource(DeviceMemoryResource):
    """System (pageable) memory, on devices that reach it (HMM or ATS)."""

    def __init__(self) -> None:
        self._set(Resource.system())


class CudaAsyncManagedMemoryResource(DeviceMemoryResource):
    """Stream-ordered managed memory from the current device's default managed memory pool
    (RAPIDS' ``rmm.mr.experimental.CudaAsyncManagedMemoryResource``; CUDA 13 and concurrent
    managed access, ``RMM_ERROR_NOT_SUPPORTED`` elsewhere)."""

    def __init__(self) -> None:
        self._set(Resource.cuda_async_managed())

    def pool_handle(self) -> int:
        """The driver memory pool it allocates from, as an int."""
        return self.resource.pool_handle()


class ExpandableMemoryResource(DeviceMemoryResource):
    """rmm-rs's virtual-memory resource (not in RAPIDS RMM; ``rmm_rs.Resource.expandable``):
    one address range reserved on the current device (`maximum_size`, None: room for the
    device's memory) into which physical pages are mapped as it grows (`initial_size` at
    once); with `release_threshold` (bytes) free pages go back to the device while more than
    that is mapped. `page_size`: a multiple of the device's granularity (None: chosen from the
    maximum size). `peers`: other devices given access. Sizes are ints or strings such as
    "1GiB". It is the resource that can :meth:`sleep` (and the one :mod:`rmm_rs.sleep` makes
    per tag); a stack over it sleeps through it."""

    def __init__(self, maximum_size: Union[int, str, None] = None, initial_size: Union[int, str, None] = None,
                 release_threshold: Union[int, str, None] = None, page_size: Union[int, str, None] = None,
                 peers: Any = ()) -> None:
        def size(value: Any, what: str) -> Optional[int]:
            return None if value is None else _size_t(parse_bytes(value), what)

        self._set(Resource.expandable(maximum_size=size(maximum_size, "maximum_size"),
                                      initial_size=size(initial_size, "initial_size"),
                                      release_threshold=size(release_threshold, "release_threshold"),
                                      page_size=size(page_size, "page_size"), peers=peers))

    def release(self) -> int:
        """Gives the free pages it keeps mapped back to the device; returns the bytes."""
        return self.resource.release()


class PinnedHostMemoryResource(DeviceMemoryResource):
    """Pinned host memory (``cudaMallocHost``)."""

    def __init__(self) -> None:
        self._set(Resource.pinned_host())


class SamHeadroomMemoryResource(DeviceMemoryResource):
    """System memory that prefers the device while `headroom` bytes of it stay free."""

    def __init__(self, headroom: int) -> None:
        self._set(Resource.sam_headroom(_size_t(headroom, "headroom")))


class CudaAsyncMemoryResource(DeviceMemoryResource):
    """The driver's stream-ordered allocator (``cudaMallocAsync``) over a pool of its own.
    `initial_pool_size` (int or a string such as "1GiB") is reserved at once; the pool keeps
    what it holds unless `release_threshold` (bytes) says how much it keeps across
    synchronizations. `enable_ipc` / `enable_fabric`: its memory can be exported as POSIX file
    descriptors / fabric handles (RmmError ``RMM_ERROR_NOT_SUPPORTED`` where the device
    cannot)."""

    def __init__(self, initial_pool_size: Union[int, str, None] = None, release_threshold: Optional[int] = None,
                 enable_ipc: bool = False, enable_fabric: bool = False) -> None:
        initial = 0 if initial_pool_size is None else _size_t(parse_bytes(initial_pool_size), "initial_pool_size")
        threshold = SIZE_MAX if release_threshold is None else _size_t(release_threshold, "release_threshold")
        kinds = (HANDLE_TYPE_POSIX_FILE_DESCRIPTOR if enable_ipc else 0) | (HANDLE_TYPE_FABRIC if enable_fabric else 0)
        handle = ctypes.c_void_p()
        try:
            _call("rmmAsyncResourceCreateWithFlags", ctypes.byref(handle), initial, threshold, kinds, 0)
        except RmmError as error:
            if error.code != ERROR_NOT_SUPPORTED or not kinds:
                raise
            # RAPIDS' message ends so (its test of enable_fabric matches the end).
            raise RmmError(error.code, f"{error.message}: Requested IPC memory handle type not supported",
                           error.function, error.description) from None
        self._set(Resource(handle.value))


class CudaAsyncViewMemoryResource(DeviceMemoryResource):
    """Stream-ordered allocation from a driver memory pool the caller made and keeps
    (``cudaMemPool_t`` or ``CUmemoryPool``, or its value as an int)."""

    def __init__(self, pool_handle: Any) -> None:
        try:
            value = int(pool_handle)
        except (TypeError, ValueError):
            raise ValueError("pool_handle must be a cudaMemPool_t or CUmemoryPool") from None
        self._pool_handle = value
        self._set(Resource.cuda_async_view(value))

    def pool_handle(self) -> int:
        return self._pool_handle


class PoolMemoryResource(UpstreamResourceAdaptor):
    """A coalescing, stream-ordered pool over `upstream_mr`: `initial_pool_size` bytes up front
    (None: half the device's free memory, as RAPIDS), growing up to `maximum_pool_size` (None:
    no limit). Sizes are ints or strings such as "1GiB" (``parse_bytes``)."""

    def __init__(self, upstream_mr: DeviceMemoryResource, initial_pool_size: Union[int, str, None] = None,
                 maximum_pool_size: Union[int, str, None] = None) -> None:
        super().__init__(upstream_mr)
        initial = _half_of_free_memory() if initial_pool_size is None else _size_t(parse_bytes(initial_pool_size), "initial_pool_size")
        maximum = 0 if maximum_pool_size is None else _size_t(parse_bytes(maximum_pool_size), "maximum_pool_size")
        if maximum and initial > maximum:
            # RAPIDS' message and type (its C++ logic_error reaches Python as a RuntimeError).
            raise RmmError(ERROR_INVALID_ARGUMENT, f"Initial pool size exceeds the maximum pool size "
                           f"(initial_pool_size {initial} > maximum_pool_size {maximum})", "PoolMemoryResource")
        self._set(Resource.pool(upstream_mr.resource, initial, maximum))

    def pool_size(self) -> int:
        """The bytes the pool holds from its upstream."""
        return self.resource.pool_size()


class ArenaMemoryResource(UpstreamResourceAdaptor):
    """An arena over `upstream_mr`: a global arena of `arena_size` bytes (None: half the
    device's free memory, as RAPIDS) and per-thread and per-stream arenas.
    `dump_log_on_failure` is accepted; rmm-rs reports a failure in its error message."""

    def __init__(self, upstream_mr: DeviceMemoryResource, arena_size: Union[int, str, None] = None,
                 dump_log_on_failure: bool = False) -> None:
        super().__init__(upstream_mr)
        size = _half_of_free_memory() if arena_size is None else _size_t(parse_bytes(arena_size), "arena_size")
        self._set(Resource.arena(upstream_mr.resource, size))


class FixedSizeMemoryResource(UpstreamResourceAdaptor):
    """Blocks of one size, `block_size` bytes (requests up to it take one block; larger ones
    are refused), `blocks_to_preallocate` of them at a time."""

    def __init__(self, upstream_mr: DeviceMemoryResource, block_size: int = 1 << 20,
                 blocks_to_preallocate: int = 128) -> None:
        super().__init__(upstream_mr)
        self._set(Resource.fixed_size(upstream_mr.resource, _size_t(block_size, "block_size"),
                                      _size_t(blocks_to_preallocate, "blocks_to_preallocate")))


class BinningMemoryResource(UpstreamResourceAdaptor):
    """Requests go to the smallest bin that holds them, larger ones to `upstream_mr`. With both
    exponents given, fixed-size bins of 2**min_size_exponent .. 2**max_size_exponent bytes are
    made; :meth:`add_bin` adds bins."""

    def __init__(self, upstream_mr: DeviceMemoryResource, min_size_exponent: int = -1,
                 max_size_exponent: int = -1) -> None:
        super().__init__(upstream_mr)
        self._bin_mrs: List[DeviceMemoryResource] = []
        low, high = int(min_size_exponent), int(max_size_exponent)
        if low == -1 or high == -1:
            low, high = 1, 0  # no bins (rmmBinningResourceCreate: min > max)
        self._set(Resource.binning(upstream_mr.resource, low, high))

    def add_bin(self, allocation_size: int, bin_resource: Optional[DeviceMemoryResource] = None) -> None:
        """A bin for requests up to `allocation_size` bytes: `bin_resource`, or (None) a
        fixed-size resource of that block size over the upstream."""
        if bin_resource is not None and not isinstance(bin_resource, DeviceMemoryResource):
            raise TypeError(f"bin_resource: expected a DeviceMemoryResource, got {type(bin_resource).__name__}")
        self.resource.add_bin(_size_t(allocation_size, "allocation_size"),
                              bin_resource.resource if bin_resource is not None else None)
        if bin_resource is not None:
            self._bin_mrs.append(bin_resource)

    @property
    def bin_mrs(self) -> List[DeviceMemoryResource]:
        """The bin resources given to :meth:`add_bin`."""
        return list(getattr(self, "_bin_mrs", []))


# Python callables the C library calls back: kept here until the resource that calls them is
# gone (rmmCallbackResourceCreateWithRelease's release callback), not only while the Python
# object lives, since the per-device registry and live allocations outlive it.
_kept: Dict[int, Any] = {}
_kept_ids = iter(range(1, sys.maxsize))


def _report_unraisable(message: str) -> None:
    error = sys.exc_info()[1]
    hook = getattr(sys, "unraisablehook", None)
    if hook is not None and error is not None:
        hook(type("UnraisableHookArgs", (), {"exc_type": type(error), "exc_value": error,
                                             "exc_traceback": error.__traceback__, "err_msg": message,
                                             "object": None})())


class CallbackMemoryResource(DeviceMemoryResource):
    """A resource whose allocations are made by Python functions (for debugging):
    ``allocate_func(nbytes, stream)`` returns an address (int), ``deallocate_func(ptr, nbytes,
    stream)`` gives it back; `stream` is a :class:`Stream`. An exception in `allocate_func`
    fails the allocation that called it (nothing allocated) and is raised there as RAPIDS
    raises it: a MemoryError as itself, anything else as a RuntimeError with its message
    (the original is its ``__cause__``). One in `deallocate_func` cannot reach a caller: it
    goes to ``sys.unraisablehook``."""

    def __init__(self, allocate_func: Callable[[int, Stream], int],
                 deallocate_func: Callable[[int, int, Stream], None]) -> None:
        self._allocate_func = allocate_func
        self._deallocate_func = deallocate_func

        def allocate(nbytes: int, stream: Optional[int], _user: Optional[int]) -> Optional[int]:
            try:
                return int(allocate_func(nbytes, Stream._borrowed(stream or 0))) or None
            except BaseException as error:  # noqa: BLE001 - raised again after the C call
                _keep_callback_error(error)
                return None

        def deallocate(ptr: Optional[int], nbytes: int, stream: Optional[int], _user: Optional[int]) -> None:
            try:
                deallocate_func(ptr or 0, nbytes, Stream._borrowed(stream or 0))
            except BaseException:  # noqa: BLE001 - a C caller cannot take it
                _report_unraisable("Exception ignored in CallbackMemoryResource's deallocate_func")

        key = next(_kept_ids)

        def release(_user: Optional[int]) -> None:
            _kept.pop(key, None)

        callbacks = (_CAllocateCallback(allocate), _CDeallocateCallback(deallocate), _CReleaseCallback(release))
        _kept[key] = callbacks
        handle = ctypes.c_void_p()
        try:
            _call("rmmCallbackResourceCreateWithRelease", callbacks[0], callbacks[1], callbacks[2], None,
                  _core.get_device(), ctypes.byref(handle))
        except BaseException:
            _kept.pop(key, None)
            raise
        self._set(Resource(handle.value))


class LimitingResourceAdaptor(UpstreamResourceAdaptor):
    """Refuses (MemoryError) allocations that would take more than `allocation_limit` bytes
    in all from `upstream_mr`."""

    def __init__(self, upstream_mr: DeviceMemoryResource, allocation_limit: int) -> None:
        super().__init__(upstream_mr)
        self._limit = _size_t(allocation_limit, "allocation_limit")
        self._set(Resource.limiting_adaptor(upstream_mr.resource, self._limit))

    def get_allocated_bytes(self) -> int:
        return self.resource.allocated_bytes()

    def get_allocation_limit(self) -> int:
        limit = getattr(self, "_limit", None)
        if limit is None:  # made elsewhere: its snapshot knows
            limit = int(self.resource.snapshot().get("limit", 0))
        return limit


def _append_id(filename: str, device: int) -> str:
    """RAPIDS' log file name of a device: "name.dev<ID>.ext"."""
    name, extension = os.path.splitext(filename)
    return f"{name}.dev{device}{extension}"


class LoggingResourceAdaptor(UpstreamResourceAdaptor):
    """Writes one CSV line (``Thread,Time,Action,Pointer,Size,Stream``) per allocation and free
    of `upstream_mr` to `log_file_name` with the device's id added before its extension
    (``log.csv`` -> ``log.dev0.csv``, as RAPIDS; :meth:`get_file_name` says which). None: the
    file ``$RMM_LOG_FILE`` names; neither: ValueError."""

    def __init__(self, upstream_mr: DeviceMemoryResource, log_file_name: Optional[str] = None) -> None:
        super().__init__(upstream_mr)
        if log_file_name is None:
            log_file_name = os.getenv("RMM_LOG_FILE")
            if not log_file_name:
                raise ValueError("RMM log file must be specified either using log_file_name= argument or "
                                 "RMM_LOG_FILE environment variable")
        path = os.path.abspath(_append_id(os.fspath(log_file_name), _core.get_device()))
        self._log_file_name: Optional[str] = path
        self._set(Resource.logging_adaptor(upstream_mr.resource, path))

    def flush(self) -> None:
        self.resource.flush()

    def get_file_name(self) -> Optional[str]:
        name = getattr(self, "_log_file_name", None)
        if name is None:  # made elsewhere: its snapshot knows
            name = self.resource.snapshot().get("path")
        return name


class StatisticsResourceAdaptor(UpstreamResourceAdaptor):
    """Counts the bytes and allocations of `upstream_mr`: now, at the peak and in total
    (:attr:`allocation_counts`), in nested scopes (:meth:`push_counters`, :meth:`pop_counters`)."""

    def __init__(self, upstream_mr: DeviceMemoryResource) -> None:
        super().__init__(upstream_mr)
        self._set(Resource.statistics_adaptor(upstream_mr.resource))

    @property
    def allocation_counts(self) -> Statistics:
        """The counts of the innermost scope: ``current_bytes``, ``current_count``,
        ``peak_bytes``, ``peak_count``, ``total_bytes``, ``total_count``."""
        return self.resource.counts()

    def push_counters(self) -> Statistics:
        """Starts a nested scope; returns the counts before it."""
        before = self.resource.counts()
        self.resource.push_counters()
        return before

    def pop_counters(self) -> Statistics:
        """Ends the innermost scope and returns its counts. Without a pushed scope: IndexError."""
        try:
            return self.resource.pop_counters()
        except RmmError as error:
            if error.code == ERROR_INVALID_ARGUMENT:
                raise IndexError("cannot pop the last counter pair") from error
            raise


class TrackingResourceAdaptor(UpstreamResourceAdaptor):
    """Records every outstanding allocation of `upstream_mr` (with the stack that made it when
    `capture_stacks`)."""

    def __init__(self, upstream_mr: DeviceMemoryResource, capture_stacks: bool = False) -> None:
        super().__init__(upstream_mr)
        self._set(Resource.tracking_adaptor(upstream_mr.resource, bool(capture_stacks)))

    def _records(self) -> List[Any]:
        count = ctypes.c_size_t()
        _call("rmmTrackingAdaptorGetOutstanding", self.resource._h(), None, 0, ctypes.byref(count))
        while True:
            records = (_CAllocationRecord * max(1, count.value))()
            capacity = count.value
            _call("rmmTrackingAdaptorGetOutstanding", self.resource._h(), records, capacity, ctypes.byref(count))
            if count.value <= capacity:
                return list(records[:count.value])

    def get_allocated_bytes(self) -> int:
        """The bytes of the outstanding allocations."""
        return sum(record.size for record in self._records())

    def get_outstanding_allocations_str(self) -> str:
        """The outstanding allocations as text: address, size and (with `capture_stacks`) stack."""
        return self.resource.leak_report()

    def log_outstanding_allocations(self) -> None:
        """Writes :meth:`get_outstanding_allocations_str` to stderr when the logging level
        (``rmm_rs.get_logging_level()``) is debug or lower, as RAPIDS logs it at debug level."""
        from ..logger import level_enum, should_log

        if should_log(level_enum.debug):
            text = self.get_outstanding_allocations_str()
            if text:
                sys.stderr.write(text if text.endswith("\n") else text + "\n")


class FailureCallbackResourceAdaptor(UpstreamResourceAdaptor):
    """When an allocation of `upstream_mr` fails for lack of memory, calls ``callback(nbytes)``
    and tries again while it returns True (to free caches first); else MemoryError. An
    exception in `callback` fails the allocation and is raised there as from a
    :class:`CallbackMemoryResource`'s function (RuntimeError unless a MemoryError)."""

    def __init__(self, upstream_mr: DeviceMemoryResource, callback: Callable[[int], bool]) -> None:
        super().__init__(upstream_mr)
        self._callback = callback

        def on_failure(nbytes: int, _arg: Optional[int]) -> bool:
            try:
                return bool(callback(nbytes))
            except BaseException as error:  # noqa: BLE001 - raised again after the C call
                _keep_callback_error(error)
                return False

        function = _CFailureCallback(on_failure)
        handle = ctypes.c_void_p()
        _call("rmmFailureCallbackAdaptorCreate", ctypes.byref(handle), upstream_mr.resource._h(), function, None)
        # The adaptor has no release callback: its function lives as long as the process.
        _kept[next(_kept_ids)] = function
        self._set(Resource(handle.value))


class PrefetchResourceAdaptor(UpstreamResourceAdaptor):
    """Migrates each allocation of managed memory to the device, in its stream's order, before
    handing it out."""

    def __init__(self, upstream_mr: DeviceMemoryResource) -> None:
        super().__init__(upstream_mr)
        self._set(Resource.prefetch_adaptor(upstream_mr.resource))


# rmm-rs's resource names (rmmResourceGetName) -> the class a resource made elsewhere is shown as.
_BY_NAME: Dict[str, Type[DeviceMemoryResource]] = {
    "cuda": CudaMemoryResource,
    "managed": ManagedMemoryResource,
    "expandable": ExpandableMemoryResource,
    "cuda_async": CudaAsyncMemoryResource,
    "pinned_host": PinnedHostMemoryResource,
    "system": SystemMemoryResource,
    "sam_headroom": SamHeadroomMemoryResource,
    "pool": PoolMemoryResource,
    "arena": ArenaMemoryResource,
    "fixed_size": FixedSizeMemoryResource,
    "binning": BinningMemoryResource,
    "callback": CallbackMemoryResource,
    "limiting": LimitingResourceAdaptor,
    "logging": LoggingResourceAdaptor,
    "statistics": StatisticsResourceAdaptor,
    "tracking": TrackingResourceAdaptor,
    "failure_callback": FailureCallbackResourceAdaptor,
    "prefetch": PrefetchResourceAdaptor,
}


def _from_c(resource: Resource) -> DeviceMemoryResource:
    """An object for a resource made elsewhere, of the class its rmm-rs name maps to (a plain
    :class:`DeviceMemoryResource` for those of rmm-rs's own that have no class here)."""
    cls = _BY_NAME.get(resource.name, DeviceMemoryResource)
    obj = cls._adopt(resource)
    if isinstance(obj, LoggingResourceAdaptor):
        obj._log_file_name = None
    return obj


def get_per_device_resource(device: int) -> DeviceMemoryResource:
    """`device`'s current resource: the object set with :func:`set_per_device_resource`, else
    an object for what the C library holds (rmm-rs's ``cuda`` resource when nothing was set,
    as RAPIDS' ``CudaMemoryResource``; what ``rmm_rs.configure()`` built)."""
    device = int(device)
    with _lock:
        obj = _core._device_objects.get(device)
        if obj is None:
            # Kept, so that every call gives the same object, as RAPIDS does (code compares them
            # with `is`); _core._install forgets it when the device's resource changes.
            obj = _core._device_objects[device] = _from_c(Resource.of_device(device))
        return obj


def set_per_device_resource(device: int, mr: DeviceMemoryResource) -> None:
    """Makes `mr` `device`'s resource; `mr` must have been made while `device` was current
    (RmmError ``RMM_ERROR_INVALID_ARGUMENT`` otherwise). Memory allocated before keeps its own
    resource. Replaces whatever set the device's resource before (``rmm_rs.configure()``
    included)."""
    if not isinstance(mr, DeviceMemoryResource):
        raise TypeError(f"Argument 'mr' has incorrect type (expected DeviceMemoryResource, got {type(mr).__name__})")
    with _lock:
        _core._install(int(device), mr.resource, python_object=mr)


def set_current_device_resource(mr: DeviceMemoryResource) -> None:
    """:func:`set_per_device_resource` for the current device."""
    set_per_device_resource(_core.get_device(), mr)


def get_current_device_resource() -> DeviceMemoryResource:
    """:func:`get_per_device_resource` of the current device."""
    return get_per_device_resource(_core.get_device())


def get_current_device_resource_type() -> Type[DeviceMemoryResource]:
    """The class of :func:`get_current_device_resource`."""
    return type(get_current_device_resource())


def is_initialized() -> bool:
    """True while every resource set through this module holds its rmm-rs resource (as RAPIDS:
    always, unless one was closed by hand)."""
    with _lock:
        return all(obj._resource is not None and not obj._resource.closed
                   for obj in _core._device_objects.values())


def _flush_logs() -> None:
    """Flushes the logging adaptors set as the devices' resources."""
    with _lock:
        objects = list(_core._device_objects.values())
    for obj in objects:
        if isinstance(obj, LoggingResourceAdaptor):
            obj.flush()


def _devices_in_use() -> List[int]:
    with _lock:
        devices = sorted(_core._device_objects)
    return devices or [_core.get_device()]


def enable_logging(log_file_name: Optional[str] = None) -> None:
    """Puts a :class:`LoggingResourceAdaptor` over the resource of each device in use (those
    set through this module, else the current device), unless it has one on top: one log per
    device, ``log_file_name`` (None: ``$RMM_LOG_FILE``) with ``.dev<ID>`` added."""
    original = _core.get_device()
    try:
        for device in _devices_in_use():
            current = get_per_device_resource(device)
            if not isinstance(current, LoggingResourceAdaptor):
                _core.set_device(device)  # a resource belongs to the device current when made
                set_per_device_resource(device, LoggingResourceAdaptor(current, log_file_name))
    finally:
        _core.set_device(original)


def disable_logging() -> None:
    """Takes off the logging adaptors :func:`enable_logging` or ``rmm.reinitialize(logging=True)``
    put on (their upstream becomes the device's resource again)."""
    with _lock:
        items = list(_core._device_objects.items())
    for device, obj in items:
        if isinstance(obj, LoggingResourceAdaptor) and obj.upstream_mr is not None:
            obj.flush()
            set_per_device_resource(device, obj.upstream_mr)


def get_log_filenames() -> Dict[int, Optional[str]]:
    """The log file of each device in use (None where it does not log)."""
    result: Dict[int, Optional[str]] = {}
    for device in _devices_in_use():
        obj = get_per_device_resource(device)
        result[device] = obj.get_file_name() if isinstance(obj, LoggingResourceAdaptor) else None
    return result


def available_device_memory() -> Tuple[int, int]:
    """(free, total) bytes of the current device."""
    return _free_device_bytes()
