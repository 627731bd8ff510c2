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
//! Bounded by RMM_FUZZ_CALLS (all threads together), RMM_FUZZ_SECONDS and RMM_FUZZ_SEED.

mod fuzz;

use fuzz::*;
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::*;
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};

const DEVICES: i32 = 2;
const THREADS: u64 = 16;
const LIMIT: usize = 64 << 20;
const FIXED_BLOCK: usize = 1 << 16;
/// Bytes one thread keeps live at most, so that sixteen stay well inside a device.
const THREAD_LIVE_LIMIT: usize = 24 << 20;

/// Raw handles and streams cross threads here; the C API is thread-safe.
#[derive(Clone, Copy)]
struct Handle(rmmResource_t);
// SAFETY: rmm's handles may be used from any thread (the C API is thread-safe).
unsafe impl Send for Handle {}
// SAFETY: as above.
unsafe impl Sync for Handle {}

/// One device's shared stacks: what the threads allocate from, and the adaptors they check.
struct DeviceStacks {
    /// Top of each stack: [limit over statistics over pool, statistics over arena, binning,
    /// tracking over fixed-size, aligned over pool].
    tops: Vec<Handle>,
    /// Every handle made at setup, destroyed at the end (tops included).
    all: Vec<Handle>,
    limiting: Handle,
    /// Under the limit: counts the limited stack's blocks and the legacy entry points'.
    limited_statistics: Handle,
    arena_statistics: Handle,
    tracking: Handle,
    /// The device's resource before setup, put back at the end.
    original: Handle,
}

const LIMITED: usize = 0;
const ARENA: usize = 1;
const FIXED: usize = 3;

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
}

/// What a thread counted, compared with the adaptors' totals after the join.
#[derive(Default)]
struct Counts {
    /// Successful allocations through the limited stack (legacy ones included), per device.
    limited: [u64; DEVICES as usize],
    arena: [u64; DEVICES as usize],
}

struct Shared {
    devices: Vec<DeviceStacks>,
    /// Blocks on their way from one thread to another (their stream already synchronized).
    handoff: Mutex<Vec<Block>>,
    budget: Budget,
    done: AtomicBool,
    failures: AtomicU64,
}

fn setup(device: i32) -> DeviceStacks {
    assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
    let cuda = Handle(created(Kind::Cuda, null_mut()));
    let pool = Handle(created(Kind::Pool, cuda.0));
    let limited_statistics = Handle(created(Kind::Statistics, pool.0));
    let limiting = Handle(created(Kind::Limiting { limit: LIMIT }, limited_statistics.0));
    let arena = Handle(created(Kind::Arena, cuda.0));
    let arena_statistics = Handle(created(Kind::Statistics, arena.0));
    let binning = Handle(created(Kind::Binning, pool.0));
    let fixed = Handle(created(Kind::FixedSize { block: FIXED_BLOCK }, pool.0));
    let tracking = Handle(created(Kind::Tracking, fixed.0));
    let aligned = Handle(created(Kind::Aligned { alignment: 4096, threshold: 1000 }, pool.0));
    let expandable = Handle(created(Kind::Expandable { release: true }, null_mut()));
    // rmmAlloc on this device goes through the limited stack.
    let mut original: rmmResource_t = null_mut();
    assert_eq!(call(rmmSetPerDeviceResource(device, limiting.0, &mut original)), RMM_SUCCESS);
    DeviceStacks {
        tops: vec![limiting, arena_statistics, binning, tracking, aligned, expandable],
        all: vec![expandable, aligned, tracking, fixed, binning, arena_statistics, arena, limiting, limited_statistics, pool, cuda],
        limiting,
        limited_statistics,
        arena_statistics,
        tracking,
        original: Handle(original),
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
        let max_log2 = if self.rng.chance(5) { 22 } else { 15 };
        let size = self.rng.log_uniform(max_log2).max(1);
        match stack {
            Some(FIXED) => size.min(FIXED_BLOCK),
            _ => size,
        }
    }

    /// Counts `allocations` through `stack` (None: rmmAlloc, which goes through the limited
    /// stack) for the comparison with the adaptors' totals.
    fn count(&mut self, device: i32, stack: Option<usize>, allocations: u64) {
        match stack.unwrap_or(LIMITED) {
            LIMITED => self.counts.limited[device as usize] += allocations,
            ARENA => self.counts.arena[device as usize] += allocations,
            _ => {}
        }
    }

    fn keep(&mut self, block: Block) {
        stamp(block.ptr, block.size, block.tag);
        self.live += block.size;
        self.blocks.push(block);
    }

    fn check(&self, block: &Block, what: &str) {
        assert!(
            stamped(block.ptr, block.size, block.tag),
            "{}: the block at {:#x} ({} bytes) lost its contents: handed out to someone else as well",
            self.context(what),
            block.ptr,
            block.size
        );
    }

    fn allocate(&mut self) {
        if self.live > THREAD_LIVE_LIMIT {
            return self.free();
        }
        let device = self.rng.below(DEVICES as u64) as i32;
        let stack = self.rng.below(self.shared.devices[device as usize].tops.len() as u64) as usize;
        let size = self.size(Some(stack));
        let stream = self.stream(device);
        let handle = self.shared.devices[device as usize].tops[stack];
        let (status, ptr) = allocate(handle.0, size, stream as cudaStream_t);
        match status {
            RMM_SUCCESS => {
                let tag = self.next_tag();
                self.keep(Block { ptr, size, device, stack: Some(stack), private: false, stream, tag });
                self.count(device, Some(stack), 1);
            }
            // Other threads share the limit and the devices.
            RMM_ERROR_OUT_OF_MEMORY => assert!(last_message().contains("out of memory"), "{}", self.context("allocate")),
            other => panic!("{}: {other:?} ({})", self.context("allocate"), last_message()),
        }
    }

    fn allocate_legacy(&mut self) {
        let device = self.rng.below(DEVICES as u64) as i32;
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
        let size = self.size(None);
        let stream = self.stream(device);
        let mut ptr: *mut c_void = null_mut();
        match call(rmmAlloc(&mut ptr, size, stream as cudaStream_t, c"threads.c".as_ptr(), 1)) {
            RMM_SUCCESS => {
                let tag = self.next_tag();
                self.keep(Block { ptr: ptr as usize, size, device, stack: None, private: false, stream, tag });
                self.count(device, None, 1);
            }
            RMM_ERROR_OUT_OF_MEMORY => {}
            other => panic!("{}: {other:?} ({})", self.context("rmmAlloc"), last_message()),
        }
    }

    /// A handle of the thread's own over a shared stack, a few blocks from it, and the handle
    /// destroyed at once: the blocks stay valid and are freed later with rmmFree.
    fn private_handle(&mut self) {
        let device = self.rng.below(DEVICES as u64) as i32;
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
        let stack = self.rng.below(self.shared.devices[device as usize].tops.len() as u64) as usize;
        let over = self.shared.devices[device as usize].tops[stack];
        let kind = *self.rng.pick(&[Kind::Statistics, Kind::Tracking, Kind::Prefetch, Kind::FailureCallback]);
        let (status, handle) = create(kind, over.0);
        assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("private handle"), last_message());
        for _ in 0..self.rng.below(4) {
            let size = self.size(Some(stack));
            let stream = self.stream(device);
            let (status, ptr) = allocate(handle, size, stream as cudaStream_t);
            if status == RMM_SUCCESS {
                let tag = self.next_tag();
                self.keep(Block { ptr, size, device, stack: Some(stack), private: true, stream, tag });
                self.count(device, Some(stack), 1);
            }
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
        self.check(&block, "before its free");
        if self.rng.chance(20) {
            // Freed in the order of another stream once the first is done with it.
            assert_eq!(call(rmmStreamSynchronize(block.stream as cudaStream_t)), RMM_SUCCESS);
            block.stream = self.stream(block.device);
        }
        let status = match (block.stack, block.private) {
            (Some(stack), false) => {
                let handle = self.shared.devices[block.device as usize].tops[stack];
                call(rmmResourceDeallocate(handle.0, block.ptr as *mut c_void, block.size, block.stream as cudaStream_t))
            }
            _ => call(rmmFree(block.ptr as *mut c_void, block.stream as cudaStream_t, c"threads.c".as_ptr(), 2)),
        };
        assert_eq!(status, RMM_SUCCESS, "{}: freeing {:#x}: {}", self.context("free"), block.ptr, last_message());
    }

    fn hand_off(&mut self) {
        if self.rng.chance(50) {
            let Some(block) = self.take_block() else { return };
            self.check(&block, "before its hand-off");
            assert_eq!(call(rmmStreamSynchronize(block.stream as cudaStream_t)), RMM_SUCCESS);
            self.shared.handoff.lock().unwrap().push(block);
        } else {
            let taken = self.shared.handoff.lock().unwrap().pop();
            if let Some(mut block) = taken {
                self.check(&block, "handed over");
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
        let Some(&block) = self.blocks.get(self.rng.below(self.blocks.len().max(1) as u64) as usize) else {
            let status = call(rmmFree(host.as_ptr() as *mut c_void, null_mut(), c"threads.c".as_ptr(), 3));
            assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}", self.context("a host address"));
            return;
        };
        let stream = block.stream as cudaStream_t;
        let tops = &self.shared.devices[block.device as usize].tops;
        let owner = block.stack.map_or(tops[LIMITED], |stack| tops[stack]);
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
                let other = tops[(block.stack.unwrap_or(LIMITED) + 1 + self.rng.below(tops.len() as u64 - 1) as usize) % tops.len()];
                (call(rmmResourceDeallocate(other.0, block.ptr as *mut c_void, block.size, stream)), "another stack")
            }
            3 => {
                let other_device = self.shared.devices[(block.device as usize + 1) % DEVICES as usize].tops[LIMITED];
                (call(rmmResourceDeallocate(other_device.0, block.ptr as *mut c_void, block.size, stream)), "another device's stack")
            }
            _ => (call(rmmFree(host.as_ptr() as *mut c_void, stream, c"threads.c".as_ptr(), 4)), "a host address"),
        };
        assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}: {what}: {}", self.context("bad free"), last_message());
        self.check(&block, what);
    }

    fn buffer(&mut self) {
        let device = self.rng.below(DEVICES as u64) as i32;
        let stack = self.rng.below(self.shared.devices[device as usize].tops.len() as u64) as usize;
        let handle = self.shared.devices[device as usize].tops[stack];
        let stream = self.stream(device) as cudaStream_t;
        let size = self.size(Some(stack));
        let mut buffer: rmmDeviceBuffer_t = null_mut();
        match call(rmmDeviceBufferCreate(&mut buffer, size, stream, handle.0)) {
            RMM_SUCCESS => {}
            RMM_ERROR_OUT_OF_MEMORY => return,
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
        assert!(matches!(status, RMM_SUCCESS | RMM_ERROR_OUT_OF_MEMORY), "{}: {status:?}", self.context("resize"));
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

    fn run(&mut self) {
        while !self.shared.budget.spent() && self.shared.failures.load(Ordering::Relaxed) == 0 {
            match self.rng.below(100) {
                0..=34 => self.allocate(),
                35..=44 => self.allocate_legacy(),
                45..=74 => self.free(),
                75..=82 => self.hand_off(),
                83..=92 => self.free_bad(),
                93..=95 => self.private_handle(),
                _ => self.buffer(),
            }
        }
        while let Some(_block) = self.blocks.last() {
            self.free();
        }
    }
}

/// Reads the adaptors' figures while the threads run: a limit is never exceeded, counts never
/// go below zero, and the race checker stays quiet.
fn sample(shared: &Shared) -> u64 {
    let mut samples = 0;
    while !shared.done.load(Ordering::Relaxed) {
        for stacks in &shared.devices {
            let limited = limited_bytes(stacks.limiting);
            assert!(limited <= LIMIT, "the limiting adaptor holds {limited} bytes over its limit of {LIMIT}");
            for handle in [stacks.limited_statistics, stacks.arena_statistics] {
                let counts = statistics(handle);
                assert!(counts.current_bytes >= 0 && counts.current_count >= 0, "negative statistics: {counts:?}");
                assert!(counts.current_bytes <= counts.peak_bytes && counts.current_count <= counts.peak_count, "{counts:?}");
            }
        }
        assert_eq!(race_count(), 0, "a stream-ordering race");
        samples += 1;
        std::thread::yield_now();
    }
    samples
}

#[test]
fn threads_sharing_stacks_keep_the_c_api_contract() {
    std::env::set_var("RMM_SIM_DEVICES", "2:1GiB");
    std::env::set_var("RMM_SIM_ON_RACE", "count");
    configure_legacy_api();
    let budget = Budget::from_env(if cfg!(debug_assertions) { 100_000 } else { 1_000_000 });
    let baseline: Vec<usize> = (0..DEVICES).map(device_used).collect();
    let shared = Arc::new(Shared {
        devices: (0..DEVICES).map(setup).collect(),
        handoff: Mutex::new(Vec::new()),
        budget,
        done: AtomicBool::new(false),
        failures: AtomicU64::new(0),
    });
    let started = std::time::Instant::now();
    let calls_before = CALLS.load(Ordering::Relaxed);
    let ready = Arc::new(Barrier::new(THREADS as usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|index| {
            let (shared, ready) = (shared.clone(), ready.clone());
            std::thread::spawn(move || {
                let mut worker = Worker {
                    shared: &shared,
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
                ready.wait();
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
                if result.is_err() {
                    worker.shared.failures.fetch_add(1, Ordering::Relaxed);
                }
                for stream in worker.streams.iter().flatten() {
                    assert_eq!(call(rmmStreamSynchronize(*stream as cudaStream_t)), RMM_SUCCESS);
                    assert_eq!(call(rmmStreamDestroy(*stream as cudaStream_t)), RMM_SUCCESS);
                }
                if let Err(panic) = result {
                    std::panic::resume_unwind(panic);
                }
                worker.counts
            })
        })
        .collect();
    let sampler = {
        let shared = shared.clone();
        std::thread::spawn(move || sample(&shared))
    };
    let mut totals = Counts::default();
    let mut panicked = None;
    for worker in workers {
        match worker.join() {
            Ok(counts) => {
                for device in 0..DEVICES as usize {
                    totals.limited[device] += counts.limited[device];
                    totals.arena[device] += counts.arena[device];
                }
            }
            Err(panic) => panicked = Some(panic),
        }
    }
    shared.done.store(true, Ordering::Relaxed);
    let samples = sampler.join().expect("the sampler found a broken figure");
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
    // Handed-off blocks nobody took.
    for block in shared.handoff.lock().unwrap().drain(..) {
        assert!(stamped(block.ptr, block.size, block.tag), "a handed-off block lost its contents");
        assert_eq!(call(rmmFree(block.ptr as *mut c_void, null_mut(), c"threads.c".as_ptr(), 5)), RMM_SUCCESS, "{}", last_message());
    }
    let calls = CALLS.load(Ordering::Relaxed) - calls_before;
    for (device, stacks) in shared.devices.iter().enumerate() {
        let limited = statistics(stacks.limited_statistics);
        let arena = statistics(stacks.arena_statistics);
        assert_eq!((limited.current_bytes, limited.current_count), (0, 0), "device {device}: {limited:?}");
        assert_eq!((arena.current_bytes, arena.current_count), (0, 0), "device {device}: {arena:?}");
        assert_eq!(limited.total_count as u64, totals.limited[device], "device {device}: the limited stack's total");
        assert_eq!(arena.total_count as u64, totals.arena[device], "device {device}: the arena's total");
        assert_eq!(limited_bytes(stacks.limiting), 0);
        let mut outstanding = 0;
        assert_eq!(call(rmmTrackingAdaptorGetOutstanding(stacks.tracking.0, null_mut(), 0, &mut outstanding)), RMM_SUCCESS);
        assert_eq!(outstanding, 0, "device {device}: the tracking adaptor still holds blocks");
    }
    for (device, stacks) in shared.devices.iter().enumerate() {
        assert_eq!(call(rmmSetPerDeviceResource(device as i32, stacks.original.0, null_mut())), RMM_SUCCESS, "{}", last_message());
        assert_eq!(call(rmmResourceDestroy(stacks.original.0)), RMM_SUCCESS);
        for handle in &stacks.all {
            assert_eq!(call(rmmResourceDestroy(handle.0)), RMM_SUCCESS);
        }
    }
    assert_eq!(race_count(), 0);
    for device in 0..DEVICES {
        assert_eq!(device_used(device), baseline[device as usize], "device {device} memory left reserved");
    }
    println!(
        "fuzz_api_threads: {calls} C API calls clean from {THREADS} threads (seed {}) in {:.1} s, {samples} samples of the figures",
        shared.budget.seed,
        started.elapsed().as_secs_f64()
    );
}
