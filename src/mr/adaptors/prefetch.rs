//! Prefetch (RMM's `prefetch_resource_adaptor`): migrates each new allocation to the device in
//! the order of its stream, so managed memory is resident before the first kernel touches it.
//! Memory that is not managed needs no migration; the driver refuses it, and after the first
//! refusal the adaptor stops asking (a driver call that fails costs more than a pooled
//! allocation).

use super::{LiveCount, Outer};
use crate::error::{ErrorKind, Result};
use crate::mr::{MemoryResource, Via};
use crate::platform::{backend, Stream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct PrefetchAdaptor {
    outer: Outer,
    live: LiveCount,
    /// The upstream handed out memory that cannot be prefetched.
    not_managed: AtomicBool,
}

impl PrefetchAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>) -> Arc<Self> {
        Outer::build(upstream, |outer| PrefetchAdaptor { outer, live: LiveCount::default(), not_managed: AtomicBool::new(false) })
    }
}

impl MemoryResource for PrefetchAdaptor {
    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        let ptr = self.outer.upstream.allocate_via(bytes, stream, via)?;
        if self.not_managed.load(Ordering::Relaxed) {
            return self.live.allocated(Ok(ptr));
        }
        match backend()?.prefetch(self.device(), ptr, bytes, stream) {
            Ok(()) => self.live.allocated(Ok(ptr)),
            Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument(_) | ErrorKind::NotSupported(_)) => {
                log::debug!("prefetch adaptor: its upstream's memory cannot be prefetched; not asking again");
                self.not_managed.store(true, Ordering::Relaxed);
                self.live.allocated(Ok(ptr))
            }
            Err(e) => {
                let _ = self.outer.upstream.deallocate_via(ptr, bytes, stream, via);
                Err(e)
            }
        }
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.live.freed(self.outer.upstream.deallocate_via(ptr, bytes, stream, via))
    }

    fn name(&self) -> &'static str {
        "prefetch"
    }

    fn has_live_allocations(&self) -> bool {
        self.live.any()
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "upstream": self.outer.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(outer);
}
