//! Size-routed allocation (RMM's `binning_memory_resource`): each request goes to the
//! smallest bin that holds it, larger ones to the upstream resource.

use super::fixed_size::FixedSizeResource;
use super::suballoc::fixed_blocks::FixedBlocks;
use super::suballoc::stream_ordered::Core;
use super::via::{self, Via};
use super::MemoryResource;
use crate::error::{Error, Result};
use crate::platform::published::Published;
use crate::platform::Stream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The bins, sorted by the largest size each serves, and where to start looking for a
/// request's bin: `first[k]` is the first bin larger than 2^(k-1) bytes, so a request of
/// (2^(k-1), 2^k] bytes is served by it or a bin shortly after (with power-of-two bins, by it).
/// `direct[k]` holds that first bin itself, so the usual request reaches its bin with one
/// load less (every allocation and free routes here).
#[derive(Clone)]
struct Bins {
    bins: Vec<(usize, Bin)>,
    first: [u32; usize::BITS as usize + 1],
    direct: [Option<(usize, Bin)>; usize::BITS as usize + 1],
}

/// A bin: a fixed-size resource of the binning resource's own (its stream-ordered core called
/// directly, so the fast path inlines here), or any resource of the caller's.
#[derive(Clone)]
enum Bin {
    Own { resource: Arc<FixedSizeResource>, core: Arc<Core<FixedBlocks>> },
    Callers(Arc<dyn MemoryResource>),
}

impl Bin {
    fn own(resource: FixedSizeResource) -> Self {
        let core = resource.core();
        Bin::Own { resource: Arc::new(resource), core }
    }

    fn resource(&self) -> &dyn MemoryResource {
        match self {
            Bin::Own { resource, .. } => &**resource,
            Bin::Callers(bin) => &**bin,
        }
    }
}

impl Bins {
    fn new(bins: Vec<(usize, Bin)>) -> Self {
        let mut first = [0; usize::BITS as usize + 1];
        for (k, start) in first.iter_mut().enumerate() {
            let below = if k == 0 { 0 } else { 1usize << (k - 1) };
            *start = bins.partition_point(|(size, _)| *size <= below) as u32;
        }
        let direct = std::array::from_fn(|k| bins.get(first[k] as usize).cloned());
        Bins { bins, first, direct }
    }

    /// k such that `bytes` lies in (2^(k-1), 2^k] (0 for 0 and 1 bytes).
    #[inline(always)]
    fn class_of(bytes: usize) -> usize {
        (usize::BITS - bytes.saturating_sub(1).leading_zeros()) as usize
    }

    /// The position of the bin that serves `bytes`, if any.
    fn serving(&self, bytes: usize) -> Option<usize> {
        let mut at = self.first[Self::class_of(bytes)] as usize;
        while at < self.bins.len() && self.bins[at].0 < bytes {
            at += 1;
        }
        (at < self.bins.len()).then_some(at)
    }

    /// The bin that serves `bytes`, if any.
    #[inline(always)]
    fn bin_for(&self, bytes: usize) -> Option<&Bin> {
        match &self.direct[Self::class_of(bytes)] {
            Some((size, bin)) if bytes <= *size => Some(bin),
            _ => self.serving(bytes).map(|at| &self.bins[at].1),
        }
    }
}

pub struct BinningResource {
    upstream: Arc<dyn MemoryResource>,
    /// Marks the blocks it hands out (in its bins and in a pool upstream) as its own, so a
    /// block allocated from that pool directly is refused when freed through the binning
    /// resource, and the other way round. Not registered: frees of its blocks that name no
    /// resource go straight to where they lie, since binning keeps no state of its own.
    own_via: Via,
    /// (largest size served, resource), sorted by size; replaced whole by `add_bin`, read
    /// with one load (threads routing at once must not contend on a lock or a count).
    bins: Published<Bins>,
    /// Whether the upstream and every bin track their own allocations.
    tracks: AtomicBool,
}

impl BinningResource {
    /// Fixed-size bins of 2^min ..= 2^max bytes over `upstream` (min > max: no bins yet).
    pub fn new(upstream: Arc<dyn MemoryResource>, min_size_exponent: i8, max_size_exponent: i8) -> Result<Self> {
        let tracks = AtomicBool::new(upstream.tracks_allocations());
        let resource = BinningResource { upstream, own_via: via::reserve(), bins: Published::new(Bins::new(Vec::new())), tracks };
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
                    return Err(Error::invalid(format!(
                        "a bin of device {} in a binning resource of device {}",
                        bin.device(),
                        self.upstream.device()
                    )));
                }
                Bin::Callers(bin)
            }
            None => Bin::own(FixedSizeResource::new(self.upstream.clone(), allocation_size, 0)?),
        };
        self.bins.update(|bins| {
            let mut updated = bins.bins.clone();
            match updated.binary_search_by_key(&allocation_size, |(size, _)| *size) {
                Ok(at) => updated[at].1 = bin,
                Err(at) => updated.insert(at, (allocation_size, bin)),
            }
            let tracks = self.upstream.tracks_allocations() && updated.iter().all(|(_, bin)| bin.resource().tracks_allocations());
            self.tracks.store(tracks, Ordering::Release);
            (Bins::new(updated), ())
        });
        Ok(())
    }

    /// The bin that serves `bytes` (None: the upstream does).
    #[inline(always)]
    fn route(&self, bytes: usize) -> Option<&Bin> {
        self.bins.get().bin_for(bytes)
    }

    pub fn bin_sizes(&self) -> Vec<usize> {
        self.bins.get().bins.iter().map(|(size, _)| *size).collect()
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
        match self.route(bytes) {
            Some(Bin::Own { core, .. }) => core.allocate_via(bytes, stream, via),
            Some(Bin::Callers(bin)) => bin.allocate_via(bytes, stream, via),
            None => self.upstream.allocate_via(bytes, stream, via),
        }
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        match self.route(bytes) {
            Some(Bin::Own { core, .. }) => core.deallocate_via(ptr, Some(bytes), stream, Some(via)),
            Some(Bin::Callers(bin)) => bin.deallocate_via(ptr, bytes, stream, via),
            None => self.upstream.deallocate_via(ptr, bytes, stream, via),
        }
    }

    fn snapshot(&self) -> serde_json::Value {
        let bins: Vec<_> = self
            .bins
            .get()
            .bins
            .iter()
            .map(|(size, bin)| serde_json::json!({ "allocation_size": size, "bin": bin.resource().snapshot() }))
            .collect();
        serde_json::json!({ "resource": self.name(), "device": self.device(), "bins": bins, "upstream": self.upstream.snapshot() })
    }

    fn device(&self) -> i32 {
        self.upstream.device()
    }

    fn name(&self) -> &'static str {
        "binning"
    }

    fn pool_free(&self) -> Option<usize> {
        let bins = &self.bins.get().bins;
        let free: Vec<Option<usize>> = bins.iter().map(|(_, bin)| bin.resource().pool_free()).chain([self.upstream.pool_free()]).collect();
        free.iter().any(Option::is_some).then(|| free.iter().flatten().sum())
    }

    fn tracks_allocations(&self) -> bool {
        self.tracks.load(Ordering::Acquire)
    }

    fn suballocation_depth(&self) -> usize {
        self.bins
            .get()
            .bins
            .iter()
            .map(|(_, bin)| bin.resource().suballocation_depth())
            .fold(self.upstream.suballocation_depth(), usize::max)
    }

    fn release(&self) -> Result<usize> {
        self.bins.get().bins.iter().try_fold(0, |total, (_, bin)| Ok(total + bin.resource().release()?))
    }
}

#[cfg(test)]
mod tests {
    use super::{Bin, Bins};
    use crate::mr::MemoryResource;
    use crate::platform::Stream;
    use std::sync::Arc;

    struct Unused;
    impl MemoryResource for Unused {
        fn allocate(&self, _: usize, _: Stream) -> crate::Result<usize> {
            unreachable!()
        }
        fn deallocate(&self, _: usize, _: usize, _: Stream) -> crate::Result<()> {
            unreachable!()
        }
        fn device(&self) -> i32 {
            0
        }
        fn name(&self) -> &'static str {
            "unused"
        }
    }

    /// The lookup table picks the smallest bin that holds the request, for bins of any size.
    #[test]
    fn serving_is_the_smallest_bin_that_holds_the_request() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..300 {
            let mut sizes: Vec<usize> = (0..next() % 12).map(|_| 1 + (next() % (1 << (next() % 40))) as usize).collect();
            sizes.sort_unstable();
            sizes.dedup();
            // A resource of its own per bin, so the bin `bin_for` answers can be told apart.
            let resources: Vec<Arc<dyn MemoryResource>> = sizes.iter().map(|_| Arc::new(Unused) as Arc<dyn MemoryResource>).collect();
            let bins = Bins::new(sizes.iter().zip(&resources).map(|(&size, resource)| (size, Bin::Callers(resource.clone()))).collect());
            for bytes in (0..300).map(|_| (next() % (1 << (next() % 42))) as usize).chain([0, 1, usize::MAX]) {
                let expected = sizes.iter().position(|&size| size >= bytes);
                assert_eq!(bins.serving(bytes), expected, "bins {sizes:?}, request {bytes}");
                let found = bins.bin_for(bytes).map(|bin| {
                    let found = bin.resource() as *const dyn MemoryResource as *const ();
                    resources.iter().position(|r| Arc::as_ptr(r) as *const () == found).unwrap()
                });
                assert_eq!(found, expected, "bin_for: bins {sizes:?}, request {bytes}");
            }
        }
    }
}
