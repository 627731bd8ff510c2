//! Memory resources: one trait, implemented by the device resources here and, stacked over
//! them, by suballocators and adaptors.

pub mod adaptors;
mod arena;
mod binning;
pub mod caches;
pub mod callback;
mod cuda_async;
mod direct;
mod expandable;
mod fixed_size;
pub mod kinds;
mod pool;
pub mod sleep;
pub mod snapshot;
pub mod stream_ordered;
pub mod streams;
mod system;

pub use arena::ArenaResource;
pub use binning::BinningResource;
pub use callback::{AllocateFn, CallbackResource, DeallocateFn, ReleaseFn};
pub use cuda_async::{handle_type, AsyncResource};
pub use direct::DirectResource;
pub use expandable::{expandable_resource, ExpandableOptions, ExpandableResource, SharedPages};
pub use fixed_size::FixedSizeResource;
pub use pool::PoolResource;
pub use system::SystemResource;

use crate::error::Result;

/// A hash map whose iteration order depends only on the keys it was given, in order (std's
/// hasher with fixed keys rather than a seed drawn per process): where the library walks one to
/// choose what to do (which free chunks a release gives back first), a run replays.
pub(crate) type FixedOrderHashMap<K, V> =
    std::collections::HashMap<K, V, std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher>>;
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
    /// `allocate` at a multiple of `alignment` (a power of two). Every resource gives
    /// `ALIGNMENT`; one that cannot place larger alignments refuses them (`NotSupported`),
    /// and adaptors pass the alignment on to their upstream.
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        if alignment <= ALIGNMENT {
            return self.allocate(bytes, stream);
        }
        Err(alignment_not_supported(self.name(), alignment))
    }
    /// `deallocate` of what `allocate_aligned` returned, with the same `bytes` and `alignment`.
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        let _ = alignment;
        self.deallocate(ptr, bytes, stream)
    }
    /// The device whose memory the resource hands out (pinned host memory: the device whose
    /// context allocates it).
    fn device(&self) -> i32;
    /// A short name for messages and logs, e.g. "cuda", "pool".
    fn name(&self) -> &'static str;
    /// Returns memory the resource holds but does not use to its upstream; the bytes released.
    fn release(&self) -> Result<usize> {
        Ok(0)
    }
    /// From now on, while the resource holds more than `bytes`, memory its frees leave wholly
    /// free goes back upstream (`usize::MAX`: never); resources that keep no pool refuse.
    fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        let _ = bytes;
        Err(crate::error::Error::NotSupported(format!("the {} resource keeps no pool to give back from", self.name())))
    }
    /// Bytes reserved from upstream, for resources that keep a pool.
    fn pool_size(&self) -> Option<usize> {
        None
    }
    /// Bytes reserved from upstream but free, for resources that keep a pool.
    fn pool_free(&self) -> Option<usize> {
        None
    }
    /// What the resource holds from the device and what of it is in use, with their peaks.
    fn footprint(&self) -> Option<Footprint> {
        None
    }
    /// A JSON description of the resource and, nested, its upstream resources.
    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device() })
    }
    /// Calls `visit` with each resource this one takes memory from: its upstream, and a
    /// binning resource's bins.
    fn for_each_upstream(&self, _visit: &mut dyn FnMut(&dyn MemoryResource)) {}
    /// Whether every block `allocate` returns is a whole allocation of the driver's own
    /// (`cuMemAlloc`, `cuMemAllocManaged`, `cuMemHostAlloc`): the only memory compute-sanitizer
    /// takes as the heap of a suballocator. It refuses part of an allocation, blocks of the
    /// driver's stream-ordered pools and mapped (virtual memory) ranges, and counts the refusal
    /// as an error of the program (measured: `SANITIZER_DIAGNOSE=heaps scripts/gpu-sanitizer.sh`).
    fn hands_out_driver_allocations(&self) -> bool {
        false
    }
    /// Whether the resource orders its memory by the stream it is given (a pool's free lists,
    /// the driver's stream-ordered allocations, an adaptor that prefetches on it): only then is
    /// a stream handle rmm-rs does not know asked about (`platform::streams`). The resources
    /// that free at once (cuda, managed, pinned_host, system) and callback resources (which
    /// pass the stream to their functions untouched) say no; adaptors say what their upstream
    /// says.
    fn orders_by_stream(&self) -> bool {
        true
    }
}

/// Bytes a resource holds from the device (reserved) and hands out (live), each with its peak
/// since the resource was made, and its largest free block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes held from the device now: a pool's chunks, mapped pages, or what a direct resource
    /// handed out.
    pub reserved: usize,
    /// The most `reserved` has been.
    pub peak_reserved: usize,
    /// Bytes handed out and not yet freed (block sizes, rounded up as handed out).
    pub live: usize,
    /// Exact for a resource used on one stream; with several streams, the sum of each
    /// stream's peak, which bounds the true peak from above.
    pub peak_live: usize,
    /// Bytes of the largest block one allocation could get without the resource growing (for a
    /// direct resource, 0: it keeps nothing free).
    pub largest_free_block: usize,
}

impl Footprint {
    /// The share of reserved memory not in use: 1 - live / reserved; None while nothing is in
    /// use, where the figure would say nothing about how memory is laid out.
    pub fn fragmentation(&self) -> Option<f64> {
        (self.live > 0 && self.reserved > 0).then(|| 1.0 - self.live as f64 / self.reserved as f64)
    }

    /// The figures of several resources that hold memory side by side (binning's bins).
    pub fn sum(parts: impl IntoIterator<Item = Footprint>) -> Option<Footprint> {
        parts.into_iter().fold(None, |total: Option<Footprint>, part| {
            let total = total.unwrap_or_default();
            Some(Footprint {
                reserved: total.reserved + part.reserved,
                peak_reserved: total.peak_reserved + part.peak_reserved,
                live: total.live + part.live,
                peak_live: total.peak_live + part.peak_live,
                largest_free_block: total.largest_free_block.max(part.largest_free_block),
            })
        })
    }
}

/// Bytes in use and their peak, for resources that hand out device memory one call at a time.
#[derive(Default)]
pub struct LiveBytes {
    current: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

impl LiveBytes {
    /// Counts `bytes` handed out, raising the peak when the total passes it.
    pub fn add(&self, bytes: usize) {
        use std::sync::atomic::Ordering::Relaxed;
        let now = self.current.fetch_add(bytes, Relaxed) + bytes;
        self.peak.fetch_max(now, Relaxed);
    }

    /// Counts `bytes` given back.
    pub fn remove(&self, bytes: usize) {
        self.current.fetch_sub(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every byte handed out is reserved from the device for it.
    pub fn footprint(&self) -> Footprint {
        use std::sync::atomic::Ordering::Relaxed;
        let (live, peak) = (self.current.load(Relaxed), self.peak.load(Relaxed));
        Footprint { reserved: live, peak_reserved: peak, live, peak_live: peak, largest_free_block: 0 }
    }
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

/// A resource asked for an alignment past what it places (see `allocate_aligned`).
#[cold]
pub(crate) fn alignment_not_supported(resource: &str, alignment: usize) -> crate::error::Error {
    crate::error::Error::NotSupported(format!(
        "the {resource} resource aligns to {ALIGNMENT} bytes, not {alignment} (an aligned adaptor, a pool or an expandable resource can)"
    ))
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
