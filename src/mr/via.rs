//! Which outer resource a pooled block was allocated through. Adaptors (statistics, logging,
//! ...) over a pool keep no per-pointer record, which would cost a locked map insert and
//! remove per allocation: instead the pool stores in each block a `Via`, the adaptor the
//! caller called. `rmmFree`, which names no resource, finds the pool through the chunk range
//! index and hands the block to that adaptor, so the adaptor sees the free. A block freed
//! through another resource than its `Via` is refused, as a foreign pointer would be.
//! Adaptors stay alive while blocks allocated through them are (see `collect`).

use super::MemoryResource;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// An outer resource, by number; never reused, so a block cannot reach a later adaptor.
pub type Via = u32;

/// Allocated by calling the block's own resource.
pub const DIRECT: Via = 0;

/// What a block was handed out for: the outer resource, and the bytes the caller asked for
/// (the block may be larger), which is what that resource counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub via: Via,
    pub requested: usize,
}

impl Lease {
    pub fn direct(requested: usize) -> Self {
        Lease { via: DIRECT, requested }
    }
}

/// Every adaptor, held until nothing else refers to it and no block allocated through it is
/// live: live allocations keep their adaptors (and so the adaptors' own upstreams) alive, as
/// the per-pointer registry keeps the resources it records.
static OUTER: RwLock<Option<HashMap<Via, Arc<dyn MemoryResource>>>> = RwLock::new(None);
static NEXT: AtomicU32 = AtomicU32::new(1);

/// A number for an adaptor about to be made (`register` it once it is), or for a resource that
/// only marks its blocks.
pub fn reserve() -> Via {
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub fn register(via: Via, resource: Arc<dyn MemoryResource>) {
    OUTER.write().get_or_insert_with(HashMap::new).insert(via, resource);
}

/// The resource numbered `via`; None for `DIRECT` (and numbers never registered).
pub fn resolve(via: Via) -> Option<Arc<dyn MemoryResource>> {
    if via == DIRECT {
        return None;
    }
    OUTER.read().as_ref()?.get(&via).cloned()
}

/// Lets go of adaptors that only this table refers to and through which no allocation is
/// live: called when handles are destroyed or replaced, and after frees through an adaptor.
/// Dropping one can free its upstream adaptor in turn, hence the loop.
pub fn collect() {
    loop {
        let unused: Vec<Arc<dyn MemoryResource>> = {
            let mut outer = OUTER.write();
            let Some(map) = outer.as_mut() else { return };
            let vias: Vec<Via> = map
                .iter()
                .filter(|(_, resource)| Arc::strong_count(resource) == 1 && !resource.has_live_allocations())
                .map(|(via, _)| *via)
                .collect();
            vias.iter().filter_map(|via| map.remove(via)).collect()
        };
        if unused.is_empty() {
            return;
        }
        // Dropped outside the lock: a logging adaptor writes out its file as it goes.
        drop(unused);
    }
}

/// A name for messages: "a statistics resource", or "another resource" (one since destroyed,
/// or a binning resource, which numbers its blocks without registering).
pub fn describe(via: Via) -> String {
    match resolve(via) {
        Some(resource) => format!("a {} resource", resource.name()),
        None => "another resource".to_string(),
    }
}
