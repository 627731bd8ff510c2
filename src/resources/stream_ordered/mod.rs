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
//! The parts, one file each: `registry` (the map of stream states, looking a state up and
//! each thread's cache of them, making states, who may record, unannounced streams),
//! `shelf` (a stream's free blocks and the state machine of their ordering: the named
//! transitions the rest calls), `ordering` (the events those transitions ask the core to
//! record and wait on), `lanes` (streams split
//! among the threads that collide on them), `growth` (the slow path: memory taken from other
//! streams, growth and release upstream), `release` (memory given back once its streams have
//! passed, and the release threshold), `retire` (destroyed streams, the graveyard, spare
//! events), `mapped` (growth over an upstream that maps pages) and `heaps` (chunks and
//! blocks told to a memory checker attached through NVTX). This file holds the core itself:
//! its state types, the allocate and free paths that a stream's own index serves, and its
//! figures.

mod growth;
mod heaps;
mod lanes;
mod mapped;
mod ordering;
mod registry;
mod release;
mod retire;
mod shelf;

pub use growth::Growth;
pub use mapped::{MappedGrowth, PageMapper};

use crate::error::{Error, Result};
use crate::platform::sim::SimDevices;
use crate::platform::{backend, Event, Stream};
use crate::resources::MemoryResource;
use crate::sync::biased_lock::BiasedLock;
use crate::sync::per_thread::PerThread;
use crate::units;
use lanes::ThreadLanes;
use parking_lot::{Mutex, RwLock};
use registry::{CachedState, StreamStates, Unannounced, SWEEP_AT};
use retire::{Retired, GRAVEYARD};
use rmm_suballoc::fixed_blocks::FixedBlocks;
use rmm_suballoc::tlsf::{BlockView, Chunk, Cut, Freed, Refused, Tlsf, GRANULE};
use shelf::{AfterOwnFree, Recorder, Shelf};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
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
    /// For a lane: blocks taken from sibling lanes since it last grew (`take_block_from_sibling_lane`).
    sibling_takes: AtomicU32,
    event: Event,
    shelf: BiasedLock<Shelf<I>>,
}

/// Proof that the caller holds its core's `growing` lock: every function that may run only
/// under it takes one (see the lock order in `Core`'s comment), so the rule is checked where it
/// is called instead of written beside it.
pub(super) struct Growing<'a>(parking_lot::MutexGuard<'a, ()>);

thread_local! {
    /// How many cores' `growing` this thread holds: a release asked for on demand from inside
    /// a growth (a callback resource under a pool, a failure callback) must not wait for a
    /// growth, its own among them.
    static GROWING_HERE: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

impl<'a> Growing<'a> {
    fn new(guard: parking_lot::MutexGuard<'a, ()>) -> Self {
        GROWING_HERE.with(|held| held.set(held.get() + 1));
        Growing(guard)
    }

    /// Whether this is a guard of `lock` (the core's own `growing`).
    fn guards(&self, lock: &Mutex<()>) -> bool {
        std::ptr::eq(parking_lot::MutexGuard::mutex(&self.0), lock)
    }
}

impl Drop for Growing<'_> {
    fn drop(&mut self) {
        GROWING_HERE.with(|held| held.set(held.get() - 1));
    }
}

/// Chunk base -> (size, the stream whose index holds it).
type ChunkOwners<I> = BTreeMap<usize, (usize, Arc<StreamState<I>>)>;

/// A stream-ordered suballocator over an upstream resource. `StreamOrdered` owns it; a
/// resource that calls it directly (an adaptor over a pool, binning over its bins) holds it
/// too.
///
/// Its locks, in the one order a thread takes them (it may skip any, and never waits for an
/// earlier one while it holds a later one):
/// 1. `growing`: growth, reclaim, release and pruning; the functions that need it take its
///    `Growing` guard.
/// 2. `retired`.
/// 3. `streams`: read to look a state up, written to add or remove one.
/// 4. A stream's `shelf`, one at a time: the fast path takes only this one.
/// 5. `owners`, briefly (never held while a shelf is taken).
/// 6. Leaves, under which nothing of the core is taken: `unannounced`, `spare_events`,
///    `borrowed` and the queue of `releases`.
///
/// Recording and waiting on events, synchronizing and upstream allocations run under at most
/// `growing` and one shelf (a new state's event is made, and a new stream's device asked for,
/// under `streams` written: never on the fast path). A call that
/// another core may make while it holds its own `growing` (`caches::Cache::release_cached`
/// when the device refuses an allocation) only tries this one's, as do the free path's
/// opportunistic prunes and releases: they pass over a core whose growth is under way.
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
    /// Device synchronizations begun (`synchronize_device`), numbering them for the shelves.
    synchronizations: AtomicU64,
    /// The simulator's race checker, told of every block handed out and freed; None on a GPU.
    /// Looked up once, so that a GPU's fast path pays one test for it, not a look at the backend.
    race_checker: Option<&'static SimDevices>,
    /// Chunks that are blocks of a pool under this core, while a memory checker is attached
    /// through NVTX (see `heaps`).
    borrowed: heaps::Borrowed,
    /// Memory given back and waiting for its streams, and the release threshold.
    releases: release::Releases,
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

        fn set_release_threshold(&self, bytes: usize) -> $crate::error::Result<()> {
            self.$core.set_release_threshold(bytes)
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
                let growing = core.lock_growing();
                core.add_upstream_chunk(&growing, state, initial, Stream::DEFAULT).map(drop)
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
            streams: RwLock::new(Default::default()),
            default_state: once_cell::sync::OnceCell::new(),
            thread_states: PerThread::default(),
            state_cache: PerThread::default(),
            lanes: PerThread::default(),
            owners: RwLock::new(BTreeMap::new()),
            growing: Mutex::new(()),
            retired: Mutex::new(Retired::default()),
            unannounced: Mutex::new(Unannounced { handles: Default::default(), sweep_at: SWEEP_AT }),
            spare_events: Mutex::new(Vec::new()),
            new_index: Box::new(new_index),
            omit_ordering: AtomicBool::new(false),
            synchronizations: AtomicU64::new(0),
            race_checker: crate::platform::simulator(),
            borrowed: heaps::Borrowed::default(),
            releases: release::Releases::new(usize::MAX),
            per_thread_default_stream: AtomicBool::new(false),
        });
        let cache: Arc<dyn super::caches::Cache> = core.clone();
        super::caches::register(core.device, Arc::downgrade(&cache));
        core
    }

    /// Tells the race checker that `[addr, addr + size)` is handed out in the order of `stream`,
    /// and a memory checker attached through NVTX that `[addr, addr + bytes)` (what was asked
    /// for) is. The caller holds the lock of the shelf whose index holds the block, or
    /// `growing`, so that the block's registration comes after the unregistration of its
    /// previous use, and before a free of it can.
    #[inline(always)]
    fn note_acquired(&self, addr: usize, size: usize, bytes: usize, stream: Stream) {
        if let Some(checker) = self.race_checker {
            checker.note_acquired(self.device, addr, size, stream);
        }
        self.region_acquired(addr, bytes);
    }

    /// Tells the race checker that `[addr, addr + size)` is freed in the order of `stream`, and
    /// a memory checker attached through NVTX that the block at `addr` is no longer handed out.
    /// The caller holds the lock of the shelf whose index held the block.
    #[inline(always)]
    fn note_released(&self, addr: usize, size: usize, stream: Stream) {
        if let Some(checker) = self.race_checker {
            checker.note_released(self.device, addr, size, stream);
        }
        self.region_released(addr);
    }

    /// Takes `growing`, the lock of growth and reclaim.
    pub(super) fn lock_growing(&self) -> Growing<'_> {
        Growing::new(self.growing.lock())
    }

    /// `lock_growing`, unless another call holds it.
    pub(super) fn try_lock_growing(&self) -> Option<Growing<'_>> {
        self.growing.try_lock().map(Growing::new)
    }

    /// `lock_growing` for a release asked for on demand: it waits for another thread's growth,
    /// but passes over (None) when this thread is inside a growth already, which it would wait
    /// for forever (this core's) or which may wait for it (another core's).
    pub(super) fn lock_growing_unless_growing_here(&self) -> Option<Growing<'_>> {
        match GROWING_HERE.with(|held| held.get()) {
            0 => Some(self.lock_growing()),
            _ => self.try_lock_growing(),
        }
    }

    /// Checks (in debug builds) that `growing` is this core's.
    #[inline(always)]
    pub(super) fn check_growing(&self, growing: &Growing<'_>) {
        debug_assert!(growing.guards(&self.growing), "a guard of another core's growing lock");
    }

    /// The name of the resource it serves ("pool", "arena", ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Blocks handed out and not yet freed.
    pub fn used_blocks(&self) -> usize {
        self.streams.read().values().map(|state| state.shelf.lock().index().used_blocks()).sum()
    }

    /// The device the upstream allocates on, and with it every chunk.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The resource chunks come from and go back to.
    pub fn upstream(&self) -> &dyn MemoryResource {
        &*self.upstream
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

    /// `allocate_on` in `state` itself.
    #[inline(always)]
    fn allocate_in(&self, state: &Arc<StreamState<I>>, bytes: usize, stream: Stream) -> Result<usize> {
        {
            // The fast path: a block of the stream's own, with no other stream's free to wait for
            // and no event to record.
            let mut shelf = state.shelf.lock();
            // Only another thread's allocation, or a score left to wear off, is weighed (off
            // the biased path, where the owner is alone).
            if !shelf.is_biased() {
                let (me, contended) = (crate::sync::bias::thread_key(), shelf.was_contended());
                if shelf.last_allocator != me || shelf.collisions != 0 || contended {
                    self.weigh_collision(state, &mut shelf, me, contended);
                }
            }
            if shelf.reuse_is_free() {
                if let Some((addr, size)) = shelf.index_mut().allocate(bytes) {
                    self.note_acquired(addr, size, bytes, stream);
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
        shelf.index().used_block(ptr)
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
        let Freed { size, chunk_now_free } = match shelf.index_mut().free_checked(ptr, bytes) {
            Ok(freed) => freed,
            Err(refused) => return Ok(Err(refused)),
        };
        self.note_released(ptr, size, stream);
        // The stream's event is recorded when another stream takes memory from here.
        if shelf.own_free(chunk_now_free) == AfterOwnFree::RecordForTakers {
            self.record_for_takers(state, &mut shelf, stream)?;
        }
        drop(shelf);
        if let Some(mapped) = self.growth.mapped() {
            self.after_free_mapped(mapped, state, stream)?;
        } else if chunk_now_free {
            self.after_chunk_emptied(state, stream)?;
        }
        Ok(Ok(()))
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
        let Freed { size, .. } = match shelf.index_mut().free_checked(ptr, bytes) {
            Ok(freed) => freed,
            Err(refused) => return Ok(Err(refused)),
        };
        self.note_released(ptr, size, stream);
        // Whoever reuses the block from the owner's index waits for this free first.
        platform.event_record(self.device, event, stream)?;
        if shelf.foreign_free(event) {
            // The last block of a retired stream: its state can go (else at the next prune).
            drop(shelf);
            self.prune_retired_unless_growing()?;
        }
        Ok(Ok(()))
    }

    fn owner_of(&self, ptr: usize) -> Option<Arc<StreamState<I>>> {
        let owners = self.owners.read();
        let (base, (size, owner)) = owners.range(..=ptr).next_back()?;
        (ptr < base + size).then(|| owner.clone())
    }

    fn allocate_from_own(&self, state: &StreamState<I>, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        self.take_from_shelf(state, &mut state.shelf.lock(), bytes, stream)
    }

    /// A block from `stream`'s own shelf (locked by the caller), ordered after frees other
    /// streams made into it.
    fn take_from_shelf(&self, state: &StreamState<I>, shelf: &mut Shelf<I>, bytes: usize, stream: Stream) -> Result<Option<usize>> {
        let Some((addr, size)) = shelf.index_mut().allocate(bytes) else { return Ok(None) };
        if !shelf.reuse_is_free() {
            self.settle(state, shelf, stream)?;
        }
        self.note_acquired(addr, size, bytes, stream);
        Ok(Some(addr))
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
            let index = shelf.index();
            usage.free += index.free_bytes();
            usage.live += index.chunk_bytes() - index.free_bytes();
            usage.peak_live += index.peak_used_bytes();
            usage.largest_free_block = usage.largest_free_block.max(index.largest_free_block());
        }
        usage
    }

    /// What each stream, lane and the graveyard holds, for snapshots: where memory that is free
    /// but held sits (a lane or stream keeps its free chunks until another takes them or they
    /// are released).
    fn held_by(&self) -> Vec<serde_json::Value> {
        let graveyard = self.retired.lock().graveyard.clone();
        let states: Vec<Arc<StreamState<I>>> = self.streams.read().values().cloned().chain(graveyard).collect();
        let mut held: Vec<_> = states
            .iter()
            .map(|state| {
                let shelf = state.shelf.lock();
                let index = shelf.index();
                let stream = match state.identity {
                    GRAVEYARD => "retired".into(),
                    identity => crate::resources::snapshot::stream_label(identity),
                };
                let figures = serde_json::json!({
                    "stream": stream,
                    "lane": state.lane,
                    "held_bytes": index.chunk_bytes(),
                    "used_bytes": index.chunk_bytes() - index.free_bytes(),
                    "free_bytes": index.free_bytes(),
                    "largest_free_block": index.largest_free_block(),
                });
                (state.key, state.lane, figures)
            })
            .collect();
        held.sort_by_key(|(key, lane, _)| (*key, *lane));
        held.into_iter().map(|(_, _, figures)| figures).collect()
    }

    /// The figures, upstream chunks and blocks of this suballocator, for `rmmResourceGetSnapshot`.
    pub fn snapshot(&self, name: &str) -> serde_json::Value {
        let usage = self.usage();
        let owners: Vec<(usize, usize, Arc<StreamState<I>>)> =
            self.owners.read().iter().map(|(&base, (size, owner))| (base, *size, owner.clone())).collect();
        let chunks: Vec<_> = owners
            .iter()
            .map(|(base, size, owner)| {
                let blocks: Vec<_> = owner.shelf.lock().index().chunk_blocks(*base).iter().map(crate::resources::snapshot::block).collect();
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
        figures["held_by"] = self.held_by().into();
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
            let index = shelf.index();
            index.check_invariants()?;
            chunk_bytes += index.chunk_bytes();
        }
        for state in &lingering {
            if !streams.get(&(state.key, state.lane)).is_some_and(|found| Arc::ptr_eq(found, state)) {
                return Err(format!("retired stream state ({}, {}) is not in the map", state.key, state.lane));
            }
            if state.shelf.lock().recorder() != Recorder::Nobody {
                return Err(format!("lingering stream state ({}, {}) is not retired", state.key, state.lane));
            }
        }
        if let Some(graveyard) = &graveyard {
            let shelf = graveyard.shelf.lock();
            if shelf.index().used_blocks() > 0 || shelf.index().free_bytes() != shelf.index().chunk_bytes() {
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
            if shelf.reuse_is_free() {
                if let Some((addr, size)) = shelf.index_mut().allocate_aligned(bytes, alignment) {
                    self.note_acquired(addr, size, bytes, stream);
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
        let carved = self.owner_of(addr).and_then(|owner| {
            let mut shelf = owner.shelf.lock();
            let aligned = shelf.index_mut().carve_aligned(addr, bytes, alignment)?;
            self.region_moved(addr, aligned, bytes);
            Some(aligned)
        });
        carved.ok_or_else(|| {
            let _ = self.deallocate(addr, Some(padded), stream);
            Error::Internal(format!("a block of {padded} bytes at {addr:#x} could not be cut down to {bytes} aligned to {alignment}"))
        })
    }
}

impl<I: BlockIndex> super::caches::Cache for Core<I> {
    /// What a pool keeps for its whole life (its initial size) stays: another resource's
    /// refusal releases only what it grew beyond that.
    ///
    /// Called when the device refused an allocation, from whatever thread and resource that was:
    /// a core whose growth or reclaim is under way (on this thread, whose growth the device
    /// refused, or on another, which may in turn wait for this one's) is passed over rather
    /// than waited for.
    fn release_cached(&self) -> Result<usize> {
        let Some(growing) = self.try_lock_growing() else { return Ok(0) };
        self.release_unused(&growing, self.initial)
    }

    fn release_all_free(&self) -> Result<usize> {
        self.release_free_chunks()
    }

    fn holding(&self) -> Option<(String, usize, usize)> {
        let usage = self.usage();
        Some((self.name.to_string(), usage.reserved, usage.free))
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
            free_chunks.extend(state.shelf.lock().index_mut().take_wholly_free_chunks());
        }
        let in_use = self.used_blocks();
        if in_use > 0 {
            let kept: usize = self.reserved() - free_chunks.iter().map(|chunk| chunk.size).sum::<usize>();
            log::warn!("{} resource dropped with {in_use} blocks in use: {kept} bytes of its chunks stay reserved", self.name);
        }
        for chunk in free_chunks {
            self.heap_left(chunk.base, chunk.size);
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
