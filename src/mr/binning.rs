//! Size-routed allocation (RMM's `binning_memory_resource`): each request goes to the
//! smallest bin that holds it, larger ones to the upstream resource.

use super::fixed_size::FixedSizeResource;
use super::via::{self, Via};
use super::MemoryResource;
use crate::error::{Error, Result};
use crate::platform::Stream;
use parking_lot::Mutex;
use arc_swap::ArcSwap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

type Bins = Vec<(usize, Arc<dyn MemoryResource>)>;

pub struct BinningResource {
    upstream: Arc<dyn MemoryResource>,
    /// Marks the blocks it hands out (in its bins and in a pool upstream) as its own, so a
    /// block allocated from that pool directly is refused when freed through the binning
    /// resource, and the other way round. Not registered: frees of its blocks that name no
    /// resource go straight to where they lie, since binning keeps no state of its own.
    own_via: Via,
    /// (largest size served, resource), sorted by size; replaced whole by `add_bin`, read
    /// without a lock (threads routing at once would contend on one).
    bins: ArcSwap<Bins>,
    /// Serializes `add_bin`.
    adding: Mutex<()>,
    /// Whether the upstream and every bin track their own allocations.
    tracks: AtomicBool,
}

impl BinningResource {
    /// Fixed-size bins of 2^min ..= 2^max bytes over `upstream` (min > max: no bins yet).
    pub fn new(upstream: Arc<dyn MemoryResource>, min_size_exponent: i8, max_size_exponent: i8) -> Result<Self> {
        let tracks = AtomicBool::new(upstream.tracks_allocations());
        let resource = BinningResource { upstream, own_via: via::reserve(), bins: ArcSwap::from_pointee(Vec::new()), adding: Mutex::new(()), tracks };
        if min_size_exponent <= max_size_exponent {
            if min_size_exponent < 0 || max_size_exponent > 40 {
                return Err(Error::invalid(format!("bin exponents {min_size_exponent}..={max_size_exponent} must lie in 0..=40")));
            }
            for exponent in min_size_exponent..=max_size_exponent {
                resource.add_bin(1usize << exponent, None)?;
            }
        }
        Ok(resource)
    }

    /// Serves requests up to `allocation_size` (that are not served by a smaller bin) from
    /// `bin`, or from a new fixed-size resource of that size over the upstream.
    pub fn add_bin(&self, allocation_size: usize, bin: Option<Arc<dyn MemoryResource>>) -> Result<()> {
        if allocation_size == 0 {
            return Err(Error::invalid("a bin of 0 bytes"));
        }
        let bin = match bin {
            Some(bin) => {
                if bin.device() != self.upstream.device() {
                    return Err(Error::invalid(format!("a bin of device {} in a binning resource of device {}", bin.device(), self.upstream.device())));
                }
                bin
            }
            None => Arc::new(FixedSizeResource::new(self.upstream.clone(), allocation_size, 0)?) as Arc<dyn MemoryResource>,
        };
        let _adding = self.adding.lock();
        let mut updated = Bins::clone(&self.bins.load());
        match updated.binary_search_by_key(&allocation_size, |(size, _)| *size) {
            Ok(at) => updated[at].1 = bin,
            Err(at) => updated.insert(at, (allocation_size, bin)),
        }
        let tracks = self.upstream.tracks_allocations() && updated.iter().all(|(_, bin)| bin.tracks_allocations());
        self.bins.store(Arc::new(updated));
        self.tracks.store(tracks, Ordering::Release);
        Ok(())
    }

    /// Runs `f` on the resource that serves `bytes`.
    fn route<T>(&self, bytes: usize, f: impl FnOnce(&dyn MemoryResource) -> T) -> T {
        let bins = self.bins.load();
        let at = bins.partition_point(|(size, _)| *size < bytes);
        f(bins.get(at).map_or(&*self.upstream, |(_, bin)| &**bin))
    }

    pub fn bin_sizes(&self) -> Vec<usize> {
        self.bins.load().iter().map(|(size, _)| *size).collect()
    }
}

impl MemoryResource for BinningResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_via(bytes, stream, self.own_via)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_via(ptr, bytes, stream, self.own_via)
    }

    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        self.route(bytes, |resource| resource.allocate_via(bytes, stream, via))
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.route(bytes, |resource| resource.deallocate_via(ptr, bytes, stream, via))
    }

    fn snapshot(&self) -> serde_json::Value {
        let bins: Vec<_> = self.bins.load().iter().map(|(size, bin)| serde_json::json!({ "allocation_size": size, "bin": bin.snapshot() })).collect();
        serde_json::json!({ "resource": self.name(), "device": self.device(), "bins": bins, "upstream": self.upstream.snapshot() })
    }

    fn device(&self) -> i32 {
        self.upstream.device()
    }

    fn name(&self) -> &'static str {
        "binning"
    }

    fn pool_free(&self) -> Option<usize> {
        let bins = self.bins.load();
        let free: Vec<Option<usize>> = bins.iter().map(|(_, bin)| bin.pool_free()).chain([self.upstream.pool_free()]).collect();
        free.iter().any(Option::is_some).then(|| free.iter().flatten().sum())
    }

    fn tracks_allocations(&self) -> bool {
        self.tracks.load(Ordering::Acquire)
    }

    fn suballocation_depth(&self) -> usize {
        self.bins.load().iter().map(|(_, bin)| bin.suballocation_depth()).fold(self.upstream.suballocation_depth(), usize::max)
    }

    fn release(&self) -> Result<usize> {
        let bins = self.bins.load_full();
        bins.iter().try_fold(0, |total, (_, bin)| Ok(total + bin.release()?))
    }
}
