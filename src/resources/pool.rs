//! The pool (RMM's `pool_memory_resource`): coalescing good-fit suballocation from upstream
//! chunks, stream-ordered, growing geometrically up to a maximum, able to give wholly free
//! chunks back (`release`), which RMM's pool cannot.

use super::stream_ordered::{Core, Growth, StreamOrdered, Usage};
use super::{MemoryResource, ALIGNMENT};
use crate::error::Result;
use crate::platform::Stream;
use rmm_suballoc::tlsf::Tlsf;
use std::sync::Arc;

/// Chunks beyond the initial one are multiples of this.
const CHUNK_GRANULARITY: usize = 2 << 20;

/// The pool resource (see the module comment): a TLSF index per stream over upstream
/// chunks, on the stream-ordered core.
pub struct PoolResource {
    core: StreamOrdered<Tlsf>,
}

impl PoolResource {
    /// A pool over `upstream` that starts with `initial_size` bytes and grows up to
    /// `maximum_size` (0: no limit).
    pub fn new(upstream: Arc<dyn MemoryResource>, initial_size: usize, maximum_size: usize) -> Result<Self> {
        let growth = Growth::Geometric { granularity: CHUNK_GRANULARITY };
        Self::with_growth("pool", upstream, growth, initial_size, maximum_size)
    }

    /// A pool that goes by another name and grows another way (the expandable resource).
    pub(crate) fn with_growth(
        name: &'static str,
        upstream: Arc<dyn MemoryResource>,
        growth: Growth,
        initial_size: usize,
        maximum_size: usize,
    ) -> Result<Self> {
        Ok(PoolResource { core: StreamOrdered::new(name, upstream, growth, initial_size, maximum_size, Tlsf::new)? })
    }

    /// The core's figures: chunks held, bytes free and in use, streams and lanes.
    pub fn usage(&self) -> Usage {
        self.core.usage()
    }

    #[doc(hidden)]
    pub fn inject_missing_ordering(&self, omit: bool) {
        self.core.inject_missing_ordering(omit)
    }

    #[doc(hidden)]
    pub fn split_into_lanes(&self, stream: Stream) -> Result<()> {
        self.core.split_into_lanes(stream)
    }

    /// Checks the core and every stream's index; the first broken invariant, in words (tests).
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.core.check_invariants()
    }

    /// The pool's core, for an adaptor that calls it without going through the pool.
    pub(crate) fn shared_core(&self) -> Arc<Core<Tlsf>> {
        self.core.shared_core()
    }
}

impl MemoryResource for PoolResource {
    #[inline]
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.core.allocate(bytes, stream)
    }

    #[inline]
    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.core.deallocate(ptr, Some(bytes), stream)
    }

    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        if alignment <= ALIGNMENT {
            return self.core.allocate(bytes, stream);
        }
        self.core.allocate_aligned(bytes, alignment, stream)
    }

    fn name(&self) -> &'static str {
        self.core.name()
    }

    fn snapshot(&self) -> serde_json::Value {
        self.core.snapshot(self.name())
    }

    crate::stream_ordered_resource_methods!(core);
}
