//! Aligned (RMM's `aligned_resource_adaptor`): allocations of at least `threshold` bytes get
//! `alignment` (a power of two up to 1 GiB; below 256 bytes, which every block has anyway, it
//! is 256); smaller ones pass through. Over a pool or the expandable resource, the pool's index places
//! the block at an aligned address itself (what lies before it stays free), so the block is
//! the pool's own, freed as any other, and nothing is padded or recorded. Over any other
//! resource the adaptor over-allocates by the alignment, as RMM does, and hands out the
//! aligned address inside: then the pointer is not the upstream block's, so the adaptor keeps
//! the offsets as `BlockRecords`, sharded by address window as the ownership records are, and
//! `rmmFree` finds its pointers through the per-pointer registry.

use super::block_records::BlockRecords;
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use std::sync::Arc;

/// Every allocation needs a free range of its size plus the alignment, so a larger one would
/// only make every allocation fail for lack of memory; no device maps memory at a coarser
/// granularity.
const MAX_ALIGNMENT: usize = 1 << 30;

/// Hands out allocations of at least a threshold at a larger alignment (see the module
/// comment).
pub struct AlignedAdaptor {
    upstream: Upstream,
    alignment: usize,
    threshold: usize,
    /// Aligned address -> (upstream address, upstream size), where the upstream does not align.
    shifted: Option<BlockRecords<(usize, usize)>>,
}

impl AlignedAdaptor {
    /// An adaptor over `upstream` that aligns allocations of `threshold` bytes or more to
    /// `alignment`, a power of two up to 1 GiB (anything else is `InvalidArgument`; below 256
    /// it is 256, as RAPIDS RMM bumps it).
    /// Over a pool or the expandable resource nothing is recorded; over any other resource each
    /// aligned block is.
    pub fn new(upstream: Arc<dyn MemoryResource>, alignment: usize, threshold: usize) -> Result<Arc<Self>> {
        if !alignment.is_power_of_two() || alignment > MAX_ALIGNMENT {
            return Err(Error::invalid(format!(
                "alignment {alignment} must be a power of two of at most {}",
                crate::units::exact(MAX_ALIGNMENT)
            )));
        }
        let alignment = alignment.max(ALIGNMENT);
        let upstream = Upstream::new(upstream);
        let shifted = (!upstream.aligns()).then(BlockRecords::new);
        Ok(Arc::new(AlignedAdaptor { upstream, alignment, threshold, shifted }))
    }

    fn passes_through(&self, bytes: usize) -> bool {
        self.alignment == ALIGNMENT || bytes < self.threshold
    }

    /// What is taken from an upstream that does not align, for `bytes`: the request rounded to
    /// 256 as every block is, and room to shift it to the alignment (RAPIDS RMM's sizes, so
    /// that an upstream sees the same requests).
    fn upstream_size(&self, bytes: usize) -> Option<usize> {
        bytes.checked_next_multiple_of(ALIGNMENT)?.checked_add(self.alignment - ALIGNMENT)
    }

    /// Whether the adaptor's own alignment covers `alignment` for `bytes`; otherwise the
    /// request goes to the upstream with its alignment.
    fn covers(&self, bytes: usize, alignment: usize) -> bool {
        alignment <= ALIGNMENT || (alignment <= self.alignment && !self.passes_through(bytes))
    }
}

impl MemoryResource for AlignedAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        if self.passes_through(bytes) {
            return self.upstream.allocate(bytes, stream);
        }
        let Some(shifted) = &self.shifted else {
            return self.upstream.allocate_aligned(bytes, self.alignment, stream);
        };
        let size = self.upstream_size(bytes).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))?;
        let base = self.upstream.allocate(size, stream)?;
        if base % ALIGNMENT != 0 {
            // Shifting from there could run past the block's end.
            let _ = self.upstream.deallocate(base, size, stream);
            return Err(Error::invalid(format!(
                "the {} upstream returned {base:#x}, not {ALIGNMENT}-byte aligned (given back)",
                self.upstream.name()
            )));
        }
        let aligned = base.next_multiple_of(self.alignment);
        shifted.lock(aligned).insert(aligned, (base, size));
        Ok(aligned)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        let Some(shifted) = &self.shifted else {
            return self.upstream.deallocate(ptr, bytes, stream);
        };
        // The records decide, whatever size is given: a shifted block freed with a size below
        // the threshold must not reach the upstream as an interior pointer.
        let (base, size) = {
            let mut records = shifted.lock(ptr);
            let Some((slot, &(base, size))) = records.get_slot(&ptr) else {
                if self.passes_through(bytes) {
                    drop(records);
                    return self.upstream.deallocate(ptr, bytes, stream);
                }
                return Err(Error::invalid(format!("{ptr:#x} is not a live allocation of this aligned adaptor")));
            };
            if self.upstream_size(bytes) != Some(size) {
                let asked = size - (self.alignment - ALIGNMENT);
                return Err(Error::invalid(format!(
                    "{ptr:#x} was allocated for {asked} bytes (rounded to {ALIGNMENT}) by this aligned adaptor; {bytes} were given"
                )));
            }
            records.remove_slot(slot);
            (base, size)
        };
        self.upstream.deallocate(base, size, stream).inspect_err(|_| {
            shifted.lock(ptr).insert(ptr, (base, size));
        })
    }

    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        match self.covers(bytes, alignment) {
            true => self.allocate(bytes, stream),
            false => self.upstream.allocate_aligned(bytes, alignment, stream),
        }
    }

    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        match self.covers(bytes, alignment) {
            true => self.deallocate(ptr, bytes, stream),
            false => self.upstream.deallocate_aligned(ptr, bytes, alignment, stream),
        }
    }

    fn device(&self) -> i32 {
        self.upstream.device()
    }

    fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        visit(&*self.upstream)
    }

    fn name(&self) -> &'static str {
        "aligned"
    }

    fn release(&self) -> Result<usize> {
        self.upstream.release()
    }

    fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        self.upstream.set_release_threshold(bytes)
    }

    fn pool_size(&self) -> Option<usize> {
        self.upstream.pool_size()
    }

    fn pool_free(&self) -> Option<usize> {
        self.upstream.pool_free()
    }

    fn footprint(&self) -> Option<crate::resources::Footprint> {
        self.upstream.footprint()
    }

    fn orders_by_stream(&self) -> bool {
        self.upstream.orders_by_stream()
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "alignment": self.alignment,
            "threshold": self.threshold, "upstream": self.upstream.snapshot(),
        })
    }
}
