//! Ordering uses events, never host synchronization, and no driver call on the path of an
//! allocation or free that its own stream serves: a stream's event is recorded only when
//! another stream takes memory from it, to cover the frees made there since it was last
//! recorded (also chunks merged from several frees); the taker waits on it. Recording needs a
//! live handle, so who may record is part of a stream's state (`Recorder`): anyone for the
//! legacy default stream and for streams whose destruction the library sees (they record once
//! more and retire when destroyed, `Core::retire_stream`, after which their state leaves the
//! core once it holds no live block: its free chunks wait in a graveyard state for any stream,
//! with the events a taker waits on, and its event is reused once no pending list holds it, so
//! a stream per request costs nothing once gone); only the stream's own allocations for
//! per-thread default streams and for streams the library did not see made (a taker asks, and
//! takes elsewhere meanwhile; see `registry` for those). A block freed on a stream other than
//! its owner's leaves the freeing stream's event pending on the owner's index: whoever reuses
//! blocks from there waits on it first.

use super::{BlockIndex, Core, Shelf, StreamState};
use crate::error::Result;
use crate::platform::{backend, streams, Event, Stream};
use std::sync::atomic::Ordering;

/// Who may record a stream's event on its handle, to cover the frees made there since it was
/// last recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Recorder {
    /// Any thread, at any time: the legacy default stream (it lives forever), and streams whose
    /// destruction the library sees (they retire first, under the shelf's lock).
    AnyThread,
    /// Only an allocation on the stream itself, which shows it alive and named by its handle:
    /// a thread's per-thread default stream (only that thread can name it), and streams whose
    /// handle the driver's id confirms at each allocation.
    OwnAllocations,
    /// Nobody: the stream is gone. Retiring recorded its event last; frees made into its index
    /// since on its handle are covered only by a device synchronization (other streams' leave
    /// their events pending). The state leaves the core once it holds no live block
    /// (`Core::prune`).
    Nobody,
}

/// How many events a donor stream records with nobody taking memory before it stops.
pub(super) const DONOR_PATIENCE: u8 = 8;
/// How many frees a donor stream makes on its own shelf with nobody taking memory before it
/// stops: a stream that lives on (an application's, CuPy's, PyTorch's) is no young stream that
/// may go unannounced any moment, and without parking each of its pairs costs about as much
/// again (3 times the NULL stream's 256-byte pair on an H200, against 1.6 for a stream that
/// parks).
pub(super) const DONOR_QUIET_FREES: u16 = 256;

impl<I: BlockIndex> Core<I> {
    /// Before `stream` (the owner of `shelf`) reuses a block: makes it wait for the frees other
    /// streams made into its index, and records its event when another stream asked for that.
    /// The event then covers those frees too, for streams that take memory from here later.
    pub(super) fn settle(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream) -> Result<()> {
        let platform = backend()?;
        if !shelf.pending.is_empty() {
            for event in shelf.pending.drain(..) {
                platform.stream_wait_event(self.device, stream, event)?;
            }
            shelf.unrecorded_frees = true;
        }
        if shelf.record_wanted {
            shelf.record_wanted = false;
            if shelf.unrecorded_frees && shelf.recorder == Recorder::OwnAllocations {
                platform.event_record(self.device, state.event, stream)?;
                shelf.unrecorded_frees = false;
            }
        }
        Ok(())
    }

    /// A donor's free just left a chunk wholly free: records the event that lets another stream
    /// take it, when `stream` still names the state's stream (a handle that is not trusted may
    /// have gone to another stream since). Stops donating after `DONOR_PATIENCE` records that
    /// nobody took memory after.
    #[cold]
    #[inline(never)]
    fn record_for_takers(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream) -> Result<()> {
        if shelf.recorder != Recorder::OwnAllocations {
            return Ok(());
        }
        shelf.donor -= 1;
        if shelf.donor == 0 {
            shelf.index.set_parking(true);
        }
        if streams::is_per_thread(state.identity) || self.identity_matches(state, stream)? {
            backend()?.event_record(self.device, state.event, stream)?;
            shelf.unrecorded_frees = false;
            shelf.record_wanted = false;
        }
        Ok(())
    }

    /// Makes the stream a donor anew, for another stream that takes (or wants) its memory.
    pub(super) fn arm_donor(shelf: &mut Shelf<I>) {
        shelf.donor = DONOR_PATIENCE;
        shelf.donor_quiet = DONOR_QUIET_FREES;
    }

    /// A donor's free into its own shelf: records the event for takers when it left a chunk
    /// wholly free (`record_for_takers`); after `DONOR_QUIET_FREES` frees with nobody taking
    /// memory from it, it stops donating and parks blocks again.
    #[cold]
    #[inline(never)]
    pub(super) fn donor_freed(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream, chunk_now_free: bool) -> Result<()> {
        if chunk_now_free {
            return self.record_for_takers(state, shelf, stream);
        }
        shelf.donor_quiet = shelf.donor_quiet.saturating_sub(1);
        if shelf.donor_quiet == 0 && !shelf.record_wanted {
            shelf.donor = 0;
            shelf.index.set_parking(true);
        }
        Ok(())
    }

    /// The event of the stream `stream` names now, for a free the caller's cache gave `state`
    /// for: a handle that is not trusted may have been handed to another stream since, and the
    /// event recorded for that free must be the new stream's, never overwriting the old one's.
    pub(super) fn event_of_stream(&self, state: &StreamState<I>, stream: Stream) -> Result<Event> {
        if matches!(stream, Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD)
            || streams::known_identity(stream) == Some(state.identity)
        {
            return Ok(state.event);
        }
        let identity = backend()?.stream_identity(stream)?;
        match identity == state.identity {
            true => Ok(state.event),
            false => Ok(self.state_from_map(identity, stream, Recorder::OwnAllocations)?.event),
        }
    }

    /// Whether `taker` may use memory from `source`'s index once it waits on
    /// `events_to_take_from`: `source`'s event must cover the frees made there, so it is
    /// recorded now when this thread may, and asked of `source`'s own allocations otherwise.
    /// Called with `source`'s shelf locked.
    pub(super) fn cover_frees(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Result<bool> {
        if !shelf.unrecorded_frees || source.identity == taker.identity {
            return Ok(true);
        }
        match shelf.recorder {
            Recorder::AnyThread => {
                backend()?.event_record(self.device, source.event, source.stream)?;
                shelf.unrecorded_frees = false;
                Ok(true)
            }
            Recorder::OwnAllocations => {
                shelf.record_wanted = true;
                if shelf.donor == 0 {
                    shelf.index.set_parking(false);
                }
                Self::arm_donor(shelf);
                Ok(false)
            }
            Recorder::Nobody => Ok(false),
        }
    }

    /// The events `taker` must wait on before using memory it took from `source`'s index, once
    /// `cover_frees` said yes (a donor keeps donating). Called with `source`'s shelf locked.
    pub(super) fn events_to_take_from(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Vec<Event> {
        if shelf.donor > 0 {
            Self::arm_donor(shelf);
        }
        if self.omit_ordering.load(Ordering::Relaxed) {
            return Vec::new();
        }
        let mut events = shelf.pending.clone();
        if taker.identity != source.identity {
            events.push(source.event);
        }
        events
    }

    pub(super) fn wait_all(&self, stream: Stream, events: &[Event]) -> Result<()> {
        let platform = backend()?;
        events.iter().try_for_each(|event| platform.stream_wait_event(self.device, stream, *event))
    }

    /// Waits for all work on the device: every free on every stream is then complete, so no
    /// shelf needs an event to cover its frees any more.
    pub(super) fn synchronize_device(&self) -> Result<()> {
        backend()?.device_synchronize(self.device)?;
        for state in self.streams.read().values() {
            state.shelf.lock().unrecorded_frees = false;
        }
        Ok(())
    }
}
