"""DLPack capsules of device memory, through ctypes (no compiled extension): a
``DLManagedTensor`` in a PyCapsule named "dltensor", whose deleter lets go of the object that
owns the memory (DLPack's dlpack.h, version 0.8 layout: the unversioned capsule every consumer
takes)."""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Dict

KDLCPU = 1
KDLCUDA = 2
_KDLUINT = 1


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Python's C API through a handle of our own: ctypes.pythonapi's function objects are shared, and
# their argtypes anyone's to change.
_api = ctypes.PyDLL(ctypes.pythonapi._name, handle=ctypes.pythonapi._handle)
_capsule_new = _api.PyCapsule_New
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CapsuleDestructor]
_capsule_new.restype = ctypes.py_object
_capsule_is_valid = _api.PyCapsule_IsValid
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_is_valid.restype = ctypes.c_int
_capsule_pointer = _api.PyCapsule_GetPointer
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer.restype = ctypes.c_void_p

_NAME = b"dltensor"
# The tensors handed out and not yet deleted: address of the DLManagedTensor -> (the owner of
# the memory, the ctypes objects the tensor points into).
_live: Dict[int, Any] = {}
_live_lock = threading.Lock()


def _delete(managed: Any) -> None:
    address = ctypes.cast(managed, ctypes.c_void_p).value
    with _live_lock:
        _live.pop(address, None)


_deleter = _Deleter(_delete)


def _destroy_capsule(capsule: int) -> None:
    # A capsule no consumer took (still named "dltensor"): delete its tensor here. A consumer
    # renames what it takes ("used_dltensor") and calls the deleter itself.
    if _capsule_is_valid(capsule, _NAME):
        address = _capsule_pointer(capsule, _NAME)
        if address:
            _delete(ctypes.cast(address, ctypes.POINTER(_DLManagedTensor)))


_destructor = _CapsuleDestructor(_destroy_capsule)


def capsule(owner: Any, address: int, size: int, device_id: int, device_type: int = KDLCUDA) -> Any:
    """A "dltensor" capsule of `size` bytes at `address` (one dimension of uint8) on the device;
    `owner` is kept alive until the tensor's deleter runs."""
    shape = (ctypes.c_int64 * 1)(size)
    strides = (ctypes.c_int64 * 1)(1)
    managed = _DLManagedTensor()
    managed.dl_tensor.data = address or None
    managed.dl_tensor.device = _DLDevice(device_type, device_id)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = _DLDataType(_KDLUINT, 8, 1)
    managed.dl_tensor.shape = shape
    managed.dl_tensor.strides = strides
    managed.dl_tensor.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _deleter
    pointer = ctypes.addressof(managed)
    with _live_lock:
        _live[pointer] = (owner, managed, shape, strides)
    return _capsule_new(pointer, _NAME, _destructor)


def live_count() -> int:
    """How many capsules' tensors are not deleted yet (for tests)."""
    with _live_lock:
        return len(_live)
