//! Aligned (RMM's `aligned_resource_adaptor`): allocations of at least `threshold` bytes get
//! `alignment` (a power of two above 256), by over-allocating upstream and handing out the
//! aligned address inside; smaller ones pass through. The pointer handed out is not the
//! upstream block's, so this adaptor keeps its own records and is never transparent to the
//! pools beneath it: `rmmFree` finds its pointers through the per-pointer registry.

use super::Outer;
use crate::address_map::{address_hash, AddressMap};
use crate::error::{Error, Result};
use crate::mr::{MemoryResource, ALIGNMENT};
use crate::platform::Stream;
use parking_lot::Mutex;
use std::sync::Arc;

const SHARDS: usize = 16;

/// Aligned address -> (upstream address, upstream size).
type Shifted = Mutex<AddressMap<(usize, usize)>>;

pub struct AlignedAdaptor {
    outer: Outer,
    alignment: usize,
    threshold: usize,
    /// Sharded by address.
    shifted: Box<[Shifted]>,
}

impl AlignedAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>, alignment: usize, threshold: usize) -> Result<Arc<Self>> {
        if !alignment.is_power_of_two() || alignment < ALIGNMENT {
            return Err(Error::invalid(format!("alignment {alignment} must be a power of two of at least {ALIGNMENT}")));
        }
        Ok(Outer::build(upstream, |outer| AlignedAdaptor {
            outer,
            alignment,
            threshold,
            shifted: (0..SHARDS).map(|_| Mutex::new(AddressMap::default())).collect(),
        }))
    }

    fn shard(&self, ptr: usize) -> &Shifted {
        &self.shifted[(address_hash(ptr) >> 60) as usize % SHARDS]
    }

    fn passes_through(&self, bytes: usize) -> bool {
        self.alignment == ALIGNMENT || bytes < self.threshold
    }
}

impl MemoryResource for AlignedAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        if self.passes_through(bytes) {
            return self.outer.upstream.allocate(bytes, stream);
        }
        let size =
            bytes.checked_add(self.alignment - ALIGNMENT).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))?;
        let base = self.outer.upstream.allocate(size, stream)?;
        let aligned = base.next_multiple_of(self.alignment);
        self.shard(aligned).lock().insert(aligned, (base, size));
        Ok(aligned)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        if self.passes_through(bytes) {
            return self.outer.upstream.deallocate(ptr, bytes, stream);
        }
        let Some((base, size)) = self.shard(ptr).lock().remove(&ptr) else {
            return Err(Error::invalid(format!("{ptr:#x} is not a live allocation of this aligned adaptor")));
        };
        self.outer.upstream.deallocate(base, size, stream).inspect_err(|_| {
            self.shard(ptr).lock().insert(ptr, (base, size));
        })
    }

    fn device(&self) -> i32 {
        self.outer.upstream.device()
    }

    fn name(&self) -> &'static str {
        "aligned"
    }

    fn release(&self) -> Result<usize> {
        self.outer.upstream.release()
    }

    fn pool_size(&self) -> Option<usize> {
        self.outer.upstream.pool_size()
    }

    fn pool_free(&self) -> Option<usize> {
        self.outer.upstream.pool_free()
    }

    fn suballocation_depth(&self) -> usize {
        self.outer.upstream.suballocation_depth()
    }

    fn outer_via(&self) -> Option<crate::mr::Via> {
        Some(self.outer.via)
    }

    fn has_live_allocations(&self) -> bool {
        self.shifted.iter().any(|shard| !shard.lock().is_empty())
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "alignment": self.alignment,
            "threshold": self.threshold, "upstream": self.outer.upstream.snapshot(),
        })
    }
}
