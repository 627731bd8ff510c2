"""rmm_rs.pylibrmm.stream: CUDA streams as RAPIDS RMM's Python API has them (``rmm.pylibrmm.stream``).

A :class:`Stream` is a CUDA stream handle, owned (made by ``Stream()``, destroyed with the
object) or borrowed from another library. It implements the CUDA stream protocol:
``stream.__cuda_stream__()`` returns ``(0, handle)`` (RMM #2040, #2094), so cuda.core, CuPy and
PyTorch accept it where they take a stream, and every rmm_rs function that takes a stream
accepts one of theirs.
"""

from __future__ import annotations

import enum
import weakref
from typing import Any, Optional, Tuple

from .. import _bindings, _core
from .._bindings import STREAM_DEFAULT, STREAM_NON_BLOCKING, _call

__all__ = [
    "CudaStreamFlags",
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "Stream",
    "as_stream",
]

# CUDA's handles of the default streams (cudaStreamLegacy, cudaStreamPerThread); 0 is the
# default stream, which is the legacy one unless the program was built for per-thread streams.
_LEGACY = 0x1
_PER_THREAD = 0x2


class CudaStreamFlags(enum.IntEnum):
    """How a new stream orders with the legacy default stream (RAPIDS' ``CudaStreamFlags``):
    ``SYNC_DEFAULT`` synchronizes with it, ``NON_BLOCKING`` does not
    (``rmmStreamCreateWithFlags``)."""

    SYNC_DEFAULT = STREAM_DEFAULT
    NON_BLOCKING = STREAM_NON_BLOCKING


def _destroy(handle: int) -> None:
    if _bindings._lib is not None:
        _bindings._lib.rmmStreamDestroy(handle)


class Stream:
    """A CUDA stream (RAPIDS' ``rmm.pylibrmm.stream.Stream``).

    ``Stream()`` makes a new stream on the current device (``rmmStreamCreateWithFlags``), destroyed when
    the last object that shares it goes. ``Stream(obj)`` wraps a stream that `obj` owns and
    keeps `obj` alive: another :class:`Stream`, an object implementing the CUDA stream protocol
    (``__cuda_stream__``: cuda.core, and recent CuPy, PyTorch and Numba streams), a CuPy stream
    (``.ptr``), a PyTorch stream (``.cuda_stream``), a Numba stream (``.handle``), or, beyond
    RAPIDS, an int stream handle. Anything else raises TypeError. `flags` may be given only for
    a new stream (ValueError otherwise).
    """

    __slots__ = ("_handle", "_owner", "__weakref__")

    def __init__(self, obj: Any = None, flags: Optional[CudaStreamFlags] = None) -> None:
        if obj is None:
            kind = CudaStreamFlags(CudaStreamFlags.SYNC_DEFAULT if flags is None else flags)
            self._handle = _core.stream_create(non_blocking=kind == CudaStreamFlags.NON_BLOCKING)
            self._owner: Any = _OwnedStream(self._handle)
            return
        if flags is not None:
            raise ValueError("flags may only be specified when obj is None; flags cannot be applied to an "
                             "existing stream.")
        if isinstance(obj, Stream):
            self._handle, self._owner = obj._handle, obj._owner
            return
        self._handle = _core._stream(obj) or 0
        self._owner = obj

    @classmethod
    def _borrowed(cls, handle: int, owner: Any = None) -> "Stream":
        stream = cls.__new__(cls)
        stream._handle = int(handle)
        stream._owner = owner
        return stream

    def __cuda_stream__(self) -> Tuple[int, int]:
        """The CUDA stream protocol, version 0: ``(0, handle)``."""
        return (0, self._handle)

    @property
    def handle(self) -> int:
        """The ``cudaStream_t`` as an int (0: the default stream)."""
        return self._handle

    def __int__(self) -> int:
        return self._handle

    def synchronize(self) -> None:
        """Waits until the work enqueued on the stream has finished (``rmmStreamSynchronize``)."""
        _call("rmmStreamSynchronize", self._handle or None)

    def is_default(self) -> bool:
        """True for the default stream (0, or the legacy default stream's handle)."""
        return self._handle in (0, _LEGACY)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Stream):
            return _same(self._handle) == _same(other._handle)
        return False

    def __hash__(self) -> int:
        return hash(_same(self._handle))

    def __repr__(self) -> str:
        return f"<rmm_rs Stream {self._handle:#x}>"


def _same(handle: int) -> int:
    """The default stream and the legacy default stream are one stream (as RAPIDS compares)."""
    return 0 if handle == _LEGACY else handle


class _OwnedStream:
    """The owner of a stream rmm_rs made: destroys it when the last Stream sharing it goes."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle: int) -> None:
        self.handle = handle
        weakref.finalize(self, _destroy, handle).atexit = False  # no device calls while the process exits


DEFAULT_STREAM = Stream._borrowed(0)
LEGACY_DEFAULT_STREAM = Stream._borrowed(_LEGACY)
PER_THREAD_DEFAULT_STREAM = Stream._borrowed(_PER_THREAD)


def as_stream(stream: Any) -> Stream:
    """`stream` as a :class:`Stream`, for RAPIDS' API: None is refused as RAPIDS RMM refuses it
    (TypeError, "stream argument cannot be None"); a Stream is itself; anything
    :class:`Stream` wraps is wrapped; anything else is a TypeError naming what is expected."""
    if stream is None:
        raise TypeError("stream argument cannot be None. Please provide a valid Stream instance "
                        f"(or {_core.STREAM_EXPECTED}).")
    if isinstance(stream, Stream):
        return stream
    return Stream(stream)
