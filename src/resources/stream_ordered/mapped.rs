//! Growth over an upstream that maps memory page by page (the expandable resource), and
//! everything the core does only for it. A chunk grows in place, at its end, by whole pages:
//! just what a request needs beyond the chunk's free end. Whole free pages, at the ends of
//! chunks or in the middle (which cuts the chunk in two), go back upstream once the streams
//! that freed them have passed that point: while more than `release_threshold` bytes are
//! held, before a growth maps new pages (so that the upstream maps the pages of holes again
//! where the request needs them, instead of creating new ones), and on release. What the
//! upstream offers for it is `PageMapper`; what it does with the pages (peer access, IPC)
//! stays behind that interface.

use super::{BlockIndex, Core, Growing, StreamState};
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::MemoryResource;
use rmm_suballoc::tlsf::{Chunk, Cut, GRANULE};
use std::sync::Arc;

/// What an upstream that maps memory page by page offers a suballocator over it, beyond
/// handing out and taking back whole chunks.
pub trait PageMapper: MemoryResource {
    /// Maps `bytes` more right after `end`, the end of memory this resource handed out, when
    /// that address range is free to take; false otherwise.
    fn extend(&self, end: usize, bytes: usize, stream: Stream) -> Result<bool>;
    /// Lends the memory of `[start, start + size)`, which this resource handed out and which
    /// the caller gives back with `deallocate` once the work that used it is done, to the next
    /// allocations for `stream` at once: the caller orders every use of it so far before
    /// `stream`'s later work (its physical memory is mapped again where it is needed; it stays
    /// mapped where it is until then).
    fn lend(&self, start: usize, size: usize, stream: Stream) -> Result<()>;
}

/// The mapped growth of one core: its upstream, page and threshold, and the ranges released
/// but not yet given upstream.
pub struct MappedGrowth {
    pages: Arc<dyn PageMapper>,
    pub(super) page: usize,
    release_threshold: usize,
}

impl MappedGrowth {
    /// Growth over `pages`, in pages of `page` bytes, giving back what is held beyond
    /// `release_threshold` as it is freed.
    pub fn new(pages: Arc<dyn PageMapper>, page: usize, release_threshold: usize) -> Self {
        MappedGrowth { pages, page, release_threshold }
    }

    /// Bytes held from the device: the chunks', the pages the upstream keeps unmapped for
    /// reuse, and those it has still to unmap.
    pub(super) fn held(&self) -> Option<usize> {
        self.pages.pool_size()
    }

    /// What the upstream holds from the device, pages cut from chunks included until the
    /// device has them back.
    pub(super) fn footprint(&self) -> Option<crate::resources::Footprint> {
        self.pages.footprint()
    }
}

/// Where expandable growth can map: after a chunk with `tail` free bytes at its end.
struct GrowthSite {
    chunk: Chunk,
    tail: usize,
    /// The unmapped gap up to the stream's next chunk, when the block fits across it.
    gap: Option<Gap>,
}

#[derive(Clone, Copy)]
struct Gap {
    size: usize,
    /// The free end before the gap, the gap and the next chunk's free start: mapping only
    /// the gap joins the two chunks into this much free space.
    across: usize,
}

impl<I: BlockIndex> Core<I> {
    /// After a free on `stream` into `state`'s index: gives back what is held beyond the
    /// threshold, and what earlier releases left once their streams have passed.
    pub(super) fn after_free_mapped(&self, mapped: &MappedGrowth, state: &StreamState<I>, stream: Stream) -> Result<()> {
        if self.reserved() > mapped.release_threshold || self.releases.pending() {
            self.release_free_ends(mapped, state, stream)?;
        }
        Ok(())
    }

    /// For a release that keeps `keep` bytes of `staying`: the whole free pages of `shelf`'s
    /// index to give back, cut out of its chunks.
    pub(super) fn cut_pages_to_release(mapped: &MappedGrowth, index: &mut I, staying: usize, keep: usize) -> Vec<Cut> {
        let budget = staying.saturating_sub(keep) / mapped.page * mapped.page;
        match budget {
            0 => Vec::new(),
            budget => index.cut_free_pages(mapped.page, budget),
        }
    }

    /// Expandable growth: maps what `bytes` needs beyond the free end of one of the stream's
    /// chunks right after that chunk. Best fit first: the smallest unmapped gap up to the
    /// stream's next chunk that the block fits across (free end, gap, that chunk's free start),
    /// where only the gap is mapped; then the chunk with the largest free end.
    pub(super) fn grow_in_place(
        &self,
        growing: &Growing<'_>,
        mapped: &MappedGrowth,
        state: &Arc<StreamState<I>>,
        bytes: usize,
        room: usize,
        stream: Stream,
    ) -> Result<Option<usize>> {
        self.check_growing(growing);
        let page = mapped.page;
        let block = bytes.div_ceil(GRANULE) * GRANULE;
        let mut sites: Vec<GrowthSite> = {
            // Each of the stream's chunks, and the chunk after it in address order when that
            // one is the stream's too (chunks do not overlap: the next entry is the next chunk).
            let chunks: Vec<(usize, Option<usize>)> = {
                let owners = self.owners.read();
                let ours = |owner: &Arc<StreamState<I>>| std::ptr::eq(Arc::as_ptr(owner), &**state);
                let mut entries = owners.iter().peekable();
                let mut chunks = Vec::new();
                while let Some((&base, (_, owner))) = entries.next() {
                    if ours(owner) {
                        chunks.push((base, entries.peek().filter(|(_, (_, next))| ours(next)).map(|(&next, _)| next)));
                    }
                }
                chunks
            };
            let shelf = state.shelf.lock();
            chunks
                .into_iter()
                .filter_map(|(base, next)| {
                    let (chunk, tail) = shelf.index().free_tail(base)?;
                    let end = chunk.base + chunk.size;
                    let gap = next.filter(|&next| next > end).and_then(|next| {
                        let across = tail + (next - end) + shelf.index().free_head(next)?;
                        (across >= block).then_some(Gap { size: next - end, across })
                    });
                    Some(GrowthSite { chunk, tail, gap })
                })
                .collect()
        };
        sites.sort_by_key(|site| match site.gap {
            Some(gap) => (0, gap.across),
            None => (1, usize::MAX - site.tail),
        });
        for GrowthSite { chunk, tail, gap } in sites {
            let mut extra = block.saturating_sub(tail).div_ceil(page).max(1) * page;
            if let Some(gap) = gap {
                extra = extra.min(gap.size);
            }
            if extra > room || !mapped.pages.extend(chunk.base + chunk.size, extra, stream)? {
                continue;
            }
            self.note_reserved(extra);
            let end = chunk.base + chunk.size + extra;
            // A chunk cut in two grows back up to its other part: they become one again.
            let joined = {
                let mut owners = self.owners.write();
                let next = owners.get(&end).filter(|(_, owner)| std::ptr::eq(Arc::as_ptr(owner), &**state)).map(|(size, _)| *size);
                if next.is_some() {
                    owners.remove(&end);
                }
                if let Some((size, _)) = owners.get_mut(&chunk.base) {
                    *size += extra + next.unwrap_or(0);
                }
                next.is_some()
            };
            let mut shelf = state.shelf.lock();
            if !shelf.index_mut().extend_chunk(chunk.base, extra) || (joined && !shelf.index_mut().join_chunks(chunk.base, end)) {
                return Err(Error::Internal(format!("chunk {:#x} could not grow", chunk.base)));
            }
            return self.take_from_shelf(state, &mut shelf, bytes, stream);
        }
        Ok(None)
    }

    /// Bases of the chunks `state`'s index holds.
    fn chunks_of(&self, state: &StreamState<I>) -> Vec<usize> {
        self.owners.read().iter().filter(|(_, (_, owner))| std::ptr::eq(Arc::as_ptr(owner), state)).map(|(&base, _)| base).collect()
    }

    /// Expandable growth, after a free on `stream` into `state`'s index while more than the
    /// release threshold is reserved: cuts the free pages off the ends of the stream's chunks
    /// (and takes its wholly free chunks) until no more than the threshold stays, and gives
    /// them upstream once the stream has passed this point, without waiting for it here.
    #[cold]
    #[inline(never)]
    fn release_free_ends(&self, mapped: &MappedGrowth, state: &StreamState<I>, stream: Stream) -> Result<()> {
        let (page, threshold) = (mapped.page, mapped.release_threshold);
        let Some(growing) = &self.try_lock_growing() else { return Ok(()) };
        self.finish_releases(false)?;
        // The initial size stays mapped for the resource's life.
        let floor = threshold.max(self.initial);
        let mut reserved = self.reserved();
        if reserved <= floor {
            return Ok(());
        }
        let bases = self.chunks_of(state);
        let (mut cut, mut whole, mut holes) = (Vec::new(), Vec::new(), Vec::new());
        {
            let mut shelf = state.shelf.lock();
            // Frees other streams made here are ordered by their events, not by this stream.
            if !shelf.pending().is_empty() {
                return Ok(());
            }
            for chunk in shelf.index_mut().take_wholly_free_chunks() {
                if reserved > floor && reserved - chunk.size >= self.initial {
                    reserved -= chunk.size;
                    whole.push((chunk.base, chunk.size));
                } else {
                    shelf.index_mut().add_chunk(chunk.base, chunk.size);
                }
            }
            for base in bases {
                if reserved <= floor {
                    break;
                }
                if let Some((start, size)) = shelf.index_mut().trim_free_tail(base, page) {
                    // Pages the initial size needs go back into the chunk (still mapped).
                    let kept = self.initial.saturating_sub(reserved - size).next_multiple_of(page).min(size);
                    if kept > 0 {
                        shelf.index_mut().extend_chunk(base, kept);
                    }
                    if kept < size {
                        reserved -= size - kept;
                        cut.push((base, start + kept, size - kept));
                    }
                }
            }
            let budget = reserved.saturating_sub(floor) / page * page;
            if budget > 0 {
                holes = shelf.index_mut().cut_free_pages(page, budget);
            }
        }
        if cut.is_empty() && whole.is_empty() && holes.is_empty() {
            return Ok(());
        }
        {
            let mut owners = self.owners.write();
            for &(base, _) in &whole {
                owners.remove(&base);
            }
            for &(base, _, size) in &cut {
                if let Some((held, _)) = owners.get_mut(&base) {
                    *held -= size;
                }
            }
        }
        self.apply_cuts(&holes);
        let ranges: Vec<(usize, usize)> = whole
            .into_iter()
            .chain(cut.into_iter().map(|(_, start, size)| (start, size)))
            .chain(holes.iter().map(|hole| (hole.start, hole.size)))
            .collect();
        self.queue_release(growing, stream, ranges)
    }

    /// Records the chunks that cutting ranges out of the middle of chunks made.
    pub(super) fn apply_cuts(&self, cuts: &[Cut]) {
        if cuts.is_empty() {
            return;
        }
        let mut owners = self.owners.write();
        for cut in cuts {
            let Some((_, owner)) = owners.remove(&cut.chunk) else { continue };
            for part in [cut.before, cut.after].into_iter().flatten() {
                owners.insert(part.base, (part.size, owner.clone()));
            }
        }
    }

    /// Expandable growth, before mapping `need` bytes for a request on `stream`: cuts as many
    /// whole free pages out of the middle of `state`'s chunks as the upstream lacks unmapped
    /// pages for it, so that it maps those instead of creating new ones. They are `stream`'s
    /// own free blocks, with other streams' frees into them already ordered before `stream`'s
    /// later work, so the upstream lends their physical memory to this growth at once; their
    /// old addresses are unmapped once `stream` has passed its frees (at once on an idle
    /// device, else at a later growth or free).
    #[cold]
    pub(super) fn cut_holes_for_growth(
        &self,
        growing: &Growing<'_>,
        mapped: &MappedGrowth,
        state: &StreamState<I>,
        stream: Stream,
        need: usize,
    ) -> Result<()> {
        let cached = mapped.pages.pool_free().unwrap_or(0);
        let Some(budget) = need.checked_sub(cached).filter(|&budget| budget > 0) else { return Ok(()) };
        let cuts = {
            let mut shelf = state.shelf.lock();
            if !shelf.pending().is_empty() {
                self.settle(state, &mut shelf, stream)?;
            }
            shelf.index_mut().cut_free_pages(mapped.page, budget)
        };
        if cuts.is_empty() {
            return Ok(());
        }
        self.apply_cuts(&cuts);
        for cut in &cuts {
            mapped.pages.lend(cut.start, cut.size, stream)?;
        }
        self.queue_release(growing, stream, cuts.iter().map(|cut| (cut.start, cut.size)).collect())
    }
}
