//! Which suballocator holds an address: every chunk a pool-like resource takes from upstream
//! is registered here, so `rmmFree` (which names no resource) finds the resource of a pointer
//! that never entered the pointer registry. Chunks nest (a binning resource's bins take their
//! chunks from a pool), so each nesting depth has its own map and lookups go innermost first.
//!
//! Also the home of orphans: a resource dropped while blocks it handed out are still live is
//! kept here, chunks and all, until the last of those blocks is freed.

use crate::error::Result;
use crate::platform::Stream;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

/// A suballocator that can free any block it handed out, given only the address.
pub trait ChunkHolder: Send + Sync {
    fn free_block(&self, ptr: usize, stream: Stream) -> Result<()>;
    /// What the live block at `ptr` was handed out for, if it is one.
    fn lease(&self, ptr: usize) -> Option<crate::mr::via::Lease>;
}

struct Range {
    end: usize,
    holder: Weak<dyn ChunkHolder>,
}

static LEVELS: RwLock<Vec<BTreeMap<usize, Range>>> = RwLock::new(Vec::new());
static ORPHANS: Mutex<Vec<Arc<dyn ChunkHolder>>> = Mutex::new(Vec::new());

pub fn register(depth: usize, base: usize, size: usize, holder: Weak<dyn ChunkHolder>) {
    let mut levels = LEVELS.write();
    if levels.len() <= depth {
        levels.resize_with(depth + 1, BTreeMap::new);
    }
    levels[depth].insert(base, Range { end: base + size, holder });
}

pub fn unregister(depth: usize, base: usize) {
    if let Some(level) = LEVELS.write().get_mut(depth) {
        level.remove(&base);
    }
}

/// The innermost live suballocator whose chunk contains `ptr`.
pub fn find(ptr: usize) -> Option<Arc<dyn ChunkHolder>> {
    let levels = LEVELS.read();
    levels.iter().rev().find_map(|level| {
        let (_, range) = level.range(..=ptr).next_back()?;
        (ptr < range.end).then(|| range.holder.upgrade()).flatten()
    })
}

/// Keeps a dropped resource alive while its blocks are live.
pub fn adopt(holder: Arc<dyn ChunkHolder>) {
    ORPHANS.lock().push(holder);
}

/// Lets go of an orphan whose last block was freed.
pub fn disown(holder: &dyn ChunkHolder) {
    let target = holder as *const dyn ChunkHolder as *const ();
    let released: Vec<Arc<dyn ChunkHolder>> = {
        let mut orphans = ORPHANS.lock();
        let (released, kept) = orphans.drain(..).partition(|h| Arc::as_ptr(h) as *const () == target);
        *orphans = kept;
        released
    };
    // Dropped outside the lock: releasing an orphan returns its chunks upstream, which may
    // reach other suballocators.
    drop(released);
}
