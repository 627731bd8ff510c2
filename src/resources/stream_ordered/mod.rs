//! The stream-ordered machinery shared by the pool-like resources: the pool, the arena, the
//! fixed-size resource (and with it binning's bins) and the expandable resource's parts.
//!
//! Each stream has its own free-block index, so threads on different streams never meet on a
//! lock, and a block freed on a stream is reused on that stream with no synchronization. Each
//! upstream chunk belongs to one stream's index at a time. When a stream runs dry it takes, in
//! order: a wholly free chunk from another stream, a new chunk from upstream (growing
//! geometrically, backing off when upstream fails), a single block from another stream, and
//! finally, after a device synchronization, the wholly free chunks of every stream back
//! upstream to grow again.
//!
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
//! takes elsewhere meanwhile). Streams the library did not see made retire too, once found
//! destroyed (`Core::note_unannounced`: a state made for a handle an older state had, or an
//! amortized sweep asking the driver); while young, such a stream records its event at its
//! first frees that leave a chunk wholly free, so that what it freed is covered when it goes
//! with no word, and its memory goes on by events. A block freed on a stream other than its
//! owner's leaves the freeing stream's event pending on the owner's index: whoever reuses
//! blocks from there waits on it first. Streams are keyed by identity, not handle value (RMM #2251; see
//! `platform::streams` for when a handle alone is trusted).
//!
//! Threads that allocate on one stream at the same time would all meet on its shelf's lock.
//! Once they collide there often enough (`Core::weigh_collision`), the stream splits into
//! lanes: each thread allocates in a lane of its own, a state with the stream's identity and
//! handle and an index of its own, so a thread that frees its own blocks touches no other
//! thread's lock, and each free is still checked by the index that handed the block out.
//! Lanes of one stream share its order, so memory moves between them (a block freed into
//! another lane, a chunk taken from one) with no event. Threads that only take turns on a
//! stream (PyTorch's forward and autograd threads) do not collide and keep one index, whose
//! free memory they share.

mod mapped;

pub use mapped::{MappedGrowth, PageMapper};

use crate::error::{Error, ErrorKind, Result};
use crate::platform::sim::SimDevices;
use crate::platform::{backend, streams, Event, Stream};
use crate::resources::MemoryResource;
use crate::sync::biased_lock::{BiasedGuard, BiasedLock};
use crate::sync::per_thread::PerThread;
use crate::units;
use parking_lot::{Mutex, RwLock};
use rmm_suballoc::fixed_blocks::FixedBlocks;
use rmm_suballoc::tlsf::{BlockView, Chunk, Cut, Freed, Refused, Tlsf, GRANULE};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// What the stream-ordered core needs of a free-block index.
pub trait BlockIndex: Send + 'static {
    /// (address, size actually reserved) of a block of at least `bytes` bytes.
    fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)>;
    /// The size of the used block at `addr` and the bytes it was handed out for, if it is one.
    fn used_block(&self, addr: usize) -> Option<(usize, usize)>;
    /// Frees the used block at `addr`, refusing it when it was handed out for another size
    /// than `bytes`.
    fn free_checked(&mut self, addr: usize, bytes: Option<usize>) -> std::result::Result<Freed, Refused>;
    /// The blocks of the chunk at `base`, for snapshots.
    fn chunk_blocks(&self, base: usize) -> Vec<BlockView>;
    /// Blocks handed out and not yet freed.
    fn used_blocks(&self) -> usize;
    /// Lets the index keep recently freed blocks aside for quick reuse, or not (see `Tlsf`).
    fn set_parking(&mut self, _on: bool) {}
    /// Adds `[base, base + size)`, a chunk from upstream, as free memory of the index.
    fn add_chunk(&mut self, base: usize, size: usize);
    /// Removes every chunk with nothing in use and returns them, for release upstream.
    fn take_wholly_free_chunks(&mut self) -> Vec<Chunk>;
    /// Removes one chunk of at least `bytes` with nothing in use (`Tlsf` takes the smallest such),
    /// for another stream to take.
    fn take_free_chunk(&mut self, bytes: usize) -> Option<Chunk>;
    /// Bytes free for allocation (parked blocks included).
    fn free_bytes(&self) -> usize;
    /// Bytes of all chunks the index holds, used and free.
    fn chunk_bytes(&self) -> usize;
    /// The size of the largest block one allocation could get now (0 when none is free).
    fn largest_free_block(&self) -> usize;
    /// The most bytes in use at once.
    fn peak_used_bytes(&self) -> usize;
    /// Checks the index's internal consistency; the first broken invariant, in words. Tests call
    /// it after every operation.
    fn check_invariants(&self) -> std::result::Result<(), String>;
    /// The chunk at `base` and the free bytes at its end (indexes whose chunks can grow).
    fn free_tail(&self, _base: usize) -> Option<(Chunk, usize)> {
        None
    }
    /// The free bytes at the start of the chunk at `base` (indexes whose chunks can grow).
    fn free_head(&self, _base: usize) -> Option<usize> {
        None
    }
    /// Grows the chunk at `base` at its end; false when the index cannot.
    fn extend_chunk(&mut self, _base: usize, _extra: usize) -> bool {
        false
    }
    /// Cuts the free end of the chunk at `base` back to whole `unit`s; the range cut off.
    fn trim_free_tail(&mut self, _base: usize, _unit: usize) -> Option<(usize, usize)> {
        None
    }
    /// Cuts whole free `unit`s out of the middle of chunks, at least `budget` bytes if there
    /// are (indexes whose chunks can be cut).
    fn cut_free_pages(&mut self, _unit: usize, _budget: usize) -> Vec<Cut> {
        Vec::new()
    }
    /// Joins the chunk at `second` onto the chunk at `first`, which ends where it starts.
    fn join_chunks(&mut self, _first: usize, _second: usize) -> bool {
        false
    }
}

macro_rules! forward_block_index {
    ($ty:ty, growable) => {
        forward_block_index!($ty, {
            fn set_parking(&mut self, on: bool) {
                <$ty>::set_parking(self, on)
            }
            fn free_tail(&self, base: usize) -> Option<(Chunk, usize)> {
                <$ty>::free_tail(self, base)
            }
            fn free_head(&self, base: usize) -> Option<usize> {
                <$ty>::free_head(self, base)
            }
            fn extend_chunk(&mut self, base: usize, extra: usize) -> bool {
                <$ty>::extend_chunk(self, base, extra)
            }
            fn trim_free_tail(&mut self, base: usize, unit: usize) -> Option<(usize, usize)> {
                <$ty>::trim_free_tail(self, base, unit)
            }
            fn cut_free_pages(&mut self, unit: usize, budget: usize) -> Vec<Cut> {
                <$ty>::cut_free_pages(self, unit, budget)
            }
            fn join_chunks(&mut self, first: usize, second: usize) -> bool {
                <$ty>::join_chunks(self, first, second)
            }
        });
    };
    ($ty:ty) => {
        forward_block_index!($ty, {});
    };
    ($ty:ty, { $($extra:item)* }) => {
        impl BlockIndex for $ty {
            $($extra)*
            #[inline(always)]
            fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
                <$ty>::allocate(self, bytes)
            }
            fn used_block(&self, addr: usize) -> Option<(usize, usize)> {
                <$ty>::used_block(self, addr)
            }
            fn chunk_blocks(&self, base: usize) -> Vec<BlockView> {
                <$ty>::chunk_blocks(self, base)
            }
            #[inline(always)]
            fn free_checked(&mut self, addr: usize, bytes: Option<usize>) -> std::result::Result<Freed, Refused> {
                <$ty>::free_checked(self, addr, bytes)
            }
            fn used_blocks(&self) -> usize {
                <$ty>::used_blocks(self)
            }
            fn add_chunk(&mut self, base: usize, size: usize) {
                <$ty>::add_chunk(self, base, size)
            }
            fn take_wholly_free_chunks(&mut self) -> Vec<Chunk> {
                <$ty>::take_wholly_free_chunks(self)
            }
            fn take_free_chunk(&mut self, bytes: usize) -> Option<Chunk> {
                <$ty>::take_free_chunk(self, bytes)
            }
            fn free_bytes(&self) -> usize {
                <$ty>::free_bytes(self)
            }
            fn chunk_bytes(&self) -> usize {
                <$ty>::chunk_bytes(self)
            }
            fn largest_free_block(&self) -> usize {
                <$ty>::largest_free_block(self)
            }
            fn peak_used_bytes(&self) -> usize {
                <$ty>::peak_used_bytes(self)
            }
            fn check_invariants(&self) -> std::result::Result<(), String> {
                <$ty>::check_invariants(self)
            }
        }
    };
}
forward_block_index!(Tlsf, growable);
forward_block_index!(FixedBlocks);

/// How many streams a thread's cache remembers.
const STATE_CACHE_SIZE: usize = 8;

/// The lanes a split stream has: a thread allocates in lane `1 + thread key % LANES`, so
/// threads that come and go reuse lanes instead of leaving one each behind.
const LANES: u64 = 64;
/// A stream splits into lanes when its collision score reaches this: each allocation that
/// found its shelf's lock held adds `COLLISION_WEIGHT`, and each that took the lock
/// unopposed (but not through the bias) takes one away, so that threads taking turns, which
/// collide only now and then, never split it. `RMM_LANES_SPLIT_AT` sets another score (the
/// fuzzers use 0: split as soon as a second thread allocates).
static SPLIT_AT: once_cell::sync::Lazy<u32> =
    once_cell::sync::Lazy::new(|| std::env::var("RMM_LANES_SPLIT_AT").ok().and_then(|at| at.parse().ok()).unwrap_or(256));
const COLLISION_WEIGHT: u32 = 8;

thread_local! {
    /// Set when this thread's thread-locals begin to be destroyed (calls from their destructors
    /// still come): the per-thread caches (`PerThread`, whose `thread_local::ThreadLocal`
    /// panics once destroyed) are not touched from then on.
    static CACHES_GONE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Made right after a thread first uses a per-thread cache, so that (thread-locals are
    /// destroyed last made, first gone) it goes before the cache's thread-local does.
    static CACHES_WATCH: CachesWatch = const { CachesWatch };
}

struct CachesWatch;

impl Drop for CachesWatch {
    fn drop(&mut self) {
        CACHES_GONE.set(true);
    }
}

/// How a thread found the state of a stream other than the legacy default stream, kept so that
/// its next call on that stream needs neither a lock nor the driver.
struct CachedState<I> {
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
    fn unit(&self) -> usize {
        match self {
            Growth::Geometric { granularity } => *granularity,
            Growth::Fixed { smallest, .. } => *smallest,
            Growth::Mapped(mapped) => mapped.page,
        }
    }

    fn mapped(&self) -> Option<&MappedGrowth> {
        match self {
            Growth::Mapped(mapped) => Some(mapped),
            _ => None,
        }
    }
}

/// Who may record a stream's event on its handle, to cover the frees made there since it was
/// last recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recorder {
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

/// A stream's free blocks, and the events of other streams whose frees into this index must
/// be waited on before its blocks are reused.
struct Shelf<I> {
    index: I,
    pending: Vec<Event>,
    /// The owning stream freed blocks here (or waited for other streams' frees) after it last
    /// recorded its event, so that event does not cover every free block: another stream takes
    /// memory from here only after recording it, or after a device synchronization.
    unrecorded_frees: bool,
    /// Another stream wanted memory from here while only the stream's own allocations may
    /// record: the next one records.
    record_wanted: bool,
    /// While other streams take memory from here and only the stream's own calls may record
    /// (`Recorder::OwnAllocations`): how many more frees that leave a chunk wholly free record
    /// the event for them, unless one takes memory meanwhile (which starts the count again).
    /// Such a stream parks no block, so that its frees tell when a chunk becomes free.
    donor: u8,
    recorder: Recorder,
    /// The collision score (see `SPLIT_AT`).
    collisions: u32,
}

/// How many events a donor stream records with nobody taking memory before it stops.
const DONOR_PATIENCE: u8 = 8;

/// Aligned to two cache lines: its shelf is written on every allocation and free, and must
/// not share a line with anything another thread writes (the driver's threads allocate too).
#[repr(align(128))]
struct StreamState<I> {
    /// The handle the stream had when its state was made: used by other threads only while the
    /// shelf's `recorder` is `AnyThread`.
    stream: Stream,
    identity: u64,
    /// Its key in `Core::streams`: the stream's state is (key, 0), its lanes (key, 1..=LANES).
    key: u64,
    lane: u64,
    /// Threads collided on this stream: each allocates in its own lane from now on.
    split: AtomicBool,
    event: Event,
    shelf: BiasedLock<Shelf<I>>,
}

/// Chunk base -> (size, the stream whose index holds it).
type ChunkOwners<I> = BTreeMap<usize, (usize, Arc<StreamState<I>>)>;

/// (key, lane) -> state; see `StreamState::key`.
type StreamStates<I> = HashMap<(u64, u64), Arc<StreamState<I>>>;

/// A thread's lanes of split streams, each with its stream's own state (held, so that its
/// address, which `own_lane` looks lanes up by, is not another state's while the entry lasts).
type ThreadLanes<I> = std::cell::RefCell<Vec<LaneOf<I>>>;

/// (a split stream's own state, the thread's lane of it).
type LaneOf<I> = (Arc<StreamState<I>>, Arc<StreamState<I>>);

/// What is left of retired streams (`Core::retire_stream`).
struct Retired<I> {
    /// Retired states still in the map: they hold live blocks, or frees their last event does
    /// not cover (until a device synchronization), or they could not be pruned yet.
    lingering: Vec<Arc<StreamState<I>>>,
    /// Holds the free chunks of pruned states (owners name it), for any stream to take once it
    /// waits on the chunk's events; made with the first such chunk. Not in the map.
    graveyard: Option<Arc<StreamState<I>>>,
    /// Chunk base in the graveyard -> the events a taker waits on: the pruned state's own, last
    /// recorded when its stream retired, and those pending on its index then.
    chunk_events: HashMap<usize, Vec<Event>>,
    /// Events of pruned states that a pending list or `chunk_events` may still hold; each is
    /// made spare (`Core::spare_events`) once none does.
    events: Vec<Event>,
    /// The peaks in use of pruned states, which `Usage::peak_live` still sums.
    peak_used_bytes: usize,
    /// Lingering states, found at the last prune, that hold no live block but frees no event
    /// covers: only a device synchronization lets them go (`Core::cover_dead_streams`).
    uncovered: usize,
}

impl<I> Default for Retired<I> {
    fn default() -> Self {
        Retired {
            lingering: Vec::new(),
            graveyard: None,
            chunk_events: HashMap::new(),
            events: Vec::new(),
            peak_used_bytes: 0,
            uncovered: 0,
        }
    }
}

/// The streams of the states made for handles the library does not trust (`Recorder::
/// OwnAllocations`, other than per-thread default streams), which nothing tells the core of
/// when they are destroyed: `Core::note_unannounced` and `Core::sweep_unannounced` find the
/// dead ones.
struct Unannounced {
    /// Handle -> the identity of the stream whose state was last made for it, until retired.
    handles: HashMap<usize, u64>,
    /// How many handles make the next sweep: `SWEEP_AT`, or twice those the last sweep left
    /// (so that a program with many live streams pays O(1) driver calls per new stream).
    sweep_at: usize,
}

/// Unannounced streams whose states make the first sweep (`Unannounced::sweep_at`).
const SWEEP_AT: usize = 64;

/// Retired states that only a device synchronization lets go (their frees no event covers)
/// before one synchronization covers them all (`Core::cover_dead_streams`).
const UNCOVERED_SYNC_AT: usize = 64;

/// The identity of the graveyard (`Retired::graveyard`): no stream's.
const GRAVEYARD: u64 = u64::MAX;

/// A stream-ordered suballocator over an upstream resource. `StreamOrdered` owns it; a
/// resource that calls it directly (an adaptor over a pool, binning over its bins) holds it
/// too.
pub struct Core<I: BlockIndex> {
    name: &'static str,
    upstream: Arc<dyn MemoryResource>,
    device: i32,
    growth: Growth,
    /// Bytes reserved at creation, which a failed reclaim restores.
    initial: usize,
    maximum: usize,
    reserved: AtomicUsize,
    peak_reserved: AtomicUsize,
    streams: RwLock<StreamStates<I>>,
    /// The legacy default stream's state (also in `streams`), reached without a lock.
    default_state: once_cell::sync::OnceCell<Arc<StreamState<I>>>,
    /// With per-thread default streams: each thread's state (also in `streams`), reached
    /// without a lock or a reference count.
    thread_states: PerThread<Arc<StreamState<I>>>,
    /// Each thread's most recently used stream states (`with_other_state`): spares a lookup
    /// under the shared map's lock, which every thread's allocations would otherwise meet on.
    state_cache: PerThread<std::cell::RefCell<Vec<CachedState<I>>>>,
    lanes: PerThread<ThreadLanes<I>>,
    owners: RwLock<ChunkOwners<I>>,
    /// Serializes growth and reclaim, not the fast path; also pruning retired states and making
    /// their events spare, so that events copied out of a pending list to be waited on (which
    /// happens under it) are not given to a new state meanwhile.
    growing: Mutex<()>,
    retired: Mutex<Retired<I>>,
    /// Unannounced streams' handles (taken under the map's lock, never on the fast path).
    unannounced: Mutex<Unannounced>,
    /// Events no pending list or chunk holds any more, for new states (a lock of its own, taken
    /// under the map's).
    spare_events: Mutex<Vec<Event>>,
    new_index: Box<dyn Fn() -> I + Send + Sync>,
    /// Give each thread its own index for the legacy default stream (arenas): blocks stay on
    /// one stream, so no ordering is needed between those indexes.
    per_thread_default_stream: AtomicBool,
    /// Fault injection for tests: skip the cross-stream ordering edges, which the simulator's
    /// race checker must then report.
    omit_ordering: AtomicBool,
    /// The simulator's race checker, told of every block handed out and freed; None on a GPU.
    /// Looked up once, so that a GPU's fast path pays one test for it, not a look at the backend.
    race_checker: Option<&'static SimDevices>,
}

/// Implements the `MemoryResource` methods that a resource built on one `StreamOrdered` (in
/// field `$core`) answers straight from it.
#[macro_export]
#[doc(hidden)]
macro_rules! stream_ordered_resource_methods {
    ($core:ident) => {
        fn device(&self) -> i32 {
            self.$core.device()
        }

        fn release(&self) -> $crate::error::Result<usize> {
            self.$core.release_free_chunks()
        }

        fn pool_size(&self) -> Option<usize> {
            Some(self.$core.held())
        }

        fn footprint(&self) -> Option<$crate::resources::Footprint> {
            Some(self.$core.usage().footprint())
        }

        fn pool_free(&self) -> Option<usize> {
            Some(self.$core.usage().free)
        }

        fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn $crate::resources::MemoryResource)) {
            visit(self.$core.upstream())
        }
    };
}

/// The owner of a `Core`: what resources hold.
pub struct StreamOrdered<I: BlockIndex> {
    core: Arc<Core<I>>,
}

impl<I: BlockIndex> StreamOrdered<I> {
    /// A suballocator over `upstream` that reserves `initial` bytes up front and may hold up
    /// to `maximum` (0: no limit).
    pub fn new(
        name: &'static str,
        upstream: Arc<dyn MemoryResource>,
        growth: Growth,
        initial: usize,
        maximum: usize,
        new_index: impl Fn() -> I + Send + Sync + 'static,
    ) -> Result<Self> {
        if maximum != 0 && initial > maximum {
            return Err(Error::invalid(format!(
                "the {name} resource's initial size {} exceeds its maximum {} (device {})",
                units::exact(initial),
                units::exact(maximum),
                upstream.device()
            )));
        }
        let core = Core::new(name, upstream, growth, initial, maximum, new_index);
        if initial > 0 {
            core.with_state(Stream::DEFAULT, true, |state| {
                let _guard = core.growing.lock();
                core.add_upstream_chunk(state, initial, Stream::DEFAULT).map(drop)
            })?;
        }
        Ok(StreamOrdered { core })
    }

    /// The core itself, for a resource that calls it directly.
    pub(crate) fn shared_core(&self) -> Arc<Core<I>> {
        self.core.clone()
    }

    /// One index per thread on the legacy default stream (arenas).
    pub fn with_per_thread_default_stream(self) -> Self {
        self.core.per_thread_default_stream.store(true, Ordering::Relaxed);
        self
    }
}

impl<I: BlockIndex> std::ops::Deref for StreamOrdered<I> {
    type Target = Core<I>;
    fn deref(&self) -> &Core<I> {
        &self.core
    }
}

/// Figures for introspection and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes of chunks held from upstream (for the expandable resource, the physical pages it
    /// holds, mapped or kept for reuse).
    pub reserved: usize,
    /// The most bytes `reserved` has been.
    pub peak_reserved: usize,
    /// Bytes inside chunks that are free for allocation on some stream.
    pub free: usize,
    /// Bytes inside chunks that are handed out (blocks rounded up to the index's unit).
    pub live: usize,
    /// The sum of each stream's (and lane's) peak in use.
    pub peak_live: usize,
    /// The largest block one allocation could get without growing, on the stream that holds it.
    pub largest_free_block: usize,
    /// Chunks held from upstream.
    pub chunks: usize,
    /// Streams that have a state here (lanes not counted).
    pub streams: usize,
    /// Lanes of streams split by the threads that allocate there (see the module comment).
    pub lanes: usize,
}

impl Usage {
    /// The figures in the form every resource reports (`MemoryResource::footprint`).
    pub fn footprint(&self) -> crate::resources::Footprint {
        crate::resources::Footprint {
            reserved: self.reserved,
            peak_reserved: self.peak_reserved,
            live: self.live,
            peak_live: self.peak_live,
            largest_free_block: self.largest_free_block,
        }
    }
}

impl<I: BlockIndex> Core<I> {
    fn new(
        name: &'static str,
        upstream: Arc<dyn MemoryResource>,
        growth: Growth,
        initial: usize,
        maximum: usize,
        new_index: impl Fn() -> I + Send + Sync + 'static,
    ) -> Arc<Self> {
        let maximum = if maximum == 0 { usize::MAX } else { maximum };
        let core = Arc::new(Core {
            name,
            device: upstream.device(),
            upstream,
            growth,
            initial,
            maximum,
            reserved: AtomicUsize::new(0),
            peak_reserved: AtomicUsize::new(0),
            streams: RwLock::new(HashMap::new()),
            default_state: once_cell::sync::OnceCell::new(),
            thread_states: PerThread::default(),
            state_cache: PerThread::default(),
            lanes: PerThread::default(),
            owners: RwLock::new(BTreeMap::new()),
            growing: Mutex::new(()),
            retired: Mutex::new(Retired::default()),
            unannounced: Mutex::new(Unannounced { handles: HashMap::new(), sweep_at: SWEEP_AT }),
            spare_events: Mutex::new(Vec::new()),
            new_index: Box::new(new_index),
            omit_ordering: AtomicBool::new(false),
            race_checker: crate::platform::simulator(),
            per_thread_default_stream: AtomicBool::new(false),
        });
        let cache: Arc<dyn super::caches::Cache> = core.clone();
        super::caches::register(core.device, Arc::downgrade(&cache));
        core
    }

    /// Tells the race checker that `[addr, addr + size)` is handed out in the order of `stream`.
    #[inline(always)]
    fn note_acquired(&self, addr: usize, size: usize, stream: Stream) {
        if let Some(checker) = self.race_checker {
            checker.note_acquired(self.device, addr, size, stream);
        }
    }

    /// Tells the race checker that `[addr, addr + size)` is freed in the order of `stream`.
    #[inline(always)]
    fn note_released(&self, addr: usize, size: usize, stream: Stream) {
        if let Some(checker) = self.race_checker {
            checker.note_released(self.device, addr, size, stream);
        }
    }

    /// The name of the resource it serves ("pool", "arena", ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Blocks handed out and not yet freed.
    pub fn used_blocks(&self) -> usize {
        self.streams.read().values().map(|state| state.shelf.lock().index.used_blocks()).sum()
    }

    /// The device the upstream allocates on, and with it every chunk.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The resource chunks come from and go back to.
    pub fn upstream(&self) -> &dyn MemoryResource {
        &*self.upstream
    }

    /// Runs `f` on the state of `stream` (for an allocation when `allocating`): the legacy
    /// default stream's without touching a lock or reference count (the common case, inline),
    /// others through the thread's cache.
    #[inline(always)]
    fn with_state<R>(&self, stream: Stream, allocating: bool, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
        match self.default_state_for(stream) {
            Some(state) => f(state),
            None => self.with_other_state(stream, allocating, f),
        }
    }

    /// The legacy default stream's state, when `stream` is that stream and its state exists:
    /// the common case, with no lock or reference count to go through.
    #[inline(always)]
    fn default_state_for(&self, stream: Stream) -> Option<&Arc<StreamState<I>>> {
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
    fn cached_state(&self, stream: Stream, allocating: bool) -> Result<Option<std::cell::Ref<'_, Arc<StreamState<I>>>>> {
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
            (_, true) => self.identity_matches(&entry.state, stream)?,
            (_, false) => true,
        };
        Ok(current.then(|| std::cell::Ref::map(entry, |entry| &entry.state)))
    }

    /// Whether the driver's id of `stream` is still `state`'s (the handle may have been
    /// destroyed and handed to a new stream since).
    #[inline(never)]
    fn identity_matches(&self, state: &StreamState<I>, stream: Stream) -> Result<bool> {
        Ok(backend()?.stream_identity(stream)? == state.identity)
    }

    /// `with_other_state` on a miss: finds the state in the shared map (making it if new) and
    /// remembers it in the thread's cache.
    #[inline(never)]
    fn with_state_looked_up<R>(&self, stream: Stream, f: impl FnOnce(&Arc<StreamState<I>>) -> Result<R>) -> Result<R> {
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
                None => (self.state_from_map(backend()?.stream_identity(stream)?, stream, Recorder::OwnAllocations)?, true),
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
    fn state_from_map(&self, identity: u64, stream: Stream, recorder: Recorder) -> Result<Arc<StreamState<I>>> {
        let key = match identity {
            // A key no stream identity uses (top bit set), unique to the thread.
            0 if self.per_thread_default_stream.load(Ordering::Relaxed) => (1 << 63) | crate::sync::bias::thread_key(),
            identity => identity,
        };
        self.state_at(key, 0, identity, stream, recorder)
    }

    /// The state with `(key, lane)` in the map, made if new.
    fn state_at(&self, key: u64, lane: u64, identity: u64, stream: Stream, recorder: Recorder) -> Result<Arc<StreamState<I>>> {
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
        let mut index = (self.new_index)();
        let unannounced = lane == 0 && recorder == Recorder::OwnAllocations && !streams::is_per_thread(identity);
        // Every stream's event is recorded when memory is taken from it, which covers blocks
        // parked for quick reuse too. An unannounced stream starts as a donor: its first frees
        // that leave a chunk wholly free record its event, so that once it is destroyed (which
        // nothing tells the core of) what it freed is covered (see `note_unannounced`).
        index.set_parking(!unannounced);
        let shelf = BiasedLock::new(Shelf {
            index,
            pending: Vec::new(),
            unrecorded_frees: false,
            record_wanted: false,
            donor: if unannounced { DONOR_PATIENCE } else { 0 },
            recorder,
            // A score to wear off makes the first allocation off the bias weigh it: with
            // `SPLIT_AT` 0 that one splits the stream.
            collisions: u32::from(*SPLIT_AT == 0),
        });
        let state = Arc::new(StreamState { stream, identity, key, lane, split: AtomicBool::new(false), event, shelf });
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
        if let Ok(platform) = backend() {
            for (handle, identity) in handles {
                match platform.stream_identity(Stream(handle)) {
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

    /// Retires the unannounced streams with `identities`, found destroyed (`alive` None), and
    /// prunes what can go.
    fn retire_dead(&self, identities: Vec<u64>) -> Result<()> {
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
    fn cover_dead_streams(&self) -> Result<()> {
        if self.retired.lock().uncovered < UNCOVERED_SYNC_AT {
            return Ok(());
        }
        let Some(_growing) = self.growing.try_lock() else { return Ok(()) };
        self.synchronize_device()?;
        self.prune_retired()
    }

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
        let recorder = stream_state.shelf.lock().recorder;
        let lane_number = 1 + crate::sync::bias::thread_key() % LANES;
        let lane = self.state_at(stream_state.key, lane_number, stream_state.identity, stream_state.stream, recorder)?;
        let lanes = self.lanes.get_or_default();
        let _ = CACHES_WATCH.try_with(|_| ());
        if let Ok(mut lanes) = lanes.try_borrow_mut() {
            // Lanes of retired streams are of no more use (and hold their states).
            lanes.retain(|(of, _)| of.shelf.lock().recorder != Recorder::Nobody);
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

    /// An allocation on the stream's own state found its lock held (`contended`) or took it
    /// unopposed through the spin lock: adds to or takes from the collision score, and splits
    /// the stream into lanes when it reaches `SPLIT_AT`.
    #[cold]
    #[inline(never)]
    fn weigh_collision(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, contended: bool) {
        if state.lane != 0 {
            return;
        }
        shelf.collisions = match contended {
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

    /// Memory of this device is ordered on a stream of this device: an event of the device can
    /// be recorded only there. Checked once per stream, when its state is made (nothing is
    /// made for a refused stream, so each attempt is checked). The default streams are the
    /// device's own whichever device is current (calls for this device run in its context).
    fn refuse_other_devices_stream(&self, stream: Stream) -> Result<()> {
        if matches!(stream, Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD) {
            return Ok(());
        }
        let platform = backend()?;
        if platform.single_device() {
            return Ok(());
        }
        let owner = platform.stream_device(stream)?;
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
        let mut shelf = state.shelf.lock();
        if shelf.recorder != recorder && shelf.recorder != Recorder::Nobody {
            shelf.recorder = recorder;
        }
    }

    /// `learn_recorder` for a stream's own state and, once it is split, its lanes.
    fn learn_recorder_of_stream(streams: &StreamStates<I>, state: &StreamState<I>, recorder: Recorder) {
        Self::learn_recorder(state, recorder);
        if state.lane == 0 && state.split.load(Ordering::Relaxed) {
            (1..=LANES).filter_map(|lane| streams.get(&(state.key, lane))).for_each(|lane| Self::learn_recorder(lane, recorder));
        }
    }

    /// `bytes` (not 0) usable in the order of `stream`.
    #[inline(always)]
    pub fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        crate::resources::require_nonzero(bytes, self.name)?;
        match self.default_state_for(stream) {
            Some(state) => self.allocate_on(state, bytes, stream),
            None => self.allocate_on_other_stream(bytes, stream),
        }
    }

    #[inline(never)]
    fn allocate_on_other_stream(&self, bytes: usize, stream: Stream) -> Result<usize> {
        match self.cached_state(stream, true)? {
            Some(state) => self.allocate_on(&state, bytes, stream),
            None => self.with_state_looked_up(stream, |state| self.allocate_on(state, bytes, stream)),
        }
    }

    #[inline(always)]
    fn allocate_on(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        if state.split.load(Ordering::Relaxed) {
            return self.allocate_in_lane(state, bytes, stream);
        }
        self.allocate_in(state, bytes, stream)
    }

    #[inline(never)]
    fn allocate_in_lane(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        self.with_lane(state, |lane| self.allocate_in(lane, bytes, stream))
    }

    /// `allocate_on` in `state` itself.
    #[inline(always)]
    fn allocate_in(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        {
            // The fast path: a block of the stream's own, with no other stream's free to wait for
            // and no event to record.
            let mut shelf = state.shelf.lock();
            // Only a collision, or a score left to wear off, is weighed (off the biased path,
            // where the owner cannot collide).
            let contended = shelf.was_contended();
            if !shelf.is_biased() && (contended || shelf.collisions != 0) {
                self.weigh_collision(state, &mut shelf, contended);
            }
            if shelf.pending.is_empty() && !shelf.record_wanted {
                if let Some((addr, size)) = shelf.index.allocate(bytes) {
                    self.note_acquired(addr, size, stream);
                    return Ok(addr);
                }
            }
        }
        self.allocate_otherwise(state, bytes, stream)
    }

    #[inline(never)]
    fn allocate_otherwise(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        if let Some(addr) = self.allocate_from_own(state, bytes, stream)? {
            return Ok(addr);
        }
        self.allocate_slow(state, bytes, stream)
    }

    /// The size of a live block and the bytes it was handed out for.
    pub fn used_block(&self, ptr: usize) -> Option<(usize, usize)> {
        let owner = self.owner_of(ptr)?;
        let shelf = owner.shelf.lock();
        shelf.index.used_block(ptr)
    }

    /// Before `stream` (the owner of `shelf`) reuses a block: makes it wait for the frees other
    /// streams made into its index, and records its event when another stream asked for that.
    /// The event then covers those frees too, for streams that take memory from here later.
    fn settle(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, stream: Stream) -> Result<()> {
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

    /// Frees `ptr` in the order of `stream`. With `bytes`, a block of another size is refused
    /// (and stays allocated).
    #[inline(always)]
    pub fn deallocate(&self, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        match self.default_state_for(stream) {
            Some(state) => self.deallocate_on(state, ptr, bytes, stream),
            None => self.deallocate_on_other_stream(ptr, bytes, stream),
        }
    }

    #[inline(never)]
    fn deallocate_on_other_stream(&self, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        match self.cached_state(stream, false)? {
            Some(state) => self.deallocate_on(&state, ptr, bytes, stream),
            None => self.with_state_looked_up(stream, |state| self.deallocate_on(state, ptr, bytes, stream)),
        }
    }

    #[inline(always)]
    fn deallocate_on(&self, state: &StreamState<I>, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        if state.split.load(Ordering::Relaxed) {
            return self.deallocate_in_lane(state, ptr, bytes, stream);
        }
        self.deallocate_in(state, ptr, bytes, stream)
    }

    /// A thread mostly frees what it allocated: its own lane is looked at first. A thread with
    /// no lane (one that only frees) gets none: the block's owner is found by its address.
    #[inline(never)]
    fn deallocate_in_lane(&self, state: &StreamState<I>, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        match self.own_lane(state as *const StreamState<I> as usize) {
            Some(lane) => self.deallocate_in(&lane.1, ptr, bytes, stream),
            None => self.free_into_owner(state, ptr, bytes, stream)?.map_err(|refused| self.refusal(ptr, bytes, refused)),
        }
    }

    /// `deallocate_on`, starting from `state` itself.
    #[inline(always)]
    fn deallocate_in(&self, state: &StreamState<I>, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<()> {
        match self.free_from_own_shelf(state, ptr, bytes, stream)? {
            Ok(()) => Ok(()),
            Err(refused) => self.free_elsewhere(state, ptr, bytes, stream, refused)?.map_err(|refused| self.refusal(ptr, bytes, refused)),
        }
    }

    /// The error for a refused free (out of line: the free path stays small).
    #[cold]
    #[inline(never)]
    fn refusal(&self, ptr: usize, bytes: Option<usize>, refused: Refused) -> Error {
        match refused {
            Refused::WrongSize(size) => Error::invalid(format!(
                "{ptr:#x} is a block of {size} bytes in this {} resource; {} bytes were given",
                self.name,
                bytes.unwrap_or(0)
            )),
            Refused::NotLive => match self.owner_of(ptr) {
                Some(_) => Error::invalid(format!("{ptr:#x} is not a live block of this {} resource (double free?)", self.name)),
                None => Error::invalid(format!("{ptr:#x} was not allocated by this {} resource", self.name)),
            },
        }
    }

    /// `deallocate`, answering a refused free as `Refused` (the block stays allocated): for a
    /// caller that asks several resources in turn.
    #[inline(always)]
    pub fn try_deallocate(&self, ptr: usize, bytes: Option<usize>, stream: Stream) -> Result<std::result::Result<(), Refused>> {
        self.with_state(stream, false, |state| match self.free_from_own_shelf(state, ptr, bytes, stream)? {
            Ok(()) => Ok(Ok(())),
            Err(refused) => self.free_elsewhere(state, ptr, bytes, stream, refused),
        })
    }

    /// A free its stream's own shelf refused: the block may lie on another stream's shelf;
    /// otherwise the refusal stands.
    #[inline(never)]
    fn free_elsewhere(
        &self,
        state: &StreamState<I>,
        ptr: usize,
        bytes: Option<usize>,
        stream: Stream,
        refused: Refused,
    ) -> Result<std::result::Result<(), Refused>> {
        match refused {
            Refused::NotLive => self.free_into_owner(state, ptr, bytes, stream),
            refused => Ok(Err(refused)),
        }
    }

    /// Frees `ptr` if `stream`'s own shelf holds it.
    #[inline(always)]
    fn free_from_own_shelf(
        &self,
        state: &StreamState<I>,
        ptr: usize,
        bytes: Option<usize>,
        stream: Stream,
    ) -> Result<std::result::Result<(), Refused>> {
        let mut shelf = state.shelf.lock();
        let Freed { size, chunk_now_free } = match shelf.index.free_checked(ptr, bytes) {
            Ok(freed) => freed,
            Err(refused) => return Ok(Err(refused)),
        };
        self.note_released(ptr, size, stream);
        // The stream's event is recorded when another stream takes memory from here.
        shelf.unrecorded_frees = true;
        if chunk_now_free && shelf.donor > 0 {
            self.record_for_takers(state, &mut shelf, stream)?;
        }
        drop(shelf);
        if let Some(mapped) = self.growth.mapped() {
            self.after_free_mapped(mapped, state, stream)?;
        }
        Ok(Ok(()))
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

    /// Frees a block that another stream's index holds, leaving this stream's event for
    /// whoever reuses it there.
    #[inline(never)]
    fn free_into_owner(
        &self,
        state: &StreamState<I>,
        ptr: usize,
        bytes: Option<usize>,
        stream: Stream,
    ) -> Result<std::result::Result<(), Refused>> {
        let Some(owner) = self.owner_of(ptr) else { return Ok(Err(Refused::NotLive)) };
        if owner.identity == state.identity {
            return Ok(self.free_into_lane(&owner, ptr, bytes, stream));
        }
        let platform = backend()?;
        let event = self.event_of_stream(state, stream)?;
        let mut shelf = owner.shelf.lock();
        let Freed { size, .. } = match shelf.index.free_checked(ptr, bytes) {
            Ok(freed) => freed,
            Err(refused) => return Ok(Err(refused)),
        };
        self.note_released(ptr, size, stream);
        // Whoever reuses the block from the owner's index waits for this free first.
        platform.event_record(self.device, event, stream)?;
        if !shelf.pending.contains(&event) {
            shelf.pending.push(event);
        }
        if shelf.recorder == Recorder::Nobody && shelf.index.used_blocks() == 0 {
            // The last block of a retired stream: its state can go (else at the next prune).
            drop(shelf);
            self.prune_retired_unless_growing()?;
        }
        Ok(Ok(()))
    }

    /// Frees a block of another lane of the same stream (or the stream's own state): the
    /// stream's order covers the free, so the block needs no event.
    fn free_into_lane(&self, owner: &StreamState<I>, ptr: usize, bytes: Option<usize>, stream: Stream) -> std::result::Result<(), Refused> {
        let mut shelf = owner.shelf.lock();
        let Freed { size, .. } = shelf.index.free_checked(ptr, bytes)?;
        self.note_released(ptr, size, stream);
        shelf.unrecorded_frees = true;
        Ok(())
    }

    /// The event of the stream `stream` names now, for a free the caller's cache gave `state`
    /// for: a handle that is not trusted may have been handed to another stream since, and the
    /// event recorded for that free must be the new stream's, never overwriting the old one's.
    fn event_of_stream(&self, state: &StreamState<I>, stream: Stream) -> Result<Event> {
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

    fn owner_of(&self, ptr: usize) -> Option<Arc<StreamState<I>>> {
        let owners = self.owners.read();
        let (base, (size, owner)) = owners.range(..=ptr).next_back()?;
        (ptr < base + size).then(|| owner.clone())
    }

    /// Whether `taker` may use memory from `source`'s index once it waits on
    /// `events_to_take_from`: `source`'s event must cover the frees made there, so it is
    /// recorded now when this thread may, and asked of `source`'s own allocations otherwise.
    /// Called with `source`'s shelf locked.
    fn cover_frees(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Result<bool> {
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
                shelf.donor = DONOR_PATIENCE;
                Ok(false)
            }
            Recorder::Nobody => Ok(false),
        }
    }

    /// The events `taker` must wait on before using memory it took from `source`'s index, once
    /// `cover_frees` said yes (a donor keeps donating). Called with `source`'s shelf locked.
    fn events_to_take_from(&self, source: &StreamState<I>, shelf: &mut Shelf<I>, taker: &StreamState<I>) -> Vec<Event> {
        if shelf.donor > 0 {
            shelf.donor = DONOR_PATIENCE;
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

    fn wait_all(&self, stream: Stream, events: &[Event]) -> Result<()> {
        let platform = backend()?;
        events.iter().try_for_each(|event| platform.stream_wait_event(self.device, stream, *event))
    }

    fn allocate_slow(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        let _guard = self.growing.lock();
        self.finish_releases(false)?;
        self.prune_retired()?;
        if let Some(addr) = self.allocate_from_own(state, bytes, stream)? {
            return Ok(addr);
        }
        let need = self.chunk_size_for(bytes)?;
        if let Some(addr) = self.steal_free_chunk(state, bytes, need, stream)? {
            return Ok(addr);
        }
        let grown = self.grow(state, bytes, need, stream);
        if let Ok(addr) = grown {
            return Ok(addr);
        }
        if let Some(addr) = self.take_block_from_other_stream(state, bytes, stream)? {
            return Ok(addr);
        }
        let released = self.release_unused(0)?;
        if released > 0 {
            if let Ok(addr) = self.grow(state, bytes, need, stream) {
                return Ok(addr);
            }
        }
        // Releasing (here, or every resource of the device when the device refused) did not
        // help: the request is larger than any upstream can give. Take the initial
        // reservation back, which the pool keeps for its whole life.
        let reserved = self.reserved.load(Ordering::Relaxed);
        if reserved < self.initial {
            let _ = self.add_upstream_chunk(state, self.initial - reserved, stream);
        }
        let usage = self.usage();
        Err(Error::out_of_memory(
            bytes,
            format!(
                "the {} resource of device {} holds {} (at most {}), {} of it free, the largest free block {}; it could not \
                 grow: {}",
                self.name,
                self.device,
                units::exact(usage.reserved),
                if self.maximum == usize::MAX { "no limit".to_string() } else { units::exact(self.maximum) },
                units::exact(usage.free),
                units::exact(usage.largest_free_block),
                grown.err().map(|e| e.cause()).unwrap_or_default()
            ),
        ))
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

    fn steal_free_chunk(&self, state: &Arc<StreamState<I>>, bytes: usize, need: usize, stream: Stream) -> Result<Option<usize>> {
        if let Some(addr) = self.take_retired_chunk(state, bytes, need, stream)? {
            return Ok(Some(addr));
        }
        let others: Vec<_> = self.streams.read().values().filter(|s| !Arc::ptr_eq(s, state)).cloned().collect();
        for other in others {
            let (chunk, events) = {
                let mut shelf = other.shelf.lock();
                if !self.cover_frees(&other, &mut shelf, state)? {
                    continue;
                }
                let Some(chunk) = shelf.index.take_free_chunk(need) else { continue };
                (chunk, self.events_to_take_from(&other, &mut shelf, state))
            };
            self.wait_all(stream, &events)?;
            self.owners.write().insert(chunk.base, (chunk.size, state.clone()));
            let mut shelf = state.shelf.lock();
            shelf.index.add_chunk(chunk.base, chunk.size);
            if let Some(addr) = self.take_from_shelf(state, &mut shelf, bytes, stream)? {
                return Ok(Some(addr));
            }
        }
        Ok(None)
    }

    /// Takes the smallest free chunk of at least `need` bytes that retired streams left (the
    /// graveyard's), waiting on its events as `steal_free_chunk` waits on its source's, and
    /// serves `bytes` from it. The caller holds `growing`.
    fn take_retired_chunk(&self, state: &Arc<StreamState<I>>, bytes: usize, need: usize, stream: Stream) -> Result<Option<usize>> {
        let (chunk, events) = {
            let mut retired = self.retired.lock();
            let Some(graveyard) = retired.graveyard.clone() else { return Ok(None) };
            let Some(chunk) = graveyard.shelf.lock().index.take_free_chunk(need) else { return Ok(None) };
            (chunk, retired.chunk_events.remove(&chunk.base).unwrap_or_default())
        };
        if !self.omit_ordering.load(Ordering::Relaxed) {
            self.wait_all(stream, &events)?;
        }
        self.owners.write().insert(chunk.base, (chunk.size, state.clone()));
        let mut shelf = state.shelf.lock();
        shelf.index.add_chunk(chunk.base, chunk.size);
        self.take_from_shelf(state, &mut shelf, bytes, stream)
    }

    /// Under memory pressure only: takes one free block from another stream's index. Such a
    /// block may have been freed after that stream last recorded its event; unless this thread
    /// may record it now, the device is synchronized first.
    fn take_block_from_other_stream(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        // A free chunk of a retired stream smaller than a chunk `steal_free_chunk` looks for.
        if let Some(addr) = self.take_retired_chunk(state, bytes, bytes, stream)? {
            return Ok(Some(addr));
        }
        let others: Vec<_> = self.streams.read().values().filter(|s| !Arc::ptr_eq(s, state)).cloned().collect();
        let mut synchronized = false;
        for other in others {
            let ((addr, size), events) = {
                let mut shelf = other.shelf.lock();
                if shelf.index.free_bytes() < bytes {
                    continue;
                }
                if !synchronized && !self.cover_frees(&other, &mut shelf, state)? {
                    drop(shelf);
                    self.synchronize_device()?;
                    synchronized = true;
                    shelf = other.shelf.lock();
                }
                let Some(block) = shelf.index.allocate(bytes) else { continue };
                let events = match synchronized {
                    true => Vec::new(),
                    false => self.events_to_take_from(&other, &mut shelf, state),
                };
                (block, events)
            };
            self.wait_all(stream, &events)?;
            self.note_acquired(addr, size, stream);
            return Ok(Some(addr));
        }
        Ok(None)
    }

    /// Grows by a new upstream chunk: geometric, backing off towards `need` when upstream
    /// refuses. A geometric pool then tries the request alone (in granules, below its chunk
    /// granularity), so a small upstream or maximum can still be used to the last granule.
    fn grow(&self, state: &Arc<StreamState<I>>, bytes: usize, need: usize, stream: Stream) -> Result<usize> {
        let reserved = self.reserved.load(Ordering::Relaxed);
        // Chunks come in granules: a maximum that is not a multiple of one is never passed.
        let room = self.maximum.saturating_sub(reserved) / GRANULE * GRANULE;
        let floor = match self.growth {
            Growth::Geometric { .. } => bytes.div_ceil(GRANULE) * GRANULE,
            Growth::Fixed { .. } | Growth::Mapped(_) => need,
        };
        if floor > room {
            return Err(Error::out_of_memory(bytes, format!("its maximum size, {}, is reached", units::exact(self.maximum))));
        }
        let need = need.min(room);
        let mut size = match &self.growth {
            Growth::Fixed { chunk, .. } => *chunk,
            Growth::Mapped(mapped) => {
                if let Some(addr) = self.grow_mapped(mapped, state, bytes, need, room, stream)? {
                    return Ok(addr);
                }
                need
            }
            Growth::Geometric { granularity } => {
                // Geometric in what this stream holds, not the whole pool: with many streams,
                // growth compounded over the pool's total would reserve far more than is used.
                let held = state.shelf.lock().index.chunk_bytes();
                let geometric = (held / 2).min(GROWTH_CAP).div_ceil(*granularity) * granularity;
                need.max(geometric).min(room)
            }
        };
        let mut shelf = loop {
            match self.add_upstream_chunk(state, size, stream) {
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

    fn note_reserved(&self, bytes: usize) {
        let now = self.reserved.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_reserved.fetch_max(now, Ordering::Relaxed);
    }

    fn allocate_from_own(&self, state: &StreamState<I>, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        self.take_from_shelf(state, &mut state.shelf.lock(), bytes, stream)
    }

    /// A block from `stream`'s own shelf (locked by the caller), ordered after frees other
    /// streams made into it.
    fn take_from_shelf(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        let Some((addr, size)) = shelf.index.allocate(bytes) else { return Ok(None) };
        if !shelf.pending.is_empty() || shelf.record_wanted {
            self.settle(state, shelf, stream)?;
        }
        self.note_acquired(addr, size, stream);
        Ok(Some(addr))
    }

    /// Adds a chunk of `size` bytes from upstream to `state`'s index; returns the shelf still
    /// locked, so that the caller can take its block before any other thread sees the chunk.
    fn add_upstream_chunk<'s>(&self, state: &'s Arc<StreamState<I>>, size: usize, stream: Stream) -> Result<BiasedGuard<'s, Shelf<I>>> {
        let size =
            size.div_ceil(GRANULE).checked_mul(GRANULE).ok_or_else(|| Error::out_of_memory(size, "larger than the address space"))?;
        let base = self.upstream.allocate(size, stream)?;
        if base % GRANULE != 0 {
            let _ = self.upstream.deallocate(base, size, stream);
            return Err(Error::Internal(format!("upstream {} returned {base:#x}, not {GRANULE}-byte aligned", self.upstream.name())));
        }
        self.note_reserved(size);
        self.owners.write().insert(base, (size, state.clone()));
        let mut shelf = state.shelf.lock();
        shelf.index.add_chunk(base, size);
        Ok(shelf)
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
            if let Some(stream) = alive.filter(|_| shelf.unrecorded_frees && shelf.recorder != Recorder::Nobody) {
                backend()?.event_record(self.device, state.event, stream)?;
                shelf.unrecorded_frees = false;
            }
            shelf.recorder = Recorder::Nobody;
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
    fn prune_retired_unless_growing(&self) -> Result<()> {
        match self.growing.try_lock() {
            Some(_growing) => self.prune_retired(),
            None => Ok(()),
        }
    }

    /// Prunes every retired state that can go now, then makes spare the events of pruned
    /// states that nothing holds any more. The caller holds `growing`.
    fn prune_retired(&self) -> Result<()> {
        let lingering = std::mem::take(&mut self.retired.lock().lingering);
        if lingering.is_empty() && self.retired.lock().events.is_empty() {
            return Ok(());
        }
        let mut staying = Vec::new();
        let mut result = Ok(());
        for state in lingering {
            match result.is_ok().then(|| self.prune(&state)) {
                Some(Ok(true)) => {}
                Some(Err(e)) => {
                    result = Err(e);
                    staying.push(state);
                }
                _ => staying.push(state),
            }
        }
        let uncovered = staying
            .iter()
            .filter(|state| {
                let shelf = state.shelf.lock();
                shelf.unrecorded_frees && shelf.index.used_blocks() == 0
            })
            .count();
        let mut retired = self.retired.lock();
        retired.uncovered = uncovered;
        retired.lingering.extend(staying);
        drop(retired);
        self.spare_unheld_events();
        result
    }

    /// Takes the retired `state` out of the map when it holds no live block and its event
    /// covers every free made there (its stream's before it retired, others' by the pending
    /// events): its chunks, all free, go to the graveyard with those events. Whether it went.
    /// The caller holds `growing`.
    fn prune(&self, state: &Arc<StreamState<I>>) -> Result<bool> {
        {
            let shelf = state.shelf.lock();
            if shelf.recorder != Recorder::Nobody || shelf.unrecorded_frees || shelf.index.used_blocks() > 0 {
                return Ok(false);
            }
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
        let chunks = shelf.index.take_wholly_free_chunks();
        if shelf.index.used_blocks() > 0 {
            // A block handed out since the check (by no caller that keeps stream order's rules):
            // the state stays.
            chunks.iter().for_each(|chunk| shelf.index.add_chunk(chunk.base, chunk.size));
            drop(shelf);
            self.streams.write().insert((state.key, state.lane), state.clone());
            return Ok(false);
        }
        let mut events: Vec<Event> = shelf.pending.drain(..).collect();
        events.push(state.event);
        retired.peak_used_bytes += shelf.index.peak_used_bytes();
        drop(shelf);
        if !chunks.is_empty() {
            let mut owners = self.owners.write();
            for chunk in &chunks {
                owners.insert(chunk.base, (chunk.size, graveyard.clone()));
            }
            drop(owners);
            let mut shelf = graveyard.shelf.lock();
            for chunk in &chunks {
                shelf.index.add_chunk(chunk.base, chunk.size);
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
        let shelf = BiasedLock::new(Shelf {
            index: (self.new_index)(),
            pending: Vec::new(),
            unrecorded_frees: false,
            record_wanted: false,
            donor: 0,
            recorder: Recorder::Nobody,
            collisions: 0,
        });
        let graveyard = Arc::new(StreamState {
            stream: Stream::DEFAULT,
            identity: GRAVEYARD,
            key: GRAVEYARD,
            lane: 0,
            split: AtomicBool::new(false),
            event,
            shelf,
        });
        Ok(self.retired.lock().graveyard.get_or_insert(graveyard).clone())
    }

    /// Makes spare the events of pruned states that no pending list and no graveyard chunk
    /// holds. The caller holds `growing`, under which events are copied out of those lists to
    /// be waited on.
    fn spare_unheld_events(&self) {
        let mut retired = self.retired.lock();
        if retired.events.is_empty() {
            return;
        }
        let mut held: std::collections::HashSet<Event> = retired.chunk_events.values().flatten().copied().collect();
        for state in self.streams.read().values() {
            held.extend(state.shelf.lock().pending.iter().copied());
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

    /// Waits for all work on the device: every free on every stream is then complete, so no
    /// shelf needs an event to cover its frees any more.
    fn synchronize_device(&self) -> Result<()> {
        backend()?.device_synchronize(self.device)?;
        for state in self.streams.read().values() {
            state.shelf.lock().unrecorded_frees = false;
        }
        Ok(())
    }

    /// Returns every wholly free chunk upstream (and, expandable, every whole free page), after
    /// a device synchronization so no enqueued work still uses them. Returns the bytes released.
    pub fn release_free_chunks(&self) -> Result<usize> {
        let _growing = self.growing.lock();
        let released = self.release_unused(0)?;
        // Retired states whose frees only the synchronization covered can go now.
        self.prune_retired()?;
        Ok(released)
    }

    /// As `release_free_chunks`, but keeps free memory while fewer than `keep` bytes would
    /// stay reserved. The caller holds `growing`.
    fn release_unused(&self, keep: usize) -> Result<usize> {
        let held_before = self.held();
        let states: Vec<_> = self.streams.read().values().cloned().collect();
        let mut chunks = Vec::new();
        let mut holes = Vec::new();
        let mut staying = self.reserved.load(Ordering::Relaxed);
        for state in &states {
            let mut shelf = state.shelf.lock();
            for chunk in shelf.index.take_wholly_free_chunks() {
                match staying.checked_sub(chunk.size).filter(|&left| left >= keep) {
                    Some(left) => {
                        staying = left;
                        chunks.push(chunk);
                    }
                    None => shelf.index.add_chunk(chunk.base, chunk.size),
                }
            }
            if let Some(mapped) = self.growth.mapped() {
                let cuts = Self::cut_pages_to_release(mapped, &mut shelf.index, staying, keep);
                staying -= cuts.iter().map(|cut| cut.size).sum::<usize>();
                holes.extend(cuts);
            }
        }
        {
            // Retired streams' chunks, all wholly free (not cut: their events are kept by base).
            let mut retired = self.retired.lock();
            if let Some(graveyard) = retired.graveyard.clone() {
                let mut shelf = graveyard.shelf.lock();
                for chunk in shelf.index.take_wholly_free_chunks() {
                    match staying.checked_sub(chunk.size).filter(|&left| left >= keep) {
                        Some(left) => {
                            staying = left;
                            retired.chunk_events.remove(&chunk.base);
                            chunks.push(chunk);
                        }
                        None => shelf.index.add_chunk(chunk.base, chunk.size),
                    }
                }
            }
        }
        self.finish_releases(true)?;
        let mut released = 0;
        if !chunks.is_empty() || !holes.is_empty() {
            self.apply_cuts(&holes);
            self.synchronize_device()?;
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

    /// Bytes held from the device: the chunks' and, expandable, also the pages the upstream
    /// keeps unmapped for reuse and those it has still to unmap.
    pub fn held(&self) -> usize {
        self.growth.mapped().and_then(MappedGrowth::held).unwrap_or_else(|| self.reserved())
    }

    /// Test-only fault injection: hand memory across streams without ordering edges.
    #[doc(hidden)]
    pub fn inject_missing_ordering(&self, omit: bool) {
        self.omit_ordering.store(omit, Ordering::Relaxed);
    }

    /// Bytes of chunks held from upstream now (`Usage::reserved` reports the physical pages
    /// instead for the expandable resource).
    pub fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }

    /// The figures of all streams and lanes, gathered under each stream's lock in turn (so not
    /// one instant's, while others allocate).
    pub fn usage(&self) -> Usage {
        let (graveyard, retired_peak) = {
            let retired = self.retired.lock();
            (retired.graveyard.clone(), retired.peak_used_bytes)
        };
        let streams = self.streams.read();
        let mut usage = Usage {
            reserved: self.reserved(),
            peak_reserved: self.peak_reserved.load(Ordering::Relaxed),
            streams: streams.keys().filter(|(_, lane)| *lane == 0).count(),
            lanes: streams.keys().filter(|(_, lane)| *lane != 0).count(),
            chunks: self.owners.read().len(),
            ..Default::default()
        };
        // Pages cut from chunks are held until the device has them back.
        if let Some(physical) = self.growth.mapped().and_then(MappedGrowth::footprint) {
            (usage.reserved, usage.peak_reserved) = (physical.reserved, physical.peak_reserved);
        }
        usage.peak_live += retired_peak;
        for state in streams.values().chain(&graveyard) {
            let shelf = state.shelf.lock();
            let index = &shelf.index;
            usage.free += index.free_bytes();
            usage.live += index.chunk_bytes() - index.free_bytes();
            usage.peak_live += index.peak_used_bytes();
            usage.largest_free_block = usage.largest_free_block.max(index.largest_free_block());
        }
        usage
    }

    /// The figures, upstream chunks and blocks of this suballocator, for `rmmResourceGetSnapshot`.
    pub fn snapshot(&self, name: &str) -> serde_json::Value {
        let usage = self.usage();
        let owners: Vec<(usize, usize, Arc<StreamState<I>>)> =
            self.owners.read().iter().map(|(&base, (size, owner))| (base, *size, owner.clone())).collect();
        let chunks: Vec<_> = owners
            .iter()
            .map(|(base, size, owner)| {
                let blocks: Vec<_> = owner.shelf.lock().index.chunk_blocks(*base).iter().map(crate::resources::snapshot::block).collect();
                serde_json::json!({
                    "base": crate::resources::snapshot::address(*base),
                    "size": size,
                    "stream": match owner.identity {
                        GRAVEYARD => "retired".into(),
                        identity => crate::resources::snapshot::stream_label(identity),
                    },
                    "blocks": blocks,
                })
            })
            .collect();
        let mut figures = crate::resources::snapshot::figures(&usage.footprint());
        figures["resource"] = name.into();
        figures["device"] = self.device.into();
        figures["maximum_size"] = if self.maximum == usize::MAX { serde_json::Value::Null } else { self.maximum.into() };
        figures["streams"] = usage.streams.into();
        figures["lanes"] = usage.lanes.into();
        figures["chunks"] = chunks.into();
        figures["upstream"] = self.upstream.snapshot();
        figures
    }

    /// Checks every stream's index and the chunk bookkeeping.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let (graveyard, lingering, chunk_events) = {
            let retired = self.retired.lock();
            let chunk_events: Vec<usize> = retired.chunk_events.keys().copied().collect();
            (retired.graveyard.clone(), retired.lingering.clone(), chunk_events)
        };
        let streams = self.streams.read();
        let mut chunk_bytes = 0;
        for state in streams.values().chain(&graveyard) {
            let shelf = state.shelf.lock();
            let index = &shelf.index;
            index.check_invariants()?;
            chunk_bytes += index.chunk_bytes();
        }
        for state in &lingering {
            if !streams.get(&(state.key, state.lane)).is_some_and(|found| Arc::ptr_eq(found, state)) {
                return Err(format!("retired stream state ({}, {}) is not in the map", state.key, state.lane));
            }
            if state.shelf.lock().recorder != Recorder::Nobody {
                return Err(format!("lingering stream state ({}, {}) is not retired", state.key, state.lane));
            }
        }
        if let Some(graveyard) = &graveyard {
            let shelf = graveyard.shelf.lock();
            if shelf.index.used_blocks() > 0 || shelf.index.free_bytes() != shelf.index.chunk_bytes() {
                return Err("the graveyard holds memory in use".into());
            }
            let owners = self.owners.read();
            for base in chunk_events {
                if !owners.get(&base).is_some_and(|(_, owner)| Arc::ptr_eq(owner, graveyard)) {
                    return Err(format!("events kept for chunk {base:#x}, which the graveyard does not hold"));
                }
            }
        }
        let owned: usize = self.owners.read().values().map(|(size, _)| size).sum();
        if chunk_bytes != owned || owned != self.reserved() {
            return Err(format!("indexes hold {chunk_bytes} bytes, owners {owned}, reserved {}", self.reserved()));
        }
        Ok(())
    }
}

/// Aligned blocks, placed by the index itself: the aligned adaptor over a pool hands out the
/// block's own address, so it keeps no record of where the block starts and pads nothing.
impl Core<Tlsf> {
    /// `allocate`, at a multiple of `alignment` (a power of two). Freed as any other block.
    #[inline(always)]
    pub fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        crate::resources::require_nonzero(bytes, self.name)?;
        self.with_state(stream, true, |state| self.allocate_aligned_on(state, bytes, alignment, stream))
    }

    #[inline(always)]
    fn allocate_aligned_on(&self, state: &Arc<StreamState<Tlsf>>, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        {
            let mut shelf = state.shelf.lock();
            if shelf.pending.is_empty() && !shelf.record_wanted {
                if let Some((addr, size)) = shelf.index.allocate_aligned(bytes, alignment) {
                    self.note_acquired(addr, size, stream);
                    return Ok(addr);
                }
            }
        }
        self.allocate_aligned_otherwise(state, bytes, alignment, stream)
    }

    /// Every other way `allocate` finds memory (other streams' frees, growth, release and
    /// retry), for the request padded by the alignment; the block is then cut down to the
    /// aligned request and the rest freed in its owner's index.
    #[inline(never)]
    fn allocate_aligned_otherwise(&self, state: &Arc<StreamState<Tlsf>>, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        let padded = bytes
            .checked_add(alignment.saturating_sub(GRANULE))
            .ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space with its alignment"))?;
        let addr = self.allocate_otherwise(state, padded, stream)?;
        let carved = self.owner_of(addr).and_then(|owner| owner.shelf.lock().index.carve_aligned(addr, bytes, alignment));
        carved.ok_or_else(|| {
            let _ = self.deallocate(addr, Some(padded), stream);
            Error::Internal(format!("a block of {padded} bytes at {addr:#x} could not be cut down to {bytes} aligned to {alignment}"))
        })
    }
}

impl<I: BlockIndex> super::caches::Cache for Core<I> {
    /// What a pool keeps for its whole life (its initial size) stays: another resource's
    /// refusal releases only what it grew beyond that.
    fn release_cached(&self) -> Result<usize> {
        if let Growth::Mapped(_) = self.growth {
            // Called from inside its own growth (the device refused a page the growth maps),
            // it leaves its chunks alone: the growth is changing one of them.
            let Some(_growing) = self.growing.try_lock() else { return Ok(0) };
            return self.release_unused(self.initial);
        }
        self.release_unused(self.initial)
    }

    fn retire_stream(&self, identity: u64, alive: Option<Stream>) -> Result<()> {
        Core::retire_stream(self, identity, alive)
    }
}

impl<I: BlockIndex> Drop for Core<I> {
    /// Returns the chunks upstream. A chunk that still holds a block in use stays reserved:
    /// returning it would let the upstream hand that memory out again while someone uses it
    /// (callers of the C API cannot get here with live blocks, since their records keep the
    /// stack alive).
    fn drop(&mut self) {
        if crate::platform::process_exiting() {
            return;
        }
        let Ok(platform) = backend() else { return };
        if let Err(e) = platform.device_synchronize(self.device) {
            log::warn!("{} resource: synchronizing before release: {e}", self.name);
        }
        if let Err(e) = self.finish_releases(true) {
            log::warn!("{} resource: giving back released pages: {e}", self.name);
        }
        let mut free_chunks = Vec::new();
        let retired = std::mem::take(self.retired.get_mut());
        for state in self.streams.get_mut().values().chain(&retired.graveyard) {
            free_chunks.extend(state.shelf.lock().index.take_wholly_free_chunks());
        }
        let in_use = self.used_blocks();
        if in_use > 0 {
            let kept: usize = self.reserved() - free_chunks.iter().map(|chunk| chunk.size).sum::<usize>();
            log::warn!("{} resource dropped with {in_use} blocks in use: {kept} bytes of its chunks stay reserved", self.name);
        }
        for chunk in free_chunks {
            if let Err(e) = self.upstream.deallocate(chunk.base, chunk.size, Stream::DEFAULT) {
                log::warn!("{} resource: returning chunk {:#x} upstream: {e}", self.name, chunk.base);
            }
        }
        let events = self.streams.get_mut().values().chain(&retired.graveyard).map(|state| state.event);
        for event in events.chain(retired.events).chain(self.spare_events.get_mut().drain(..)) {
            let _ = platform.event_destroy(event);
        }
    }
}
