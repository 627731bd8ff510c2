//! Prefetch (RMM's `prefetch_resource_adaptor`): migrates each new allocation to the device in
//! the order of its stream, so managed memory is resident before the first kernel touches it.
//! Memory that is not managed needs no migration; the driver refuses it, and after the first
//! refusal the adaptor stops asking (a driver call that fails costs more than a pooled
//! allocation). A stream handle rmm-rs does not know (`platform::streams`) over an upstream that
//! does not order by stream (managed memory) is never handed to the driver: such an allocation
//! is prefetched on the calling thread's per-thread default stream instead. The prefetch is a
//! hint, so the memory is correct either way; only its overlap with the work on the stream
//! differs.

use super::Upstream;
use crate::error::{ErrorKind, Result};
use crate::platform::{backend, streams, Stream};
use crate::resources::{MemoryResource, ALIGNMENT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Prefetches each allocation to its device in the order of its stream (see the module
/// comment).
pub struct PrefetchAdaptor {
    upstream: Upstream,
    /// The upstream handed out memory that cannot be prefetched.
    not_managed: AtomicBool,
    /// The upstream orders its memory by stream, so it asked about (or refused) a stream handle
    /// rmm-rs does not know before the prefetch gets it.
    upstream_orders: bool,
}

impl PrefetchAdaptor {
    /// An adaptor over `upstream`, which should hand out managed memory (other memory is passed
    /// through once the driver refuses to prefetch it).
    pub fn new(upstream: Arc<dyn MemoryResource>) -> Arc<Self> {
        let upstream_orders = upstream.orders_by_stream();
        Arc::new(PrefetchAdaptor { upstream: Upstream::new(upstream), not_managed: AtomicBool::new(false), upstream_orders })
    }
}

impl MemoryResource for PrefetchAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        let ptr = self.upstream.allocate_aligned(bytes, alignment, stream)?;
        if self.not_managed.load(Ordering::Relaxed) {
            return Ok(ptr);
        }
        let on = match self.upstream_orders || streams::is_known(stream) {
            true => stream,
            false => Stream::PER_THREAD,
        };
        match backend()?.prefetch(self.device(), ptr, bytes, on) {
            Ok(()) => Ok(ptr),
            Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument(_) | ErrorKind::NotSupported(_)) => {
                log::debug!("prefetch adaptor: its upstream's memory cannot be prefetched; not asking again");
                self.not_managed.store(true, Ordering::Relaxed);
                Ok(ptr)
            }
            Err(e) => {
                let _ = self.upstream.deallocate_aligned(ptr, bytes, alignment, stream);
                Err(e)
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
        "prefetch"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "upstream": self.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
