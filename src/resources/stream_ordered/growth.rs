//! Growth and reclaim: how chunks are sized (`Growth`), and the slow path of an allocation
//! that its stream's own index cannot serve, under `Core::growing` (a wholly free chunk of
//! another stream or of the graveyard, a new chunk from upstream, a single block of another
//! stream, then every stream's wholly free chunks back upstream to grow again); and the
//! release of wholly free chunks upstream. Growth over an upstream that maps pages is
//! `mapped`'s.

use super::lanes::LANES;
use super::mapped::MappedGrowth;
use super::{BlockIndex, Core, Growing, Shelf, StreamState};
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::sync::biased_lock::BiasedGuard;
use crate::units;
use rmm_suballoc::tlsf::{Chunk, GRANULE};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// What an out-of-memory message says before the list of who holds the device's memory.
const HOLDERS: &str = "rmm-rs holds on device";

/// The most a geometric pool grows by beyond the request: measured on the churn workload,
/// larger steps overshoot and smaller ones fragment (many chunks cannot coalesce).
const GROWTH_CAP: usize = 32 << 20;

/// How chunks are sized.
pub enum Growth {
    /// Each new chunk is at least the request and at least half of what the stream already
    /// holds (that half capped at `GROWTH_CAP`), rounded up to `granularity`.
    Geometric {
        /// Bytes chunk sizes are rounded up to a multiple of.
        granularity: usize,
    },
    /// Chunks of `chunk` bytes (fixed-size blocks, arena superblocks); when the upstream
    /// refuses one, halves of it down to `smallest`, so that memory left in pieces smaller
    /// than a whole chunk can still be used.
    Fixed {
        /// Bytes of a chunk when the upstream grants one whole.
        chunk: usize,
        /// The smallest piece asked for once the upstream refuses whole chunks; also the unit
        /// chunk sizes round to.
        smallest: usize,
    },
    /// Over an upstream that maps pages (the expandable resource): chunks grow in place and
    /// give whole free pages back (see `mapped`).
    Mapped(MappedGrowth),
}

impl Growth {
    /// The unit chunks are sized in.
    pub(super) fn unit(&self) -> usize {
        match self {
            Growth::Geometric { granularity } => *granularity,
            Growth::Fixed { smallest, .. } => *smallest,
            Growth::Mapped(mapped) => mapped.page,
        }
    }

    pub(super) fn mapped(&self) -> Option<&MappedGrowth> {
        match self {
            Growth::Mapped(mapped) => Some(mapped),
            _ => None,
        }
    }
}

/// Blocks a lane takes from its siblings (`take_block_from_sibling_lane`) since it last grew,
/// before it grows again. Each take is an allocation on the slow path (the core's `growing`
/// lock and the sibling's shelf), and the block's free goes to the sibling's shelf: lanes that
/// kept taking, as every lane but the first did for threads that each keep a small ring of
/// blocks, put all the stream's threads through those two locks on every pair (in
/// tests/lanes.rs, 4,008 allocations of 4,008 on the slow path; 1,025 with the bound). A lane
/// short for a while still takes before the pool grows: examples/lanes_footprint holds the same
/// with the bound (108 MiB for 8 and 16 threads; 64 takes would hold 122-144 MiB).
const SIBLING_TAKES: u32 = 1024;

impl<I: BlockIndex> Core<I> {
    pub(super) fn allocate_slow(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        let growing = &self.lock_growing();
        self.finish_releases(false)?;
        self.prune_retired(growing)?;
        if let Some(addr) = self.allocate_from_own(state, bytes, stream)? {
            return Ok(addr);
        }
        let need = self.chunk_size_for(bytes)?;
        if let Some(addr) = self.steal_free_chunk(growing, state, bytes, need, stream)? {
            return Ok(addr);
        }
        if let Some(addr) = self.take_block_from_sibling_lane(growing, state, bytes, stream)? {
            return Ok(addr);
        }
        let grown = self.grow(growing, state, bytes, need, stream);
        match grown {
            Ok(addr) => {
                state.sibling_takes.store(0, Ordering::Relaxed);
                return Ok(addr);
            }
            // A sleeping upstream: nothing to release or retry until it wakes.
            Err(e) if e.is_asleep() => return Err(e),
            Err(_) => {}
        }
        if let Some(addr) = self.take_block_from_other_stream(growing, state, bytes, stream)? {
            return Ok(addr);
        }
        let released = self.release_unused(growing, 0)?;
        if released > 0 {
            if let Ok(addr) = self.grow(growing, state, bytes, need, stream) {
                return Ok(addr);
            }
        }
        // Releasing (here, or every resource of the device when the device refused) did not
        // help: the request is larger than any upstream can give. Take the initial
        // reservation back, which the pool keeps for its whole life.
        let reserved = self.reserved.load(Ordering::Relaxed);
        if reserved < self.initial {
            let _ = self.add_upstream_chunk(growing, state, self.initial - reserved, stream);
        }
        let usage = self.usage();
        let cause = grown.err().map(|e| e.cause()).unwrap_or_default();
        Err(Error::out_of_memory(
            bytes,
            format!(
                "the {} resource of device {} holds {}, {} of it free, the largest free block {}, and {}; it could not \
                 grow: {}",
                self.name,
                self.device,
                units::exact(usage.reserved),
                units::exact(usage.free),
                units::exact(usage.largest_free_block),
                if self.maximum == usize::MAX {
                    "has no maximum size".to_string()
                } else {
                    format!("may hold at most {}", units::exact(self.maximum))
                },
                cause
            ) + &match bytes.div_ceil(GRANULE) * GRANULE > self.maximum.saturating_sub(usage.reserved) {
                true => String::new(), // the pool's own maximum, not the device, refused it
                // A pool upstream already said who holds the device's memory.
                false if cause.contains(HOLDERS) => String::new(),
                false => Self::device_holders(self.device),
            },
        ))
    }

    /// For an out-of-memory message, after everything was given back: who holds the device's
    /// memory through rmm-rs ("" when nothing does), after `HOLDERS`.
    fn device_holders(device: i32) -> String {
        match super::super::caches::holders(device) {
            holders if holders.is_empty() => String::new(),
            holders => format!("; {HOLDERS} {device}: {holders}"),
        }
    }

    /// The smallest chunk that can serve `bytes`.
    fn chunk_size_for(&self, bytes: usize) -> Result<usize> {
        let too_big = || Error::out_of_memory(bytes, "larger than the address space");
        match self.growth {
            Growth::Fixed { smallest, .. } => Ok(smallest),
            Growth::Geometric { .. } | Growth::Mapped(_) => {
                let unit = self.growth.unit();
                let rounded = bytes.checked_add(unit - 1).ok_or_else(too_big)? / unit * unit;
                Ok(rounded.max(GRANULE))
            }
        }
    }

    fn steal_free_chunk(
        &self,
        growing: &Growing<'_>,
        state: &Arc<StreamState<I>>,
        bytes: usize,
        need: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        if let Some(addr) = self.take_retired_chunk(growing, state, bytes, need, stream)? {
            return Ok(Some(addr));
        }
        let others: Vec<_> = self.streams.read().values().filter(|s| !Arc::ptr_eq(s, state)).cloned().collect();
        for other in others {
            let (chunk, events) = {
                let mut shelf = other.shelf.lock();
                if !self.cover_frees(&other, &mut shelf, state)? {
                    continue;
                }
                let Some(chunk) = shelf.index_mut().take_free_chunk(need) else { continue };
                (chunk, self.events_to_take_from(&other, &mut shelf, state))
            };
            self.wait_all(stream, &events)?;
            if let Some(addr) = self.adopt_chunk(state, chunk, bytes, stream)? {
                return Ok(Some(addr));
            }
        }
        Ok(None)
    }

    /// Takes the smallest free chunk of at least `need` bytes that retired streams left (the
    /// graveyard's), waiting on its events as `steal_free_chunk` waits on its source's, and
    /// serves `bytes` from it.
    fn take_retired_chunk(
        &self,
        growing: &Growing<'_>,
        state: &Arc<StreamState<I>>,
        bytes: usize,
        need: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        self.check_growing(growing);
        let (chunk, events) = {
            let mut retired = self.retired.lock();
            let Some(graveyard) = retired.graveyard.clone() else { return Ok(None) };
            let Some(chunk) = graveyard.shelf.lock().index_mut().take_free_chunk(need) else { return Ok(None) };
            (chunk, retired.chunk_events.remove(&chunk.base).unwrap_or_default())
        };
        if !self.omit_ordering.load(Ordering::Relaxed) {
            self.wait_all(stream, &events)?;
        }
        self.adopt_chunk(state, chunk, bytes, stream)
    }

    /// Makes `chunk`, taken from another stream's index (with its events waited on), `state`'s,
    /// and serves `bytes` from it.
    fn adopt_chunk(&self, state: &Arc<StreamState<I>>, chunk: Chunk, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        self.owners.write().insert(chunk.base, (chunk.size, state.clone()));
        let mut shelf = state.shelf.lock();
        shelf.index_mut().add_chunk(chunk.base, chunk.size);
        self.take_from_shelf(state, &mut shelf, bytes, stream)
    }

    /// Under memory pressure only: takes one free block from another stream's index. Such a
    /// block may have been freed after that stream last recorded its event; unless this thread
    /// may record it now, the device is synchronized first.
    fn take_block_from_other_stream(
        &self,
        growing: &Growing<'_>,
        state: &Arc<StreamState<I>>,
        bytes: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        // A free chunk of a retired stream smaller than a chunk `steal_free_chunk` looks for.
        if let Some(addr) = self.take_retired_chunk(growing, state, bytes, bytes, stream)? {
            return Ok(Some(addr));
        }
        let others: Vec<_> = self.streams.read().values().filter(|s| !Arc::ptr_eq(s, state)).cloned().collect();
        self.take_block_from(state, others, bytes, stream)
    }

    /// A lane short of memory, before the pool grows: a free block of another lane of its
    /// stream (or of the stream's own state), so that threads sharing a stream hold about what
    /// one thread would instead of a growth each. Lanes share the stream's order: only frees
    /// other streams made into the sibling are waited on. A block taken stays in its sibling's
    /// index, so a lane whose own memory is too small stays short: after `SIBLING_TAKES` takes
    /// since it last grew, it grows instead.
    fn take_block_from_sibling_lane(
        &self,
        growing: &Growing<'_>,
        state: &Arc<StreamState<I>>,
        bytes: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        self.check_growing(growing);
        if state.lane == 0 && !state.split.load(Ordering::Relaxed) || state.sibling_takes.load(Ordering::Relaxed) >= SIBLING_TAKES {
            return Ok(None);
        }
        let siblings: Vec<_> = {
            let streams = self.streams.read();
            (0..=LANES).filter(|&lane| lane != state.lane).filter_map(|lane| streams.get(&(state.key, lane)).cloned()).collect()
        };
        let taken = self.take_block_from(state, siblings, bytes, stream)?;
        if taken.is_some() {
            state.sibling_takes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(taken)
    }

    /// One free block of `bytes` from the first of `others` that has one, ordered after the
    /// frees made there: by that stream's event when this thread may record it (or it covers
    /// them already), else after a device synchronization (once per call), which covers the
    /// frees made before it began; one whose frees it does not cover (another thread freed
    /// there meanwhile) is passed over.
    fn take_block_from(
        &self,
        state: &Arc<StreamState<I>>,
        others: Vec<Arc<StreamState<I>>>,
        bytes: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        let mut synchronized = false;
        for other in others {
            let ((addr, size), events) = {
                let mut shelf = other.shelf.lock();
                if shelf.index().free_bytes() < bytes {
                    continue;
                }
                if !self.cover_frees(&other, &mut shelf, state)? {
                    if synchronized {
                        continue;
                    }
                    drop(shelf);
                    self.synchronize_device()?;
                    synchronized = true;
                    shelf = other.shelf.lock();
                    if !self.cover_frees(&other, &mut shelf, state)? {
                        continue;
                    }
                }
                let Some(block) = shelf.index_mut().allocate(bytes) else { continue };
                (block, self.events_to_take_from(&other, &mut shelf, state))
            };
            self.wait_all(stream, &events)?;
            self.note_acquired(addr, size, bytes, stream);
            return Ok(Some(addr));
        }
        Ok(None)
    }

    /// Grows by a new upstream chunk: geometric, backing off towards `need` when upstream
    /// refuses. A geometric pool then tries the request alone (in granules, below its chunk
    /// granularity), so a small upstream or maximum can still be used to the last granule.
    fn grow(&self, growing: &Growing<'_>, state: &Arc<StreamState<I>>, bytes: usize, need: usize, stream: Stream) -> Result<usize> {
        let reserved = self.reserved.load(Ordering::Relaxed);
        // Chunks come in granules: a maximum that is not a multiple of one is never passed.
        let room = self.maximum.saturating_sub(reserved) / GRANULE * GRANULE;
        let floor = match self.growth {
            Growth::Geometric { .. } => bytes.div_ceil(GRANULE) * GRANULE,
            Growth::Fixed { .. } | Growth::Mapped(_) => need,
        };
        if floor > room {
            let why = match floor > self.maximum {
                true => format!("the request is larger than its maximum size, {}", units::exact(self.maximum)),
                false => format!("its maximum size, {}, is reached", units::exact(self.maximum)),
            };
            return Err(Error::out_of_memory(bytes, why));
        }
        let need = need.min(room);
        let mut size = match &self.growth {
            Growth::Fixed { chunk, .. } => *chunk,
            Growth::Mapped(mapped) => {
                // First lends the upstream the stream's own free pages it lacks unmapped ones
                // for, then maps in place; a new chunk when no chunk could grow in place.
                self.cut_holes_for_growth(growing, mapped, state, stream, need)?;
                if let Some(addr) = self.grow_in_place(growing, mapped, state, bytes, room, stream)? {
                    return Ok(addr);
                }
                need
            }
            Growth::Geometric { granularity } => {
                // Geometric in what this stream holds, not the whole pool: with many streams,
                // growth compounded over the pool's total would reserve far more than is used.
                let held = state.shelf.lock().index().chunk_bytes();
                let geometric = (held / 2).min(GROWTH_CAP).div_ceil(*granularity) * granularity;
                need.max(geometric).min(room)
            }
        };
        let mut shelf = loop {
            match self.add_upstream_chunk(growing, state, size, stream) {
                Ok(shelf) => break shelf,
                Err(e) if e.is_out_of_memory() && size > floor => {
                    let unit = self.growth.unit();
                    let halved = ((size / 2).div_ceil(unit) * unit).max(need);
                    size = if halved < size { halved } else { floor };
                }
                Err(e) => return Err(e),
            }
        };
        // Still under the lock the chunk went in with: another thread of this stream (whose
        // allocations take no growth lock) cannot take the new chunk's memory first.
        self.take_from_shelf(state, &mut shelf, bytes, stream)?
            .ok_or_else(|| Error::Internal("a new chunk could not serve its request".into()))
    }

    pub(super) fn note_reserved(&self, bytes: usize) {
        let now = self.reserved.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_reserved.fetch_max(now, Ordering::Relaxed);
    }

    /// Adds a chunk of `size` bytes from upstream to `state`'s index; returns the shelf still
    /// locked, so that the caller can take its block before any other thread sees the chunk.
    pub(super) fn add_upstream_chunk<'s>(
        &self,
        growing: &Growing<'_>,
        state: &'s Arc<StreamState<I>>,
        size: usize,
        stream: Stream,
    ) -> Result<BiasedGuard<'s, Shelf<I>>> {
        self.check_growing(growing);
        let size =
            size.div_ceil(GRANULE).checked_mul(GRANULE).ok_or_else(|| Error::out_of_memory(size, "larger than the address space"))?;
        let base = self.upstream.allocate(size, stream)?;
        if base % GRANULE != 0 {
            let _ = self.upstream.deallocate(base, size, stream);
            // A callback resource hands out what its function returns; carving blocks needs more.
            return Err(Error::invalid(format!(
                "the {} upstream returned a chunk at {base:#x}, not {GRANULE}-byte aligned (given back)",
                self.upstream.name()
            )));
        }
        self.note_reserved(size);
        self.heap_joined(base, size);
        self.owners.write().insert(base, (size, state.clone()));
        let mut shelf = state.shelf.lock();
        shelf.index_mut().add_chunk(base, size);
        Ok(shelf)
    }

    /// Returns every wholly free chunk upstream (and, expandable, every whole free page), after
    /// a device synchronization so no enqueued work still uses them. Returns the bytes released
    /// (0 when asked from inside a growth on this thread: see `lock_growing_unless_growing_here`).
    pub fn release_free_chunks(&self) -> Result<usize> {
        let Some(growing) = &self.lock_growing_unless_growing_here() else { return Ok(0) };
        let released = self.release_unused(growing, 0)?;
        // Retired states whose frees only the synchronization covered can go now.
        self.prune_retired(growing)?;
        Ok(released)
    }

    /// As `release_free_chunks`, but keeps free memory while fewer than `keep` bytes would
    /// stay reserved.
    pub(super) fn release_unused(&self, growing: &Growing<'_>, keep: usize) -> Result<usize> {
        self.check_growing(growing);
        let held_before = self.held();
        let states: Vec<_> = self.streams.read().values().cloned().collect();
        let mut chunks = Vec::new();
        let mut holes = Vec::new();
        let mut staying = self.reserved.load(Ordering::Relaxed);
        for state in &states {
            let mut shelf = state.shelf.lock();
            for chunk in shelf.index_mut().take_wholly_free_chunks() {
                match staying.checked_sub(chunk.size).filter(|&left| left >= keep) {
                    Some(left) => {
                        staying = left;
                        chunks.push(chunk);
                    }
                    None => shelf.index_mut().add_chunk(chunk.base, chunk.size),
                }
            }
            if let Some(mapped) = self.growth.mapped() {
                let cuts = Self::cut_pages_to_release(mapped, shelf.index_mut(), staying, keep);
                staying -= cuts.iter().map(|cut| cut.size).sum::<usize>();
                holes.extend(cuts);
            }
        }
        {
            // Retired streams' chunks, all wholly free (not cut: their events are kept by base).
            let mut retired = self.retired.lock();
            if let Some(graveyard) = retired.graveyard.clone() {
                let mut shelf = graveyard.shelf.lock();
                for chunk in shelf.index_mut().take_wholly_free_chunks() {
                    match staying.checked_sub(chunk.size).filter(|&left| left >= keep) {
                        Some(left) => {
                            staying = left;
                            retired.chunk_events.remove(&chunk.base);
                            chunks.push(chunk);
                        }
                        None => shelf.index_mut().add_chunk(chunk.base, chunk.size),
                    }
                }
            }
        }
        self.finish_releases(true)?;
        let mut released = 0;
        if !chunks.is_empty() || !holes.is_empty() {
            self.apply_cuts(&holes);
            self.synchronize_device()?;
            chunks.iter().for_each(|chunk| self.heap_left(chunk.base, chunk.size));
            let ranges = holes.iter().map(|hole| (hole.start, hole.size));
            for (base, size) in chunks.iter().map(|chunk| (chunk.base, chunk.size)).chain(ranges) {
                self.owners.write().remove(&base);
                self.reserved.fetch_sub(size, Ordering::Relaxed);
                self.upstream.deallocate(base, size, Stream::DEFAULT)?;
                released += size;
            }
        }
        if let Growth::Mapped(_) = self.growth {
            // The upstream keeps unmapped pages for reuse: they go back to the device too.
            self.upstream.release()?;
            released = held_before.saturating_sub(self.held());
        }
        Ok(released)
    }
}
