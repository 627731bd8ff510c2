//! A resource whose memory comes from functions the user supplies (RAPIDS'
//! `callback_memory_resource`, Python's `CallbackMemoryResource`): any allocator, C or C++, as an
//! upstream of the suballocators and under the adaptors.

use super::{caches, Footprint, LiveBytes, MemoryResource, ALIGNMENT};
use crate::error::{Error, Result};
use crate::platform::{backend, Stream};
use std::cell::Cell;

/// `bytes, alignment, stream -> address` (None: the allocator had no memory for it).
pub type AllocateFn = Box<dyn Fn(usize, usize, Stream) -> Option<usize> + Send + Sync>;
/// `address, bytes, alignment, stream`: gives back what `AllocateFn` handed out.
pub type DeallocateFn = Box<dyn Fn(usize, usize, usize, Stream) + Send + Sync>;

thread_local! {
    /// How deep this thread is in allocate and deallocate callbacks.
    static IN_CALLBACK: Cell<u32> = const { Cell::new(0) };
    /// How deep in deallocate (and release) callbacks alone: a free that called one may hold
    /// the record shard of the very address the callback gives back.
    static IN_FREEING_CALLBACK: Cell<u32> = const { Cell::new(0) };
}

/// Whether this thread is running a callback resource's allocate or deallocate function. What
/// such a function takes from rmm-rs (`rmmResourceAllocate` on another resource, as a C++
/// resource over an rmm-rs resource does) becomes the callback resource's upstream memory,
/// which a suballocator above then hands out again block by block: it is not recorded as
/// handed to a caller, and the function gives it back through the same resource with its size.
pub fn running_on_this_thread() -> bool {
    IN_CALLBACK.with(Cell::get) > 0
}

/// Whether this thread is running a deallocate or release function (see
/// `running_on_this_thread`, which is then true too).
pub fn freeing_on_this_thread() -> bool {
    IN_FREEING_CALLBACK.with(Cell::get) > 0
}

/// Runs a user function with `running_on_this_thread()` true, and `freeing_on_this_thread()`
/// too when `freeing`.
fn calling_user<T>(freeing: bool, function: impl FnOnce() -> T) -> T {
    struct Leave(bool);
    impl Drop for Leave {
        fn drop(&mut self) {
            IN_CALLBACK.with(|depth| depth.set(depth.get() - 1));
            if self.0 {
                IN_FREEING_CALLBACK.with(|depth| depth.set(depth.get() - 1));
            }
        }
    }
    IN_CALLBACK.with(|depth| depth.set(depth.get() + 1));
    if freeing {
        IN_FREEING_CALLBACK.with(|depth| depth.set(depth.get() + 1));
    }
    let _leave = Leave(freeing);
    function()
}

/// Called once when the resource goes, after its last use: what the functions need may go then.
pub type ReleaseFn = Box<dyn FnOnce() + Send + Sync>;

/// A resource whose memory comes from the caller's functions (see the module comment); it
/// counts what they hand out, and checks nothing about the memory itself: the suballocators
/// check the alignment of what they carve (`check_chunk_alignment`), and an address handed
/// straight through is the functions' promise, as in RAPIDS RMM.
pub struct CallbackResource {
    device: i32,
    /// Whether the functions take an alignment (`rmmCallbackResourceCreateAligned`); others
    /// are asked for `ALIGNMENT` only.
    takes_alignment: bool,
    allocate: AllocateFn,
    deallocate: DeallocateFn,
    release: Option<ReleaseFn>,
    live: LiveBytes,
}

impl CallbackResource {
    /// Memory of `device` from `allocate`, given back through `deallocate`; `release` runs when
    /// the resource goes.
    /// the resource goes. `takes_alignment`: the functions honour an alignment past
    /// `ALIGNMENT`.
    pub fn new(
        device: i32,
        takes_alignment: bool,
        allocate: AllocateFn,
        deallocate: DeallocateFn,
        release: Option<ReleaseFn>,
    ) -> Result<Self> {
        backend()?.check_device(device)?;
        Ok(CallbackResource { device, takes_alignment, allocate, deallocate, release, live: LiveBytes::default() })
    }

    /// Drops the release function unrun (creation failed: what it would free is the caller's).
    pub fn forget_release(&mut self) {
        self.release = None;
    }
}

impl CallbackResource {
    fn allocate_at(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        super::require_nonzero(bytes, self.name())?;
        // The functions get the stream as it is, whatever its handle: rmm-rs hands none it does
        // not know to the driver (`platform::streams`); what they do with it is theirs.
        let ptr = caches::retry_after_releasing(self.device, || {
            calling_user(false, || (self.allocate)(bytes, alignment, stream))
                .ok_or_else(|| Error::out_of_memory(bytes, "the allocate callback returned NULL"))
        })?;
        self.live.add(bytes);
        Ok(ptr)
    }
}

impl Drop for CallbackResource {
    fn drop(&mut self) {
        if let Some(release) = self.release.take() {
            calling_user(true, release);
        }
    }
}

impl MemoryResource for CallbackResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_at(bytes, ALIGNMENT, stream)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        if alignment > ALIGNMENT && !self.takes_alignment {
            return Err(super::alignment_not_supported(self.name(), alignment));
        }
        self.allocate_at(bytes, alignment.max(ALIGNMENT), stream)
    }

    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        calling_user(true, || (self.deallocate)(ptr, bytes, alignment.max(ALIGNMENT), stream));
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

    fn orders_by_stream(&self) -> bool {
        false
    }
}
