"""rmm_rs.pylibrmm.memory_resource.experimental (also ``rmm_rs.mr.experimental``): RAPIDS RMM's
resources whose API may still change."""

from ._memory_resource import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
