//! The stream registry: the map of stream states (a stream's own state keyed by identity,
//! its lanes beside it), looking a state up and each thread's cache of them, making states,
//! who may record a stream's event as the library learns it, and unannounced streams.
//!
//! Streams are keyed by identity, not handle value (RMM #2251; see `platform::streams` for
//! when a handle alone is trusted). Streams the library did not see made retire too, once
//! found destroyed (`Core::note_unannounced`: a state made for a handle an older state had,
//! or an amortized sweep asking the driver); while young, such a stream records its event at
//! its first frees that leave a chunk wholly free, so that what it freed is covered when it
//! goes with no word, and its memory goes on by events.

use super::lanes::{LANES, SPLIT_AT};
use super::shelf::{Recorder, Shelf};
use super::{BlockIndex, Core, StreamState, CACHES_GONE, CACHES_WATCH};
use crate::error::{Error, ErrorKind, Result};
use crate::platform::{backend, streams, Stream};
use crate::resources::FixedOrderHashMap;
use crate::sync::biased_lock::BiasedLock;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

/// How a thread found the state of a stream other than the legacy default stream, kept so that
/// its next call on that stream needs neither a lock nor the driver.
pub(super) struct CachedState<I> {
    handle: usize,
    /// `streams::epoch()` before the lookup: a handle forgotten since may name another stream.
    epoch: u64,
    /// The handle is not trusted (`platform::streams`): an allocation checks the driver's id.
    check_identity: bool,
    /// The thread that looked it up: a thread's slot of the core's cache goes to a new thread
    /// once it exits, and `cudaStreamPerThread` names another stream there.
    thread: u64,
    state: Arc<StreamState<I>>,
}

/// How many streams a thread's cache remembers.
const STATE_CACHE_SIZE: usize = 8;

/// (key, lane) -> state; see `StreamState::key`.
pub(super) type StreamStates<I> = FixedOrderHashMap<(u64, u64), Arc<StreamState<I>>>;

/// The streams of the states made for handles the library does not trust (`Recorder::
/// OwnAllocations`, other than per-thread default streams), which nothing tells the core of
/// when they are destroyed: `Core::note_unannounced` and `Core::sweep_unannounced` find the
/// dead ones.
pub(super) struct Unannounced {
    /// Handle -> the identity of the stream whose state was last made for it, until retired.
    pub(super) handles: FixedOrderHashMap<usize, u64>,
    /// How many handles make the next sweep: `SWEEP_AT`, or twice those the last sweep left
    /// (so that a program with many live streams pays O(1) driver calls per new stream).
    pub(super) sweep_at: usize,
}

/// Unannounced streams whose states make the first sweep (`Unannounced::sweep_at`).
pub(super) const SWEEP_AT: usize = 64;

impl<I: BlockIndex> Core<I> {
    /// Runs `f` on the state of `stream` (for an allocation when `allocating`): the legacy
    /// default stream's without touching a lock or reference count (the common case, inline),
    /// others through the thread's cache.
    #[inline(always)]
    pub(super) fn with_state<R>(&self, stream: Stream, allocating: bool, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
        match self.default_state_for(stream) {
            Some(state) => f(state),
            None => self.with_other_state(stream, allocating, f),
        }
    }

    /// The legacy default stream's state, when `stream` is that stream and its state exists:
    /// the common case, with no lock or reference count to go through.
    #[inline(always)]
    pub(super) fn default_state_for(&self, stream: Stream) -> Option<&Arc<StreamState<I>>> {
        if !matches!(stream, Stream::DEFAULT | Stream::LEGACY) {
            return None;
        }
        match self.per_thread_default_stream.load(Ordering::Relaxed) {
            false => self.default_state.get(),
            true => self.thread_states.get(),
        }
    }

    /// `with_state` for any other stream, or before the legacy default stream's state exists:
    /// the cached state if there is one (`cached_state`), else the one looked up.
    #[inline(always)]
    fn with_other_state<R>(&self, stream: Stream, allocating: bool, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
        match self.cached_state(stream, allocating)? {
            Some(state) => f(&state),
            None => self.with_state_looked_up(stream, f),
        }
    }

    /// The state this thread found last for `stream`, while the handle has not been forgotten
    /// since and, for a handle that is not trusted, the driver's id still matches at an
    /// allocation. The thread's cache stays borrowed while the state is used (a nested call on
    /// this thread through the same core goes without it).
    #[inline(always)]
    pub(super) fn cached_state(&self, stream: Stream, allocating: bool) -> Result<Option<std::cell::Ref<'_, Arc<StreamState<I>>>>> {
        let epoch = streams::epoch();
        if CACHES_GONE.get() {
            return Ok(None);
        }
        let Some(cache) = self.state_cache.get().and_then(|cache| cache.try_borrow().ok()) else { return Ok(None) };
        let Ok(entry) =
            std::cell::Ref::filter_map(cache, |cache| cache.iter().find(|entry| entry.handle == stream.0 && entry.epoch == epoch))
        else {
            return Ok(None);
        };
        let current = match (stream, allocating && entry.check_identity) {
            (Stream::PER_THREAD, _) => entry.thread == crate::sync::bias::thread_key(),
            (_, true) => self.untrusted_identity_matches(&entry.state, stream)?,
            (_, false) => true,
        };
        Ok(current.then(|| std::cell::Ref::map(entry, |entry| &entry.state)))
    }

    /// Whether the driver's id of `stream` is still `state`'s (the handle may have been
    /// destroyed and handed to a new stream since): the handle the call under way names
    /// (`streams::identity_of`).
    #[inline(never)]
    pub(super) fn identity_matches(&self, state: &StreamState<I>, stream: Stream) -> Result<bool> {
        Ok(streams::identity_of(stream)? == state.identity)
    }

    /// `identity_matches` for a state this thread cached for a handle it did not trust, on
    /// every allocation on that handle (`streams::identity_of_untrusted`).
    #[inline(never)]
    fn untrusted_identity_matches(&self, state: &StreamState<I>, stream: Stream) -> Result<bool> {
        Ok(streams::identity_of_untrusted(stream)? == state.identity)
    }

    /// `with_other_state` on a miss: finds the state in the shared map (making it if new) and
    /// remembers it in the thread's cache.
    #[inline(never)]
    pub(super) fn with_state_looked_up<R>(&self, stream: Stream, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
        // Before the lookup: a handle forgotten meanwhile leaves this entry stale.
        let epoch = streams::epoch();
        let (state, check_identity) = match stream {
            Stream::DEFAULT | Stream::LEGACY => {
                let state = match self.per_thread_default_stream.load(Ordering::Relaxed) {
                    false => self.default_state.get_or_try_init(|| self.state_from_map(0, Stream::DEFAULT, Recorder::AnyThread))?,
                    true => self.thread_states.get_or_try(|| self.state_from_map(0, Stream::DEFAULT, Recorder::AnyThread))?,
                };
                return f(state);
            }
            Stream::PER_THREAD => (self.state_from_map(streams::per_thread_identity(), stream, Recorder::OwnAllocations)?, false),
            stream => match streams::known_identity(stream) {
                Some(identity) => (self.state_from_map(identity, stream, Recorder::AnyThread)?, false),
                None => (self.state_from_map(streams::identity_of(stream)?, stream, Recorder::OwnAllocations)?, true),
            },
        };
        if CACHES_GONE.get() {
            return f(&state);
        }
        let cache = self.state_cache.get_or_default();
        let _ = CACHES_WATCH.try_with(|_| ());
        if let Ok(mut cache) = cache.try_borrow_mut() {
            cache.retain(|entry| entry.handle != stream.0);
            if cache.len() == STATE_CACHE_SIZE {
                cache.remove(0);
            }
            let thread = crate::sync::bias::thread_key();
            cache.insert(0, CachedState { handle: stream.0, epoch, check_identity, thread, state: state.clone() });
        }
        f(&state)
    }

    /// The state of the stream with `identity` (0: the legacy default stream; per-thread arenas
    /// key it by thread), made if new; `recorder` is who may record its event, as the caller just
    /// learned it.
    pub(super) fn state_from_map(&self, identity: u64, stream: Stream, recorder: Recorder) -> Result<Arc<StreamState<I>>> {
        let key = match identity {
            // A key no stream identity uses (top bit set), unique to the thread.
            0 if self.per_thread_default_stream.load(Ordering::Relaxed) => (1 << 63) | crate::sync::bias::thread_key(),
            identity => identity,
        };
        self.state_at(key, 0, identity, stream, recorder)
    }

    /// The state with `(key, lane)` in the map, made if new.
    pub(super) fn state_at(&self, key: u64, lane: u64, identity: u64, stream: Stream, recorder: Recorder) -> Result<Arc<StreamState<I>>> {
        {
            let streams = self.streams.read();
            if let Some(state) = streams.get(&(key, lane)) {
                Self::learn_recorder_of_stream(&streams, state, recorder);
                return Ok(state.clone());
            }
        }
        let mut streams = self.streams.write();
        if let Some(state) = streams.get(&(key, lane)) {
            Self::learn_recorder_of_stream(&streams, state, recorder);
            return Ok(state.clone());
        }
        if lane == 0 {
            self.refuse_other_devices_stream(stream)?;
        }
        let spare = self.spare_events.lock().pop();
        let event = match spare {
            Some(event) => event,
            None => backend()?.event_create(self.device)?,
        };
        let index = (self.new_index)();
        let unannounced = lane == 0 && recorder == Recorder::OwnAllocations && !streams::is_per_thread(identity);
        // Every stream's event is recorded when memory is taken from it, which covers blocks
        // parked for quick reuse too. An unannounced stream starts as a donor (`Shelf::new`),
        // so that once it is destroyed (which nothing tells the core of) what it freed is
        // covered (see `note_unannounced`).
        // A score to wear off makes the first allocation off the bias weigh it: with
        // `SPLIT_AT` 0 that one splits the stream.
        let shelf = BiasedLock::new(Shelf::new(index, recorder, unannounced, u32::from(*SPLIT_AT == 0)));
        let state = Arc::new(StreamState {
            stream,
            identity,
            key,
            lane,
            split: AtomicBool::new(false),
            sibling_takes: AtomicU32::new(0),
            event,
            shelf,
        });
        streams.insert((key, lane), state.clone());
        let replaced = match unannounced {
            true => self.unannounced.lock().handles.insert(stream.0, identity).filter(|&old| old != identity),
            false => return Ok(state),
        };
        drop(streams);
        self.note_unannounced(replaced);
        Ok(state)
    }

    /// A state was just made for an unannounced stream; `replaced` is the identity of the
    /// stream whose state was made for its handle before. Two live streams never share a
    /// handle, so that stream is gone: it retires (its last event covers what it freed when
    /// its frees recorded it, see `state_at`). Then, once enough unannounced streams have come
    /// since the last sweep, the driver is asked which of them are gone (`sweep_unannounced`).
    /// Failures are logged: the caller's allocation or free goes on.
    #[cold]
    #[inline(never)]
    fn note_unannounced(&self, replaced: Option<u64>) {
        let swept = self.sweep_unannounced();
        let retired = self.retire_dead(replaced.into_iter().chain(swept.iter().flatten().copied()).collect());
        if swept.is_some() {
            let mut unannounced = self.unannounced.lock();
            unannounced.sweep_at = (2 * unannounced.handles.len()).max(SWEEP_AT);
        }
        if let Err(e) = retired.and_then(|()| self.cover_dead_streams()) {
            log::warn!("{} resource: letting destroyed streams go: {e}", self.name);
        }
    }

    /// When the unannounced streams' handles reach `Unannounced::sweep_at`: asks the driver the
    /// identity each handle names now, and returns the streams whose handle names another
    /// stream or none (destroyed); None when it is not time to sweep. The library already asks
    /// this of an unannounced handle at each allocation on it. The caller sets the next sweep
    /// at twice the handles left once the dead are retired, so a program with many live
    /// streams pays O(1) amortized calls per new stream.
    ///
    /// On simulated devices only: a CUDA driver asked about the handle of a stream destroyed
    /// long ago crashed (a segmentation fault on an H200, 256 streams made and destroyed at a
    /// time, `bench/stream_churn.cu`'s batches), where asking about the handle a program passes
    /// now is the program's own risk. On a GPU only handle reuse finds dead streams.
    fn sweep_unannounced(&self) -> Option<Vec<u64>> {
        crate::platform::simulator()?;
        let handles: Vec<(usize, u64)> = {
            let mut unannounced = self.unannounced.lock();
            if unannounced.handles.len() < unannounced.sweep_at || crate::platform::process_exiting() {
                return None;
            }
            // One sweep at a time: others see no threshold until this one sets it again.
            unannounced.sweep_at = usize::MAX;
            unannounced.handles.iter().map(|(&handle, &identity)| (handle, identity)).collect()
        };
        let mut dead = Vec::new();
        if let Some(simulated) = crate::platform::simulator() {
            for (handle, identity) in handles {
                match simulated.stream_identity_for_sweep(Stream(handle)) {
                    Ok(now) if now == identity => {}
                    Ok(_) => dead.push(identity),
                    Err(e) if Self::names_no_stream(&e) => dead.push(identity),
                    // The driver could not tell: the stream is kept (at worst, a state stays).
                    Err(_) => {}
                }
            }
        }
        Some(dead)
    }

    /// Whether the driver's answer to a question about a stream handle says it names no stream.
    fn names_no_stream(error: &Error) -> bool {
        // CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_CONTEXT_IS_DESTROYED; the simulator's refusal.
        matches!(error.kind(), ErrorKind::InvalidArgument(_) | ErrorKind::InvalidHandle(_) | ErrorKind::Cuda { code: 400 | 709, .. })
    }

    /// Memory of this device is ordered on a stream of this device: an event of the device can
    /// be recorded only there. Checked once per stream, when its state is made (nothing is
    /// made for a refused stream, so each attempt is checked). The default streams are the
    /// device's own whichever device is current (calls for this device run in its context).
    fn refuse_other_devices_stream(&self, stream: Stream) -> Result<()> {
        if matches!(stream, Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD) {
            return Ok(());
        }
        if backend()?.single_device() {
            return Ok(());
        }
        let owner = streams::device_of(stream)?;
        if owner != self.device {
            return Err(Error::invalid(format!(
                "stream {:#x} belongs to device {owner}: memory of device {} is allocated on a stream of device {} (or a \
                 default stream)",
                stream.0, self.device, self.device
            )));
        }
        Ok(())
    }

    /// A stream first used before it was announced (`rmmStreamRegister`) may be recorded by
    /// anyone from then on. A retired stream stays retired.
    fn learn_recorder(state: &StreamState<I>, recorder: Recorder) {
        state.shelf.lock().learn_recorder(recorder);
    }

    /// `learn_recorder` for a stream's own state and, once it is split, its lanes.
    fn learn_recorder_of_stream(streams: &StreamStates<I>, state: &StreamState<I>, recorder: Recorder) {
        Self::learn_recorder(state, recorder);
        if state.lane == 0 && state.split.load(Ordering::Relaxed) {
            (1..=LANES).filter_map(|lane| streams.get(&(state.key, lane))).for_each(|lane| Self::learn_recorder(lane, recorder));
        }
    }
}
