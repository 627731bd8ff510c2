//! Giving memory back upstream without waiting for the device: ranges a stream freed (wholly
//! free chunks, or pages cut out of chunks over an upstream that maps pages) leave the core at
//! once, and go upstream once an event recorded on that stream after its frees has completed
//! (`Releases`). The release threshold (as CUDA's memory pools have one) uses it: while a core
//! holds more than its threshold, a free that leaves a chunk wholly free gives that chunk back
//! (`Core::release_emptied_chunks`; over an upstream that maps pages, `mapped` gives back whole
//! free pages instead).

use super::{BlockIndex, Core, Growing, StreamState};
use crate::error::Result;
use crate::platform::{backend, Event, Stream};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Ranges given back, not yet upstream, and the threshold above which frees give back.
pub(super) struct Releases {
    /// Not yet given upstream, each waiting for its event.
    queued: Mutex<Vec<PendingRelease>>,
    /// `queued` is not empty: frees look whether its streams have passed.
    pending: AtomicBool,
    /// While more than this is held, chunks emptied by frees go back (`usize::MAX`: never).
    threshold: AtomicUsize,
}

/// Ranges a stream freed, given back upstream once `event` (recorded on that stream after those
/// frees) has completed.
struct PendingRelease {
    event: Event,
    ranges: Vec<(usize, usize)>,
}

impl Releases {
    pub(super) fn new(threshold: usize) -> Self {
        Releases { queued: Mutex::new(Vec::new()), pending: AtomicBool::new(false), threshold: AtomicUsize::new(threshold) }
    }

    /// Some ranges wait for their streams.
    #[inline(always)]
    pub(super) fn pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    pub(super) fn threshold(&self) -> usize {
        self.threshold.load(Ordering::Relaxed)
    }

    pub(super) fn set_threshold(&self, bytes: usize) {
        self.threshold.store(bytes, Ordering::Relaxed);
    }
}

impl<I: BlockIndex> Core<I> {
    /// After a free that left a chunk of `state`'s wholly free: gives back what is held beyond
    /// the release threshold, and what earlier releases left once their streams have passed.
    #[inline(always)]
    pub(super) fn after_chunk_emptied(&self, state: &StreamState<I>, stream: Stream) -> Result<()> {
        if self.reserved() > self.releases.threshold() || self.releases.pending() {
            self.release_emptied_chunks(state, stream)?;
        }
        Ok(())
    }

    /// Gives `state`'s wholly free chunks upstream while more than the threshold (and the
    /// initial size, kept for the core's life) is held, once `stream`, which freed them, has
    /// passed this point: never waiting for it here. Passes when a growth or reclaim is under
    /// way, and when other streams freed into `state` (their frees are ordered by their events,
    /// not by `stream`).
    #[cold]
    #[inline(never)]
    fn release_emptied_chunks(&self, state: &StreamState<I>, stream: Stream) -> Result<()> {
        let Some(growing) = &self.try_lock_growing() else { return Ok(()) };
        self.finish_releases(false)?;
        let floor = self.releases.threshold().max(self.initial);
        let mut reserved = self.reserved();
        if reserved <= floor {
            return Ok(());
        }
        let mut chunks = Vec::new();
        {
            let mut shelf = state.shelf.lock();
            if !shelf.pending().is_empty() {
                return Ok(());
            }
            for chunk in shelf.index_mut().take_wholly_free_chunks() {
                match reserved > floor && reserved - chunk.size >= self.initial {
                    true => {
                        reserved -= chunk.size;
                        chunks.push(chunk);
                    }
                    false => shelf.index_mut().add_chunk(chunk.base, chunk.size),
                }
            }
        }
        if chunks.is_empty() {
            return Ok(());
        }
        {
            let mut owners = self.owners.write();
            chunks.iter().for_each(|chunk| drop(owners.remove(&chunk.base)));
        }
        chunks.iter().for_each(|chunk| self.heap_left(chunk.base, chunk.size));
        self.queue_release(growing, stream, chunks.iter().map(|chunk| (chunk.base, chunk.size)).collect())
    }

    /// Takes `ranges`, out of every index already, off the bytes reserved and gives them
    /// upstream once `stream`, which freed (or waited for the frees of) everything in them, has
    /// passed this point: now, if it already has.
    pub(super) fn queue_release(&self, growing: &Growing<'_>, stream: Stream, ranges: Vec<(usize, usize)>) -> Result<()> {
        self.check_growing(growing);
        self.reserved.fetch_sub(ranges.iter().map(|&(_, size)| size).sum(), Ordering::Relaxed);
        let platform = backend()?;
        let event = platform.event_create(self.device)?;
        platform.event_record(self.device, event, stream)?;
        self.releases.queued.lock().push(PendingRelease { event, ranges });
        self.releases.pending.store(true, Ordering::Relaxed);
        self.finish_releases(false)
    }

    /// Gives upstream the released ranges whose streams have passed their frees; with `wait`,
    /// all of them, waiting for those streams.
    pub(super) fn finish_releases(&self, wait: bool) -> Result<()> {
        if !self.releases.pending() {
            return Ok(());
        }
        let mut queued = self.releases.queued.lock();
        let platform = backend()?;
        let mut result = Ok(());
        let mut kept = Vec::new();
        for pending in queued.drain(..) {
            let passed = if wait { platform.event_synchronize(pending.event).map(|()| true) } else { platform.event_query(pending.event) };
            match passed {
                Ok(true) => {
                    for &(start, size) in &pending.ranges {
                        if let Err(e) = self.upstream.deallocate(start, size, Stream::DEFAULT) {
                            result = Err(e);
                        }
                    }
                    let _ = platform.event_destroy(pending.event);
                }
                Ok(false) => kept.push(pending),
                Err(e) => {
                    result = Err(e);
                    kept.push(pending);
                }
            }
        }
        self.releases.pending.store(!kept.is_empty(), Ordering::Relaxed);
        *queued = kept;
        result
    }

    /// While more than `bytes` is held, chunks that frees leave wholly free go back upstream
    /// (`usize::MAX`: never, the default). Over an upstream that maps pages the threshold is
    /// set when the resource is made.
    pub fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        if self.growth.mapped().is_some() {
            return Err(crate::error::Error::NotSupported(format!(
                "the {} resource's release threshold is set when it is made (its release_threshold option)",
                self.name
            )));
        }
        self.releases.set_threshold(bytes);
        Ok(())
    }
}
