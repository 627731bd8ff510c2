//! Which outer resource a pooled block was allocated through. Adaptors (statistics, logging,
//! ...) over a pool keep no per-pointer record, which would cost a locked map insert and
//! remove per allocation: instead the pool stores in each block a `Via`, the adaptor the
//! caller called. `rmmFree`, which names no resource, finds the pool through the chunk range
//! index and hands the block to that adaptor, so the adaptor sees the free. A block freed
//! through another resource than its `Via` is refused, as a foreign pointer would be.

use super::MemoryResource;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

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

static OUTER: RwLock<Option<HashMap<Via, Weak<dyn MemoryResource>>>> = RwLock::new(None);
static NEXT: AtomicU32 = AtomicU32::new(1);

/// Numbers an outer resource; `unregister` it when it is dropped.
pub fn register(resource: Weak<dyn MemoryResource>) -> Via {
    let via = NEXT.fetch_add(1, Ordering::Relaxed);
    OUTER.write().get_or_insert_with(HashMap::new).insert(via, resource);
    via
}

pub fn unregister(via: Via) {
    if let Some(map) = OUTER.write().as_mut() {
        map.remove(&via);
    }
}

/// The live resource numbered `via`; None for `DIRECT` and for resources since dropped (their
/// blocks are then freed straight into the pool).
pub fn resolve(via: Via) -> Option<Arc<dyn MemoryResource>> {
    if via == DIRECT {
        return None;
    }
    OUTER.read().as_ref()?.get(&via)?.upgrade()
}

/// A name for messages: "a statistics adaptor", or "an adaptor since destroyed".
pub fn describe(via: Via) -> String {
    match resolve(via) {
        Some(resource) => format!("a {} resource", resource.name()),
        None => "an adaptor since destroyed".to_string(),
    }
}
