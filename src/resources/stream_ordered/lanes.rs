//! Threads that allocate on one stream at the same time would all meet on its shelf's lock and
//! its index's cache lines. Once they interleave there often enough (`Core::weigh_collision`),
//! the stream splits into lanes: each thread allocates in a lane of its own, a state with the
//! stream's identity and handle and an index of its own, so a thread that frees its own blocks
//! touches no other thread's lock, and each free is still checked by the index that handed the
//! block out.
//! Lanes of one stream share its order, so memory moves between them (a block freed into
//! another lane, a chunk taken from one) with no event. Threads that take turns on a stream in
//! runs of allocations (PyTorch's forward pass on one thread, its backward pass on the
//! autograd thread) keep one index, whose free memory they share.

use super::shelf::Recorder;
use super::{BlockIndex, Core, Shelf, StreamState, CACHES_GONE, CACHES_WATCH};
use crate::error::Result;
use crate::platform::Stream;
use rmm_suballoc::tlsf::{Freed, Refused};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The lanes a split stream has: a thread allocates in lane `1 + thread key % LANES`, so
/// threads that come and go reuse lanes instead of leaving one each behind.
pub(super) const LANES: u64 = 64;
/// A stream splits into lanes when its collision score reaches this: each allocation off the
/// bias made by another thread than the one before (or that found the shelf's lock held) adds
/// `COLLISION_WEIGHT`, and each by the same thread as the one before takes one away. Threads
/// that interleave allocation by allocation split the stream after a few dozen; threads that
/// take turns in runs of more than `COLLISION_WEIGHT` allocations never do. Only finding the
/// lock held misses threads whose time inside it is short: two threads on one stream then
/// shared its lock and index unsplit for good, at nine times one thread's cost per pair on an
/// H200. `RMM_LANES_SPLIT_AT` sets another score (the fuzzers use 0: split as soon as a second
/// thread allocates).
pub(super) static SPLIT_AT: once_cell::sync::Lazy<u32> =
    once_cell::sync::Lazy::new(|| std::env::var("RMM_LANES_SPLIT_AT").ok().and_then(|at| at.parse().ok()).unwrap_or(256));
const COLLISION_WEIGHT: u32 = 8;

/// A thread's lanes of split streams, each with its stream's own state (held, so that its
/// address, which `own_lane` looks lanes up by, is not another state's while the entry lasts).
pub(super) type ThreadLanes<I> = std::cell::RefCell<Vec<LaneOf<I>>>;

/// (a split stream's own state, the thread's lane of it).
pub(super) type LaneOf<I> = (Arc<StreamState<I>>, Arc<StreamState<I>>);

impl<I: BlockIndex> Core<I> {
    /// The lane of the calling thread in the split stream whose own state is `stream_state`,
    /// passed to `f`, made if new (the stream's own state for a call from a thread-local's
    /// destructor, when the thread's lanes are gone).
    #[inline(never)]
    fn with_lane<R>(&self, stream_state: &Arc<StreamState<I>>, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
        let address = Arc::as_ptr(stream_state) as usize;
        if let Some(lane) = self.own_lane(address) {
            return f(&lane.1);
        }
        if CACHES_GONE.get() {
            return f(stream_state);
        }
        let recorder = stream_state.shelf.lock().recorder();
        let lane_number = 1 + crate::sync::bias::thread_key() % LANES;
        let lane = self.state_at(stream_state.key, lane_number, stream_state.identity, stream_state.stream, recorder)?;
        let lanes = self.lanes.get_or_default();
        let _ = CACHES_WATCH.try_with(|_| ());
        if let Ok(mut lanes) = lanes.try_borrow_mut() {
            // Lanes of retired streams are of no more use (and hold their states).
            lanes.retain(|(of, _)| of.shelf.lock().recorder() != Recorder::Nobody);
            lanes.push((stream_state.clone(), lane.clone()));
        }
        f(&lane)
    }

    /// The calling thread's lane of the stream whose own state lies at `address`, if it has one.
    fn own_lane(&self, address: usize) -> Option<std::cell::Ref<'_, LaneOf<I>>> {
        if CACHES_GONE.get() {
            return None;
        }
        let lanes = self.lanes.get()?.try_borrow().ok()?;
        std::cell::Ref::filter_map(lanes, |lanes| lanes.iter().find(|(of, _)| Arc::as_ptr(of) as usize == address)).ok()
    }

    /// An allocation by thread `me` took the lock of the stream's own state off the bias: adds
    /// to the collision score when another thread allocated there last or held the lock
    /// (`contended`), takes
    /// from it otherwise, and splits the stream into lanes when it reaches `SPLIT_AT`.
    #[cold]
    #[inline(never)]
    pub(super) fn weigh_collision(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, me: u64, contended: bool) {
        if state.lane != 0 {
            return;
        }
        let interleaved = shelf.last_allocator != me || contended;
        shelf.last_allocator = me;
        shelf.collisions = match interleaved {
            true => shelf.collisions.saturating_add(COLLISION_WEIGHT),
            false => shelf.collisions.saturating_sub(1),
        };
        if shelf.collisions >= *SPLIT_AT {
            state.split.store(true, Ordering::Relaxed);
        }
    }

    /// Test-only: splits `stream` into lanes now, as collisions would.
    #[doc(hidden)]
    pub fn split_into_lanes(&self, stream: Stream) -> Result<()> {
        self.with_state(stream, true, |state| {
            state.split.store(true, Ordering::Relaxed);
            Ok(())
        })
    }

    #[inline(never)]
    pub(super) fn allocate_in_lane(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        self.with_lane(state, |lane| self.allocate_in(lane, bytes, stream))
    }

    /// A thread mostly frees what it allocated: its own lane is looked at first. A thread with
    /// no lane (one that only frees) gets none: the block's owner is found by its address.
    #[inline(never)]
    pub(super) fn deallocate_in_lane(&self, state: &StreamState<I>, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        match self.own_lane(state as *const StreamState<I> as usize) {
            Some(lane) => self.deallocate_in(&lane.1, ptr, bytes, stream),
            None => self.free_into_owner(state, ptr, bytes, stream)?.map_err(|refused| self.refusal(ptr, bytes, refused)),
        }
    }

    /// Frees a block of another lane of the same stream (or the stream's own state): the
    /// stream's order covers the free, so the block needs no event.
    pub(super) fn free_into_lane(
        &self,
        owner: &StreamState<I>,
        ptr: usize,
        bytes: Option<usize>,
        stream: Stream,
    ) -> std::result::Result<(), Refused> {
        let mut shelf = owner.shelf.lock();
        let Freed { size, .. } = shelf.index_mut().free_checked(ptr, bytes)?;
        self.note_released(ptr, size, stream);
        shelf.free_in_stream_order();
        Ok(())
    }
}
