//! What the cores tell a memory checker attached through NVTX (compute-sanitizer's memcheck
//! and initcheck; `platform::nvtx`): each chunk a core takes from upstream is a heap of a
//! suballocator, each block it hands out a region of exactly the bytes asked for, until the
//! free that gives it back (the caller's, in stream order). So the checker reports a kernel
//! that touches a freed block, or runs past the bytes it asked for, inside a chunk.
//!
//! Suballocators stack (the arena's per-thread arenas over its global arena, binning's bins
//! over a pool, anything over the expandable resource): a chunk taken from a core is a region
//! of that core's heap. It becomes no heap of its own: the region is unregistered while the
//! chunk is borrowed and its blocks are registered as regions of the same heap, so heaps never
//! nest and a pointer names one region only (NVTX unregisters regions by pointer alone). When
//! the chunk goes back, its region is registered again, for the free below to unregister.
//!
//! The registrations of the whole process are kept here (`REGISTRY`), as the tool holds them,
//! under one lock taken only while a tool is attached: a region registered while another core
//! replaces the heap around it (expandable chunks grow, join and are cut in place:
//! `heaps_follow`) lands in the new heap. Without a tool every hook costs one relaxed atomic
//! load.

use super::{BlockIndex, Core};
use crate::platform::nvtx::{self, Heap};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// What the tool holds registered, for every core of the process.
struct Registry {
    /// base -> (end, heap): chunks of the cores that took them from a resource that is no
    /// suballocator (or one that registers nothing). They never overlap.
    heaps: BTreeMap<usize, (usize, Heap)>,
    /// address -> bytes: blocks handed out, each inside one of `heaps`.
    regions: BTreeMap<usize, usize>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { heaps: BTreeMap::new(), regions: BTreeMap::new() });

impl Registry {
    /// The heap around `[addr, addr + bytes)`.
    fn heap_around(&self, addr: usize, bytes: usize) -> Option<Heap> {
        let (_, &(end, heap)) = self.heaps.range(..=addr).next_back()?;
        (addr.checked_add(bytes)? <= end).then_some(heap)
    }

    fn register(&mut self, addr: usize, bytes: usize) {
        if let Some(heap) = self.heap_around(addr, bytes) {
            nvtx::region_register(heap, addr, bytes);
            self.regions.insert(addr, bytes);
        }
    }

    fn unregister(&mut self, addr: usize) {
        if self.regions.remove(&addr).is_some() {
            nvtx::regions_unregister(&[addr]);
        }
    }
}

/// A core's chunks that are blocks of a core under it (only while a tool is attached): base ->
/// the region (address, bytes) the chunk was there, registered again when the chunk goes back.
#[derive(Default)]
pub(super) struct Borrowed(Mutex<BTreeMap<usize, Option<(usize, usize)>>>);

impl<I: BlockIndex> Core<I> {
    /// The name the tool shows for this core's chunks, e.g. "rmm-rs pool (device 0)".
    fn heap_name(&self) -> String {
        format!("rmm-rs {} (device {})", self.name, self.device)
    }

    /// `[base, base + size)`, a chunk from upstream with nothing handed out yet, joins the core.
    pub(super) fn heap_joined(&self, base: usize, size: usize) {
        if nvtx::active() {
            self.join(base, size);
        }
    }

    #[cold]
    #[inline(never)]
    fn join(&self, base: usize, size: usize) {
        let mut registry = REGISTRY.lock();
        if registry.heap_around(base, 1).is_some() {
            // A block of a core under this one: its blocks become regions of that core's heap.
            let region = registry.regions.range(..=base).next_back().map(|(&addr, &bytes)| (addr, bytes));
            let region = region.filter(|&(addr, bytes)| base + size <= addr + bytes);
            if let Some((addr, _)) = region {
                registry.unregister(addr);
            }
            self.borrowed.0.lock().insert(base, region);
            return;
        }
        let name = self.heap_name();
        if let Some(heap) = nvtx::heap_register(base, size, &name) {
            registry.heaps.insert(base, (base + size, heap));
        }
    }

    /// The chunk `[base, base + size)`, wholly free and out of every index, goes back upstream.
    pub(super) fn heap_left(&self, base: usize, size: usize) {
        if nvtx::active() {
            self.leave(base, size);
        }
    }

    #[cold]
    #[inline(never)]
    fn leave(&self, base: usize, size: usize) {
        let mut registry = REGISTRY.lock();
        let borrowed = self.borrowed.0.lock().remove(&base);
        match borrowed {
            Some(region) => {
                if let Some((addr, bytes)) = region {
                    registry.register(addr, bytes);
                }
            }
            None => {
                if registry.heaps.get(&base).is_some_and(|&(end, _)| end == base + size) {
                    if let Some((_, heap)) = registry.heaps.remove(&base) {
                        nvtx::heap_unregister(heap);
                    }
                }
            }
        }
    }

    /// The block at `addr` is handed out for `bytes` (its region: those bytes, not the block).
    /// The caller holds the lock of the shelf whose index holds the block, or `growing`.
    #[inline(always)]
    pub(super) fn region_acquired(&self, addr: usize, bytes: usize) {
        if nvtx::active() {
            REGISTRY.lock().register(addr, bytes);
        }
    }

    /// The block at `addr` is freed (under the lock of the shelf whose index held it).
    #[inline(always)]
    pub(super) fn region_released(&self, addr: usize) {
        if nvtx::active() {
            REGISTRY.lock().unregister(addr);
        }
    }

    /// The block handed out at `from` now starts at `to`, for `bytes` (an aligned block cut out
    /// of a larger one).
    pub(super) fn region_moved(&self, from: usize, to: usize, bytes: usize) {
        if nvtx::active() {
            let mut registry = REGISTRY.lock();
            registry.unregister(from);
            registry.register(to, bytes);
        }
    }

    /// After chunks of `index` (whose shelf the caller holds locked, under `growing`) grew,
    /// joined, were trimmed or cut, or left it: `touched` ((start, bytes) each) covers the
    /// ranges that changed. Every heap over those ranges that is no longer exactly a chunk of
    /// the index goes (the regions in it unregistered first), and every chunk of the index
    /// without a heap gets one, with the regions inside it registered again (blocks of this
    /// core, and of cores over it).
    pub(super) fn heaps_follow(&self, index: &I, touched: impl IntoIterator<Item = (usize, usize)>) {
        if nvtx::active() {
            let touched: Vec<(usize, usize)> = touched.into_iter().map(|(start, size)| (start, start + size)).collect();
            if !touched.is_empty() {
                self.follow(index, &touched);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn follow(&self, index: &I, touched: &[(usize, usize)]) {
        let overlaps = |a: (usize, usize), b: (usize, usize)| a.0 < b.1 && b.0 < a.1;
        let chunks: Vec<(usize, usize)> = index
            .chunk_bases()
            .into_iter()
            .filter_map(|base| index.free_tail(base))
            .map(|(chunk, _)| (chunk.base, chunk.base + chunk.size))
            .collect();
        let name = self.heap_name();
        let mut registry = REGISTRY.lock();
        let stale: Vec<(usize, usize, Heap)> = registry
            .heaps
            .iter()
            .map(|(&base, &(end, heap))| (base, end, heap))
            .filter(|&(base, end, _)| !chunks.contains(&(base, end)))
            .filter(|&(base, end, _)| touched.iter().chain(&chunks).any(|&range| overlaps(range, (base, end))))
            .collect();
        let mut unregistered = Vec::new();
        for (base, end, heap) in stale {
            let inside: Vec<usize> = registry.regions.range(base..end).map(|(&addr, _)| addr).collect();
            nvtx::regions_unregister(&inside);
            nvtx::heap_unregister(heap);
            registry.heaps.remove(&base);
            unregistered.extend(inside);
        }
        for (base, end) in chunks {
            if registry.heaps.contains_key(&base) {
                continue;
            }
            let Some(heap) = nvtx::heap_register(base, end - base, &name) else { continue };
            registry.heaps.insert(base, (end, heap));
            let inside: Vec<(usize, usize)> = registry.regions.range(base..end).map(|(&addr, &bytes)| (addr, bytes)).collect();
            nvtx::regions_register(heap, &inside);
        }
        // Regions left outside every heap (one the tool refused) are the tool's no more.
        for addr in unregistered {
            if let Some(&bytes) = registry.regions.get(&addr) {
                if registry.heap_around(addr, bytes).is_none() {
                    registry.regions.remove(&addr);
                }
            }
        }
    }
}
