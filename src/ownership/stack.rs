//! A stack as callers of the C API hold it: the resource they allocate from, the top of a stack
//! of adaptors and suballocators. Handles, the per-device registry and device buffers hold
//! `StackRef`s (see `records`); the ownership records hold the `Stack` itself, so a stack stays
//! alive while memory allocated from it is live, even after every handle to it is gone.

use crate::error::Result;
use crate::platform::Stream;
use crate::resources::adaptors::Upstream;
use crate::resources::MemoryResource;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Words of the bitmap of record shards a stack has entries in (64 shards a word).
pub(super) const SHARD_WORDS: usize = 16;

/// A stack's top resource with what the records need to know about it (see the module
/// comment); shared through `Arc` between its `StackRef`s and the records of its live memory.
pub struct Stack {
    /// Reached on every allocation and free: a pool on top is called directly, so its fast
    /// path inlines into the entry points instead of costing an indirect call.
    top: Upstream,
    /// The same resource as `top`, for callers that keep a reference of their own.
    resource: Arc<dyn MemoryResource>,
    device: i32,
    /// Whether the stack orders its memory by stream (`MemoryResource::orders_by_stream`):
    /// a free on a stream handle rmm-rs does not know asks about it only then.
    orders_by_stream: bool,
    /// `StackRef`s alive: once none is, the records let go of the stack as soon as none of its
    /// memory is live.
    holders: AtomicUsize,
    /// The record shards that hold an entry of this stack (a bit each), so that letting go of
    /// it visits only those.
    shards: [AtomicU64; SHARD_WORDS],
}

impl Stack {
    /// The resource on top of the stack, which allocations and frees go to.
    #[inline(always)]
    pub fn resource(&self) -> &dyn MemoryResource {
        &*self.top
    }

    /// The resource itself, for a caller that keeps a reference of its own (an adaptor made
    /// over it).
    pub fn resource_arc(&self) -> &Arc<dyn MemoryResource> {
        &self.resource
    }

    /// Allocates from the top of the stack.
    #[inline(always)]
    pub fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.top.allocate(bytes, stream)
    }

    /// Allocates from the top of the stack at a multiple of `alignment`.
    #[inline(always)]
    pub fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        self.top.allocate_aligned(bytes, alignment, stream)
    }

    /// Frees what `allocate_aligned` returned through the top of the stack.
    #[inline(always)]
    pub fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.top.deallocate_aligned(ptr, bytes, alignment, stream)
    }

    /// Frees through the top of the stack.
    #[inline(always)]
    pub fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.top.deallocate(ptr, bytes, stream)
    }

    /// The device the stack allocates on (its top resource's).
    #[inline(always)]
    pub fn device(&self) -> i32 {
        self.device
    }

    /// Whether the stack orders its memory by stream (see the field).
    #[inline(always)]
    pub fn orders_by_stream(&self) -> bool {
        self.orders_by_stream
    }

    /// A stack held by one `StackRef`.
    pub(super) fn new_held(resource: Arc<dyn MemoryResource>) -> Arc<Stack> {
        let device = resource.device();
        let orders_by_stream = resource.orders_by_stream();
        Arc::new(Stack {
            top: Upstream::new(resource.clone()),
            resource,
            device,
            orders_by_stream,
            holders: AtomicUsize::new(1),
            shards: [const { AtomicU64::new(0) }; SHARD_WORDS],
        })
    }

    /// Whether a handle, a device's slot or a device buffer still refers to the stack.
    #[inline(always)]
    pub(super) fn is_held(&self) -> bool {
        self.holders.load(Ordering::Acquire) > 0
    }

    /// One more `StackRef`.
    pub(super) fn hold(&self) {
        self.holders.fetch_add(1, Ordering::Relaxed);
    }

    /// One `StackRef` fewer; true when it was the last.
    pub(super) fn let_go(&self) -> bool {
        self.holders.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// Notes that shard `shard` made (`true`) or dropped its entry of this stack.
    pub(super) fn note_entry(&self, shard: usize, held: bool) {
        let bit = 1u64 << (shard % 64);
        match held {
            true => self.shards[shard / 64].fetch_or(bit, Ordering::Relaxed),
            false => self.shards[shard / 64].fetch_and(!bit, Ordering::Relaxed),
        };
    }

    pub(super) fn shards_with_entries(&self) -> Vec<usize> {
        let words = self.shards.iter().map(|word| word.load(Ordering::Relaxed)).enumerate();
        words.flat_map(|(at, word)| (0..64).filter(move |bit| word & (1 << bit) != 0).map(move |bit| at * 64 + bit)).collect()
    }

    /// The same stack (not merely the same kind of resource).
    #[inline(always)]
    pub fn same(a: &Stack, b: &Stack) -> bool {
        std::ptr::eq(a, b)
    }
}
