//! Blocks of one size (RMM's `fixed_size_memory_resource`): O(1) stream-ordered allocation of
//! any request up to the block size, from chunks of many blocks.

use super::stream_ordered::{Core, Growth, StreamOrdered, Usage};
use super::MemoryResource;
use crate::error::{Error, Result};
use crate::platform::Stream;
use rmm_suballoc::fixed_blocks::FixedBlocks;
use rmm_suballoc::tlsf::GRANULE;
use std::sync::Arc;

/// Blocks per upstream chunk when the caller does not say.
pub const DEFAULT_BLOCKS_PER_CHUNK: usize = 128;

/// Hands out blocks of one size from the stream-ordered core (see the module comment); a
/// request larger than a block is refused.
pub struct FixedSizeResource {
    block_size: usize,
    core: StreamOrdered<FixedBlocks>,
}

impl FixedSizeResource {
    /// Blocks of `block_size` (rounded up to 256 bytes), `blocks_to_preallocate` of them up
    /// front and in every later chunk (0: 128).
    pub fn new(upstream: Arc<dyn MemoryResource>, block_size: usize, blocks_to_preallocate: usize) -> Result<Self> {
        if block_size == 0 {
            return Err(Error::invalid("block_size is 0"));
        }
        let block_size = block_size.checked_next_multiple_of(GRANULE).ok_or_else(|| Error::invalid("block_size is too large"))?;
        let per_chunk = if blocks_to_preallocate == 0 { DEFAULT_BLOCKS_PER_CHUNK } else { blocks_to_preallocate };
        let chunk = block_size.checked_mul(per_chunk).ok_or_else(|| Error::invalid("block_size * blocks_to_preallocate overflows"))?;
        let initial = if blocks_to_preallocate == 0 { 0 } else { chunk };
        let core = StreamOrdered::new("fixed_size", upstream, Growth::Fixed { chunk, smallest: block_size }, initial, 0, move || {
            FixedBlocks::new(block_size)
        })?;
        Ok(FixedSizeResource { block_size, core })
    }

    /// Bytes of every block (the size asked for, rounded up to 256 bytes).
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// The stream-ordered core, for a binning resource to call without this layer (it routes
    /// only requests that fit a block here).
    pub(crate) fn core(&self) -> Arc<Core<FixedBlocks>> {
        self.core.shared_core()
    }

    #[cold]
    #[inline(never)]
    fn too_large(&self, bytes: usize) -> Error {
        Error::invalid(format!(
            "{} exceed the fixed_size resource's block size of {} (device {})",
            crate::units::exact(bytes),
            crate::units::exact(self.block_size),
            self.device()
        ))
    }

    /// The core's figures: chunks held, blocks free and in use, streams.
    pub fn usage(&self) -> Usage {
        self.core.usage()
    }

    /// Checks the core and every stream's index; the first broken invariant, in words (tests).
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.core.check_invariants()
    }
}

impl MemoryResource for FixedSizeResource {
    #[inline]
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        if bytes > self.block_size {
            return Err(self.too_large(bytes));
        }
        self.core.allocate(bytes, stream)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.core.deallocate(ptr, Some(bytes), stream)
    }

    fn name(&self) -> &'static str {
        "fixed_size"
    }

    fn snapshot(&self) -> serde_json::Value {
        self.core.snapshot(self.name())
    }

    crate::stream_ordered_resource_methods!(core);
}
