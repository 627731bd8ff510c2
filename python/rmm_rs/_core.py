"""The core of the rmm_rs package: devices, streams and raw allocations, :class:`Resource`
(one handle to a resource stack), :func:`configure` and the statistics of the devices' stacks.

Every module of the package that sets a device's resource does it through :func:`_install`, so
that the stacks :func:`configure` built, the Python objects RAPIDS' API (``rmm_rs.mr``) set and
what the C library holds never disagree: there is one configuration, the C library's per-device
registry.
"""

from __future__ import annotations

import ctypes
import dataclasses
import json
import os
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from . import _bindings
from ._bindings import (
    ASYNC_HW_DECOMPRESS,
    ERROR_INVALID_ARGUMENT,
    ERROR_NOT_INITIALIZED,
    SIZE_MAX,
    SLEEP_DISCARD,
    SLEEP_KEEP,
    SUCCESS,
    RmmError,
    _call,
    _CFootprint,
    _CExpandableOptions,
    _CIpcMemHandle,
    _CStatistics,
    _lock,
    _raise,
)

STREAM_EXPECTED = ("an rmm Stream (rmm_rs.pylibrmm.stream.Stream), an object with __cuda_stream__ "
                   "(cuda.core, CuPy, PyTorch or Numba streams), or an int stream handle")


def _stream(stream: Any) -> Optional[int]:
    """A ``cudaStream_t`` value (None for the legacy default stream) from None or 0 (the legacy
    default stream), an int handle, an object implementing the CUDA stream protocol
    (``__cuda_stream__``, which returns ``(0, handle)``: rmm_rs's :class:`Stream`, cuda.core's,
    and recent CuPy, PyTorch and Numba streams), or a stream object of CuPy (``.ptr``), PyTorch
    (``.cuda_stream``) or Numba (``.handle``). Anything else raises TypeError saying what is
    expected."""
    if stream is None:
        return None
    if isinstance(stream, bool):
        raise TypeError(f"stream: expected {STREAM_EXPECTED}; got {stream!r}")
    if isinstance(stream, int):
        return stream or None
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        version, handle = protocol() if callable(protocol) else protocol
        if version != 0:
            raise NotImplementedError(f"rmm_rs supports version 0 of the CUDA stream protocol, not version: '{version}'")
        return int(handle) or None
    for attribute in ("ptr", "cuda_stream"):
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value or None
    handle = getattr(stream, "handle", None)
    if handle is not None:
        value = getattr(handle, "value", handle)  # ctypes c_void_p or a cuda-bindings CUstream
        return int(value or 0) or None
    if hasattr(stream, "__index__"):  # a NumPy integer
        return stream.__index__() or None
    raise TypeError(f"stream: expected {STREAM_EXPECTED}; got {type(stream).__name__} {stream!r}")


def _parse_size(text: str) -> int:
    """The bytes of a size written as text, as the library reads every size (``rmmParseSize``):
    ``"4096"``, ``"64KiB"``, ``"1.5 GiB"``, ``"512MB"``; kB, MB, GB, TB, PB are powers of
    1000, KiB, MiB, GiB, TiB, PiB powers of 1024, any case; a letter alone (``"4G"``) is
    ambiguous. ValueError, with the library's reason, for anything else."""
    bytes_ = ctypes.c_size_t()
    if "\0" not in text:
        lib = _bindings.library()
        if lib.rmmParseSize(ctypes.byref(bytes_), text.encode("utf-8", "replace")) == SUCCESS:
            return bytes_.value
        message = (lib.rmmGetLastErrorMessage() or b"").decode("utf-8", "replace")
    else:
        message = f"{text!r} is not a size: it holds a NUL"
    raise ValueError(message.replace("rmmParseSize: invalid argument: ", "", 1))


def _size(value: Union[int, str, None], what: str) -> int:
    """Bytes from an int or a string such as "4GiB", "1.5 GiB" or "512MB" (read by the library,
    as RMM_ALLOC_CONF: :func:`_parse_size`); None is 0."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"{what}: expected a size, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{what}: {value} is negative")
        return value
    try:
        return _parse_size(str(value))
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None


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


def release_device_memory(device: Optional[int] = None) -> int:
    """Gives back to the device every byte rmm-rs holds there without using it
    (``rmmDeviceRelease``): every resource's free chunks and pages, in every stream, lane and
    thread, and the frees ``async_free`` deferred whose work is done. Memory in use stays.
    `device`: the current device when None. Returns the bytes given back."""
    released = ctypes.c_size_t()
    _call("rmmDeviceRelease", get_device() if device is None else int(device), ctypes.byref(released))
    return released.value


def sim_race_count() -> int:
    """Stream-ordering races the simulator found (``RMM_SIM_ON_RACE=count``)."""
    count = ctypes.c_size_t()
    _call("rmmSimGetRaceCount", ctypes.byref(count))
    return count.value


def stream_create(non_blocking: bool = False) -> int:
    """A new stream of the current device (``rmmStreamCreateWithFlags``): with `non_blocking`,
    one that does not synchronize with the legacy default stream. Destroy it with
    :func:`stream_destroy`."""
    stream = ctypes.c_void_p()
    _call("rmmStreamCreateWithFlags", ctypes.byref(stream), 1 if non_blocking else 0)
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


def memory_info() -> Tuple[int, int]:
    """``rmmGetInfo``: (free, total) bytes of the current device."""
    free_bytes, total = ctypes.c_size_t(), ctypes.c_size_t()
    _legacy_call("rmmGetInfo", ctypes.byref(free_bytes), ctypes.byref(total), None)
    return free_bytes.value, total.value


# How rmmResourceSleep treats the contents of live blocks (SLEEP_DISCARD and SLEEP_KEEP, rmm.h's
# RMM_SLEEP_DISCARD and RMM_SLEEP_KEEP): dropped, or copied to pinned host memory and back at
# the wake.
SLEEP_MODES = {"discard": SLEEP_DISCARD, "keep": SLEEP_KEEP}


def _sleep_mode(mode: Union[str, int]) -> int:
    """The ``RMM_SLEEP_*`` value of `mode`: "keep" or "discard" (any case), or
    :data:`SLEEP_KEEP` / :data:`SLEEP_DISCARD`; anything else is a ValueError."""
    if isinstance(mode, str) and mode.lower() in SLEEP_MODES:
        return SLEEP_MODES[mode.lower()]
    if isinstance(mode, int) and not isinstance(mode, bool) and mode in SLEEP_MODES.values():
        return int(mode)
    raise ValueError(f"sleep mode {mode!r}: expected 'keep' (contents copied to pinned host memory "
                     "and back) or 'discard' (contents dropped)")


def sleep_device(device: Optional[int] = None, mode: Union[str, int] = "keep", stream: Any = None) -> None:
    """:meth:`Resource.sleep` on `device`'s current resource (None: the current device), through
    ``rmmDeviceSleep``: the way to put to sleep what ``RMM_ALLOC_CONF=expandable`` (or
    ``rmm_rs.configure("expandable")``, ``use_for_torch()``'s default stack) made, without a
    handle. Errors as :meth:`Resource.sleep` (``ERROR_NOT_SUPPORTED`` when the device's resource
    is over no expandable resource)."""
    _call("rmmDeviceSleep", get_device() if device is None else int(device), _sleep_mode(mode), _stream(stream))


def wake_device(device: Optional[int] = None, stream: Any = None) -> None:
    """:meth:`Resource.wake` on `device`'s current resource (None: the current device), through
    ``rmmDeviceWake``."""
    _call("rmmDeviceWake", get_device() if device is None else int(device), _stream(stream))


def device_asleep(device: Optional[int] = None) -> bool:
    """:attr:`Resource.asleep` of `device`'s current resource (None: the current device)."""
    with Resource.of_device(device) as resource:
        return resource.asleep


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
        threshold = SIZE_MAX if release_threshold is None else _size(release_threshold, "release_threshold")
        flags = ASYNC_HW_DECOMPRESS if enable_hw_decompress else 0
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
        threshold = SIZE_MAX if release_threshold is None else _size(release_threshold, "release_threshold")
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
        if handle and _bindings._lib is not None:
            code = _bindings._lib.rmmResourceDestroy(handle)
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

    # sleep and wake (docs/src/sleep.md)
    def sleep(self, mode: Union[str, int] = "keep", stream: Any = None) -> None:
        """Puts the resource to sleep (``rmmResourceSleep``): every expandable resource it
        takes memory from (itself, or the ones under a pool, arena, binning resource or
        adaptor) gives back all its device memory, live blocks' included. `mode` ``"keep"``
        (:data:`SLEEP_KEEP`) copies the contents of live blocks to pinned host memory on
        `stream` and back at :meth:`wake` (weights, optimizer state); ``"discard"``
        (:data:`SLEEP_DISCARD`) drops them (activations, KV caches, scratch: after the wake the
        blocks hold whatever the new memory holds). The device is synchronized first: enqueue
        the work on the memory before. Every address stays valid for after :meth:`wake`;
        meanwhile allocations from the resource raise :class:`RmmError`
        (``ERROR_INVALID_ARGUMENT``, "the resource sleeps"), frees are taken.

        Errors (:class:`RmmError`, nothing sleeps): ``ERROR_NOT_SUPPORTED`` for a resource over
        no expandable resource (``cuda``, a pool over ``cuda``) or one with blocks exported to
        other processes; ``ERROR_INVALID_ARGUMENT`` when it is asleep already;
        :class:`RmmOutOfMemoryError` when there is no pinned host memory for the copy. A mode
        other than those: ValueError."""
        _call("rmmResourceSleep", self._h(), _sleep_mode(mode), _stream(stream))

    def wake(self, stream: Any = None) -> None:
        """Wakes the resource (``rmmResourceWake``): device memory is taken again for every page
        that slept, mapped at the same addresses, and what :meth:`sleep` kept is copied back on
        `stream`, which is synchronized before this returns. :class:`RmmOutOfMemoryError` when
        the device cannot give the memory (another process holds it): the resource stays asleep
        with its host copy intact, call again later. A resource that is awake: :class:`RmmError`
        ``ERROR_INVALID_ARGUMENT``; over no expandable resource: ``ERROR_NOT_SUPPORTED``."""
        _call("rmmResourceWake", self._h(), _stream(stream))

    @property
    def asleep(self) -> bool:
        """True while the resource (or an expandable resource under it) sleeps
        (``rmmResourceIsAsleep``). A resource over no expandable resource: :class:`RmmError`
        ``ERROR_NOT_SUPPORTED``."""
        answer = ctypes.c_int()
        _call("rmmResourceIsAsleep", self._h(), ctypes.byref(answer))
        return bool(answer.value)

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
_configured = False  # configure(), configure_from_string(), a resource set, or a use_for_*() default ran
# The Python objects of RAPIDS' API (rmm_rs.mr) that are the devices' current resources, so that
# rmm.mr.get_current_device_resource() gives back the object set (as RAPIDS RMM does). A device
# missing here has what the C library holds (rmm_rs.mr wraps it when asked).
_device_objects: Dict[int, Any] = {}


def _install(device: int, resource: "Resource", stack: Optional[_Stack] = None, python_object: Any = None) -> None:
    """Makes `resource` `device`'s current resource (``rmmSetPerDeviceResource``; the registry
    holds its own reference) and records who set it: `stack` when :func:`configure` built it,
    `python_object` when RAPIDS' API (``rmm_rs.mr``) did. What the device had is forgotten
    (the stack :func:`configure` built for it is closed, so that :func:`statistics` no longer
    reads it). The caller holds ``_lock``."""
    global _configured
    previous = ctypes.c_void_p()
    _call("rmmSetPerDeviceResource", device, resource._h(), ctypes.byref(previous))
    old = _stacks.pop(device, None)
    if stack is not None:
        _stacks[device] = stack
    if python_object is not None:
        _device_objects[device] = python_object
    else:
        _device_objects.pop(device, None)
    _configured = True
    if old is not None and old is not stack:
        old.close()
    if previous.value:
        Resource(previous.value).close()


@dataclasses.dataclass
class _Replaced:
    """What a device had before :func:`_swap_resource` replaced its resource: a handle to the
    resource, the stack :func:`configure` built for it and the Python object of RAPIDS' API set
    as it (for :func:`_restore_resource`)."""

    device: int
    handle: Optional[Resource]
    stack: Optional[_Stack]
    python_object: Any

    def close(self) -> None:
        """Lets go of what was kept (the resource is not put back)."""
        if self.stack is not None:
            self.stack.close()
            self.stack = None
        if self.handle is not None:
            self.handle.close()
            self.handle = None
        self.python_object = None


def _swap_resource(device: int, resource: "Resource", python_object: Any) -> _Replaced:
    """Makes `resource` `device`'s current resource for a while (rmm_rs.sleep's regions): as
    :func:`_install`, but what the device had is kept, not closed, and handed back for
    :func:`_restore_resource`; ``_configured`` is left as it is. The caller holds ``_lock``."""
    previous = ctypes.c_void_p()
    _call("rmmSetPerDeviceResource", device, resource._h(), ctypes.byref(previous))
    replaced = _Replaced(device, Resource(previous.value) if previous.value else None,
                         _stacks.pop(device, None), _device_objects.pop(device, None))
    _device_objects[device] = python_object
    return replaced


def _restore_resource(replaced: _Replaced) -> None:
    """Puts back what :func:`_swap_resource` replaced (the resource, the stack
    :func:`configure` built, the Python object) and lets go of the handle it kept. The caller
    holds ``_lock``."""
    device = replaced.device
    if replaced.handle is not None:
        _call("rmmSetPerDeviceResource", device, replaced.handle._h(), None)
    old = _stacks.pop(device, None)
    if replaced.stack is not None:
        _stacks[device] = replaced.stack
    if replaced.python_object is not None:
        _device_objects[device] = replaced.python_object
    else:
        _device_objects.pop(device, None)
    if old is not None and old is not replaced.stack:
        old.close()
    replaced.stack = replaced.python_object = None
    replaced.close()


def _forget_devices() -> None:
    """After a call that replaced the devices' resources behind this module's back
    (``rmmInitialize``, ``rmmFinalize``): nothing recorded here describes them any more."""
    for stack in _stacks.values():
        stack.close()
    _stacks.clear()
    _device_objects.clear()


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
                _install(stack.device, stack.top, stack=stack)
                built.pop(0)
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
