//! `rmmCudaMalloc` and `rmmCudaFree` (the preload library's `cudaMalloc`/`cudaFree`): by
//! default the free waits for the device, as `cudaFree` does; with `async_free` configured it
//! does not, and the memory comes back only once the device has done the work given before the
//! free, on every stream rmm-rs knows, which the race checker and the simulator's held work
//! (a long kernel) check.

mod common;

use common::*;
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use rmm::ownership::cuda_free;
use rmm::platform::{backend, simulator};
use rmm::resources::streams;
use std::ffi::c_void;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

fn malloc(bytes: usize) -> Result<usize, rmmError_t> {
    let mut ptr: *mut c_void = null_mut();
    match rmmCudaMalloc(&mut ptr, bytes) {
        RMM_SUCCESS => Ok(ptr as usize),
        error => Err(error),
    }
}

fn free(ptr: usize) -> rmmError_t {
    rmmCudaFree(ptr as *mut c_void)
}

fn host_waits() -> u64 {
    simulator().unwrap().driver_calls().host_wait
}

/// A pool of at most `maximum` bytes as device 0's resource, replacing `previous`.
fn pool_as_device_resource(maximum: usize) -> (rmmResource_t, rmmResource_t, rmmResource_t) {
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 0, maximum));
    let mut previous = null_mut();
    assert_eq!(rmmSetCurrentDeviceResource(pool, &mut previous), RMM_SUCCESS);
    (cuda, pool, previous)
}

fn restore((cuda, pool, previous): (rmmResource_t, rmmResource_t, rmmResource_t)) {
    assert_eq!(rmmSetCurrentDeviceResource(previous, null_mut()), RMM_SUCCESS);
    for handle in [previous, pool, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

/// `async_free` configured, and a pool of at most `maximum` bytes as device 0's resource.
fn async_free_over_pool(maximum: usize) -> (rmmResource_t, rmmResource_t, rmmResource_t) {
    configured_over_pool(c"async_free/statistics/pool", maximum)
}

/// `spec` configured, and a pool of at most `maximum` bytes (0: no maximum) as device 0's
/// resource.
fn configured_over_pool(spec: &std::ffi::CStr, maximum: usize) -> (rmmResource_t, rmmResource_t, rmmResource_t) {
    assert_eq!(rmmConfigure(spec.as_ptr()), RMM_SUCCESS, "{}", last_message());
    pool_as_device_resource(maximum)
}

/// Whether `ptr`'s free still waits for the device (its record is held by the free).
fn waiting(ptr: usize) -> bool {
    rmm::ownership::records::find(ptr).is_some_and(|found| found.holder == rmm::ownership::records::Holder::Freeing)
}

/// Undoes `async_free_over_pool`.
fn async_free_off(stack: (rmmResource_t, rmmResource_t, rmmResource_t)) {
    restore(stack);
    assert_eq!(rmmConfigure(c"".as_ptr()), RMM_SUCCESS);
}

#[test]
fn cuda_free_waits_for_the_device_unless_async_free_is_configured() {
    let _guard = setup();
    let sim = simulator().unwrap();
    // Synchronizing, as cudaFree: the free waits, and the memory is reusable at once.
    assert_eq!(rmmConfigure(c"statistics/pool".as_ptr()), RMM_SUCCESS);
    let stack = pool_as_device_resource(4 * MIB);
    let stream = streams::create(0).unwrap();
    let block = malloc(4 * MIB).unwrap();
    sim.stream_hold(stream).unwrap(); // a kernel using the block
    let before = host_waits();
    assert_eq!(free(block), RMM_SUCCESS);
    assert_eq!(host_waits(), before + 1);
    assert_eq!(malloc(4 * MIB), Ok(block));
    assert_eq!(free(block), RMM_SUCCESS);
    assert_eq!(free(block), RMM_ERROR_INVALID_ARGUMENT, "freed twice");
    assert_eq!(free(0), RMM_SUCCESS);
    restore(stack);

    // async_free: the free returns at once; the block waits for the held kernel.
    let stack = async_free_over_pool(8 * MIB);
    let block = malloc(4 * MIB).unwrap();
    sim.stream_hold(stream).unwrap();
    let before = host_waits();
    assert_eq!(free(block), RMM_SUCCESS);
    assert_eq!(free(block), RMM_ERROR_INVALID_ARGUMENT, "a block still waiting cannot be freed again");
    assert!(last_message().contains("freed already"), "{}", last_message());
    assert_eq!(rmmFree(block as *mut c_void, null_mut(), null_mut(), 0), RMM_ERROR_INVALID_ARGUMENT);
    let other = malloc(4 * MIB).unwrap();
    assert_ne!(other, block, "the kernel still runs: the block is not handed out");
    assert_eq!(host_waits(), before, "no host synchronization");
    assert_eq!(cuda_free::pending(), 1);
    // Once the kernel is done, the block comes back at the next call.
    sim.stream_finish_held(stream).unwrap();
    assert_eq!(free(other), RMM_SUCCESS);
    let again = malloc(4 * MIB).unwrap();
    assert!(again == block || again == other, "{again:#x}");
    assert_eq!(free(again), RMM_SUCCESS);
    // With the pool full and a kernel still running, an allocation waits for the kernel
    // rather than failing.
    let first = malloc(4 * MIB).unwrap();
    let second = malloc(4 * MIB).unwrap();
    sim.stream_hold(stream).unwrap();
    assert_eq!(free(first), RMM_SUCCESS);
    let before = host_waits();
    assert_eq!(malloc(4 * MIB), Ok(first));
    assert!(host_waits() > before, "waited for the kernel");
    for ptr in [first, second] {
        assert_eq!(free(ptr), RMM_SUCCESS);
    }
    assert_eq!(malloc(4 * MIB).map(free), Ok(RMM_SUCCESS));
    assert!(races().is_empty(), "{:?}", races());
    // Everything that waited is back once the device is done.
    assert!(cuda_free::pending() > 0);
    sim.device_synchronize(0).unwrap();
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending(), 0);
    streams::destroy(stream).unwrap();
    async_free_off(stack);
}

/// With `async_free`, what a free costs in recorded events does not grow with the number of
/// streams the program made: a batch closes after `BATCH_LIMIT` frees, or after 50 us for each
/// event its close records, so a program with many streams records them rarely.
#[test]
fn deferred_frees_record_events_for_batches_not_for_each_free() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let stack = async_free_over_pool(256 * MIB);
    let made: Vec<_> = (0..63).map(|_| streams::create(0).unwrap()).collect();
    let events_per_close = 1 + made.len() as u64;
    // One close, so that the batch knows its cost.
    assert_eq!(malloc(4096).map(free), Ok(RMM_SUCCESS));
    cuda_free::settle(false).unwrap();
    let before = sim.driver_calls().event_record;
    let began = std::time::Instant::now();
    let pairs = 2000u64;
    for _ in 0..pairs {
        let block = malloc(4096).unwrap();
        assert_eq!(free(block), RMM_SUCCESS);
    }
    let elapsed = began.elapsed();
    let recorded = sim.driver_calls().event_record - before;
    // A close per allocation (what async_free did before) would record `pairs` times
    // `events_per_close`; batches close by count or by age only. The bound holds however slow
    // the run (a debug build takes about 100 us a pair here).
    let closes_by_count = pairs / 256 + 1;
    let closes_by_age = (elapsed.as_micros() as u64) / (50 * events_per_close) + 1;
    assert!(
        recorded <= (closes_by_count + closes_by_age) * events_per_close,
        "{recorded} events for {pairs} frees in {elapsed:?} with {events_per_close} streams"
    );
    sim.device_synchronize(0).unwrap();
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending(), 0);
    assert!(races().is_empty(), "{:?}", races());
    for stream in made {
        streams::destroy(stream).unwrap();
    }
    async_free_off(stack);
}

/// Threads freeing without waiting at once: nothing is lost or handed out twice, the race
/// checker sees no block reused before the work given before its free, and all comes back.
#[test]
fn deferred_frees_from_many_threads_all_come_back() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let stack = async_free_over_pool(64 * MIB);
    let workers: Vec<_> = (0..4)
        .map(|thread| {
            std::thread::spawn(move || {
                let stream = streams::create(0).unwrap();
                for i in 0..300usize {
                    let bytes = 256 << ((thread + i) % 12);
                    let block = malloc(bytes).unwrap();
                    if i % 16 == 0 {
                        simulator().unwrap().stream_hold(stream).unwrap();
                        simulator().unwrap().stream_finish_held(stream).unwrap();
                    }
                    assert_eq!(free(block), RMM_SUCCESS);
                }
                streams::destroy(stream).unwrap();
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    sim.device_synchronize(0).unwrap();
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending(), 0);
    assert!(races().is_empty(), "{:?}", races());
    async_free_off(stack);
}

/// A stream rmm-rs trusts that the program destroyed without telling it (or that another
/// thread destroys while a batch is being closed), breaking `rmmStreamRegister`'s promise: its
/// event cannot be recorded, so the close waits for the whole device instead, and the free
/// still succeeds. Recording it hands the driver a dead handle, which a CUDA driver may crash
/// on: the simulator reports it (in a child process, so that the report stays there).
#[test]
fn a_batch_over_a_stream_destroyed_unannounced_waits_for_the_device() {
    let _guard = setup();
    common::in_forked_child(|| {
        let stack = async_free_over_pool(16 * MIB);
        let stream = rmm::platform::backend().unwrap().stream_create(0).unwrap();
        streams::register(stream).unwrap();
        rmm::platform::backend().unwrap().stream_destroy(stream).unwrap(); // unannounced
        let block = malloc(MIB).unwrap();
        assert_eq!(free(block), RMM_SUCCESS);
        let waits = host_waits();
        cuda_free::settle(false).unwrap();
        assert!(host_waits() > waits, "the close waited for the device");
        assert_eq!(cuda_free::pending(), 0, "and the block came back");
        let reports = races();
        assert!(!reports.is_empty() && reports.iter().all(|report| report.contains("stale stream handle: cuEventRecord")), "{reports:?}");
        streams::unregister(stream).ok();
        async_free_off(stack);
        true
    });
}

/// More threads than cores, hundreds of rounds, in two waves of threads that exit: each block
/// is freed by another thread than the one that allocated it, and each thread makes and destroys
/// streams (`rmmStreamCreate` / `rmmStreamDestroy`, which close the open batch) while the others
/// free. Every free succeeds, nothing is handed out twice or reused before the work given before
/// its free (the race checker), and everything comes back.
#[test]
fn deferred_frees_across_threads_and_streams_that_come_and_go() {
    use std::sync::mpsc;
    let _guard = setup();
    let sim = simulator().unwrap();
    let stack = async_free_over_pool(256 * MIB);
    const THREADS: usize = 8;
    const ROUNDS: usize = 400;
    for wave in 0..2 {
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..THREADS).map(|_| mpsc::channel::<usize>()).unzip();
        let workers: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(thread, from_previous)| {
                let to_next = senders[(thread + 1) % THREADS].clone();
                std::thread::spawn(move || {
                    let mut stream: cudaStream_t = null_mut();
                    for round in 0..ROUNDS {
                        if round % 50 == 0 {
                            if !stream.is_null() {
                                assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
                            }
                            assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
                        }
                        let block = malloc(256 << ((wave + thread + round) % 13)).unwrap();
                        if round % 16 == 0 {
                            simulator().unwrap().stream_hold(rmm::platform::Stream(stream as usize)).unwrap();
                            simulator().unwrap().stream_finish_held(rmm::platform::Stream(stream as usize)).unwrap();
                        }
                        to_next.send(block).unwrap();
                        let theirs = from_previous.recv().unwrap();
                        assert_eq!(free(theirs), RMM_SUCCESS, "{}", last_message());
                    }
                    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
                })
            })
            .collect();
        drop(senders);
        for worker in workers {
            worker.join().unwrap();
        }
    }
    sim.device_synchronize(0).unwrap();
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending(), 0);
    assert!(races().is_empty(), "{:?}", races());
    async_free_off(stack);
}

/// `async_free:pending=8MiB`: while the frees waiting on the device stay under the bound, no
/// free waits; the free that passes it waits for the oldest batch only, and only until they
/// are under the bound again; the newest frees are the ones left waiting. The simulator holds
/// a kernel running before each free, so nothing completes unless waited for.
#[test]
fn frees_past_the_bound_wait_for_the_oldest_batches_only() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let stack = configured_over_pool(c"report/async_free:pending=8MiB/statistics/pool", 256 * MIB);
    let stream = streams::create(0).unwrap();
    let bound = 8 * MIB;
    let mut freed = Vec::new();
    for i in 0..24 {
        let block = malloc(MIB).unwrap();
        sim.stream_hold(stream).unwrap(); // a kernel that uses the block and keeps running
        let waits = host_waits();
        assert_eq!(free(block), RMM_SUCCESS, "{}", last_message());
        let waited = host_waits() - waits;
        freed.push(block);
        // One batch a free, so that the oldest is one free.
        cuda_free::before_stream_goes().unwrap();
        let pending = cuda_free::pending_frees(0);
        assert_eq!(pending.bound, Some(bound));
        assert!(pending.bytes <= bound, "free {i}: {pending:?}");
        match i < 8 {
            true => assert_eq!(waited, 0, "free {i}: under the bound, no wait"),
            false => assert!(waited > 0, "free {i}: past the bound, waited"),
        }
        // Waited only until under the bound, and the oldest went first: the frees waiting are
        // the 8 newest (a block given back may be handed out and freed again, so an older
        // entry can name a block that waits again).
        let kept = (i + 1).min(8);
        assert_eq!((pending.count, pending.bytes), (kept, kept * MIB), "free {i}");
        assert!(freed[freed.len() - kept..].iter().all(|&ptr| waiting(ptr)), "free {i}: the newest frees wait");
    }
    // The exit report says what waits, against the bound.
    let report = rmm::ownership::config::report();
    assert!(report.contains("device 0: 8 frees waiting for the device (8.0 MiB; async_free's bound 8.0 MiB)"), "{report}");
    sim.stream_finish_held(stream).unwrap();
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending_frees(0).count, 0);
    assert!(races().is_empty(), "{:?}", races());
    streams::destroy(stream).unwrap();
    async_free_off(stack);
}

/// When the device refuses an allocation that does not go through `rmmCudaMalloc` (`rmmAlloc`
/// on the pool that the waiting frees go back to, then a `cuda` and a `cuda_async` resource of
/// their own), the frees waiting for the device are waited for and given back, the pool
/// releases the memory, and the allocation succeeds. The other resources need the waiting
/// frees to go back before the pool, made after them, releases.
#[test]
fn a_refused_allocation_anywhere_waits_for_the_frees_waiting() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let stream = streams::create(0).unwrap();
    type Create = fn(*mut rmmResource_t) -> rmmError_t;
    let others: [Option<(&str, Create)>; 3] =
        [None, Some(("cuda", |h| rmmCudaResourceCreate(h))), Some(("cuda_async", |h| rmmAsyncResourceCreate(h, 0, 0)))];
    for other in others {
        let stack = configured_over_pool(c"async_free:pending=100%/statistics/pool", 0);
        let quarter = (512 * MIB - device_used()) / 4 / (2 * MIB) * (2 * MIB);
        let blocks: Vec<usize> = (0..3).map(|_| malloc(quarter).unwrap()).collect();
        sim.stream_hold(stream).unwrap();
        for &block in &blocks {
            assert_eq!(free(block), RMM_SUCCESS);
        }
        assert_eq!(cuda_free::pending_frees(0).bytes, 3 * quarter, "all wait for the kernel");
        let waits = host_waits();
        let mut ptr: *mut c_void = null_mut();
        let resource = other.map(|(_, create)| over(create));
        let allocated = match resource {
            None => rmmAlloc(&mut ptr, 2 * quarter, null_mut(), c"test".as_ptr(), line!()),
            Some(resource) => rmmResourceAllocate(resource, &mut ptr, 2 * quarter, null_mut()),
        };
        let through = other.map_or("the pool, through rmmAlloc", |(name, _)| name);
        assert_eq!(allocated, RMM_SUCCESS, "through {through}: {}", last_message());
        assert!(host_waits() > waits, "waited for the kernel");
        assert_eq!(cuda_free::pending_frees(0).count, 0);
        assert_eq!(rmmFree(ptr, null_mut(), c"test".as_ptr(), line!()), RMM_SUCCESS);
        assert_eq!(rmmResourceDestroy(resource.unwrap_or(null_mut())), RMM_SUCCESS);
        async_free_off(stack);
    }
    assert!(races().is_empty(), "{:?}", races());
    streams::destroy(stream).unwrap();
}

/// More threads than cores, each allocating and freeing under a small bound while kernels
/// hold the device for many frees: no free fails, no block is handed out twice or overlaps
/// another (each thread stamps its blocks), the frees waiting never pass the bound by more
/// than one block per thread, nothing is used before the work given before its free (the race
/// checker), and everything comes back.
#[test]
fn threads_freeing_under_a_small_bound_lose_nothing() {
    const THREADS: usize = 6;
    const ROUNDS: usize = 160;
    const LARGEST: usize = 256 << 12; // 1 MiB
    let _guard = setup();
    let stack = configured_over_pool(c"async_free:pending=1MiB/statistics/pool", 256 * MIB);
    let records_before = rmm::ownership::records::totals();
    let waits = host_waits();
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            std::thread::spawn(move || {
                let sim = simulator().unwrap();
                let stream = streams::create(0).unwrap();
                let mut most = 0;
                for round in 0..ROUNDS {
                    let bytes = 256 << ((thread + round) % 13);
                    let block = malloc(bytes).unwrap_or_else(|e| panic!("thread {thread}, round {round}: {e:?}: {}", last_message()));
                    let tag = (thread * 31 + round) as u8;
                    stamp(block, bytes, tag);
                    match round % 32 {
                        0 => sim.stream_hold(stream).unwrap(),
                        31 => sim.stream_finish_held(stream).unwrap(),
                        _ => {}
                    }
                    assert!(stamped(block, bytes, tag), "thread {thread}, round {round}: another block overlaps {block:#x}");
                    assert_eq!(free(block), RMM_SUCCESS, "{}", last_message());
                    most = most.max(cuda_free::pending_frees(0).bytes);
                }
                sim.stream_finish_held(stream).unwrap();
                streams::destroy(stream).unwrap();
                most
            })
        })
        .collect();
    let most = workers.into_iter().map(|worker| worker.join().unwrap()).max().unwrap();
    assert!(most <= MIB + THREADS * LARGEST, "{most} bytes waited at once");
    assert!(host_waits() > waits, "the bound made frees wait");
    cuda_free::settle(false).unwrap();
    assert_eq!(cuda_free::pending_frees(0), cuda_free::PendingFrees { count: 0, bytes: 0, bound: Some(MIB) });
    assert_eq!(rmm::ownership::records::totals(), records_before, "every record went");
    assert!(races().is_empty(), "{:?}", races());
    async_free_off(stack);
}

/// A bound the device cannot hold parses (the device is not known yet) and is refused with the
/// reason at the device's first use: a free then changes nothing (the pointer stays the
/// caller's), and a default stack is not built. A bound of 0 or garbage is refused by
/// `rmmConfigure` itself.
#[test]
fn a_bound_the_device_cannot_hold_is_refused_with_the_reason() {
    let _guard = setup();
    for spec in [c"async_free:pending=0/pool", c"async_free:pending=lots/pool", c"async_free:pending=101%/pool", c"async_free:pend=1GiB"] {
        assert_eq!(rmmConfigure(spec.as_ptr()), RMM_ERROR_INVALID_ARGUMENT, "{spec:?}");
        assert!(last_message().contains("at column "), "{spec:?}: {}", last_message());
    }
    // Device 0 gets its resource under a bound it holds (setting one builds the default stack
    // it replaces, which the bound below would refuse).
    let stack = configured_over_pool(c"async_free:pending=50%/statistics/pool", 64 * MIB);
    assert_eq!(rmmConfigure(c"async_free:pending=1GiB/statistics/pool".as_ptr()), RMM_SUCCESS);
    let block = malloc(MIB).unwrap();
    assert_eq!(free(block), RMM_ERROR_INVALID_ARGUMENT);
    let message = last_message();
    assert!(message.contains("async_free:pending=1GiB is more than device 0's memory, 512.00 MiB"), "{message}");
    assert!(!waiting(block) && rmm::ownership::records::find(block).is_some(), "still the caller's");
    assert_eq!(cuda_free::pending_frees(0).count, 0);
    // A device's default stack, built at its first use, is refused the same way.
    backend().unwrap().set_device(1).unwrap();
    assert_eq!(malloc(MIB), Err(RMM_ERROR_INVALID_ARGUMENT));
    let message = last_message();
    assert!(
        message.contains("async_free:pending=1GiB/statistics/pool: async_free:pending=1GiB is more than device 1's memory"),
        "{message}"
    );
    backend().unwrap().set_device(0).unwrap();
    // Configured again within the device: the same free goes through.
    assert_eq!(rmmConfigure(c"async_free:pending=50%/statistics/pool".as_ptr()), RMM_SUCCESS);
    assert_eq!(free(block), RMM_SUCCESS, "{}", last_message());
    assert_eq!(cuda_free::pending_frees(0).bound, Some(256 * MIB));
    cuda_free::settle(true).unwrap();
    async_free_off(stack);
}

mod give_back_under_a_refusal {
    //! A callback resource under `rmmCudaMalloc` whose deallocate function stops inside a give-
    //! back (the thread holds the lock that keeps checks to one thread) until another thread's
    //! refused allocation is done.
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::SeqCst};
    use std::time::{Duration, Instant};

    static BELOW: AtomicUsize = AtomicUsize::new(0);
    static STOP_IN_NEXT_FREE: AtomicBool = AtomicBool::new(false);
    static STOPPED: AtomicBool = AtomicBool::new(false);
    static REFUSAL_DONE: AtomicBool = AtomicBool::new(false);
    static TIMED_OUT: AtomicBool = AtomicBool::new(false);
    static NESTED_ASK: AtomicUsize = AtomicUsize::new(0);
    static NESTED: AtomicI32 = AtomicI32::new(-1);

    fn below() -> rmmResource_t {
        BELOW.load(SeqCst) as rmmResource_t
    }

    extern "C" fn allocate(bytes: usize, stream: cudaStream_t, _: *mut c_void) -> *mut c_void {
        let mut ptr = null_mut();
        match rmmResourceAllocate(below(), &mut ptr, bytes, stream) {
            RMM_SUCCESS => ptr,
            _ => null_mut(),
        }
    }

    extern "C" fn deallocate(ptr: *mut c_void, bytes: usize, stream: cudaStream_t, _: *mut c_void) {
        if STOP_IN_NEXT_FREE.swap(false, SeqCst) {
            // This thread gives frees back: a refusal here must neither wait for itself nor
            // give frees back from inside a callback.
            let mut nested = null_mut();
            NESTED.store(rmmResourceAllocate(below(), &mut nested, NESTED_ASK.load(SeqCst), null_mut()) as i32, SeqCst);
            STOPPED.store(true, SeqCst);
            let began = Instant::now();
            while !REFUSAL_DONE.load(SeqCst) {
                if began.elapsed() > Duration::from_secs(10) {
                    TIMED_OUT.store(true, SeqCst);
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        rmmResourceDeallocate(below(), ptr, bytes, stream);
    }

    /// Thread A gives back the older batch and stops inside it; the main thread's allocation
    /// from a `cuda` resource, refused by the device, takes the newer batch itself, waits for
    /// it and succeeds without waiting for A. Inside A's stop, a refused allocation on A's own
    /// thread fails at once (out of memory) and gives nothing back from there.
    #[test]
    fn a_refusal_while_another_thread_gives_frees_back_does_not_wait_for_it() {
        let _guard = setup();
        let sim = simulator().unwrap();
        assert_eq!(rmmConfigure(c"async_free:pending=100%/statistics/pool".as_ptr()), RMM_SUCCESS);
        let cuda = over(|h| rmmCudaResourceCreate(h));
        BELOW.store(cuda as usize, SeqCst);
        let callback = over(|h| rmmCallbackResourceCreate(Some(allocate), Some(deallocate), null_mut(), 0, h));
        let mut previous = null_mut();
        assert_eq!(rmmSetCurrentDeviceResource(callback, &mut previous), RMM_SUCCESS);
        let available = 512 * MIB - device_used();
        let (older_bytes, newer_bytes) = (64 * MIB, available - 96 * MIB);
        let ask = available - older_bytes; // fits only once the newer block is back
        NESTED_ASK.store(ask, SeqCst);
        let stream = streams::create(0).unwrap();
        sim.stream_hold(stream).unwrap();
        let older = malloc(older_bytes).unwrap();
        assert_eq!(free(older), RMM_SUCCESS);
        cuda_free::before_stream_goes().unwrap();
        let newer = malloc(newer_bytes).unwrap();
        assert_eq!(free(newer), RMM_SUCCESS);
        cuda_free::before_stream_goes().unwrap();
        let shard = |ptr: usize| rmm_suballoc::address_map::window_shard_of(ptr, rmm_suballoc::address_map::RECORD_WINDOW_BITS, 1024);
        assert_ne!(shard(older), shard(newer), "the test needs the two records in different shards");
        sim.stream_finish_held(stream).unwrap();
        STOP_IN_NEXT_FREE.store(true, SeqCst);
        let giving_back = std::thread::spawn(|| cuda_free::settle(true));
        let began = Instant::now();
        while !STOPPED.load(SeqCst) {
            assert!(began.elapsed() < Duration::from_secs(10), "the give-back never reached the older block");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut ptr = null_mut();
        let refused_then_retried = rmmResourceAllocate(cuda, &mut ptr, ask, null_mut());
        REFUSAL_DONE.store(true, SeqCst);
        giving_back.join().unwrap().unwrap();
        assert_eq!(refused_then_retried, RMM_SUCCESS, "{}", last_message());
        assert!(!TIMED_OUT.load(SeqCst), "the refusal waited for the thread giving frees back");
        assert_eq!(NESTED.load(SeqCst), RMM_ERROR_OUT_OF_MEMORY as i32, "the refusal inside the callback");
        assert_eq!(cuda_free::pending_frees(0).count, 0);
        assert!(!waiting(older) && !waiting(newer));
        assert_eq!(rmmResourceDeallocate(cuda, ptr, ask, null_mut()), RMM_SUCCESS);
        assert!(races().is_empty(), "{:?}", races());
        streams::destroy(stream).unwrap();
        assert_eq!(rmmSetCurrentDeviceResource(previous, null_mut()), RMM_SUCCESS);
        for handle in [previous, callback, cuda] {
            assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
        }
        assert_eq!(rmmConfigure(c"".as_ptr()), RMM_SUCCESS);
    }
}
