//! Memory resources: one trait, implemented by the device resources here and, stacked over
//! them, by suballocators and adaptors.

pub mod adaptors;
mod arena;
mod binning;
pub mod caches;
mod cuda_async;
mod direct;
mod expandable;
mod fixed_size;
mod pool;
pub mod snapshot;
pub mod stream_ordered;

pub use arena::ArenaResource;
pub use binning::BinningResource;
pub use cuda_async::AsyncResource;
pub use direct::DirectResource;
pub use expandable::expandable_resource;
pub use fixed_size::FixedSizeResource;
pub use pool::PoolResource;

use crate::error::Result;
use crate::platform::Stream;

/// Every address a resource hands out is aligned to at least this many bytes.
pub const ALIGNMENT: usize = 256;

/// A source of memory. Implementations are thread-safe; `allocate` never receives 0 bytes
/// (callers answer a zero-byte request with NULL before reaching a resource), and
/// `deallocate` receives exactly the size and a pointer that `allocate` returned.
pub trait MemoryResource: std::any::Any + Send + Sync + 'static {
    /// Returns the address of `bytes` bytes usable in the order of `stream`.
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize>;
    /// Returns `ptr` to the resource once work already enqueued on `stream` is done with it.
    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()>;
    /// The device whose memory the resource hands out (pinned host memory: the device whose
    /// context allocates it).
    fn device(&self) -> i32;
    /// A short name for messages and logs, e.g. "cuda", "pool".
    fn name(&self) -> &'static str;
    /// Returns memory the resource holds but does not use to its upstream; the bytes released.
    fn release(&self) -> Result<usize> {
        Ok(0)
    }
    /// Bytes reserved from upstream, for resources that keep a pool.
    fn pool_size(&self) -> Option<usize> {
        None
    }
    /// Bytes reserved from upstream but free, for resources that keep a pool.
    fn pool_free(&self) -> Option<usize> {
        None
    }
    /// A JSON description of the resource and, nested, its upstream resources.
    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device() })
    }
    /// Calls `visit` with each resource this one takes memory from: its upstream, and a
    /// binning resource's bins.
    fn for_each_upstream(&self, _visit: &mut dyn FnMut(&dyn MemoryResource)) {}
}

/// Whether a call into `from` can reach `target` (`from` itself included). A bin for which this holds would make
/// a binning resource its own upstream, and every allocation routed to it would recurse until
/// the thread's stack overflows.
pub fn reaches(from: &dyn MemoryResource, target: *const ()) -> bool {
    if std::ptr::addr_eq(from as *const dyn MemoryResource, target) {
        return true;
    }
    let mut found = false;
    from.for_each_upstream(&mut |upstream| found = found || reaches(upstream, target));
    found
}

/// Rejects a zero-byte request that reached a resource directly.
#[inline(always)]
pub(crate) fn require_nonzero(bytes: usize, resource: &'static str) -> Result<()> {
    if bytes == 0 {
        return Err(zero_bytes(resource));
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn zero_bytes(resource: &'static str) -> crate::error::Error {
    crate::error::Error::invalid(format!("{resource} resource asked for 0 bytes"))
}
