//! Aligned (RMM's `aligned_resource_adaptor`): allocations of at least `threshold` bytes get
//! `alignment` (a power of two above 256), by over-allocating upstream and handing out the
//! aligned address inside; smaller ones pass through. The pointer handed out is not the
//! upstream block's, so this adaptor keeps its own records and is never transparent to the
//! pools beneath it: `rmmFree` finds its pointers through the per-pointer registry. The
//! offsets are `BlockRecords`, sharded by address window as the ownership records are.

use super::block_records::BlockRecords;
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use std::sync::Arc;

/// Every allocation over-allocates by the alignment, so a larger one would only make every
/// allocation fail for lack of memory; no device maps memory at a coarser granularity.
const MAX_ALIGNMENT: usize = 1 << 30;

pub struct AlignedAdaptor {
    upstream: Upstream,
    alignment: usize,
    threshold: usize,
    /// Aligned address -> (upstream address, upstream size).
    shifted: BlockRecords<(usize, usize)>,
}

impl AlignedAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>, alignment: usize, threshold: usize) -> Result<Arc<Self>> {
        if !alignment.is_power_of_two() || !(ALIGNMENT..=MAX_ALIGNMENT).contains(&alignment) {
            return Err(Error::invalid(format!(
                "alignment {alignment} must be a power of two from {ALIGNMENT} bytes to {}",
                crate::units::exact(MAX_ALIGNMENT)
            )));
        }
        Ok(Arc::new(AlignedAdaptor { upstream: Upstream::new(upstream), alignment, threshold, shifted: BlockRecords::new() }))
    }

    fn passes_through(&self, bytes: usize) -> bool {
        self.alignment == ALIGNMENT || bytes < self.threshold
    }
}

impl MemoryResource for AlignedAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        if self.passes_through(bytes) {
            return self.upstream.allocate(bytes, stream);
        }
        let size =
            bytes.checked_add(self.alignment - ALIGNMENT).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))?;
        let base = self.upstream.allocate(size, stream)?;
        let aligned = base.next_multiple_of(self.alignment);
        self.shifted.lock(aligned).insert(aligned, (base, size));
        Ok(aligned)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        if self.passes_through(bytes) {
            return self.upstream.deallocate(ptr, bytes, stream);
        }
        let Some((base, size)) = self.shifted.lock(ptr).remove(&ptr) else {
            return Err(Error::invalid(format!("{ptr:#x} is not a live allocation of this aligned adaptor")));
        };
        self.upstream.deallocate(base, size, stream).inspect_err(|_| {
            self.shifted.lock(ptr).insert(ptr, (base, size));
        })
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

    fn pool_size(&self) -> Option<usize> {
        self.upstream.pool_size()
    }

    fn pool_free(&self) -> Option<usize> {
        self.upstream.pool_free()
    }

    fn footprint(&self) -> Option<crate::resources::Footprint> {
        self.upstream.footprint()
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "alignment": self.alignment,
            "threshold": self.threshold, "upstream": self.upstream.snapshot(),
        })
    }
}
