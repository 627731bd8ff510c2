//! Size-routed allocation (RMM's `binning_memory_resource`): each request goes to the
//! smallest bin that holds it, larger ones to the upstream resource.
//!
//! A free goes back to whatever served the block, even after `add_bin` changed which bin
//! serves its size: the binning resource's own fixed-size bins recognize their blocks by
//! address. Blocks it handed to the upstream or to a caller's bin are routed by their size
//! while the bins are those it was created with; once `add_bin` changes them, such blocks are
//! recorded (what was not recorded was routed by the bins it was created with).

use super::fixed_size::FixedSizeResource;
use super::stream_ordered::Core;
use super::{reaches, MemoryResource};
use crate::error::{Error, Result};
use crate::platform::{streams, Stream};
use crate::sync::biased_lock::BiasedLock;
use crate::sync::published::Published;
use rmm_suballoc::address_map::shard_of;
use rmm_suballoc::fixed_blocks::FixedBlocks;
use rmm_suballoc::tlsf::AddressMap;
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
    /// Own bins that `add_bin` replaced: blocks they handed out still return to them.
    replaced: Vec<Arc<Core<FixedBlocks>>>,
}

/// A bin: a fixed-size resource of the binning resource's own (its stream-ordered core called
/// directly, so the fast path inlines here), or any resource of the caller's, known by its
/// number among the targets of blocks the binning resource records.
#[derive(Clone)]
enum Bin {
    Own { resource: Arc<FixedSizeResource>, core: Arc<Core<FixedBlocks>> },
    Callers { resource: Arc<dyn MemoryResource>, target: u32 },
}

impl Bin {
    fn own(resource: FixedSizeResource) -> Self {
        let core = resource.core();
        Bin::Own { resource: Arc::new(resource), core }
    }

    fn resource(&self) -> &dyn MemoryResource {
        match self {
            Bin::Own { resource, .. } => &**resource,
            Bin::Callers { resource, .. } => &**resource,
        }
    }
}

impl Bins {
    fn new(bins: Vec<(usize, Bin)>, replaced: Vec<Arc<Core<FixedBlocks>>>) -> Self {
        let mut first = [0; usize::BITS as usize + 1];
        for (k, start) in first.iter_mut().enumerate() {
            let below = if k == 0 { 0 } else { 1usize << (k - 1) };
            *start = bins.partition_point(|(size, _)| *size <= below) as u32;
        }
        let direct = std::array::from_fn(|k| bins.get(first[k] as usize).cloned());
        Bins { bins, first, direct, replaced }
    }

    /// Every own bin, current or replaced.
    fn own_cores(&self) -> impl Iterator<Item = &Arc<Core<FixedBlocks>>> {
        let current = self.bins.iter().filter_map(|(_, bin)| match bin {
            Bin::Own { core, .. } => Some(core),
            Bin::Callers { .. } => None,
        });
        current.chain(&self.replaced)
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

/// The upstream's number among the targets.
const UPSTREAM: u32 = 0;
const RECORD_SHARDS: usize = 16;

/// The binning resource (see the module comment): routes each request by size to a bin or
/// to the upstream, and each free back to whatever served the block.
pub struct BinningResource {
    upstream: Arc<dyn MemoryResource>,
    /// (largest size served, resource), sorted by size; replaced whole by `add_bin`, read
    /// with one load (threads routing at once must not contend on a lock or a count).
    bins: Published<Bins>,
    /// Where blocks not served by an own bin went, by number: the upstream first, then every
    /// caller's bin ever added.
    targets: Published<Vec<Arc<dyn MemoryResource>>>,
    /// The bins it was created with: they routed every block that `elsewhere` lacks.
    created_with: Bins,
    /// Set (before the new bins are published) by the first `add_bin` after creation: from
    /// then on blocks not served by an own bin are recorded in `elsewhere`.
    recording: AtomicBool,
    /// Block address -> target, for blocks not served by an own bin since `recording` was
    /// set; sharded by address.
    elsewhere: Box<[BiasedLock<AddressMap<u32>>]>,
}

impl BinningResource {
    /// Fixed-size bins of 2^min ..= 2^max bytes over `upstream` (min > max: no bins yet).
    pub fn new(upstream: Arc<dyn MemoryResource>, min_size_exponent: i8, max_size_exponent: i8) -> Result<Self> {
        let mut resource = BinningResource {
            targets: Published::new(vec![upstream.clone()]),
            upstream,
            bins: Published::new(Bins::new(Vec::new(), Vec::new())),
            created_with: Bins::new(Vec::new(), Vec::new()),
            recording: AtomicBool::new(false),
            elsewhere: (0..RECORD_SHARDS).map(|_| BiasedLock::new(AddressMap::default())).collect(),
        };
        if min_size_exponent <= max_size_exponent {
            if min_size_exponent < 0 || max_size_exponent > 40 {
                return Err(Error::invalid(format!("bin exponents {min_size_exponent}..={max_size_exponent} must lie in 0..=40")));
            }
            for exponent in min_size_exponent..=max_size_exponent {
                resource.set_bin(1usize << exponent, None)?;
            }
        }
        resource.created_with = resource.bins.get().clone();
        Ok(resource)
    }

    /// Serves requests up to `allocation_size` (that are not served by a smaller bin) from
    /// `bin`, or from a new fixed-size resource of that size over the upstream.
    pub fn add_bin(&self, allocation_size: usize, bin: Option<Arc<dyn MemoryResource>>) -> Result<()> {
        self.recording.store(true, Ordering::SeqCst);
        self.set_bin(allocation_size, bin)
    }

    fn set_bin(&self, allocation_size: usize, bin: Option<Arc<dyn MemoryResource>>) -> Result<()> {
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
                if reaches(&*bin, self as *const Self as *const ()) {
                    return Err(Error::invalid(format!(
                        "a bin that takes its memory from this binning resource (a {} over it) would make the binning resource its own upstream",
                        bin.name()
                    )));
                }
                let target = self.targets.update(|targets| {
                    let mut updated = targets.clone();
                    updated.push(bin.clone());
                    (updated, targets.len() as u32)
                });
                Bin::Callers { resource: bin, target }
            }
            None => Bin::own(FixedSizeResource::new(self.upstream.clone(), allocation_size, 0)?),
        };
        self.bins.update(|bins| {
            let mut updated = bins.bins.clone();
            let mut replaced = bins.replaced.clone();
            match updated.binary_search_by_key(&allocation_size, |(size, _)| *size) {
                Ok(at) => {
                    if let Bin::Own { core, .. } = std::mem::replace(&mut updated[at].1, bin) {
                        replaced.push(core);
                    }
                }
                Err(at) => updated.insert(at, (allocation_size, bin)),
            }
            (Bins::new(updated, replaced), ())
        });
        Ok(())
    }

    fn records(&self, ptr: usize) -> &BiasedLock<AddressMap<u32>> {
        &self.elsewhere[shard_of(ptr, RECORD_SHARDS)]
    }

    /// Allocates from a target other than an own bin, recording where the block went once the
    /// bins changed. `recording` is read after the bins were: bins that `add_bin` published
    /// come with it set.
    fn allocate_elsewhere(&self, resource: &dyn MemoryResource, target: u32, bytes: usize, stream: Stream) -> Result<usize> {
        let ptr = resource.allocate(bytes, stream)?;
        if self.recording.load(Ordering::SeqCst) {
            self.records(ptr).lock().insert(ptr, target);
        }
        Ok(ptr)
    }

    /// Frees a block that the own bin serving its size now did not serve.
    #[inline(never)]
    fn deallocate_elsewhere(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        if self.recording.load(Ordering::SeqCst) {
            let recorded = self.records(ptr).lock().remove(&ptr);
            if let Some(target) = recorded {
                let resource = self.targets.get()[target as usize].clone();
                return resource.deallocate(ptr, bytes, stream).inspect_err(|_| {
                    self.records(ptr).lock().insert(ptr, target);
                });
            }
            // An own bin that served this size before the bins changed (own bins know their
            // blocks by address, so they are asked before anything routed by size).
            for core in self.bins.get().own_cores() {
                if core.try_deallocate(ptr, Some(bytes), stream)?.is_ok() {
                    return Ok(());
                }
            }
        }
        // Neither recorded nor an own bin's: routed by the bins the resource was created with
        // (whose own bin for this size, while they are the bins, `deallocate` asked already).
        match self.created_with.bin_for(bytes) {
            Some(Bin::Callers { resource, .. }) => resource.deallocate(ptr, bytes, stream),
            None => self.upstream.deallocate(ptr, bytes, stream),
            Some(Bin::Own { .. }) => {
                Err(Error::invalid(format!("{ptr:#x} ({}) was not handed out by this binning resource", crate::units::exact(bytes))))
            }
        }
    }

    /// The bin that serves `bytes` (None: the upstream does).
    #[inline(always)]
    fn route(&self, bytes: usize) -> Option<&Bin> {
        self.bins.get().bin_for(bytes)
    }

    /// The largest size each bin serves, smallest first (the bins `add_bin` added included).
    pub fn bin_sizes(&self) -> Vec<usize> {
        self.bins.get().bins.iter().map(|(size, _)| *size).collect()
    }
}

impl MemoryResource for BinningResource {
    #[inline]
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        match self.route(bytes) {
            Some(Bin::Own { core, .. }) => core.allocate(bytes, stream),
            // The stack orders by stream as a whole (its frees with several devices ask about the
            // stream): with `registered_streams`, a handle rmm-rs does not know is refused here
            // too, even where the target (a `cuda` upstream, say) would not look at it.
            Some(Bin::Callers { resource, target }) => {
                streams::check_usable(stream)?;
                self.allocate_elsewhere(&**resource, *target, bytes, stream)
            }
            None => {
                streams::check_usable(stream)?;
                self.allocate_elsewhere(&*self.upstream, UPSTREAM, bytes, stream)
            }
        }
    }

    #[inline]
    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        // The usual case: the own bin that serves the size now served the block.
        if let Some(Bin::Own { core, .. }) = self.route(bytes) {
            if core.try_deallocate(ptr, Some(bytes), stream)?.is_ok() {
                return Ok(());
            }
        }
        // As at the allocation: refused with nothing changed (`allocate`).
        streams::check_usable(stream)?;
        self.deallocate_elsewhere(ptr, bytes, stream)
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

    /// The upstream and every caller's bin ever added (replaced ones may still hold blocks).
    fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        for target in self.targets.get().iter() {
            visit(&**target)
        }
    }

    fn name(&self) -> &'static str {
        "binning"
    }

    fn pool_free(&self) -> Option<usize> {
        let bins = self.bins.get();
        let free: Vec<Option<usize>> = (bins.bins.iter().map(|(_, bin)| bin.resource().pool_free()))
            .chain(bins.replaced.iter().map(|core| Some(core.usage().free)))
            .chain([self.upstream.pool_free()])
            .collect();
        free.iter().any(Option::is_some).then(|| free.iter().flatten().sum())
    }

    /// The bins' figures and the upstream's, summed.
    fn footprint(&self) -> Option<super::Footprint> {
        let bins = self.bins.get();
        let parts: Vec<_> = (bins.bins.iter().map(|(_, bin)| bin.resource().footprint()))
            .chain(bins.replaced.iter().map(|core| Some(core.usage().footprint())))
            .chain([self.upstream.footprint()])
            .flatten()
            .collect();
        super::Footprint::sum(parts)
    }

    /// Each bin's own threshold (bins that keep no pool have none).
    fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        self.bins.get().bins.iter().try_for_each(|(_, bin)| match bin.resource().set_release_threshold(bytes) {
            Err(e) if matches!(e.kind(), crate::error::ErrorKind::NotSupported(_)) => Ok(()),
            done => done,
        })
    }

    fn release(&self) -> Result<usize> {
        let bins = self.bins.get();
        let from_bins = bins.bins.iter().try_fold(0, |total, (_, bin)| Ok::<_, Error>(total + bin.resource().release()?))?;
        bins.replaced.iter().try_fold(from_bins, |total, core| Ok(total + core.release_free_chunks()?))
    }
}

#[cfg(test)]
mod tests {
    use super::{Bin, BinningResource, Bins};
    use crate::platform::Stream;
    use crate::resources::MemoryResource;
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
            let bins = Bins::new(
                sizes
                    .iter()
                    .zip(&resources)
                    .map(|(&size, resource)| (size, Bin::Callers { resource: resource.clone(), target: 1 }))
                    .collect(),
                Vec::new(),
            );
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

    /// A bin through which the binning resource would reach itself is refused: every request
    /// routed to it would recurse until the thread's stack overflowed.
    #[test]
    fn a_bin_over_the_binning_resource_is_refused() {
        let unused: Arc<dyn MemoryResource> = Arc::new(Unused);
        let no_bins = || BinningResource::new(unused.clone(), 1, 0).unwrap();
        let binning = Arc::new(no_bins());
        let over: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(binning.clone(), 1, 0).unwrap());
        let beside = Arc::new(no_bins());
        for (bin, what) in [(binning.clone() as Arc<dyn MemoryResource>, "itself"), (over, "a resource over it")] {
            let refused = binning.add_bin(4096, Some(bin)).expect_err(what);
            assert!(refused.to_string().contains("its own upstream"), "{what}: {refused}");
        }
        // Through a caller's bin: `beside` serves `binning`, so `binning` cannot serve `beside`.
        binning.add_bin(4096, Some(beside.clone())).unwrap();
        assert!(beside.add_bin(4096, Some(binning.clone())).is_err());
        assert_eq!(binning.bin_sizes(), vec![4096]);
        assert!(beside.bin_sizes().is_empty());
    }
}
