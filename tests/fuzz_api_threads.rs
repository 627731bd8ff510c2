//! The API fuzzer's threaded variant: sixteen threads on two simulated devices share resource
//! stacks (a limit over statistics over a pool, an arena, a binning resource, a fixed-size
//! resource under a tracking adaptor, an aligned adaptor, and the legacy entry points over the
//! first), allocate and free on their own streams, hand blocks to each other, make bad frees of
//! every kind, and create and destroy handles of their own over the shared stacks, while a
//! sampler thread reads the adaptors' figures. Every block carries a stamp of its owner, so a
//! block handed out twice (to two threads at once) shows as a stamp overwritten. After the
//! threads are joined the adaptors' totals must equal what the threads counted, and once
//! everything is destroyed each device's memory must be all free again.
//!
//! Growth mode (RMM_FUZZ_GROWTH=1, issue 39): the stacks start empty and are rebuilt every
//! round (everything freed and destroyed, the threads through a barrier, new pools, arena,
//! binning and fixed-size resources, then all sixteen threads allocate at once, 1 B to 5 MiB,
//! on the stream they share (NULL) and on streams of their own), so that threads grow the same
//! pool at the same time. The devices are far larger than what the threads can keep live, so an
//! out-of-memory error from a stack without a limit adaptor, while its device has room, is a
//! failure: only the limited stack may run out.
//!
//! Sleep and wake (not in growth mode): a sleeper thread puts one device's expandable stack to
//! sleep now and then (mostly in discard mode, now and then keeping the contents) and wakes it a
//! few milliseconds later, while the threads allocate from it (refused as asleep meanwhile, with
//! the reason) and free into it (taken). The threads hold a read lock of the device's sleep
//! state around each call on that stack's memory and each read of it, the sleeper the write lock
//! around each sleep and wake: a block is read only while its memory is mapped, and a free never
//! lands inside a sleep (which the race checker would report: the contract has work on a
//! resource's memory enqueued before it is put to sleep). A kept block holds its stamp after the
//! wake, a discarded one is stamped anew. Each device's `rmmDeviceRelease` still runs at any
//! time, sleeps included.
//!
//! Bounded by RMM_FUZZ_CALLS (all threads together), RMM_FUZZ_SECONDS and RMM_FUZZ_SEED.

mod fuzz;

use fuzz::*;
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::*;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, RwLock, RwLockReadGuard};
use std::time::Duration;

const DEVICES: i32 = 2;
const THREADS: u64 = 16;
const LIMIT: usize = 64 << 20;
const FIXED_BLOCK: usize = 1 << 16;
/// Bytes one thread keeps live at most, so that sixteen stay well inside a device.
const THREAD_LIVE_LIMIT: usize = 24 << 20;
/// Growth mode: each simulated device's capacity.
const GROWTH_DEVICE: usize = 16 << 30;
/// Growth mode: bytes one thread keeps live at most; sixteen threads' blocks, and what the
/// pools hold beyond them, stay far below `GROWTH_ROOM`.
const GROWTH_THREAD_LIVE_LIMIT: usize = 32 << 20;
/// Growth mode: an out-of-memory error while the device has this much free beyond the request
/// (measured after the error, when pools that grew since only hold more) is a failure.
const GROWTH_ROOM: usize = 4 << 30;
/// Growth mode: operations per thread per round, the first `GROWTH_OPENING` of them
/// allocations (all threads at once, on empty resources).
const GROWTH_ROUND_OPS: u64 = 32;
const GROWTH_OPENING: u64 = 6;
/// Growth mode: the largest request (RAPIDS RMM's multi-threaded tests allocate up to 5 MiB).
const GROWTH_MAX_SIZE: u64 = 5 << 20;

/// The sleeper: awake this long between sleeps, asleep this long, and the percentage of sleeps
/// that keep the contents (each kept page costs about a millisecond on simulated devices).
const SLEEPER_AWAKE: Duration = Duration::from_millis(50);
const SLEEPER_ASLEEP: Duration = Duration::from_millis(2);
const SLEEPER_KEEPS: u64 = 15;

/// Raw handles and streams cross threads here; the C API is thread-safe.
#[derive(Clone, Copy)]
struct Handle(rmmResource_t);
// SAFETY: rmm's handles may be used from any thread (the C API is thread-safe).
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One device's shared stacks: what the threads allocate from, and the adaptors they check.
#[derive(Clone)]
struct DeviceStacks {
    /// Top of each stack: [limit over statistics over pool, statistics over arena, binning,
    /// tracking over fixed-size, aligned over pool, expandable] and in growth mode also
    /// [statistics over the first pool] (no limit), which rmmAlloc goes through there.
    tops: Vec<Handle>,
    /// Every handle made at setup, destroyed at the end (tops included).
    all: Vec<Handle>,
    limiting: Handle,
    /// The stack rmmAlloc on this device goes through (index into `tops`).
    legacy: usize,
    /// Statistics adaptors that only callers' blocks pass through: (stack index, adaptor).
    counted: Vec<(usize, Handle)>,
    tracking: Handle,
}

const LIMITED: usize = 0;
const ARENA: usize = 1;
const FIXED: usize = 3;
/// The bare expandable resource: the stack that sleeps.
const EXPANDABLE: usize = 5;
/// Growth mode: statistics over the first pool, no limit.
const UNLIMITED: usize = 6;

#[derive(Clone, Copy)]
struct Block {
    ptr: usize,
    size: usize,
    device: i32,
    /// The stack it came from (index into `tops`), or None for rmmAlloc's.
    stack: Option<usize>,
    /// A thread's own handle it came from (destroyed or not): freed with rmmFree.
    private: bool,
    stream: usize,
    tag: u64,
    /// Its device's `SleepState::discards` when it was stamped (blocks of the expandable stack).
    epoch: u64,
}

/// A device's expandable stack as the sleeper leaves it (`Shared::sleep`).
#[derive(Default)]
struct SleepState {
    asleep: bool,
    /// Sleeps in discard mode so far: a block stamped before the last one lost its contents.
    discards: u64,
}

/// What a thread counted, compared with the adaptors' totals: successful allocations per device
/// and stack (rmmAlloc's under its device's `legacy` stack).
#[derive(Default)]
struct Counts {
    allocations: [[u64; 8]; DEVICES as usize],
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        for (mine, theirs) in self.allocations.iter_mut().zip(&other.allocations) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }
}

struct Shared {
    /// The stacks of the current round (growth mode), or of the whole run.
    devices: RwLock<Vec<DeviceStacks>>,
    growth: bool,
    /// Growth mode: no more rounds (set by the coordinator before the threads pass the start).
    stop: AtomicBool,
    /// Growth mode: what the threads counted in the round (added at its end).
    round_counts: Mutex<Counts>,
    /// Growth mode: the device and stack (device * 16 + stack) all threads open the round on.
    focus: AtomicU64,
    /// Blocks on their way from one thread to another (their stream already synchronized).
    handoff: Mutex<Vec<Block>>,
    budget: Budget,
    done: AtomicBool,
    failures: AtomicU64,
    /// Each device's expandable stack: read-locked by the threads around each call on its
    /// memory and each read of it, write-locked by the sleeper around each sleep and wake.
    sleep: Vec<RwLock<SleepState>>,
    /// Allocations refused as asleep.
    refused_asleep: AtomicU64,
}

/// Builds `device`'s stacks (new, empty resources) and makes the legacy stack its per-device
/// resource.
fn setup(device: i32, growth: bool) -> DeviceStacks {
    assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
    let cuda = Handle(created(Kind::Cuda, null_mut()));
    let pool = Handle(created(Kind::Pool, cuda.0));
    // Growth mode: binning and fixed-size grow a pool of their own.
    let second_pool = if growth { Handle(created(Kind::Pool, cuda.0)) } else { pool };
    let limited_statistics = Handle(created(Kind::Statistics, pool.0));
    let limiting = Handle(created(Kind::Limiting { limit: LIMIT }, limited_statistics.0));
    let arena = Handle(created(Kind::Arena, cuda.0));
    let arena_statistics = Handle(created(Kind::Statistics, arena.0));
    let binning = Handle(created(Kind::Binning, second_pool.0));
    let fixed = Handle(created(Kind::FixedSize { block: FIXED_BLOCK }, second_pool.0));
    let tracking = Handle(created(Kind::Tracking, fixed.0));
    let aligned = Handle(created(Kind::Aligned { alignment: 4096, threshold: 1000 }, pool.0));
    let expandable = Handle(created(Kind::Expandable { release: true }, null_mut()));
    let mut tops = vec![limiting, arena_statistics, binning, tracking, aligned, expandable];
    let mut all = vec![expandable, aligned, tracking, fixed, binning, arena_statistics, arena, limiting, limited_statistics];
    let mut counted = vec![(LIMITED, limited_statistics), (ARENA, arena_statistics)];
    let mut legacy = LIMITED;
    if growth {
        let unlimited = Handle(created(Kind::Statistics, pool.0));
        tops.push(unlimited);
        all.extend([unlimited, second_pool]);
        counted.push((UNLIMITED, unlimited));
        legacy = UNLIMITED;
    }
    all.extend([pool, cuda]);
    assert_eq!(call(rmmSetPerDeviceResource(device, tops[legacy].0, null_mut())), RMM_SUCCESS, "{}", last_message());
    DeviceStacks { tops, all, limiting, legacy, counted, tracking }
}

/// Checks `device`'s stacks once every block from them is freed (the adaptors' totals against
/// what the threads counted) and puts `original` back as its resource.
fn check_and_uninstall(device: usize, stacks: &DeviceStacks, counts: &Counts, original: Handle) {
    for &(stack, handle) in &stacks.counted {
        let figures = statistics(handle);
        assert_eq!((figures.current_bytes, figures.current_count), (0, 0), "device {device}, stack {stack}: {figures:?}");
        assert_eq!(figures.total_count as u64, counts.allocations[device][stack], "device {device}, stack {stack}: the total");
    }
    assert_eq!(limited_bytes(stacks.limiting), 0);
    let mut outstanding = 0;
    assert_eq!(call(rmmTrackingAdaptorGetOutstanding(stacks.tracking.0, null_mut(), 0, &mut outstanding)), RMM_SUCCESS);
    assert_eq!(outstanding, 0, "device {device}: the tracking adaptor still holds blocks");
    assert_eq!(call(rmmSetPerDeviceResource(device as i32, original.0, null_mut())), RMM_SUCCESS, "{}", last_message());
}

/// Destroys a device's stacks (uninstalled, and no thread's copy of the device's resource
/// still names them).
fn destroy(stacks: &DeviceStacks) {
    for handle in &stacks.all {
        assert_eq!(call(rmmResourceDestroy(handle.0)), RMM_SUCCESS, "{}", last_message());
    }
}

fn statistics(handle: Handle) -> rmmStatistics_t {
    let mut counts = rmmStatistics_t { current_bytes: 0, peak_bytes: 0, total_bytes: 0, current_count: 0, peak_count: 0, total_count: 0 };
    assert_eq!(call(rmmStatisticsAdaptorGetCounts(handle.0, &mut counts)), RMM_SUCCESS);
    counts
}

fn limited_bytes(handle: Handle) -> usize {
    let mut bytes = 0;
    assert_eq!(call(rmmLimitingAdaptorGetAllocatedBytes(handle.0, &mut bytes)), RMM_SUCCESS);
    bytes
}

struct Worker<'a> {
    shared: &'a Shared,
    /// The stacks it allocates from (the round's, in growth mode).
    stacks: Vec<DeviceStacks>,
    index: u64,
    rng: Rng,
    /// Two streams per device.
    streams: Vec<Vec<usize>>,
    blocks: Vec<Block>,
    live: usize,
    seq: u64,
    counts: Counts,
}

impl Worker<'_> {
    fn context(&self, what: &str) -> String {
        format!("thread {} (seed {}) op {}: {what}", self.index, self.shared.budget.seed, self.seq)
    }

    fn stream(&mut self, device: i32) -> usize {
        // Growth mode: half on the stream all threads share, so that they grow its pools at once.
        if self.shared.growth && self.rng.chance(50) {
            return 0;
        }
        match self.rng.below(3) {
            0 => 0,
            n => self.streams[device as usize][n as usize - 1],
        }
    }

    fn next_tag(&mut self) -> u64 {
        self.seq += 1;
        (self.index << 48) | self.seq
    }

    fn size(&mut self, stack: Option<usize>) -> usize {
        let size = if self.shared.growth {
            // Half from 1 B to 5 MiB evenly (most of them large: growth), half log-uniform.
            if self.rng.chance(50) {
                1 + self.rng.below(GROWTH_MAX_SIZE) as usize
            } else {
                self.rng.log_uniform(22).max(1)
            }
        } else {
            let max_log2 = if self.rng.chance(5) { 22 } else { 15 };
            self.rng.log_uniform(max_log2).max(1)
        };
        match stack {
            Some(FIXED) => size.min(FIXED_BLOCK),
            _ => size,
        }
    }

    /// Counts `allocations` through `stack` (None: rmmAlloc, which goes through the device's
    /// legacy stack) for the comparison with the adaptors' totals.
    fn count(&mut self, device: i32, stack: Option<usize>, allocations: u64) {
        let stack = stack.unwrap_or(self.stacks[device as usize].legacy);
        self.counts.allocations[device as usize][stack] += allocations;
    }

    /// An out-of-memory answer to a request of `size` bytes through `stack` (None: rmmAlloc):
    /// other threads share the limit and the devices, but in growth mode only the limited stack
    /// may run out while the device has room.
    fn out_of_memory(&self, device: i32, stack: Option<usize>, size: usize, what: &str) {
        let message = last_message();
        assert!(message.contains("out of memory"), "{}: {message}", self.context(what));
        let stack = stack.unwrap_or(self.stacks[device as usize].legacy);
        if self.shared.growth && stack != LIMITED {
            let free = GROWTH_DEVICE.saturating_sub(device_used(device));
            assert!(
                free < size.saturating_add(GROWTH_ROOM),
                "{}: out of memory for {size} bytes from stack {stack} (no limit) on device {device} with {free} bytes free: {message}",
                self.context(what)
            );
        }
    }

    fn keep(&mut self, block: Block) {
        stamp(block.ptr, block.size, block.tag);
        self.live += block.size;
        self.blocks.push(block);
    }

    /// Checks a block's stamp; one of the expandable stack (`state`: its sleep state, locked by
    /// the caller) is not read while it sleeps, and is stamped anew once a sleep discarded it.
    fn check(&self, block: &mut Block, state: Option<&SleepState>, what: &str) {
        if let Some(state) = state {
            if state.asleep {
                return;
            }
            if state.discards != block.epoch {
                stamp(block.ptr, block.size, block.tag);
                block.epoch = state.discards;
                return;
            }
        }
        assert!(
            stamped(block.ptr, block.size, block.tag),
            "{}: the block at {:#x} ({} bytes) lost its contents: handed out to someone else as well",
            self.context(what),
            block.ptr,
            block.size
        );
    }

    fn allocate(&mut self) {
        let limit = if self.shared.growth { GROWTH_THREAD_LIVE_LIMIT } else { THREAD_LIVE_LIMIT };
        if self.live > limit {
            return self.free();
        }
        let device = self.rng.below(DEVICES as u64) as i32;
        let stack = self.rng.below(self.stacks[device as usize].tops.len() as u64) as usize;
        let stream = self.stream(device);
        self.allocate_on(device, stack, stream);
    }

    fn allocate_on(&mut self, device: i32, stack: usize, stream: usize) {
        let size = self.size(Some(stack));
        let handle = self.stacks[device as usize].tops[stack];
        let shared = self.shared;
        let state = sleep_state(shared, device, Some(stack));
        let asleep = state.as_ref().is_some_and(|state| state.asleep);
        let epoch = state.as_ref().map_or(0, |state| state.discards);
        let (status, ptr) = allocate(handle.0, size, stream as cudaStream_t);
        let block = Block { ptr, size, device, stack: Some(stack), private: false, stream, tag: 0, epoch };
        self.answered(status, block, asleep, "allocate");
    }

    /// An allocation's answer: the block kept (stamped and counted), an out-of-memory refusal
    /// checked, anything else a failure; from the expandable stack while it sleeps (`asleep`,
    /// the caller holding its sleep state's lock), a refusal as asleep.
    fn answered(&mut self, status: rmmError_t, mut block: Block, asleep: bool, what: &str) {
        if asleep {
            assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}: from the sleeping stack: {}", self.context(what), last_message());
            assert!(last_message().contains("asleep"), "{}: {}", self.context(what), last_message());
            self.shared.refused_asleep.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match status {
            RMM_SUCCESS => {
                block.tag = self.next_tag();
                self.keep(block);
                self.count(block.device, block.stack, 1);
            }
            RMM_ERROR_OUT_OF_MEMORY => self.out_of_memory(block.device, block.stack, block.size, what),
            other => panic!("{}: {other:?} ({})", self.context(what), last_message()),
        }
    }

    fn allocate_legacy(&mut self) {
        if self.shared.growth && self.live > GROWTH_THREAD_LIVE_LIMIT {
            return self.free();
        }
        let device = self.rng.below(DEVICES as u64) as i32;
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
        let size = self.size(None);
        let stream = self.stream(device);
        let mut ptr: *mut c_void = null_mut();
        let status = call(rmmAlloc(&mut ptr, size, stream as cudaStream_t, c"threads.c".as_ptr(), 1));
        let block = Block { ptr: ptr as usize, size, device, stack: None, private: false, stream, tag: 0, epoch: 0 };
        self.answered(status, block, false, "rmmAlloc");
    }

    /// A handle of the thread's own over a shared stack, a few blocks from it, and the handle
    /// destroyed at once: the blocks stay valid and are freed later with rmmFree.
    fn private_handle(&mut self) {
        let device = self.rng.below(DEVICES as u64) as i32;
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
        let stack = self.rng.below(self.stacks[device as usize].tops.len() as u64) as usize;
        let over = self.stacks[device as usize].tops[stack];
        let shared = self.shared;
        let state = sleep_state(shared, device, Some(stack));
        let asleep = state.as_ref().is_some_and(|state| state.asleep);
        let epoch = state.as_ref().map_or(0, |state| state.discards);
        let kind = *self.rng.pick(&[Kind::Statistics, Kind::Tracking, Kind::Prefetch, Kind::FailureCallback]);
        let (status, handle) = create(kind, over.0);
        assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("private handle"), last_message());
        for _ in 0..self.rng.below(4) {
            let size = self.size(Some(stack));
            let stream = self.stream(device);
            let (status, ptr) = allocate(handle, size, stream as cudaStream_t);
            let block = Block { ptr, size, device, stack: Some(stack), private: true, stream, tag: 0, epoch };
            self.answered(status, block, asleep, "allocate (private handle)");
        }
        assert_eq!(call(rmmResourceDestroy(handle)), RMM_SUCCESS, "{}", self.context("destroy private handle"));
    }

    fn take_block(&mut self) -> Option<Block> {
        (!self.blocks.is_empty()).then(|| {
            let at = self.rng.below(self.blocks.len() as u64) as usize;
            let block = self.blocks.swap_remove(at);
            self.live -= block.size;
            block
        })
    }

    fn free(&mut self) {
        let Some(mut block) = self.take_block() else { return };
        let shared = self.shared;
        let state = sleep_state(shared, block.device, block.stack);
        self.check(&mut block, state.as_deref(), "before its free");
        if self.rng.chance(20) {
            // Freed in the order of another stream once the first is done with it.
            assert_eq!(call(rmmStreamSynchronize(block.stream as cudaStream_t)), RMM_SUCCESS);
            block.stream = self.stream(block.device);
        }
        let status = match (block.stack, block.private) {
            (Some(stack), false) => {
                let handle = self.stacks[block.device as usize].tops[stack];
                call(rmmResourceDeallocate(handle.0, block.ptr as *mut c_void, block.size, block.stream as cudaStream_t))
            }
            _ => call(rmmFree(block.ptr as *mut c_void, block.stream as cudaStream_t, c"threads.c".as_ptr(), 2)),
        };
        assert_eq!(status, RMM_SUCCESS, "{}: freeing {:#x}: {}", self.context("free"), block.ptr, last_message());
    }

    fn hand_off(&mut self) {
        if self.rng.chance(50) {
            let Some(mut block) = self.take_block() else { return };
            let shared = self.shared;
            let state = sleep_state(shared, block.device, block.stack);
            self.check(&mut block, state.as_deref(), "before its hand-off");
            assert_eq!(call(rmmStreamSynchronize(block.stream as cudaStream_t)), RMM_SUCCESS);
            self.shared.handoff.lock().unwrap().push(block);
        } else {
            let taken = self.shared.handoff.lock().unwrap().pop();
            if let Some(mut block) = taken {
                let shared = self.shared;
                let state = sleep_state(shared, block.device, block.stack);
                self.check(&mut block, state.as_deref(), "handed over");
                drop(state);
                block.stream = self.stream(block.device);
                self.live += block.size;
                self.blocks.push(block);
            }
        }
    }

    /// A bad free of one of the thread's own blocks (or of memory rmm never handed out): must
    /// be refused, with the block intact and still freeable.
    fn free_bad(&mut self) {
        let host = [0u8; 64];
        let at = self.rng.below(self.blocks.len().max(1) as u64) as usize;
        let Some(&mut mut block) = self.blocks.get_mut(at) else {
            let status = call(rmmFree(host.as_ptr() as *mut c_void, null_mut(), c"threads.c".as_ptr(), 3));
            assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}", self.context("a host address"));
            return;
        };
        let stream = block.stream as cudaStream_t;
        let shared = self.shared;
        let state = sleep_state(shared, block.device, block.stack);
        let stacks = &self.stacks[block.device as usize];
        let tops = &stacks.tops;
        let owner = tops[block.stack.unwrap_or(stacks.legacy)];
        let (status, what) = match self.rng.below(5) {
            0 if block.size > 256 => {
                let interior = block.ptr + 256 * (1 + self.rng.below(((block.size - 1) / 256) as u64) as usize);
                (call(rmmResourceDeallocate(owner.0, interior as *mut c_void, 256, stream)), "an interior pointer")
            }
            1 => {
                let wrong = if self.rng.chance(50) { block.size + 1 } else { block.size - 1 };
                (call(rmmResourceDeallocate(owner.0, block.ptr as *mut c_void, wrong, stream)), "a wrong size")
            }
            2 => {
                let other = tops[(block.stack.unwrap_or(stacks.legacy) + 1 + self.rng.below(tops.len() as u64 - 1) as usize) % tops.len()];
                (call(rmmResourceDeallocate(other.0, block.ptr as *mut c_void, block.size, stream)), "another stack")
            }
            3 => {
                let other_device = self.stacks[(block.device as usize + 1) % DEVICES as usize].tops[LIMITED];
                (call(rmmResourceDeallocate(other_device.0, block.ptr as *mut c_void, block.size, stream)), "another device's stack")
            }
            _ => (call(rmmFree(host.as_ptr() as *mut c_void, stream, c"threads.c".as_ptr(), 4)), "a host address"),
        };
        assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}: {what}: {}", self.context("bad free"), last_message());
        self.check(&mut block, state.as_deref(), what);
        self.blocks[at].epoch = block.epoch;
    }

    fn buffer(&mut self) {
        let device = self.rng.below(DEVICES as u64) as i32;
        let stack = self.rng.below(self.stacks[device as usize].tops.len() as u64) as usize;
        let handle = self.stacks[device as usize].tops[stack];
        let stream = self.stream(device) as cudaStream_t;
        let size = self.size(Some(stack));
        let shared = self.shared;
        let state = sleep_state(shared, device, Some(stack));
        let mut buffer: rmmDeviceBuffer_t = null_mut();
        match call(rmmDeviceBufferCreate(&mut buffer, size, stream, handle.0)) {
            RMM_ERROR_INVALID_ARGUMENT if state.as_ref().is_some_and(|state| state.asleep) => {
                assert!(last_message().contains("asleep"), "{}: {}", self.context("rmmDeviceBufferCreate"), last_message());
                self.shared.refused_asleep.fetch_add(1, Ordering::Relaxed);
                return;
            }
            _ if state.as_ref().is_some_and(|state| state.asleep) => {
                panic!("{}: a buffer from the sleeping stack: {}", self.context("rmmDeviceBufferCreate"), last_message())
            }
            RMM_SUCCESS => {}
            RMM_ERROR_OUT_OF_MEMORY => return self.out_of_memory(device, Some(stack), size, "rmmDeviceBufferCreate"),
            other => panic!("{}: {other:?} ({})", self.context("rmmDeviceBufferCreate"), last_message()),
        }
        let mut data: *mut c_void = null_mut();
        assert_eq!(call(rmmDeviceBufferData(buffer, &mut data)), RMM_SUCCESS);
        let tag = self.next_tag();
        stamp(data as usize, size, tag);
        let mut new_size = size + self.size(Some(stack));
        if stack == FIXED {
            new_size = new_size.min(FIXED_BLOCK);
        }
        let status = call(rmmDeviceBufferResize(buffer, new_size, stream));
        match status {
            RMM_SUCCESS => {}
            RMM_ERROR_OUT_OF_MEMORY => self.out_of_memory(device, Some(stack), new_size, "resize"),
            other => panic!("{}: {other:?} ({})", self.context("resize"), last_message()),
        }
        let resized = status == RMM_SUCCESS && new_size > size;
        assert_eq!(call(rmmDeviceBufferData(buffer, &mut data)), RMM_SUCCESS);
        // Grown or not, the first bytes are the ones stamped (a stamp starts at the block's start).
        let edge = size.min(256);
        // SAFETY: the buffer holds at least `size` bytes at `data`.
        let first = unsafe { std::slice::from_raw_parts(data as *const u8, edge) };
        let expected = stamp_bytes(tag, edge);
        assert_eq!(first, &expected[..], "{}: the buffer's contents did not move with it", self.context("resize"));
        self.count(device, Some(stack), 1 + resized as u64);
        assert_eq!(call(rmmDeviceBufferDestroy(buffer)), RMM_SUCCESS, "{}: {}", self.context("destroy buffer"), last_message());
    }

    /// Gives a device's free memory back while the other threads allocate and free there.
    fn release_device(&mut self) {
        let (mut count, mut released) = (0, 0);
        assert_eq!(call(rmmGetDeviceCount(&mut count)), RMM_SUCCESS);
        let device = self.rng.below(count as u64) as i32;
        assert_eq!(call(rmmDeviceRelease(device, &mut released)), RMM_SUCCESS, "{}: {}", self.context("device release"), last_message());
    }

    fn step(&mut self) {
        match self.rng.below(100) {
            0..=34 => self.allocate(),
            35..=44 => self.allocate_legacy(),
            45..=74 => self.free(),
            75..=82 => self.hand_off(),
            83..=92 => self.free_bad(),
            93 => self.release_device(),
            94..=95 => self.private_handle(),
            _ => self.buffer(),
        }
    }

    fn free_all(&mut self) {
        while let Some(_block) = self.blocks.last() {
            self.free();
        }
    }

    fn run(&mut self) {
        while !self.shared.budget.spent() && self.shared.failures.load(Ordering::Relaxed) == 0 {
            self.step();
        }
        self.free_all();
    }

    /// Growth mode: one round on the round's new stacks, which start empty: allocations first,
    /// all threads at once, then the usual mix (more allocations than frees, so the resources
    /// keep growing up to the thread's live limit), then everything freed.
    fn round(&mut self) {
        self.stacks = self.shared.devices.read().unwrap().clone();
        // The opening: every thread on the round's focus, mostly on the stream they share.
        let focus = self.shared.focus.load(Ordering::SeqCst);
        let (device, stack) = ((focus / 16) as i32, (focus % 16) as usize);
        for _ in 0..GROWTH_OPENING {
            let stream = if self.rng.chance(75) { 0 } else { self.stream(device) };
            self.allocate_on(device, stack, stream);
        }
        for _ in GROWTH_OPENING..GROWTH_ROUND_OPS {
            if self.rng.chance(30) {
                self.allocate();
            } else {
                self.step();
            }
        }
        self.free_all();
        let counts = std::mem::take(&mut self.counts);
        self.shared.round_counts.lock().unwrap().add(&counts);
    }
}

/// The read lock of `device`'s sleep state, for a call on the memory of `stack` (None: the
/// legacy stack) or a read of it: only the expandable stack sleeps.
fn sleep_state(shared: &Shared, device: i32, stack: Option<usize>) -> Option<RwLockReadGuard<'_, SleepState>> {
    (stack == Some(EXPANDABLE)).then(|| shared.sleep[device as usize].read().unwrap())
}

/// Puts a device's expandable stack to sleep every `SLEEPER_AWAKE` (mostly in discard mode) and
/// wakes it `SLEEPER_ASLEEP` later (again and again while the device is out of memory), until
/// the threads are done: it ends awake. Returns the sleeps.
fn sleeper(shared: &Shared) -> u64 {
    let mut rng = Rng::new(shared.budget.seed * 1000 + 998);
    let mut sleeps = 0;
    while !shared.done.load(Ordering::Relaxed) && shared.failures.load(Ordering::Relaxed) == 0 {
        std::thread::sleep(SLEEPER_AWAKE);
        let device = rng.below(DEVICES as u64) as usize;
        let expandable = shared.devices.read().unwrap()[device].tops[EXPANDABLE];
        let keep = rng.chance(SLEEPER_KEEPS);
        {
            let mut state = shared.sleep[device].write().unwrap();
            let mode = if keep { RMM_SLEEP_KEEP } else { RMM_SLEEP_DISCARD };
            assert_eq!(call(rmmResourceSleep(expandable.0, mode, null_mut())), RMM_SUCCESS, "sleep {sleeps}: {}", last_message());
            state.asleep = true;
            state.discards += u64::from(!keep);
        }
        std::thread::sleep(SLEEPER_ASLEEP);
        let mut tries = 0;
        loop {
            let mut state = shared.sleep[device].write().unwrap();
            match call(rmmResourceWake(expandable.0, null_mut())) {
                RMM_SUCCESS => {
                    state.asleep = false;
                    break;
                }
                RMM_ERROR_OUT_OF_MEMORY if tries < 1000 => tries += 1,
                other => panic!("wake {sleeps} (try {tries}): {other:?}: {}", last_message()),
            }
            drop(state);
            std::thread::sleep(Duration::from_millis(1));
        }
        sleeps += 1;
    }
    sleeps
}

/// Reads the adaptors' figures while the threads run: a limit is never exceeded, counts never
/// go below zero, and the race checker stays quiet.
fn sample(shared: &Shared) -> u64 {
    let mut samples = 0;
    let devices = shared.devices.read().unwrap().clone();
    while !shared.done.load(Ordering::Relaxed) {
        for stacks in &devices {
            let limited = limited_bytes(stacks.limiting);
            assert!(limited <= LIMIT, "the limiting adaptor holds {limited} bytes over its limit of {LIMIT}");
            for &(_, handle) in &stacks.counted {
                let counts = statistics(handle);
                assert!(counts.current_bytes >= 0 && counts.current_count >= 0, "negative statistics: {counts:?}");
                assert!(counts.current_bytes <= counts.peak_bytes && counts.current_count <= counts.peak_count, "{counts:?}");
            }
        }
        assert_no_races("a sample of the figures");
        samples += 1;
        std::thread::yield_now();
    }
    samples
}

/// Frees the handed-off blocks nobody took.
fn free_handed_off(shared: &Shared) {
    for block in shared.handoff.lock().unwrap().drain(..) {
        let state = sleep_state(shared, block.device, block.stack);
        let discarded = state.as_ref().is_some_and(|state| state.discards != block.epoch);
        assert!(discarded || stamped(block.ptr, block.size, block.tag), "a handed-off block lost its contents");
        assert_eq!(call(rmmFree(block.ptr as *mut c_void, null_mut(), c"threads.c".as_ptr(), 5)), RMM_SUCCESS, "{}", last_message());
    }
}

/// Runs `f`; a panic is counted as a failure and kept in `result` (the first one).
fn guarded(shared: &Shared, result: &mut std::thread::Result<()>, f: impl FnOnce()) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    if outcome.is_err() {
        shared.failures.fetch_add(1, Ordering::SeqCst);
        if result.is_ok() {
            *result = outcome;
        }
    }
}

/// A worker thread: its streams, then one run (or, in growth mode, rounds between the
/// coordinator's barriers), then its streams destroyed; what it counted (in growth mode, each
/// round's counts went to `Shared::round_counts` instead).
fn work(shared: &Shared, index: u64, barrier: &Barrier) -> Counts {
    let mut worker = Worker {
        shared,
        stacks: shared.devices.read().unwrap().clone(),
        index,
        rng: Rng::new(shared.budget.seed * 1000 + index),
        streams: Vec::new(),
        blocks: Vec::new(),
        live: 0,
        seq: 0,
        counts: Counts::default(),
    };
    for device in 0..DEVICES {
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
        let streams = (0..2)
            .map(|_| {
                let mut stream: cudaStream_t = null_mut();
                assert_eq!(call(rmmStreamCreate(&mut stream)), RMM_SUCCESS);
                stream as usize
            })
            .collect();
        worker.streams.push(streams);
    }
    let mut result = Ok(());
    if shared.growth {
        loop {
            barrier.wait();
            if shared.stop.load(Ordering::SeqCst) {
                break;
            }
            // A failed round still passes the barriers, so that the others finish theirs.
            guarded(shared, &mut result, || worker.round());
            barrier.wait();
            // The coordinator put the devices' original resources back: an rmmAlloc on each
            // device drops this thread's copy of the round's stack (per_device.rs), so that
            // destroying the round's stacks gives all their memory back.
            barrier.wait();
            guarded(shared, &mut result, || {
                for device in 0..DEVICES {
                    assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
                    let mut ptr: *mut c_void = null_mut();
                    assert_eq!(call(rmmAlloc(&mut ptr, 1, null_mut(), c"threads.c".as_ptr(), 6)), RMM_SUCCESS, "{}", last_message());
                    assert_eq!(call(rmmFree(ptr, null_mut(), c"threads.c".as_ptr(), 7)), RMM_SUCCESS, "{}", last_message());
                }
            });
            barrier.wait();
        }
    } else {
        barrier.wait();
        result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
        if result.is_err() {
            shared.failures.fetch_add(1, Ordering::Relaxed);
        }
    }
    for stream in worker.streams.iter().flatten() {
        assert_eq!(call(rmmStreamSynchronize(*stream as cudaStream_t)), RMM_SUCCESS);
        assert_eq!(call(rmmStreamDestroy(*stream as cudaStream_t)), RMM_SUCCESS);
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    worker.counts
}

/// Growth mode's coordinator: between rounds (every thread past the round's end), checks and
/// destroys the round's stacks, and builds new ones (the device memory all free in between);
/// the rounds run. Passes every barrier the workers pass, failed or not.
fn coordinate_rounds(shared: &Shared, barrier: &Barrier, originals: &[Handle], baseline: &[usize]) -> std::thread::Result<u64> {
    let mut rounds = 0;
    let mut result = Ok(());
    let mut rng = Rng::new(shared.budget.seed * 1000 + 999);
    loop {
        let stop = shared.budget.spent() || shared.failures.load(Ordering::SeqCst) > 0;
        shared.stop.store(stop, Ordering::SeqCst);
        // Any stack but the limited one (each grows from empty: a pool, an arena, the binning
        // and fixed-size resources' pool, the expandable resource).
        let stack = 1 + rng.below(UNLIMITED as u64);
        shared.focus.store(rng.below(DEVICES as u64) * 16 + stack, Ordering::SeqCst);
        barrier.wait();
        if stop {
            return result.map(|()| rounds);
        }
        barrier.wait();
        rounds += 1;
        // After a failure the failed thread's blocks may still be live: nothing more to check.
        let failed = shared.failures.load(Ordering::SeqCst) > 0;
        if !failed {
            guarded(shared, &mut result, || {
                free_handed_off(shared);
                let counts = std::mem::take(&mut *shared.round_counts.lock().unwrap());
                assert_no_races(format_args!("round {rounds} (seed {})", shared.budget.seed));
                for (device, stacks) in shared.devices.read().unwrap().iter().enumerate() {
                    check_and_uninstall(device, stacks, &counts, originals[device]);
                }
            });
        }
        barrier.wait();
        barrier.wait();
        if !failed && shared.failures.load(Ordering::SeqCst) == 0 {
            guarded(shared, &mut result, || {
                let mut devices = shared.devices.write().unwrap();
                for (device, stacks) in devices.iter().enumerate() {
                    destroy(stacks);
                    assert_eq!(device_used(device as i32), baseline[device], "round {rounds}: device {device} memory left reserved");
                }
                // The next round's (after the last round, unused: checked and destroyed at the end).
                *devices = (0..DEVICES).map(|device| setup(device, true)).collect();
            });
        }
    }
}

#[test]
fn threads_sharing_stacks_keep_the_c_api_contract() {
    let growth = std::env::var("RMM_FUZZ_GROWTH").is_ok_and(|v| v == "1");
    // Growth mode: devices far larger than the threads can fill, so that only a limit explains
    // running out.
    let capacity = if growth { format!("2:{}GiB", GROWTH_DEVICE >> 30) } else { "2:1GiB".to_string() };
    std::env::set_var("RMM_SIM_DEVICES", capacity);
    std::env::set_var("RMM_SIM_ON_RACE", "count");
    configure_legacy_api();
    let budget = Budget::from_env(if cfg!(debug_assertions) { 100_000 } else { 1_000_000 });
    let baseline: Vec<usize> = (0..DEVICES).map(device_used).collect();
    let originals: Vec<Handle> = (0..DEVICES)
        .map(|device| {
            let mut original: rmmResource_t = null_mut();
            assert_eq!(call(rmmGetPerDeviceResource(device, &mut original)), RMM_SUCCESS, "{}", last_message());
            Handle(original)
        })
        .collect();
    let shared = Arc::new(Shared {
        devices: RwLock::new((0..DEVICES).map(|device| setup(device, growth)).collect()),
        growth,
        stop: AtomicBool::new(false),
        round_counts: Mutex::new(Counts::default()),
        focus: AtomicU64::new(0),
        handoff: Mutex::new(Vec::new()),
        budget,
        done: AtomicBool::new(false),
        failures: AtomicU64::new(0),
        sleep: (0..DEVICES).map(|_| RwLock::new(SleepState::default())).collect(),
        refused_asleep: AtomicU64::new(0),
    });
    let started = std::time::Instant::now();
    let calls_before = CALLS.load(Ordering::Relaxed);
    // Growth mode: the coordinator (this thread) passes the barrier with the workers.
    let barrier = Arc::new(Barrier::new(THREADS as usize + growth as usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|index| {
            let (shared, barrier) = (shared.clone(), barrier.clone());
            std::thread::spawn(move || work(&shared, index, &barrier))
        })
        .collect();
    let sampler = (!growth).then(|| {
        let shared = shared.clone();
        std::thread::spawn(move || sample(&shared))
    });
    let sleeper = (!growth).then(|| {
        let shared = shared.clone();
        std::thread::spawn(move || sleeper(&shared))
    });
    let coordinated = growth.then(|| coordinate_rounds(&shared, &barrier, &originals, &baseline));
    let mut totals = Counts::default();
    let mut panicked = None;
    for worker in workers {
        match worker.join() {
            Ok(counts) => totals.add(&counts),
            Err(panic) => panicked = Some(panic),
        }
    }
    shared.done.store(true, Ordering::Relaxed);
    let samples = sampler.map_or(0, |sampler| sampler.join().expect("the sampler found a broken figure"));
    let sleeps = sleeper.map_or(0, |sleeper| sleeper.join().expect("a sleep or wake failed"));
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
    let rounds = match coordinated {
        Some(Ok(rounds)) => rounds,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => 1,
    };
    free_handed_off(&shared);
    let calls = CALLS.load(Ordering::Relaxed) - calls_before;
    if growth {
        // The stacks left were built after the last round and never used.
        totals = Counts::default();
    }
    for (device, stacks) in shared.devices.read().unwrap().iter().enumerate() {
        check_and_uninstall(device, stacks, &totals, originals[device]);
        destroy(stacks);
    }
    for original in &originals {
        assert_eq!(call(rmmResourceDestroy(original.0)), RMM_SUCCESS);
    }
    assert_no_races("the end");
    for device in 0..DEVICES {
        assert_eq!(device_used(device), baseline[device as usize], "device {device} memory left reserved");
    }
    let mode = match growth {
        true => format!(", growth mode: {rounds} rounds on new stacks"),
        false => format!(", {sleeps} sleeps, {} allocations refused as asleep", shared.refused_asleep.load(Ordering::Relaxed)),
    };
    println!(
        "fuzz_api_threads: {calls} C API calls clean from {THREADS} threads (seed {}{mode}) in {:.1} s, {samples} samples of the figures",
        shared.budget.seed,
        started.elapsed().as_secs_f64()
    );
}
