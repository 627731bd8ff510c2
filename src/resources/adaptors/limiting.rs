//! Limiting (RMM's `limiting_resource_adaptor`): refuses allocations that would take the
//! bytes it has handed out past a limit. Sizes count rounded up to the 256-byte alignment, as
//! RMM counts them; one atomic compare-exchange per allocation, so the count never goes past
//! the limit, not even for a moment.

use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use crate::units;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub struct LimitingAdaptor {
    upstream: Upstream,
    limit: usize,
    allocated: AtomicUsize,
}

fn counted(bytes: usize) -> usize {
    bytes.saturating_add(ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT
}

impl LimitingAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>, limit: usize) -> Result<Arc<Self>> {
        if limit == 0 {
            return Err(Error::invalid("a limit of 0 bytes would refuse every allocation"));
        }
        Ok(Arc::new(LimitingAdaptor { upstream: Upstream::new(upstream), limit, allocated: AtomicUsize::new(0) }))
    }

    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl MemoryResource for LimitingAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        let size = counted(bytes);
        let within = |before: usize| before.checked_add(size).filter(|&after| after <= self.limit);
        if let Err(before) = self.allocated.fetch_update(Ordering::Relaxed, Ordering::Relaxed, within) {
            return Err(Error::out_of_memory(
                bytes,
                format!(
                    "the limiting adaptor's limit of {} would be exceeded ({} allocated)",
                    units::exact(self.limit),
                    units::exact(before)
                ),
            ));
        }
        self.upstream.allocate(bytes, stream).inspect_err(|_| {
            self.allocated.fetch_sub(size, Ordering::Relaxed);
        })
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate(ptr, bytes, stream)?;
        self.allocated.fetch_sub(counted(bytes), Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "limiting"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "limit": self.limit,
            "allocated_bytes": self.allocated_bytes(), "upstream": self.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
