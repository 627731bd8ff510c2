//! A stack as callers of the C API hold it: the resource they allocate from, the top of a stack
//! of adaptors and suballocators. Handles, the per-device registry and device buffers hold
//! `StackRef`s; the ownership records hold the `Stack` itself, so a stack stays alive while
//! memory allocated from it is live, even after every handle to it is gone.

use super::records::{self, SHARDS};
use crate::mr::MemoryResource;
use crate::platform::shared::Shared;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

pub struct Stack {
    /// Reached on every allocation and free: the plain pointer beside its `Arc`.
    resource: Shared<dyn MemoryResource>,
    device: i32,
    /// `StackRef`s alive: once none is, the records let go of the stack as soon as none of its
    /// memory is live.
    holders: AtomicUsize,
    /// The record shards that hold an entry of this stack (a bit each), so that letting go of
    /// it visits only those.
    shards: [AtomicU64; SHARDS / 64],
}

impl Stack {
    #[inline(always)]
    pub fn resource(&self) -> &dyn MemoryResource {
        &*self.resource
    }

    /// The resource itself, for a caller that keeps a reference of its own (an adaptor made
    /// over it).
    pub fn resource_arc(&self) -> &Arc<dyn MemoryResource> {
        self.resource.arc()
    }

    #[inline(always)]
    pub fn device(&self) -> i32 {
        self.device
    }

    /// Whether a handle, a device's slot or a device buffer still refers to the stack.
    #[inline(always)]
    pub(super) fn is_held(&self) -> bool {
        self.holders.load(Ordering::Acquire) > 0
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

/// A counted reference to a stack, as a handle or a registry slot holds it.
pub struct StackRef(Arc<Stack>);

impl StackRef {
    pub fn new(resource: Arc<dyn MemoryResource>) -> Self {
        let device = resource.device();
        StackRef(Arc::new(Stack {
            resource: Shared::new(resource),
            device,
            holders: AtomicUsize::new(1),
            shards: [const { AtomicU64::new(0) }; SHARDS / 64],
        }))
    }

    pub fn stack(&self) -> &Arc<Stack> {
        &self.0
    }
}

impl std::ops::Deref for StackRef {
    type Target = Stack;
    #[inline(always)]
    fn deref(&self) -> &Stack {
        &self.0
    }
}

impl Clone for StackRef {
    fn clone(&self) -> Self {
        self.0.holders.fetch_add(1, Ordering::Relaxed);
        StackRef(self.0.clone())
    }
}

impl Drop for StackRef {
    fn drop(&mut self) {
        if self.0.holders.fetch_sub(1, Ordering::AcqRel) == 1 {
            records::forget_idle(&self.0);
        }
    }
}
