//! Limiting (RMM's `limiting_resource_adaptor`): refuses allocations that would take the
//! bytes it has handed out past a limit. Sizes count rounded up to the 256-byte alignment, as
//! RMM counts them; one atomic compare-exchange per allocation, so the count never goes past
//! the limit, not even for a moment.

use super::Outer;
use crate::error::{Error, Result};
use crate::mr::{MemoryResource, Via, ALIGNMENT};
use crate::platform::Stream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

pub struct LimitingAdaptor {
    outer: Outer,
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
        Ok(Outer::build(upstream, |outer| LimitingAdaptor { outer, limit, allocated: AtomicUsize::new(0) }))
    }

    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

impl MemoryResource for LimitingAdaptor {
    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        let size = counted(bytes);
        let within = |before: usize| before.checked_add(size).filter(|&after| after <= self.limit);
        if let Err(before) = self.allocated.fetch_update(Ordering::Relaxed, Ordering::Relaxed, within) {
            return Err(Error::out_of_memory(
                bytes,
                format!("the limiting adaptor's limit of {} bytes would be exceeded ({before} bytes allocated)", self.limit),
            ));
        }
        self.outer.upstream.allocate_via(bytes, stream, via).inspect_err(|_| {
            self.allocated.fetch_sub(size, Ordering::Relaxed);
        })
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.outer.upstream.deallocate_via(ptr, bytes, stream, via)?;
        self.allocated.fetch_sub(counted(bytes), Ordering::Relaxed);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "limiting"
    }

    fn has_live_allocations(&self) -> bool {
        self.allocated_bytes() > 0
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "limit": self.limit,
            "allocated_bytes": self.allocated_bytes(), "upstream": self.outer.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(outer);
}
