//! Resources that go straight to the platform for every call: device memory (`cudaMalloc`,
//! here `cuMemAlloc`), managed memory (`cuMemAllocManaged`) and page-locked host memory
//! (`cuMemHostAlloc`). Frees are immediate, not stream-ordered, as with `cudaFree`. The stream
//! an allocation or free names is not looked at: any handle goes, made up or destroyed, and
//! none reaches the driver (`platform::streams`).

use super::{require_nonzero, Footprint, LiveBytes, MemoryResource};
use crate::error::Result;
use crate::platform::{backend, MemoryKind, Stream};

/// A resource that takes every allocation from the platform and frees it at once (see the
/// module comment); it keeps nothing, so it has nothing to release.
pub struct DirectResource {
    device: i32,
    kind: MemoryKind,
    live: LiveBytes,
}

impl DirectResource {
    /// Device memory of `device` (RMM's `cuda_memory_resource`).
    pub fn cuda(device: i32) -> Result<Self> {
        Self::new(device, MemoryKind::Device)
    }

    /// Managed memory, attached globally, with `device` current (RMM's `managed_memory_resource`).
    pub fn managed(device: i32) -> Result<Self> {
        Self::new(device, MemoryKind::Managed)
    }

    /// Portable pinned host memory allocated through `device`'s context
    /// (RMM's `pinned_host_memory_resource`).
    pub fn pinned_host(device: i32) -> Result<Self> {
        Self::new(device, MemoryKind::PinnedHost)
    }

    fn new(device: i32, kind: MemoryKind) -> Result<Self> {
        backend()?.check_device(device)?;
        Ok(DirectResource { device, kind, live: LiveBytes::default() })
    }
}

impl MemoryResource for DirectResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        require_nonzero(bytes, self.name())?;
        // The memory is usable at once whatever the stream, which is not looked at: a handle
        // rmm-rs does not know is never handed to the driver (`platform::streams`).
        let _ = stream;
        let allocate = || backend()?.allocate(self.device, self.kind, bytes);
        let ptr = match self.kind {
            // Host memory: what the device's resources keep free would not help.
            MemoryKind::PinnedHost => allocate(),
            MemoryKind::Device | MemoryKind::Managed => super::caches::retry_after_releasing(self.device, allocate),
        }?;
        self.live.add(bytes);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, _stream: Stream) -> Result<()> {
        backend()?.free(self.device, self.kind, ptr)?;
        self.live.remove(bytes);
        Ok(())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.live.footprint())
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn hands_out_driver_allocations(&self) -> bool {
        true
    }

    fn orders_by_stream(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        match self.kind {
            MemoryKind::Device => "cuda",
            MemoryKind::Managed => "managed",
            MemoryKind::PinnedHost => "pinned_host",
        }
    }
}
