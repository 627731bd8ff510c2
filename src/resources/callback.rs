//! A resource whose memory comes from functions the user supplies (RAPIDS'
//! `callback_memory_resource`, Python's `CallbackMemoryResource`): any allocator, C or C++, as an
//! upstream of the suballocators and under the adaptors.

use super::{caches, Footprint, LiveBytes, MemoryResource, ALIGNMENT};
use crate::error::{Error, Result};
use crate::platform::{backend, Stream};

/// `bytes, stream -> address` (None: the allocator had no memory for it).
pub type AllocateFn = Box<dyn Fn(usize, Stream) -> Option<usize> + Send + Sync>;
/// `address, bytes, stream`: gives back what `AllocateFn` handed out.
pub type DeallocateFn = Box<dyn Fn(usize, usize, Stream) + Send + Sync>;

pub struct CallbackResource {
    device: i32,
    allocate: AllocateFn,
    deallocate: DeallocateFn,
    live: LiveBytes,
}

impl CallbackResource {
    /// Memory of `device` from `allocate`, given back through `deallocate`.
    pub fn new(device: i32, allocate: AllocateFn, deallocate: DeallocateFn) -> Result<Self> {
        backend()?.check_device(device)?;
        Ok(CallbackResource { device, allocate, deallocate, live: LiveBytes::default() })
    }
}

impl MemoryResource for CallbackResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        super::require_nonzero(bytes, self.name())?;
        let ptr = caches::retry_after_releasing(self.device, || {
            (self.allocate)(bytes, stream).ok_or_else(|| Error::out_of_memory(bytes, "the allocate callback returned NULL"))
        })?;
        if ptr % ALIGNMENT != 0 {
            // Suballocators carve blocks of this alignment out of what upstream hands them.
            (self.deallocate)(ptr, bytes, stream);
            return Err(Error::invalid(format!(
                "the allocate callback returned {ptr:#x}, which is not {ALIGNMENT}-byte aligned (given back to the deallocate callback)"
            )));
        }
        self.live.add(bytes);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        (self.deallocate)(ptr, bytes, stream);
        self.live.remove(bytes);
        Ok(())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.live.footprint())
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn name(&self) -> &'static str {
        "callback"
    }
}
