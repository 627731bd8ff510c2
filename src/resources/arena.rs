//! The arena (RMM's `arena_memory_resource`): a global arena over upstream, and per-thread
//! (legacy default stream) or per-stream arenas that take superblocks from it, so small
//! allocations from different threads do not meet on one lock. Large requests go to the
//! global arena directly. Superblocks go back to the global arena when an arena runs dry
//! elsewhere (reclaim) or on `release`.

use super::pool::PoolResource;
use super::stream_ordered::{Growth, StreamOrdered, Usage};
use super::MemoryResource;
use crate::error::Result;
use crate::platform::Stream;
use rmm_suballoc::tlsf::Tlsf;
use std::sync::Arc;

/// Superblocks that local arenas take from the global arena.
pub const SUPERBLOCK_SIZE: usize = 4 << 20;
/// Requests above this go to the global arena.
pub const LOCAL_LIMIT: usize = 256 << 10;

/// The arena resource (see the module comment): a global pool and per-thread or per-stream
/// arenas over it.
pub struct ArenaResource {
    global: Arc<PoolResource>,
    local: StreamOrdered<Tlsf>,
}

impl ArenaResource {
    /// An arena over `upstream` whose global arena starts with `arena_size` bytes (0: it grows
    /// on demand).
    pub fn new(upstream: Arc<dyn MemoryResource>, arena_size: usize) -> Result<Self> {
        let global = Arc::new(PoolResource::new(upstream, arena_size, 0)?);
        let local = StreamOrdered::new(
            "arena",
            global.clone(),
            Growth::Fixed { chunk: SUPERBLOCK_SIZE, smallest: SUPERBLOCK_SIZE },
            0,
            0,
            Tlsf::new,
        )?
        .with_per_thread_default_stream();
        Ok(ArenaResource { global, local })
    }

    /// (global arena, local arenas) figures.
    pub fn usage(&self) -> (Usage, Usage) {
        (self.global.usage(), self.local.usage())
    }

    /// Checks the global and the local arenas; the first broken invariant, in words (tests).
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.global.check_invariants()?;
        self.local.check_invariants()
    }
}

impl MemoryResource for ArenaResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        match bytes > LOCAL_LIMIT {
            true => self.global.allocate(bytes, stream),
            false => self.local.allocate(bytes, stream),
        }
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        match bytes > LOCAL_LIMIT {
            true => self.global.deallocate(ptr, bytes, stream),
            false => self.local.deallocate(ptr, Some(bytes), stream),
        }
    }

    /// The per-thread and per-stream arenas, with the global arena (a pool) as their upstream.
    fn snapshot(&self) -> serde_json::Value {
        self.local.snapshot("arena")
    }

    fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        visit(&*self.global)
    }

    fn device(&self) -> i32 {
        self.global.device()
    }

    fn name(&self) -> &'static str {
        "arena"
    }

    fn release(&self) -> Result<usize> {
        self.local.release_free_chunks()?;
        self.global.release()
    }

    fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        self.local.set_release_threshold(bytes)?;
        self.global.set_release_threshold(bytes)
    }

    fn pool_size(&self) -> Option<usize> {
        self.global.pool_size()
    }

    fn pool_free(&self) -> Option<usize> {
        // The global arena's free bytes, and what the per-thread arenas hold unused.
        Some(self.global.usage().free + self.local.usage().free)
    }

    /// The global arena's figures, less what the per-thread arenas hold unused; their peak
    /// in use bounds the true one from above.
    fn footprint(&self) -> Option<super::Footprint> {
        let (global, local) = (self.global.usage(), self.local.usage());
        Some(super::Footprint {
            live: global.live.saturating_sub(local.free),
            largest_free_block: global.largest_free_block.max(local.largest_free_block),
            ..global.footprint()
        })
    }
}
