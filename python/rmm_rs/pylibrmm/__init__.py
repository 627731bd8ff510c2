"""rmm_rs.pylibrmm: RAPIDS RMM's ``rmm.pylibrmm`` over rmm-rs: ``stream`` (Stream,
CudaStreamFlags), ``cuda_stream_pool`` (CudaStreamPool), ``device_buffer`` (DeviceBuffer),
``memory_resource`` (the resources, also ``rmm_rs.mr``), ``logger`` and ``helper``."""

from . import helper, logger, memory_resource, stream
from .cuda_stream_pool import CudaStreamPool
from .device_buffer import DeviceBuffer
from .stream import CudaStreamFlags, Stream

__all__ = [
    "CudaStreamFlags",
    "CudaStreamPool",
    "DeviceBuffer",
    "Stream",
    "helper",
    "logger",
    "memory_resource",
    "stream",
]
