//! Retirement: a destroyed stream (announced, or found destroyed) records its event one last
//! time and never uses its handle again (`Core::retire_stream`); its state leaves the core once
//! it holds no live block and its event covers its frees (`Core::prune`), its free chunks go to
//! the graveyard for any stream to take, and its event is made spare once nothing holds it.

use super::lanes::LANES;
use super::{BlockIndex, Core, Growing, Shelf, StreamState};
use crate::error::Result;
use crate::platform::{backend, Event, Stream};
use crate::resources::FixedOrderHashMap;
use crate::sync::biased_lock::BiasedLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// What is left of retired streams (`Core::retire_stream`).
pub(super) struct Retired<I> {
    /// Retired states still in the map: they hold live blocks, or frees their last event does
    /// not cover (until a device synchronization), or they could not be pruned yet.
    pub(super) lingering: Vec<Arc<StreamState<I>>>,
    /// Holds the free chunks of pruned states (owners name it), for any stream to take once it
    /// waits on the chunk's events; made with the first such chunk. Not in the map.
    pub(super) graveyard: Option<Arc<StreamState<I>>>,
    /// Chunk base in the graveyard -> the events a taker waits on: the pruned state's own, last
    /// recorded when its stream retired, and those pending on its index then.
    pub(super) chunk_events: FixedOrderHashMap<usize, Vec<Event>>,
    /// Events of pruned states that a pending list or `chunk_events` may still hold; each is
    /// made spare (`Core::spare_events`) once none does.
    pub(super) events: Vec<Event>,
    /// The peaks in use of pruned states, which `Usage::peak_live` still sums.
    pub(super) peak_used_bytes: usize,
    /// Lingering states, found at the last prune, that hold no live block but frees no event
    /// covers: only a device synchronization lets them go (`Core::cover_dead_streams`).
    pub(super) uncovered: usize,
}

impl<I> Default for Retired<I> {
    fn default() -> Self {
        Retired {
            lingering: Vec::new(),
            graveyard: None,
            chunk_events: FixedOrderHashMap::default(),
            events: Vec::new(),
            peak_used_bytes: 0,
            uncovered: 0,
        }
    }
}

/// Retired states that only a device synchronization lets go (their frees no event covers)
/// before one synchronization covers them all (`Core::cover_dead_streams`).
const UNCOVERED_SYNC_AT: usize = 64;

/// The identity of the graveyard (`Retired::graveyard`): no stream's.
pub(super) const GRAVEYARD: u64 = u64::MAX;

impl<I: BlockIndex> Core<I> {
    /// Retires the unannounced streams with `identities`, found destroyed (`alive` None), and
    /// prunes what can go.
    pub(super) fn retire_dead(&self, identities: Vec<u64>) -> Result<()> {
        if identities.is_empty() {
            return Ok(());
        }
        for identity in identities {
            self.retire_states(identity, None)?;
        }
        self.prune_retired_unless_growing()
    }

    /// Once `UNCOVERED_SYNC_AT` retired states linger only for frees no event covers (streams
    /// destroyed unannounced after frees their own allocations never recorded, e.g. more chunk
    /// emptyings than `DONOR_PATIENCE`): one device synchronization covers them all, and they
    /// go. Amortized: one synchronization per `UNCOVERED_SYNC_AT` such streams.
    pub(super) fn cover_dead_streams(&self) -> Result<()> {
        if self.retired.lock().uncovered < UNCOVERED_SYNC_AT {
            return Ok(());
        }
        let Some(growing) = &self.try_lock_growing() else { return Ok(()) };
        self.synchronize_device()?;
        self.prune_retired(growing)
    }

    /// The stream with `identity` is about to be destroyed, or its handle was handed to another
    /// stream already (`alive` None): records its event one last time while `alive` still names
    /// it, so that the event covers every free made there, and never uses its handle again.
    ///
    /// Its state (and its lanes') then goes, so that streams made and destroyed by the million
    /// cost nothing once gone (`prune_retired`, here when no growth runs, else at the next slow
    /// allocation): its free chunks move to the graveyard with the events a taker must wait on
    /// (its own and those pending on its index), as a stream taking them from its state would
    /// have; its event is given to a new state once no pending list or chunk holds it. A state
    /// that still holds live blocks stays until the last one is freed (by address, from
    /// another stream), one whose frees its last event does not cover (`alive` None) until a
    /// device synchronization.
    pub fn retire_stream(&self, identity: u64, alive: Option<Stream>) -> Result<()> {
        if !self.retire_states(identity, alive)? {
            return Ok(());
        }
        self.prune_retired_unless_growing()
    }

    /// `retire_stream` without the prune: whether the stream had a state here.
    fn retire_states(&self, identity: u64, alive: Option<Stream>) -> Result<bool> {
        let states: Vec<_> = {
            let streams = self.streams.read();
            let own = streams.get(&(identity, 0)).cloned();
            let split = own.as_ref().is_some_and(|state| state.split.load(Ordering::Relaxed));
            let lanes = (1..=LANES).filter(|_| split).filter_map(|lane| streams.get(&(identity, lane)).cloned());
            own.into_iter().chain(lanes.collect::<Vec<_>>()).collect()
        };
        if states.is_empty() {
            return Ok(false);
        }
        if let Some(own) = states.first().filter(|own| own.lane == 0) {
            let mut unannounced = self.unannounced.lock();
            if unannounced.handles.get(&own.stream.0) == Some(&identity) {
                unannounced.handles.remove(&own.stream.0);
            }
        }
        for state in &states {
            let mut shelf = state.shelf.lock();
            if let Some(stream) = alive.filter(|_| shelf.needs_last_record(true)) {
                backend()?.event_record(self.device, state.event, stream)?;
                shelf.recorded();
            }
            shelf.retire();
            drop(shelf);
            // Other threads prune and take from retired shelves: the thread that used this one
            // (destroying its stream, most often) lets them in without a membarrier.
            state.shelf.relinquish();
        }
        {
            let mut retired = self.retired.lock();
            for state in states {
                if !retired.lingering.iter().any(|lingering| Arc::ptr_eq(lingering, &state)) {
                    retired.lingering.push(state);
                }
            }
        }
        Ok(true)
    }

    /// `prune_retired` now, unless a growth or reclaim holds `growing` (which prunes itself at
    /// the next slow allocation): callers on the free and retire paths never wait for it.
    pub(super) fn prune_retired_unless_growing(&self) -> Result<()> {
        match &self.try_lock_growing() {
            Some(growing) => self.prune_retired(growing),
            None => Ok(()),
        }
    }

    /// Prunes every retired state that can go now, then makes spare the events of pruned
    /// states that nothing holds any more.
    pub(super) fn prune_retired(&self, growing: &Growing<'_>) -> Result<()> {
        self.check_growing(growing);
        let lingering = std::mem::take(&mut self.retired.lock().lingering);
        if lingering.is_empty() && self.retired.lock().events.is_empty() {
            return Ok(());
        }
        let mut staying = Vec::new();
        let mut result = Ok(());
        for state in lingering {
            match result.is_ok().then(|| self.prune(growing, &state)) {
                Some(Ok(true)) => {}
                Some(Err(e)) => {
                    result = Err(e);
                    staying.push(state);
                }
                _ => staying.push(state),
            }
        }
        let uncovered = staying.iter().filter(|state| state.shelf.lock().waits_for_synchronization()).count();
        let mut retired = self.retired.lock();
        retired.uncovered = uncovered;
        retired.lingering.extend(staying);
        drop(retired);
        self.spare_unheld_events(growing);
        result
    }

    /// Takes the retired `state` out of the map when it holds no live block and its event
    /// covers every free made there (its stream's before it retired, others' by the pending
    /// events): its chunks, all free, go to the graveyard with those events. Whether it went.
    fn prune(&self, growing: &Growing<'_>, state: &Arc<StreamState<I>>) -> Result<bool> {
        self.check_growing(growing);
        if !state.shelf.lock().may_leave() {
            return Ok(false);
        }
        let graveyard = self.graveyard()?;
        let mut retired = self.retired.lock();
        {
            let mut streams = self.streams.write();
            match streams.get(&(state.key, state.lane)) {
                Some(found) if Arc::ptr_eq(found, state) => streams.remove(&(state.key, state.lane)),
                _ => return Ok(true),
            };
        }
        let mut shelf = state.shelf.lock();
        let chunks = shelf.index_mut().take_wholly_free_chunks();
        if shelf.index().used_blocks() > 0 {
            // A block handed out since the check (by no caller that keeps stream order's rules):
            // the state stays.
            chunks.iter().for_each(|chunk| shelf.index_mut().add_chunk(chunk.base, chunk.size));
            drop(shelf);
            self.streams.write().insert((state.key, state.lane), state.clone());
            return Ok(false);
        }
        let events = shelf.leave(state.event);
        retired.peak_used_bytes += shelf.index().peak_used_bytes();
        drop(shelf);
        if !chunks.is_empty() {
            let mut owners = self.owners.write();
            for chunk in &chunks {
                owners.insert(chunk.base, (chunk.size, graveyard.clone()));
            }
            drop(owners);
            let mut shelf = graveyard.shelf.lock();
            for chunk in &chunks {
                shelf.index_mut().add_chunk(chunk.base, chunk.size);
                retired.chunk_events.insert(chunk.base, events.clone());
            }
        }
        retired.events.push(state.event);
        Ok(true)
    }

    /// The graveyard (`Retired::graveyard`), made if new.
    fn graveyard(&self) -> Result<Arc<StreamState<I>>> {
        if let Some(graveyard) = &self.retired.lock().graveyard {
            return Ok(graveyard.clone());
        }
        let event = backend()?.event_create(self.device)?;
        let shelf = BiasedLock::new(Shelf::graveyard((self.new_index)()));
        let graveyard = Arc::new(StreamState {
            stream: Stream::DEFAULT,
            identity: GRAVEYARD,
            key: GRAVEYARD,
            lane: 0,
            split: AtomicBool::new(false),
            sibling_takes: AtomicU32::new(0),
            event,
            shelf,
        });
        Ok(self.retired.lock().graveyard.get_or_insert(graveyard).clone())
    }

    /// Makes spare the events of pruned states that no pending list and no graveyard chunk
    /// holds: under `growing`, under which events are copied out of those lists to be waited
    /// on.
    fn spare_unheld_events(&self, growing: &Growing<'_>) {
        self.check_growing(growing);
        let mut retired = self.retired.lock();
        if retired.events.is_empty() {
            return;
        }
        let mut held: std::collections::HashSet<Event> = retired.chunk_events.values().flatten().copied().collect();
        for state in self.streams.read().values() {
            held.extend(state.shelf.lock().pending().iter().copied());
        }
        let mut spare = Vec::new();
        retired.events.retain(|event| match held.contains(event) {
            true => true,
            false => {
                spare.push(*event);
                false
            }
        });
        drop(retired);
        self.spare_events.lock().extend(spare);
    }
}
