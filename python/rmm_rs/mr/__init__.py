"""rmm_rs.mr: RAPIDS RMM's ``rmm.mr``, the memory resources and the per-device resource
functions (defined in :mod:`rmm_rs.pylibrmm.memory_resource`)."""

from ..pylibrmm.memory_resource import (
    ArenaMemoryResource,
    BinningMemoryResource,
    CallbackMemoryResource,
    CudaAsyncMemoryResource,
    CudaAsyncViewMemoryResource,
    CudaMemoryResource,
    DeviceMemoryResource,
    FailureCallbackResourceAdaptor,
    FixedSizeMemoryResource,
    LimitingResourceAdaptor,
    LoggingResourceAdaptor,
    ManagedMemoryResource,
    PinnedHostMemoryResource,
    PoolMemoryResource,
    PrefetchResourceAdaptor,
    SamHeadroomMemoryResource,
    StatisticsResourceAdaptor,
    SystemMemoryResource,
    TrackingResourceAdaptor,
    UpstreamResourceAdaptor,
    __all__,
    _flush_logs,
    available_device_memory,
    disable_logging,
    enable_logging,
    get_current_device_resource,
    get_current_device_resource_type,
    get_log_filenames,
    get_per_device_resource,
    is_initialized,
    set_current_device_resource,
    set_per_device_resource,
)

from . import experimental  # noqa: E402  (rmm.mr.experimental, as RAPIDS)
