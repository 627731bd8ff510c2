//! Stream-ordered allocation from a driver memory pool of our own (RMM's
//! `cuda_async_memory_resource`): `cuMemAllocFromPoolAsync` / `cuMemFreeAsync`, where the
//! driver orders reuse across streams itself.

use super::{require_nonzero, MemoryResource};
use crate::error::Result;
use crate::platform::{backend, MemPool, Stream};

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

/// Allocates from a driver memory pool (`cuMemPoolCreate`) that belongs to the resource
/// alone and is destroyed with it (see the module comment).
pub struct AsyncResource {
    device: i32,
    pool: MemPool,
}

impl AsyncResource {
    /// A pool on `device` that keeps up to `release_threshold` bytes reserved across
    /// synchronizations, primed with `initial_pool_size` bytes (allocated and freed once, so
    /// the first allocations do not pay for growth), whose memory can be exported as
    /// `handle_types` (CUmemAllocationHandleType bits, 0 for none).
    pub fn new(device: i32, initial_pool_size: usize, release_threshold: usize, handle_types: u32) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        let pool = platform.mem_pool_create(device, release_threshold, handle_types)?;
        let resource = AsyncResource { device, pool };
        if initial_pool_size > 0 {
            let ptr = platform.allocate_from_pool(device, pool, initial_pool_size, Stream::DEFAULT)?;
            platform.free_to_pool(device, pool, ptr, Stream::DEFAULT)?;
            platform.device_synchronize(device)?;
        }
        Ok(resource)
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
        backend()?.allocate_from_pool(self.device, self.pool, bytes, stream)
    }

    fn deallocate(&self, ptr: usize, _bytes: usize, stream: Stream) -> Result<()> {
        backend()?.free_to_pool(self.device, self.pool, ptr, stream)
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn name(&self) -> &'static str {
        "cuda_async"
    }
}

impl Drop for AsyncResource {
    fn drop(&mut self) {
        if crate::platform::process_exiting() {
            return;
        }
        if let Err(e) = backend().and_then(|b| b.mem_pool_destroy(self.device, self.pool)) {
            log::warn!("destroying the cuda_async pool of device {}: {e}", self.device);
        }
    }
}
