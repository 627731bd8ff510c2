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
use rmm::platform::simulator;
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
    assert_eq!(rmmConfigure(c"async_free/statistics/pool".as_ptr()), RMM_SUCCESS);
    pool_as_device_resource(maximum)
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
/// thread destroys while a batch is being closed): its event cannot be recorded, so the close
/// waits for the whole device instead, and the free still succeeds.
#[test]
fn a_batch_over_a_stream_destroyed_unannounced_waits_for_the_device() {
    let _guard = setup();
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
    assert!(races().is_empty(), "{:?}", races());
    streams::unregister(stream).ok();
    async_free_off(stack);
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
