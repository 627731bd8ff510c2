"""rmm_rs.pylibrmm.device_buffer: RAPIDS RMM's ``DeviceBuffer`` (also ``rmm_rs.DeviceBuffer``),
untyped device memory from a memory resource, over rmm-rs's device buffers
(``rmmDeviceBufferCreate`` and the functions after it in rmm.h).

A buffer is usable in the order of its stream and freed in that order when the object goes. It
shows its memory to other libraries as the CUDA array interface (``cupy.asarray(buf)``,
``numba.cuda.as_cuda_array(buf)``) and as DLPack (``torch.from_dlpack(buf)``), as one-dimensional
bytes (``|u1``).
"""

from __future__ import annotations

import ctypes
import weakref
from typing import Any, Dict, Optional, Tuple

from .. import _bindings, _core
from .._bindings import _call
from . import _dlpack
from .memory_resource import DeviceMemoryResource, _size_t, get_current_device_resource
from .stream import DEFAULT_STREAM, Stream, as_stream

__all__ = ["DeviceBuffer", "copy_device_to_ptr", "copy_host_to_ptr", "copy_ptr_to_host", "to_device"]


# --- host buffers --------------------------------------------------------------------------

class _PyBuffer(ctypes.Structure):
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.py_object), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


# Python's C API through a handle of our own (ctypes.pythonapi's function objects are shared).
_api = ctypes.PyDLL(ctypes.pythonapi._name, handle=ctypes.pythonapi._handle)
_get_buffer = _api.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = _api.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_PyBUF_WRITABLE = 0x0001


class _HostBytes:
    """The address and length of a host object's bytes, as RAPIDS' ``const unsigned char[::1]``
    takes them: a one-dimensional, contiguous buffer of one-byte items (bytes, bytearray,
    memoryview, array.array('B'), a NumPy array of int8/uint8); held until :meth:`release`.
    Not a buffer: TypeError; another shape, item type or layout: ValueError."""

    def __init__(self, obj: Any, what: str, writable: bool = False) -> None:
        if obj is None:
            raise TypeError(f"Argument '{what}' has incorrect type (expected bytes-like, got NoneType)")
        try:
            view = memoryview(obj)
        except TypeError:
            raise TypeError(f"Argument '{what}' has incorrect type (expected a bytes-like object, got "
                            f"{type(obj).__name__})") from None
        with view:
            if view.ndim != 1:
                raise ValueError(f"Buffer has wrong number of dimensions (expected 1, got {view.ndim})")
            if view.itemsize != 1 or view.format.lstrip("@=<>!") not in ("B", "b", "c"):
                raise ValueError(f"Buffer dtype mismatch, expected 'const unsigned char' but got '{view.format}'")
            if not view.c_contiguous:
                raise ValueError("ndarray is not C-contiguous")
            if writable and view.readonly:
                raise ValueError("buffer source array is read-only")
        self._buffer = _PyBuffer()
        _get_buffer(obj, ctypes.byref(self._buffer), _PyBUF_WRITABLE if writable else 0)
        self.address = self._buffer.buf or 0
        self.size = self._buffer.len

    def release(self) -> None:
        if self._buffer is not None:
            _release_buffer(ctypes.byref(self._buffer))
            self._buffer = None

    def __enter__(self) -> "_HostBytes":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _copy(dst: int, src: int, count: int, stream: Stream) -> None:
    """``rmmMemcpyAsync`` (either side host or device), then a synchronization of `stream`
    when it is a default stream (as RAPIDS: other streams' copies are asynchronous)."""
    if count:
        _call("rmmMemcpyAsync", dst or None, src or None, count, stream.handle or None)
        if stream.is_default():
            stream.synchronize()


def copy_ptr_to_host(db: int, hb: Any, stream: Any = DEFAULT_STREAM) -> None:
    """Copies ``len(hb)`` bytes from the device address `db` into the writable host buffer `hb`."""
    stream = as_stream(stream)
    with _HostBytes(hb, "hb", writable=True) as host:
        _copy(host.address, int(db), host.size, stream)


def copy_host_to_ptr(hb: Any, db: int, stream: Any = DEFAULT_STREAM) -> None:
    """Copies the bytes of the host buffer `hb` to the device address `db`."""
    stream = as_stream(stream)
    with _HostBytes(hb, "hb") as host:
        _copy(int(db), host.address, host.size, stream)


def copy_device_to_ptr(d_src: int, d_dst: int, count: int, stream: Any = DEFAULT_STREAM) -> None:
    """Copies `count` bytes from the device address `d_src` to `d_dst`."""
    stream = as_stream(stream)
    _copy(int(d_dst), int(d_src), _size_t(count, "count"), stream)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        return None
    return numpy


# --- DeviceBuffer --------------------------------------------------------------------------

def _destroy(handle: int) -> None:
    if _bindings._lib is not None:
        _bindings._lib.rmmDeviceBufferDestroy(handle)


class DeviceBuffer:
    """Untyped, uninitialized device memory (RAPIDS' ``rmm.DeviceBuffer``).

    ``DeviceBuffer(size=n)``: `n` bytes (0 is valid, with ``ptr`` 0) from `mr` (None: the
    current device's resource), usable in the order of `stream` (a :class:`Stream`, an object
    with ``__cuda_stream__``, or an int handle; None is refused with TypeError, as RAPIDS).
    With `ptr` (host or device address), the buffer starts as a copy of the `size` bytes there
    (complete on return for a default stream). A negative size is OverflowError, an allocation
    the resource cannot make MemoryError.
    """

    def __init__(self, *, ptr: int = 0, size: int = 0, stream: Any = DEFAULT_STREAM,
                 mr: Optional[DeviceMemoryResource] = None) -> None:
        self._handle = 0
        stream = as_stream(stream)
        nbytes = _size_t(size, "size")
        source = _size_t(ptr, "ptr")
        if mr is None:
            mr = get_current_device_resource()
        elif not isinstance(mr, DeviceMemoryResource):
            raise TypeError(f"Argument 'mr' has incorrect type (expected DeviceMemoryResource, got {type(mr).__name__})")
        self.mr = mr
        self.stream = stream
        self._device = _core.get_device()
        handle = ctypes.c_void_p()
        _call("rmmDeviceBufferCreate", ctypes.byref(handle), nbytes, stream.handle or None, mr.resource._h())
        self._adopt(handle.value or 0)
        if source and nbytes:
            _copy(self.ptr, source, nbytes, stream)

    def _adopt(self, handle: int) -> None:
        self._handle = handle
        finalizer = weakref.finalize(self, _destroy, handle)
        finalizer.atexit = False  # no device calls while the process exits
        self._finalizer = finalizer

    # --- what it is ---------------------------------------------------------------------

    def _h(self) -> int:
        if not self._handle:
            raise ValueError("DeviceBuffer was not constructed")
        return self._handle

    @property
    def ptr(self) -> int:
        """The device address of the memory (0 for an empty buffer)."""
        data = ctypes.c_void_p()
        _call("rmmDeviceBufferData", self._h(), ctypes.byref(data))
        return data.value or 0

    def _sizes(self) -> Tuple[int, int]:
        size, capacity = ctypes.c_size_t(), ctypes.c_size_t()
        _call("rmmDeviceBufferSize", self._h(), ctypes.byref(size), ctypes.byref(capacity))
        return size.value, capacity.value

    @property
    def size(self) -> int:
        """The size in bytes."""
        return self._sizes()[0]

    @property
    def nbytes(self) -> int:
        """The size in bytes."""
        return self._sizes()[0]

    def __len__(self) -> int:
        return self._sizes()[0]

    def __sizeof__(self) -> int:
        return self._sizes()[0]

    def capacity(self) -> int:
        """The bytes its allocation holds (at least ``size``)."""
        return self._sizes()[1]

    def __repr__(self) -> str:
        return f"<rmm_rs DeviceBuffer size={self.size} ptr={self.ptr:#x}>" if self._handle else "<rmm_rs DeviceBuffer>"

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        """The CUDA array interface: one dimension of ``size`` unsigned bytes."""
        return {"data": (self.ptr, False), "shape": (self.size,), "strides": None, "typestr": "|u1", "version": 0}

    def __dlpack_device__(self) -> Tuple[int, int]:
        """(kDLCUDA, the device the buffer was made on)."""
        return (_dlpack.KDLCUDA, self._device)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Optional[bool] = None) -> Any:
        """A DLPack capsule of the buffer (one dimension of ``size`` uint8), which keeps the
        buffer alive until the consumer is done with it. `stream`: the consumer's stream
        (DLPack's numbering: 1 the legacy default stream, 2 the per-thread one, else a handle;
        -1 or None: no ordering wanted); when it is not the buffer's own, the buffer's stream
        is synchronized first, so the consumer sees finished data. ``copy=True`` is refused
        (BufferError): the buffer is never copied."""
        if copy:
            raise BufferError("DeviceBuffer.__dlpack__: copy=True is not supported (the buffer is shared)")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"DeviceBuffer.__dlpack__: the buffer is on {self.__dlpack_device__()}, not {tuple(dl_device)}")
        if stream is not None and stream != -1:
            consumer = _core._stream(stream) or 0
            if consumer not in (self.stream.handle,) and not (consumer in (0, 1) and self.stream.is_default()):
                self.stream.synchronize()
        return _dlpack.capsule(self, self.ptr, self.size, self._device)

    # --- copies ---------------------------------------------------------------------------

    @staticmethod
    def to_device(b: Any, stream: Any = DEFAULT_STREAM) -> "DeviceBuffer":
        """A new buffer holding a copy of the host bytes `b` (bytes, bytearray, memoryview, an
        int8/uint8 array: one-dimensional and contiguous). Anything that is not a buffer:
        TypeError; a buffer of another item size, shape or layout: ValueError."""
        return to_device(b, stream)

    def copy_to_host(self, ary: Any = None, stream: Any = DEFAULT_STREAM) -> Any:
        """The contents copied to host memory: into `ary` (a writable bytes-like object of at
        least ``size`` bytes, returned), or into a new NumPy uint8 array (a bytearray where NumPy
        is not installed)."""
        stream = as_stream(stream)
        size = self.size
        if ary is None:
            numpy = _numpy()
            ary = numpy.empty((size,), dtype="u1") if numpy is not None else bytearray(size)
        with _HostBytes(ary, "ary", writable=True) as host:
            if host.size < size:
                raise ValueError("Argument `ary` is too small. Need space for %i bytes." % size)
            _copy(host.address, self.ptr, size, stream)
        return ary

    def copy_from_host(self, ary: Any, stream: Any = DEFAULT_STREAM) -> None:
        """Copies the host bytes `ary` to the start of the buffer (ValueError when they do not fit)."""
        stream = as_stream(stream)
        with _HostBytes(ary, "ary") as host:
            if host.size > self.size:
                raise ValueError("Argument `ary` is too large. Need space for %i bytes." % host.size)
            _copy(self.ptr, host.address, host.size, stream)

    def copy_from_device(self, cuda_ary: Any, stream: Any = DEFAULT_STREAM) -> None:
        """Copies the device array `cuda_ary` (one-dimensional and contiguous, with
        ``__cuda_array_interface__``) to the start of the buffer."""
        stream = as_stream(stream)
        if not hasattr(cuda_ary, "__cuda_array_interface__"):
            raise ValueError("Expected object to support `__cuda_array_interface__` protocol")
        interface = cuda_ary.__cuda_array_interface__
        shape = tuple(interface["shape"])
        strides = interface.get("strides")
        itemsize = _itemsize(interface["typestr"])
        if len(shape) > 1:
            raise ValueError("Only 1-D contiguous arrays are supported, got {}-D array".format(len(shape)))
        if strides is not None and len(strides) and strides[0] != itemsize:
            raise ValueError("Only 1-D contiguous arrays are supported, got a non-contiguous array")
        count = (shape[0] if shape else 1) * itemsize
        if count > self.size:
            raise ValueError("Argument `hb` is too large. Need space for %i bytes." % count)
        _copy(self.ptr, int(interface["data"][0]), count, stream)

    def tobytes(self, stream: Any = DEFAULT_STREAM) -> bytes:
        """The contents as bytes (waits for the copy on any stream)."""
        stream = as_stream(stream)
        out = bytearray(self.size)
        self.copy_to_host(out, stream)
        if not stream.is_default():
            stream.synchronize()
        return bytes(out)

    def __bytes__(self) -> bytes:
        return self.tobytes()

    def copy(self) -> "DeviceBuffer":
        """A deep copy: a new buffer from the same resource, with the same contents."""
        handle = ctypes.c_void_p()
        _call("rmmDeviceBufferCopy", ctypes.byref(handle), self._h(), self.stream.handle or None,
                      self.mr.resource._h())
        other = DeviceBuffer.__new__(DeviceBuffer)
        other.mr, other.stream, other._device = self.mr, self.stream, self._device
        other._adopt(handle.value or 0)
        if self.stream.is_default():
            self.stream.synchronize()
        return other

    def __copy__(self) -> "DeviceBuffer":
        return self.copy()

    def __reduce__(self) -> Any:
        return to_device, (self.copy_to_host(),)

    # --- size -----------------------------------------------------------------------------

    def resize(self, new_size: int, stream: Any = DEFAULT_STREAM) -> None:
        """Sets the size: within the capacity nothing moves; beyond it the contents move to a
        new allocation (new bytes uninitialized), in the order of `stream`."""
        stream = as_stream(stream)
        _call("rmmDeviceBufferResize", self._h(), _size_t(new_size, "new_size"), stream.handle or None)

    def reserve(self, new_capacity: int, stream: Any = DEFAULT_STREAM) -> None:
        """Makes the capacity at least `new_capacity` bytes, keeping size and contents."""
        stream = as_stream(stream)
        wanted = _size_t(new_capacity, "new_capacity")
        size, capacity = self._sizes()
        if wanted > capacity:
            _call("rmmDeviceBufferResize", self._h(), wanted, stream.handle or None)
            _call("rmmDeviceBufferResize", self._h(), size, stream.handle or None)

    def prefetch(self, device: Optional[int] = None, stream: Any = None) -> None:
        """Migrates the buffer's memory to `device` (default: the current device) in the order
        of `stream` (default: the buffer's stream), as RAPIDS does for managed memory; memory
        that is not managed needs no migration and stays where it is (``rmmPrefetch``)."""
        target = _core.get_device() if device is None else int(device)
        chosen = self.stream if stream is None else as_stream(stream)
        _call("rmmPrefetch", self.ptr or None, self.size, target, chosen.handle or None)


def _itemsize(typestr: str) -> int:
    digits = "".join(ch for ch in str(typestr) if ch.isdigit())
    if not digits:
        raise ValueError(f"cannot read the item size of typestr {typestr!r}")
    return int(digits)


def to_device(b: Any, stream: Any = DEFAULT_STREAM) -> DeviceBuffer:
    """A new :class:`DeviceBuffer` holding a copy of the host bytes `b`."""
    stream = as_stream(stream)
    with _HostBytes(b, "b") as host:
        return DeviceBuffer(ptr=host.address, size=host.size, stream=stream)
