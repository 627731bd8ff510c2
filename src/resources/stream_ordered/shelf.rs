//! The protocol of a stream's free blocks: a `Shelf` is one stream's (or lane's) index with
//! the state that says when its blocks may be reused, and by whom. Its fields are private: the
//! rest of the core changes that state only through the named transitions below, each of which
//! returns what the core must then do with the device (record the stream's event, wait for
//! events, or nothing). None of them calls the device, so the state machine is tested here on
//! its own (table-driven, no simulator).
//!
//! The state, in three parts:
//! - `Coverage`: whether the stream's event, as last recorded, covers every free block its own
//!   frees left here. A stream takes memory from another only once it does (or after a device
//!   synchronization).
//! - `Recorder`: who may record that event on the stream's handle.
//! - `Donor`: whether the stream records its event by itself when its frees empty a chunk, for
//!   other streams that want its memory (only streams that only their own allocations may
//!   record: see `Recorder::OwnAllocations`).
//!
//! Frees other streams make here leave their events `pending`: the owner waits on them before
//! it reuses a block, and a taker waits on them before it uses what it took.

use crate::platform::Event;

use super::BlockIndex;

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

/// Whether the stream's event covers the frees its own stream made here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Coverage {
    /// It does: another stream may take memory from here once it waits on the event.
    Covered,
    /// The stream freed blocks here (or waited for other streams' frees) after it last recorded
    /// its event.
    Uncovered,
    /// Uncovered, and another stream wanted memory from here while only the stream's own
    /// allocations may record: the next one records.
    Wanted,
    /// Uncovered (or wanted) when device synchronization number `n` began, and no free here
    /// since: once that synchronization returns, it covers them (`device_synchronized(n)`). A
    /// free while it runs, which it may not cover, makes the shelf uncovered again.
    Synchronizing(u64),
}

/// Whether the stream records its event by itself for takers (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Donor {
    No,
    /// `records_left`: how many more frees that leave a chunk wholly free record the event,
    /// unless a taker takes memory meanwhile (which starts the count again); `quiet_left`: how
    /// many more of its own frees, with no taker, it makes before it stops donating. A donor
    /// parks no block, so that its frees tell when a chunk becomes free.
    Yes {
        records_left: u8,
        quiet_left: u16,
    },
}

/// How many events a donor stream records with nobody taking memory before it stops.
pub(super) const DONOR_PATIENCE: u8 = 8;
/// How many frees a donor stream makes on its own shelf with nobody taking memory before it
/// stops: a stream that lives on (an application's, CuPy's, PyTorch's) is no young stream that
/// may go unannounced any moment, and without parking each of its pairs costs about as much
/// again (3 times the NULL stream's 256-byte pair on an H200, against 1.6 for a stream that
/// parks).
pub(super) const DONOR_QUIET_FREES: u16 = 256;

const ARMED: Donor = Donor::Yes { records_left: DONOR_PATIENCE, quiet_left: DONOR_QUIET_FREES };

/// What the core does after a free of the stream's own into its shelf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterOwnFree {
    Nothing,
    /// A donor's free left a chunk wholly free: record the stream's event for takers, when the
    /// handle of the free still names the stream, then `recorded`.
    RecordForTakers,
}

/// What the core does before the stream reuses a block of its shelf (`Shelf::before_reuse`).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct BeforeReuse {
    /// Make the stream wait on these (other streams' frees into its index).
    pub(super) wait: Vec<Event>,
    /// Then record the stream's event (a taker asked for it), and tell the shelf (`recorded`).
    pub(super) record: bool,
}

/// Whether another stream may take memory from this shelf now (`Shelf::offer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Offer {
    /// Yes, once it waits on `Shelf::events_for_taker`.
    Ready,
    /// Yes, once this thread records the stream's event on its handle (then `recorded`).
    RecordFirst,
    /// Not now: the stream's own next allocation records for it (the shelf is now asked).
    Asked,
    /// Not without a device synchronization: the stream is gone.
    Never,
}

/// One stream's (or lane's) free-block index and the state of its ordering. The caller holds
/// its lock (`StreamState::shelf`) for every call.
pub(super) struct Shelf<I> {
    index: I,
    pending: Vec<Event>,
    coverage: Coverage,
    donor: Donor,
    recorder: Recorder,
    /// The lanes' collision score (see `lanes::SPLIT_AT`); not part of the ordering.
    pub(super) collisions: u32,
    /// The thread that last allocated here off the bias (`sync::bias::thread_key`; 0: none yet).
    pub(super) last_allocator: u64,
}

impl<I: BlockIndex> Shelf<I> {
    /// A new stream's shelf. An unannounced stream (one nothing tells the core of when it is
    /// destroyed) starts as a donor: its frees that leave a chunk wholly free record its event,
    /// so that once it goes unannounced what it freed is covered.
    pub(super) fn new(mut index: I, recorder: Recorder, unannounced: bool, collisions: u32) -> Self {
        index.set_parking(!unannounced);
        Shelf {
            index,
            pending: Vec::new(),
            coverage: Coverage::Covered,
            donor: if unannounced { ARMED } else { Donor::No },
            recorder,
            collisions,
            last_allocator: 0,
        }
    }

    /// The graveyard's shelf: chunks of pruned states, which nobody records for and no block
    /// is ever handed out from (takers take whole chunks).
    pub(super) fn graveyard(index: I) -> Self {
        Shelf {
            index,
            pending: Vec::new(),
            coverage: Coverage::Covered,
            donor: Donor::No,
            recorder: Recorder::Nobody,
            collisions: 0,
            last_allocator: 0,
        }
    }

    #[inline(always)]
    pub(super) fn index(&self) -> &I {
        &self.index
    }

    #[inline(always)]
    pub(super) fn index_mut(&mut self) -> &mut I {
        &mut self.index
    }

    pub(super) fn recorder(&self) -> Recorder {
        self.recorder
    }

    /// Other streams' frees into this index that its owner has not waited on yet.
    pub(super) fn pending(&self) -> &[Event] {
        &self.pending
    }

    /// The stream may reuse a block with nothing to do first: the fast path.
    #[inline(always)]
    pub(super) fn reuse_is_free(&self) -> bool {
        self.pending.is_empty() && self.coverage != Coverage::Wanted
    }

    /// Transition: the stream freed one of its own blocks here (`chunk_now_free`: the free left
    /// its chunk wholly free).
    #[inline(always)]
    pub(super) fn own_free(&mut self, chunk_now_free: bool) -> AfterOwnFree {
        self.free_in_stream_order();
        match self.donor {
            Donor::No => AfterOwnFree::Nothing,
            Donor::Yes { .. } => self.donor_freed(chunk_now_free),
        }
    }

    #[cold]
    #[inline(never)]
    fn donor_freed(&mut self, chunk_now_free: bool) -> AfterOwnFree {
        let Donor::Yes { records_left, quiet_left } = self.donor else { return AfterOwnFree::Nothing };
        if chunk_now_free {
            if self.recorder != Recorder::OwnAllocations {
                return AfterOwnFree::Nothing;
            }
            match records_left.saturating_sub(1) {
                0 => self.stop_donating(),
                records_left => self.donor = Donor::Yes { records_left, quiet_left },
            }
            return AfterOwnFree::RecordForTakers;
        }
        let quiet_left = quiet_left.saturating_sub(1);
        self.donor = Donor::Yes { records_left, quiet_left };
        if quiet_left == 0 && self.coverage != Coverage::Wanted {
            self.stop_donating();
        }
        AfterOwnFree::Nothing
    }

    fn stop_donating(&mut self) {
        self.donor = Donor::No;
        self.index.set_parking(true);
    }

    /// Transition: a block freed here in the order of the stream itself (another lane of the
    /// same stream), which no event needs to order.
    #[inline(always)]
    pub(super) fn free_in_stream_order(&mut self) {
        if matches!(self.coverage, Coverage::Covered | Coverage::Synchronizing(_)) {
            self.coverage = Coverage::Uncovered;
        }
    }

    /// Transition: another stream freed a block here and recorded `event` after the free.
    /// Whether the state may now leave the core (the last live block of a retired stream).
    pub(super) fn foreign_free(&mut self, event: Event) -> bool {
        if !self.pending.contains(&event) {
            self.pending.push(event);
        }
        self.recorder == Recorder::Nobody && self.index.used_blocks() == 0
    }

    /// Transition: the stream is about to reuse a block of its own; the caller makes it wait on
    /// `wait` and records when `record` says so.
    pub(super) fn before_reuse(&mut self) -> BeforeReuse {
        let wait = std::mem::take(&mut self.pending);
        if !wait.is_empty() && matches!(self.coverage, Coverage::Covered | Coverage::Synchronizing(_)) {
            // Its later event must cover those frees too, for takers after it.
            self.coverage = Coverage::Uncovered;
        }
        let record = self.coverage == Coverage::Wanted && self.recorder == Recorder::OwnAllocations;
        if self.coverage == Coverage::Wanted && !record {
            // Registered since it was asked: anyone records it, when a taker comes.
            self.coverage = Coverage::Uncovered;
        }
        BeforeReuse { wait, record }
    }

    /// Transition: another stream (`same_stream`: a lane of the same one) wants memory from
    /// here.
    pub(super) fn offer(&mut self, same_stream: bool) -> Offer {
        if self.coverage == Coverage::Covered || same_stream {
            return Offer::Ready;
        }
        match self.recorder {
            Recorder::AnyThread => Offer::RecordFirst,
            Recorder::OwnAllocations => {
                self.coverage = Coverage::Wanted;
                if self.donor == Donor::No {
                    self.index.set_parking(false);
                }
                self.donor = ARMED;
                Offer::Asked
            }
            Recorder::Nobody => Offer::Never,
        }
    }

    /// Transition: a taker took memory from here (its `offer` was ready): the events it waits on
    /// first (`own_event`, the stream's, unless it is the same stream; none with `unordered`, the
    /// tests' fault injection). A donor keeps donating.
    pub(super) fn events_for_taker(&mut self, same_stream: bool, own_event: Event, unordered: bool) -> Vec<Event> {
        if let Donor::Yes { .. } = self.donor {
            self.donor = ARMED;
        }
        if unordered {
            return Vec::new();
        }
        let mut events = self.pending.clone();
        if !same_stream {
            events.push(own_event);
        }
        events
    }

    /// Transition: the stream's event was just recorded on its handle, after every free here.
    pub(super) fn recorded(&mut self) {
        self.coverage = Coverage::Covered;
    }

    /// Transition: device synchronization number `n` begins; it will cover the frees made here
    /// so far.
    pub(super) fn device_synchronizing(&mut self, n: u64) {
        if self.coverage != Coverage::Covered {
            self.coverage = Coverage::Synchronizing(n);
        }
    }

    /// Transition: device synchronization number `n` returned: it covers the frees made here
    /// before it began, unless one came since (or a later synchronization, still running, took
    /// the shelf over).
    pub(super) fn device_synchronized(&mut self, n: u64) {
        if self.coverage == Coverage::Synchronizing(n) {
            self.coverage = Coverage::Covered;
        }
    }

    /// Whether the stream, about to retire while its handle still names it (`alive`), must
    /// record its event one last time first (then `recorded`).
    pub(super) fn needs_last_record(&self, alive: bool) -> bool {
        alive && self.coverage != Coverage::Covered && self.recorder != Recorder::Nobody
    }

    /// Transition: the stream is gone; nobody records its event again.
    pub(super) fn retire(&mut self) {
        self.recorder = Recorder::Nobody;
    }

    /// Transition: the stream was first used before it was announced (`rmmStreamRegister`):
    /// `recorder` from now on. A retired stream stays retired.
    pub(super) fn learn_recorder(&mut self, recorder: Recorder) {
        if self.recorder != Recorder::Nobody {
            self.recorder = recorder;
        }
    }

    /// A retired state that holds no live block and whose event covers its frees: it may leave
    /// the core, its events waited on by whoever takes its chunks.
    pub(super) fn may_leave(&self) -> bool {
        self.recorder == Recorder::Nobody && self.coverage == Coverage::Covered && self.index.used_blocks() == 0
    }

    /// A retired state that holds no live block but frees no event covers: only a device
    /// synchronization lets it go.
    pub(super) fn waits_for_synchronization(&self) -> bool {
        self.coverage != Coverage::Covered && self.index.used_blocks() == 0
    }

    /// Transition: the state leaves the core; the events a taker of its chunks waits on (the
    /// pending ones and `own_event`).
    pub(super) fn leave(&mut self, own_event: Event) -> Vec<Event> {
        let mut events = std::mem::take(&mut self.pending);
        events.push(own_event);
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm_suballoc::tlsf::Tlsf;

    const OWN: Event = Event(1);
    const OTHER: Event = Event(2);

    fn shelf(recorder: Recorder, coverage: Coverage, donor: Donor) -> Shelf<Tlsf> {
        let mut shelf = Shelf::new(Tlsf::new(), recorder, donor != Donor::No, 0);
        shelf.coverage = coverage;
        shelf.donor = donor;
        shelf
    }

    const RECORDERS: [Recorder; 3] = [Recorder::AnyThread, Recorder::OwnAllocations, Recorder::Nobody];
    const COVERAGES: [Coverage; 4] = [Coverage::Covered, Coverage::Uncovered, Coverage::Wanted, Coverage::Synchronizing(1)];

    #[test]
    fn a_device_synchronization_covers_only_the_frees_made_before_it_began() {
        for recorder in RECORDERS {
            for before in COVERAGES {
                // (a free while it runs, a later synchronization begun before it returns)
                for (free_meanwhile, overtaken) in [(false, false), (true, false), (false, true)] {
                    let mut shelf = shelf(recorder, before, Donor::No);
                    shelf.device_synchronizing(1);
                    let synchronizing = shelf.coverage;
                    assert_eq!(synchronizing == Coverage::Covered, before == Coverage::Covered);
                    if free_meanwhile {
                        shelf.own_free(false);
                    }
                    if overtaken {
                        shelf.device_synchronizing(2);
                    }
                    shelf.device_synchronized(1);
                    let expected = match (before, free_meanwhile, overtaken) {
                        (_, true, _) => Coverage::Uncovered,
                        (Coverage::Covered, _, _) => Coverage::Covered,
                        (_, false, true) => Coverage::Synchronizing(2),
                        (_, false, false) => Coverage::Covered,
                    };
                    assert_eq!(shelf.coverage, expected, "{recorder:?} {before:?} free {free_meanwhile} overtaken {overtaken}");
                    shelf.device_synchronized(2);
                    if !free_meanwhile {
                        assert_eq!(shelf.coverage, Coverage::Covered, "{recorder:?} {before:?}");
                        assert_eq!(shelf.offer(false), Offer::Ready);
                    }
                }
            }
        }
    }

    #[test]
    fn an_own_free_uncovers_and_keeps_a_want() {
        for recorder in RECORDERS {
            for (before, after) in
                [(Coverage::Covered, Coverage::Uncovered), (Coverage::Uncovered, Coverage::Uncovered), (Coverage::Wanted, Coverage::Wanted)]
            {
                let mut shelf = shelf(recorder, before, Donor::No);
                assert_eq!(shelf.own_free(true), AfterOwnFree::Nothing, "{recorder:?} {before:?}");
                assert_eq!(shelf.coverage, after, "{recorder:?} {before:?}");
            }
        }
    }

    #[test]
    fn a_donor_records_for_takers_when_a_chunk_empties_and_stops_after_its_patience() {
        // (recorder, donor before, chunk emptied) -> (action, donor after)
        let table = [
            (
                Recorder::OwnAllocations,
                ARMED,
                true,
                AfterOwnFree::RecordForTakers,
                Donor::Yes { records_left: DONOR_PATIENCE - 1, quiet_left: DONOR_QUIET_FREES },
            ),
            (Recorder::OwnAllocations, Donor::Yes { records_left: 1, quiet_left: 9 }, true, AfterOwnFree::RecordForTakers, Donor::No),
            (
                Recorder::OwnAllocations,
                ARMED,
                false,
                AfterOwnFree::Nothing,
                Donor::Yes { records_left: DONOR_PATIENCE, quiet_left: DONOR_QUIET_FREES - 1 },
            ),
            (Recorder::OwnAllocations, Donor::Yes { records_left: 3, quiet_left: 1 }, false, AfterOwnFree::Nothing, Donor::No),
            // Only a stream whose own allocations record is a donor that records.
            (Recorder::AnyThread, ARMED, true, AfterOwnFree::Nothing, ARMED),
            (Recorder::Nobody, ARMED, true, AfterOwnFree::Nothing, ARMED),
        ];
        for (recorder, before, emptied, action, after) in table {
            let mut shelf = shelf(recorder, Coverage::Covered, before);
            assert_eq!(shelf.own_free(emptied), action, "{recorder:?} {before:?} {emptied}");
            assert_eq!(shelf.donor, after, "{recorder:?} {before:?} {emptied}");
        }
    }

    #[test]
    fn a_quiet_donor_keeps_donating_while_a_taker_waits_for_its_record() {
        let mut shelf = shelf(Recorder::OwnAllocations, Coverage::Wanted, Donor::Yes { records_left: 2, quiet_left: 1 });
        shelf.own_free(false);
        assert_eq!(shelf.donor, Donor::Yes { records_left: 2, quiet_left: 0 });
    }

    #[test]
    fn an_offer_is_ready_covered_recorded_by_anyone_or_asked_of_the_stream() {
        // (recorder, coverage, same stream) -> (offer, coverage after, donor after)
        for recorder in RECORDERS {
            for coverage in COVERAGES {
                for same_stream in [false, true] {
                    let mut shelf = shelf(recorder, coverage, Donor::No);
                    let offer = shelf.offer(same_stream);
                    let expected = match (coverage, same_stream, recorder) {
                        (Coverage::Covered, _, _) | (_, true, _) => Offer::Ready,
                        (_, _, Recorder::AnyThread) => Offer::RecordFirst,
                        (_, _, Recorder::OwnAllocations) => Offer::Asked,
                        (_, _, Recorder::Nobody) => Offer::Never,
                    };
                    assert_eq!(offer, expected, "{recorder:?} {coverage:?} {same_stream}");
                    let asked = offer == Offer::Asked;
                    assert_eq!(shelf.coverage, if asked { Coverage::Wanted } else { coverage });
                    assert_eq!(shelf.donor, if asked { ARMED } else { Donor::No });
                }
            }
        }
    }

    #[test]
    fn before_reuse_waits_on_pending_frees_and_records_what_was_asked() {
        // (recorder, coverage, pending) -> (record, coverage after)
        let table = [
            (Recorder::OwnAllocations, Coverage::Wanted, false, true, Coverage::Covered),
            (Recorder::OwnAllocations, Coverage::Wanted, true, true, Coverage::Covered),
            (Recorder::OwnAllocations, Coverage::Covered, true, false, Coverage::Uncovered),
            (Recorder::OwnAllocations, Coverage::Uncovered, false, false, Coverage::Uncovered),
            // Registered since it was asked: anyone records it, when a taker comes.
            (Recorder::AnyThread, Coverage::Wanted, false, false, Coverage::Uncovered),
            (Recorder::AnyThread, Coverage::Covered, true, false, Coverage::Uncovered),
            (Recorder::Nobody, Coverage::Wanted, true, false, Coverage::Uncovered),
        ];
        for (recorder, coverage, pending, record, after) in table {
            let mut shelf = shelf(recorder, coverage, Donor::No);
            if pending {
                // An empty retired state may go once another stream freed into it.
                assert_eq!(shelf.foreign_free(OTHER), recorder == Recorder::Nobody);
                assert!(!shelf.reuse_is_free());
            }
            let expected_wait = if pending { vec![OTHER] } else { vec![] };
            assert_eq!(shelf.before_reuse(), BeforeReuse { wait: expected_wait, record }, "{recorder:?} {coverage:?} {pending}");
            if record {
                assert!(!shelf.reuse_is_free(), "a record asked for and not yet made");
                shelf.recorded();
            }
            assert_eq!(shelf.coverage, after, "{recorder:?} {coverage:?} {pending}");
            assert!(shelf.pending.is_empty());
            assert!(shelf.reuse_is_free());
        }
    }

    #[test]
    fn a_taker_waits_on_the_pending_frees_and_the_streams_event() {
        let mut shelf = shelf(Recorder::AnyThread, Coverage::Covered, Donor::No);
        shelf.foreign_free(OTHER);
        shelf.foreign_free(OTHER);
        assert_eq!(shelf.events_for_taker(false, OWN, false), vec![OTHER, OWN]);
        assert_eq!(shelf.events_for_taker(true, OWN, false), vec![OTHER], "a lane of the same stream needs no event of it");
        assert_eq!(shelf.events_for_taker(false, OWN, true), vec![], "the fault injection skips ordering");
        assert_eq!(shelf.pending, vec![OTHER], "the owner still waits on them");
    }

    #[test]
    fn a_retired_state_leaves_once_covered_and_empty() {
        for coverage in COVERAGES {
            for alive in [false, true] {
                let mut shelf = shelf(Recorder::AnyThread, coverage, Donor::No);
                let record = shelf.needs_last_record(alive);
                assert_eq!(record, alive && coverage != Coverage::Covered, "{coverage:?} {alive}");
                if record {
                    shelf.recorded();
                }
                shelf.retire();
                assert_eq!(shelf.may_leave(), record || coverage == Coverage::Covered, "{coverage:?} {alive}");
                assert_eq!(shelf.waits_for_synchronization(), !shelf.may_leave());
                shelf.learn_recorder(Recorder::AnyThread);
                assert_eq!(shelf.recorder, Recorder::Nobody, "a retired stream stays retired");
                assert!(!shelf.needs_last_record(true));
                shelf.device_synchronizing(7);
                shelf.device_synchronized(7);
                assert!(shelf.may_leave());
                assert!(shelf.foreign_free(OTHER), "an empty retired state may go after a foreign free");
                assert_eq!(shelf.leave(OWN), vec![OTHER, OWN]);
            }
        }
    }

    #[test]
    fn a_live_block_keeps_a_retired_state() {
        let mut shelf = shelf(Recorder::Nobody, Coverage::Covered, Donor::No);
        shelf.index_mut().add_chunk(1 << 20, 1 << 20);
        let (addr, _) = shelf.index_mut().allocate(256).expect("a block");
        assert!(!shelf.may_leave());
        assert!(!shelf.foreign_free(OTHER));
        shelf.index_mut().free_checked(addr, Some(256)).expect("freed");
        assert!(shelf.may_leave());
    }
}
