//! Failure callback (RMM's `failure_callback_resource_adaptor`): when upstream is out of
//! memory, calls the user's callback with the size asked for and retries for as long as it
//! returns true, which is how programs spill or free caches before giving up.

use super::{LiveCount, Outer};
use crate::error::Result;
use crate::mr::{MemoryResource, Via};
use crate::platform::Stream;
use std::sync::Arc;

/// Returns true to have the allocation tried again.
pub type FailureCallback = Box<dyn Fn(usize) -> bool + Send + Sync>;

pub struct FailureCallbackAdaptor {
    outer: Outer,
    live: LiveCount,
    callback: FailureCallback,
}

impl FailureCallbackAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>, callback: FailureCallback) -> Arc<Self> {
        Outer::build(upstream, |outer| FailureCallbackAdaptor { outer, live: LiveCount::default(), callback })
    }
}

impl MemoryResource for FailureCallbackAdaptor {
    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        loop {
            match self.outer.upstream.allocate_via(bytes, stream, via) {
                Err(e) if e.is_out_of_memory() && (self.callback)(bytes) => continue,
                result => return self.live.allocated(result),
            }
        }
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.live.freed(self.outer.upstream.deallocate_via(ptr, bytes, stream, via))
    }

    fn name(&self) -> &'static str {
        "failure_callback"
    }

    fn has_live_allocations(&self) -> bool {
        self.live.any()
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "upstream": self.outer.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(outer);
}
