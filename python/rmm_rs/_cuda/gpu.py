"""rmm_rs._cuda.gpu: RAPIDS RMM's ``rmm._cuda.gpu``: the current device, the device count, device
attributes, the CUDA runtime's and driver's versions, and CUDA errors as Python exceptions
(:class:`CUDARuntimeError`, :class:`CUDADriverError`, both RuntimeErrors).

RAPIDS answers through cuda-python; rmm_rs needs no CUDA package. Devices are rmm-rs's own
(``rmmGetDevice``, ``rmmSetDevice``, ``rmmGetDeviceCount``: the driver's, or the simulator's).
On a GPU, attributes, names and the driver version come from the driver (``libcuda.so.1``, which
rmm-rs loaded already). On simulated devices (``RMM_SIM_DEVICES``) the attributes are those the
simulator models (:data:`SIMULATED_ATTRIBUTES`); any other is refused with
``cudaErrorInvalidValue`` rather than invented.

An attribute is a ``cudaDeviceAttr`` (cuda-python's enum or its int value: the runtime's values
are the driver's ``CUdevice_attribute`` ones). A status is cuda-python's ``cudaError_t`` /
``CUresult`` where cuda-python is installed, else the int.
"""

from __future__ import annotations

import ctypes
import operator
import os
from typing import Any, Callable, Dict, Optional, Tuple

from .. import _core
from .._bindings import (
    CAPABILITY_MANAGED_MEMORY_POOLS,
    CAPABILITY_PAGEABLE_MEMORY_ACCESS,
    ERROR_INVALID_ARGUMENT,
    HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    RmmError,
    _call,
)

__all__ = [
    "CUDADriverError",
    "CUDARuntimeError",
    "SIMULATED_ATTRIBUTES",
    "deviceGetName",
    "driverGetVersion",
    "getDevice",
    "getDeviceAttribute",
    "getDeviceCount",
    "getDeviceProperties",
    "runtimeGetVersion",
    "setDevice",
]

# cudaError_t values this module raises itself, with the runtime's names and strings (used
# where cuda-python is not there to name them).
_CUDA_SUCCESS = 0
_INVALID_VALUE = 1
_INSUFFICIENT_DRIVER = 35
_NO_DEVICE = 100
_INVALID_DEVICE = 101
_NOT_SUPPORTED = 801
_RUNTIME_ERRORS: Dict[int, Tuple[str, str]] = {
    _INVALID_VALUE: ("cudaErrorInvalidValue", "invalid argument"),
    _INSUFFICIENT_DRIVER: ("cudaErrorInsufficientDriver",
                           "CUDA driver version is insufficient for CUDA runtime version"),
    _NO_DEVICE: ("cudaErrorNoDevice", "no CUDA-capable device is detected"),
    _INVALID_DEVICE: ("cudaErrorInvalidDevice", "invalid device ordinal"),
    _NOT_SUPPORTED: ("cudaErrorNotSupported", "operation not supported"),
}

# The cudaDeviceAttr values the simulator answers, each with how. They are what rmm-rs's
# simulated devices behave as: the capabilities rmmDeviceSupports reports (the resources that
# need them check the same), and constants of the model (a discrete device with managed memory
# and memory pools, exporting pool memory as POSIX file descriptors only).
_ATTR_INTEGRATED = 18
_ATTR_MANAGED_MEMORY = 83
_ATTR_PAGEABLE_MEMORY_ACCESS = 88
_ATTR_CONCURRENT_MANAGED_ACCESS = 89
_ATTR_MEMORY_POOLS_SUPPORTED = 115
_ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES = 119


def _supports(capability: int) -> Callable[[int], int]:
    def answer(device: int) -> int:
        supported = ctypes.c_int()
        _call("rmmDeviceSupports", ctypes.byref(supported), capability, device)
        return supported.value

    return answer


SIMULATED_ATTRIBUTES: Dict[int, Callable[[int], int]] = {
    _ATTR_INTEGRATED: lambda device: 0,
    _ATTR_MANAGED_MEMORY: lambda device: 1,
    _ATTR_PAGEABLE_MEMORY_ACCESS: _supports(CAPABILITY_PAGEABLE_MEMORY_ACCESS),
    # Managed memory pools need concurrent managed access, and the simulator models it with them.
    _ATTR_CONCURRENT_MANAGED_ACCESS: _supports(CAPABILITY_MANAGED_MEMORY_POOLS),
    _ATTR_MEMORY_POOLS_SUPPORTED: lambda device: 1,
    # rmm.h's RMM_HANDLE_TYPE_* are CUDA's cudaMemAllocationHandleType values.
    _ATTR_MEMORY_POOL_SUPPORTED_HANDLE_TYPES: lambda device: HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
}


def _cuda_bindings(module: str) -> Any:
    """cuda-python's ``cuda.bindings.<module>``, or None where it cannot be imported (it
    also fails when the CUDA runtime library it loads is missing)."""
    try:
        import importlib

        return importlib.import_module("cuda.bindings." + module)
    except Exception:  # noqa: BLE001 - any failure means: not usable here
        return None


def _as_enum(module: str, enum: str, status: int) -> Any:
    bindings = _cuda_bindings(module)
    if bindings is not None:
        try:
            return getattr(bindings, enum)(status)
        except Exception:  # noqa: BLE001 - a value the installed cuda-python does not name
            pass
    return status


class CUDARuntimeError(RuntimeError):
    """A CUDA runtime error: ``status`` (``cudaError_t``) and the message
    ``"<name>: <description>"``, as RAPIDS raises it; `detail`, when given, follows."""

    def __init__(self, status: Any, detail: Optional[str] = None) -> None:
        self.status = _as_enum("runtime", "cudaError_t", int(status))
        self.detail = detail
        name, description = _runtime_error_text(int(status))
        super().__init__(f"{name}: {description}" + (f" ({detail})" if detail else ""))

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (int(self.status), self.detail))


class CUDADriverError(RuntimeError):
    """A CUDA driver error: ``status`` (``CUresult``) and the message
    ``"<name>: <description>"``, as RAPIDS raises it."""

    def __init__(self, status: Any, detail: Optional[str] = None) -> None:
        self.status = _as_enum("driver", "CUresult", int(status))
        self.detail = detail
        name, description = _driver_error_text(int(status))
        super().__init__(f"{name}: {description}" + (f" ({detail})" if detail else ""))

    def __reduce__(self) -> Tuple[Any, ...]:
        return (type(self), (int(self.status), self.detail))


def _runtime_error_text(status: int) -> Tuple[str, str]:
    if status in _RUNTIME_ERRORS:
        return _RUNTIME_ERRORS[status]
    runtime = _cuda_bindings("runtime")
    if runtime is not None:
        try:
            _, name = runtime.cudaGetErrorName(runtime.cudaError_t(status))
            _, text = runtime.cudaGetErrorString(runtime.cudaError_t(status))
            return name.decode(), text.decode()
        except Exception:  # noqa: BLE001 - fall through to the plain number
            pass
    return f"cudaError_t({status})", "unknown error"


def _driver_error_text(status: int) -> Tuple[str, str]:
    found = []
    driver = _driver()
    if driver is not None:
        for function in (driver.cuGetErrorName, driver.cuGetErrorString):
            text = ctypes.c_char_p()
            if function(status, ctypes.byref(text)) == 0 and text.value:
                found.append(text.value.decode(errors="replace"))
    if len(found) == 2:
        return found[0], found[1]
    return f"CUresult({status})", "unknown error"


_driver_lib: Optional[ctypes.CDLL] = None


def _driver() -> Optional[ctypes.CDLL]:
    """The CUDA driver (``libcuda.so.1``), None on simulated devices or where it cannot load."""
    global _driver_lib
    if _driver_lib is None and not _simulated():
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        for name, argtypes in (("cuInit", [ctypes.c_uint]),
                               ("cuDriverGetVersion", [ctypes.POINTER(ctypes.c_int)]),
                               ("cuDeviceGet", [ctypes.POINTER(ctypes.c_int), ctypes.c_int]),
                               ("cuDeviceGetAttribute", [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]),
                               ("cuDeviceGetName", [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
                               ("cuGetErrorName", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
                               ("cuGetErrorString", [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)])):
            function = getattr(lib, name)
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        _driver_lib = lib
    return _driver_lib


def _driver_call(function: str, *args: Any) -> None:
    driver = _driver()
    if driver is None:
        raise CUDARuntimeError(_INSUFFICIENT_DRIVER, "the CUDA driver (libcuda.so.1) could not be loaded")
    status = driver.cuInit(0)
    if status == 0:
        status = getattr(driver, function)(*args)
    if status != 0:
        raise CUDADriverError(status, function)


def _simulated() -> bool:
    try:
        return _core.is_simulated()
    except RmmError:
        return False


def _device_call(call: Callable[[], Any]) -> Any:
    """An rmm-rs device call, its failure raised as the runtime's error: an invalid device, or
    no device (no driver and no simulated devices)."""
    try:
        return call()
    except RmmError as error:
        status = _INVALID_DEVICE if error.code == ERROR_INVALID_ARGUMENT else _NO_DEVICE
        raise CUDARuntimeError(status, error.message or str(error)) from error


def _device_index(device: Any) -> int:
    index = operator.index(device)
    count = getDeviceCount()
    if not 0 <= index < count:
        raise CUDARuntimeError(_INVALID_DEVICE, f"device {index} of {count}")
    return index


def getDevice() -> int:
    """The calling thread's current device."""
    return _device_call(_core.get_device)


def setDevice(device: int) -> None:
    """Makes `device` the calling thread's current device."""
    index = _device_index(device)
    _device_call(lambda: _core.set_device(index))


def getDeviceCount() -> int:
    """The number of devices (real, or simulated with ``RMM_SIM_DEVICES``)."""
    return _device_call(_core.device_count)


def getDeviceAttribute(attr: Any, device: int) -> int:
    """The value of device attribute `attr` (a ``cudaDeviceAttr``) of `device`. On simulated
    devices only :data:`SIMULATED_ATTRIBUTES` are answered; others raise
    :class:`CUDARuntimeError` (``cudaErrorInvalidValue``)."""
    attribute = operator.index(attr)
    index = _device_index(device)
    if _simulated():
        answer = SIMULATED_ATTRIBUTES.get(attribute)
        if answer is None:
            raise CUDARuntimeError(_INVALID_VALUE, f"device attribute {attribute} is not modelled by the simulator")
        return _device_call(lambda: answer(index))
    value, handle = ctypes.c_int(), ctypes.c_int()
    _driver_call("cuDeviceGet", ctypes.byref(handle), index)
    _driver_call("cuDeviceGetAttribute", ctypes.byref(value), attribute, handle.value)
    return value.value


def driverGetVersion() -> int:
    """The newest CUDA version the driver supports, as ``1000 * major + 10 * minor``. On
    simulated devices: the version they behave as (``RMM_SIM_DRIVER_VERSION``, default 13000,
    as rmm-rs's simulator reads it)."""
    if _simulated():
        return int(os.environ.get("RMM_SIM_DRIVER_VERSION") or 13000)
    version = ctypes.c_int()
    driver = _driver()
    if driver is None:
        return 0  # as cudaDriverGetVersion answers without a driver
    status = driver.cuDriverGetVersion(ctypes.byref(version))
    if status != 0:
        raise CUDADriverError(status, "cuDriverGetVersion")
    return version.value


def runtimeGetVersion() -> int:
    """The version of the CUDA runtime in the process, as ``1000 * major + 10 * minor``: the one
    cuda-python loads (what RAPIDS reports), else a ``libcudart`` the process can load. rmm-rs
    itself uses the driver alone, so without a runtime this is :func:`driverGetVersion`, the
    CUDA version rmm-rs works with."""
    runtime = _cuda_bindings("runtime")
    if runtime is not None:
        try:
            status, version = runtime.getLocalRuntimeVersion()
            if int(status) == _CUDA_SUCCESS:
                return int(version)
        except Exception:  # noqa: BLE001 - an older cuda-python: try the library itself
            pass
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            cudart = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int()
        if cudart.cudaRuntimeGetVersion(ctypes.byref(version)) == 0:
            return version.value
    return driverGetVersion()


def getDeviceProperties(device: int) -> Any:
    """cuda-python's ``cudaDeviceProp`` of `device` (needs cuda-python and a GPU; on simulated
    devices :class:`CUDARuntimeError` ``cudaErrorNotSupported``)."""
    index = _device_index(device)
    if _simulated():
        raise CUDARuntimeError(_NOT_SUPPORTED, "simulated devices have no cudaDeviceProp")
    runtime = _cuda_bindings("runtime")
    if runtime is None:
        raise CUDARuntimeError(_NOT_SUPPORTED, "getDeviceProperties needs cuda-python (cuda.bindings)")
    status, properties = runtime.cudaGetDeviceProperties(index)
    if int(status) != _CUDA_SUCCESS:
        raise CUDARuntimeError(int(status))
    return properties


def deviceGetName(device: int) -> str:
    """The name of `device` (on simulated devices, "rmm-rs simulated device")."""
    index = _device_index(device)
    if _simulated():
        return "rmm-rs simulated device"
    name, handle = ctypes.create_string_buffer(256), ctypes.c_int()
    _driver_call("cuDeviceGet", ctypes.byref(handle), index)
    _driver_call("cuDeviceGetName", name, len(name), handle.value)
    return name.value.decode(errors="replace")
