//! Stream-ordered allocation from a driver memory pool: `cuMemAllocFromPoolAsync` /
//! `cuMemFreeAsync`, where the driver orders reuse across streams itself. The pool is the
//! resource's own (RMM's `cuda_async_memory_resource`, and pools of pinned host memory), the
//! caller's (`cuda_async_view_memory_resource`: any pool handle of this process, not owned), or
//! the device's default managed pool (`cuda_async_managed_memory_resource`, CUDA 13).

use super::{require_nonzero, MemoryResource};
use crate::error::{Error, Result};
use crate::platform::{backend, streams, MemPool, MemoryKind, PoolProps, Stream};

/// The kinds of shareable handle the driver pool's memory can be exported as (CUDA's
/// `CUmemAllocationHandleType` bits), for `AsyncResource::new`'s `handle_types`.
pub mod handle_type {
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`: a file descriptor (Linux).
    pub const POSIX_FILE_DESCRIPTOR: u32 = 1;
    /// `CU_MEM_HANDLE_TYPE_WIN32`: a Windows NT handle.
    pub const WIN32: u32 = 2;
    /// `CU_MEM_HANDLE_TYPE_WIN32_KMT`: a Windows D3DKMT handle.
    pub const WIN32_KMT: u32 = 4;
    /// `CU_MEM_HANDLE_TYPE_FABRIC`: a fabric handle, across nodes through IMEX.
    pub const FABRIC: u32 = 8;
    /// Every kind: other bits name none.
    pub const ALL: u32 = POSIX_FILE_DESCRIPTOR | WIN32 | WIN32_KMT | FABRIC;
}

/// Allocates from a driver memory pool (see the module comment); a pool of its own
/// (`cuMemPoolCreate`) is destroyed with it, another is left as it was.
pub struct AsyncResource {
    device: i32,
    pool: MemPool,
    owned: bool,
    name: &'static str,
}

impl AsyncResource {
    /// A pool on `device` that keeps up to `release_threshold` bytes reserved across
    /// synchronizations, primed with `initial_pool_size` bytes (allocated and freed once, so
    /// the first allocations do not pay for growth), whose memory can be exported as
    /// `handle_types` (CUmemAllocationHandleType bits, 0 for none).
    pub fn new(device: i32, initial_pool_size: usize, release_threshold: usize, handle_types: u32) -> Result<Self> {
        Self::with_props(device, initial_pool_size, &PoolProps::device(release_threshold, handle_types))
    }

    /// A pool of its own on `device` as `props` says (device memory: "cuda_async"; pinned host
    /// memory: "cuda_async_pinned_host"), primed with `initial_pool_size` bytes.
    pub fn with_props(device: i32, initial_pool_size: usize, props: &PoolProps) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        let name = match props.kind {
            MemoryKind::Device => "cuda_async",
            MemoryKind::PinnedHost => "cuda_async_pinned_host",
            MemoryKind::Managed => return Err(Error::Internal("managed pools are the device's default pool".into())),
        };
        let pool = platform.mem_pool_create(device, props)?;
        let resource = AsyncResource { device, pool, owned: true, name };
        if initial_pool_size > 0 {
            let ptr = platform.allocate_from_pool(device, pool, initial_pool_size, Stream::DEFAULT)?;
            platform.free_to_pool(device, pool, ptr, Stream::DEFAULT)?;
            platform.device_synchronize(device)?;
        }
        Ok(resource)
    }

    /// A resource over `pool`, a memory pool handle of this process that the caller made and
    /// keeps (`cudaMemPoolCreate`, `cudaDeviceGetDefaultMemPool`, another resource's pool): used
    /// on `device`, never destroyed here; it must outlive the resource. NULL, a handle that is no
    /// pool and an imported pool (which allocates nothing) are refused.
    pub fn view(device: i32, pool: MemPool) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        platform.mem_pool_check(device, pool)?;
        Ok(AsyncResource { device, pool, owned: false, name: "cuda_async_view" })
    }

    /// A resource over `device`'s default pool of managed memory (CUDA 13): every such resource
    /// of a device shares that pool, which the driver keeps. `NotSupported` where the driver
    /// or device has none.
    pub fn managed(device: i32) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        let pool = platform.default_managed_pool(device)?;
        Ok(AsyncResource { device, pool, owned: false, name: "cuda_async_managed" })
    }

    /// The driver's handle of the pool (`CUmemoryPool`; an opaque value on simulated devices).
    pub fn pool_handle(&self) -> usize {
        self.pool.0
    }

    /// Releases reserved memory the pool does not use, down to `keep` bytes.
    pub fn trim(&self, keep: usize) -> Result<()> {
        backend()?.mem_pool_trim(self.device, self.pool, keep)
    }
}

impl MemoryResource for AsyncResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        require_nonzero(bytes, self.name())?;
        // The driver orders the memory on `stream`: the handle goes to it as the caller names
        // it, but not one rmm-rs does not know with `registered_streams` (`platform::streams`).
        streams::check_usable(stream)?;
        super::caches::retry_after_releasing(self.device, || backend()?.allocate_from_pool(self.device, self.pool, bytes, stream))
    }

    fn deallocate(&self, ptr: usize, _bytes: usize, stream: Stream) -> Result<()> {
        streams::check_usable(stream)?;
        backend()?.free_to_pool(self.device, self.pool, ptr, stream)
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

impl Drop for AsyncResource {
    fn drop(&mut self) {
        if crate::platform::process_exiting() || !self.owned {
            return;
        }
        if let Err(e) = backend().and_then(|b| b.mem_pool_destroy(self.device, self.pool)) {
            log::warn!("destroying the {} pool of device {}: {e}", self.name, self.device);
        }
    }
}
