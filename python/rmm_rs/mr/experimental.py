"""rmm_rs.mr.experimental: RAPIDS RMM's ``rmm.mr.experimental`` (the module
:mod:`rmm_rs.pylibrmm.memory_resource.experimental` under its ``rmm.mr`` name)."""

from ..pylibrmm.memory_resource.experimental import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
