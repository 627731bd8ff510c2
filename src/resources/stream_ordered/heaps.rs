//! What the cores tell a memory checker attached through NVTX (compute-sanitizer's memcheck
//! and initcheck; `platform::nvtx`): each chunk a core takes from upstream is a heap of a
//! suballocator, each block it hands out a region of exactly the bytes asked for, until the
//! free that gives it back (the caller's, in stream order). So the checker reports a kernel
//! that touches a freed block, or runs past the bytes it asked for, inside a chunk.
//!
//! A heap must be a whole allocation of the driver's (`hands_out_driver_allocations`): the
//! checker refuses anything else, mapped memory included, and counts it as an error of the
//! program. So the expandable resource, and cores over the driver's stream-ordered pools or a
//! callback, register nothing: the checker sees their memory as it sees it without rmm-rs.
//!
//! Suballocators stack (the arena's per-thread arenas over its global arena, binning's bins
//! over a pool): a chunk taken from a core is a region of that core's heap. It becomes no heap
//! of its own: the region is unregistered while the chunk is borrowed and its blocks are
//! registered as regions of the same heap, so heaps never nest and a pointer names one region
//! only (NVTX unregisters regions by pointer alone). When the chunk goes back, its region is
//! registered again, for the free below to unregister.
//!
//! The registrations of the whole process are kept here (`REGISTRY`), as the tool holds them,
//! under one lock taken only while a tool is attached. Without a tool every hook costs one
//! relaxed atomic load.

use super::{BlockIndex, Core};
use crate::platform::backend;
use crate::platform::nvtx::{self, Heap};
use parking_lot::Mutex;
use std::collections::BTreeMap;

/// What the tool holds registered, for every core of the process.
struct Registry {
    /// base -> (end, heap): chunks of the cores that took them from the driver (see the
    /// module comment). They never overlap.
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
            nvtx::region_unregister(addr);
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
        if !self.upstream.hands_out_driver_allocations() {
            return;
        }
        let name = self.heap_name();
        if let Ok(Some(heap)) = backend().and_then(|b| b.in_context_of(self.device, || nvtx::heap_register(base, size, &name))) {
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
                        let unregister = || nvtx::heap_unregister(heap);
                        if let Err(e) = backend().and_then(|b| b.in_context_of(self.device, unregister)) {
                            log::debug!("NVTX: heap {base:#x} of device {} not unregistered: {e}", self.device);
                        }
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
}
