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

use super::shelf::{Offer, Shelf};
use super::{BlockIndex, Core, StreamState};
use crate::error::Result;
use crate::platform::{backend, streams, Event, Stream};
use std::sync::atomic::Ordering;

impl<I: BlockIndex> Core<I> {
    /// Before `stream` (the owner of `shelf`) reuses a block: makes it wait for the frees other
    /// streams made into its index, and records its event when another stream asked for that
    /// (`Shelf::before_reuse`). The event then covers those frees too, for streams that take
    /// memory from here later.
    pub(super) fn settle(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream) -> Result<()> {
        let platform = backend()?;
        let before = shelf.before_reuse();
        for event in before.wait {
            platform.stream_wait_event(self.device, stream, event)?;
        }
        if before.record {
            platform.event_record(self.device, state.event, stream)?;
            shelf.recorded();
        }
        Ok(())
    }

    /// A donor's free just left a chunk wholly free (`AfterOwnFree::RecordForTakers`): records
    /// the event that lets another stream take it, when `stream` still names the state's stream
    /// (a handle that is not trusted may have gone to another stream since).
    #[cold]
    #[inline(never)]
    pub(super) fn record_for_takers(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream) -> Result<()> {
        if streams::is_per_thread(state.identity) || self.identity_matches(state, stream)? {
            backend()?.event_record(self.device, state.event, stream)?;
            shelf.recorded();
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
        let identity = streams::identity_of(stream)?;
        match identity == state.identity {
            true => Ok(state.event),
            false => Ok(self.state_from_map(identity, stream, super::shelf::Recorder::OwnAllocations)?.event),
        }
    }

    /// Whether `taker` may use memory from `source`'s index once it waits on
    /// `events_to_take_from` (`Shelf::offer`): `source`'s event must cover the frees made
    /// there, so it is recorded now when this thread may, and asked of `source`'s own
    /// allocations otherwise. Called with `source`'s shelf locked.
    pub(super) fn cover_frees(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Result<bool> {
        match shelf.offer(source.identity == taker.identity) {
            Offer::Ready => Ok(true),
            Offer::RecordFirst => {
                backend()?.event_record(self.device, source.event, source.stream)?;
                shelf.recorded();
                Ok(true)
            }
            Offer::Asked | Offer::Never => Ok(false),
        }
    }

    /// The events `taker` must wait on before using memory it took from `source`'s index, once
    /// `cover_frees` said yes. Called with `source`'s shelf locked.
    pub(super) fn events_to_take_from(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Vec<Event> {
        shelf.events_for_taker(taker.identity == source.identity, source.event, self.omit_ordering.load(Ordering::Relaxed))
    }

    pub(super) fn wait_all(&self, stream: Stream, events: &[Event]) -> Result<()> {
        let platform = backend()?;
        events.iter().try_for_each(|event| platform.stream_wait_event(self.device, stream, *event))
    }

    /// Waits for all work on the device: every free made on any stream before it began is then
    /// complete, so no shelf needs an event to cover those. A free made while it runs (another
    /// thread's) is not covered: the shelves are marked before it begins and count as covered
    /// after it only if no free came since (`Shelf::device_synchronized`).
    pub(super) fn synchronize_device(&self) -> Result<()> {
        let n = self.synchronizations.fetch_add(1, Ordering::Relaxed);
        let states: Vec<_> = self.streams.read().values().cloned().collect();
        for state in &states {
            state.shelf.lock().device_synchronizing(n);
        }
        backend()?.device_synchronize(self.device)?;
        for state in &states {
            state.shelf.lock().device_synchronized(n);
        }
        Ok(())
    }
}
