//! Failure callback (RMM's `failure_callback_resource_adaptor`): when upstream is out of
//! memory, calls the user's callback with the size asked for and retries for as long as it
//! returns true, which is how programs spill or free caches before giving up.

use super::Upstream;
use crate::error::Result;
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use std::sync::Arc;

/// Returns true to have the allocation tried again.
pub type FailureCallback = Box<dyn Fn(usize) -> bool + Send + Sync>;

/// Calls a callback when the upstream is out of memory and retries while it asks to (see the
/// module comment).
pub struct FailureCallbackAdaptor {
    upstream: Upstream,
    callback: FailureCallback,
}

impl FailureCallbackAdaptor {
    /// An adaptor over `upstream` that calls `callback` with the bytes asked for after each
    /// out-of-memory failure; other errors pass through without a call.
    pub fn new(upstream: Arc<dyn MemoryResource>, callback: FailureCallback) -> Arc<Self> {
        Arc::new(FailureCallbackAdaptor { upstream: Upstream::new(upstream), callback })
    }
}

impl MemoryResource for FailureCallbackAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        loop {
            match self.upstream.allocate_aligned(bytes, alignment, stream) {
                Err(e) if e.is_out_of_memory() && (self.callback)(bytes) => continue,
                result => return result,
            }
        }
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate_aligned(ptr, bytes, alignment, stream)
    }

    fn name(&self) -> &'static str {
        "failure_callback"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "upstream": self.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
