"""rmm_rs.mr.experimental: RAPIDS RMM's ``rmm.mr.experimental``, resources whose API may
still change."""

from ..pylibrmm.memory_resource import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
