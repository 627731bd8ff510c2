//! Threads that end while memory they allocated lives on (a worker that hands its results to
//! another thread and exits, a thread pool that replaces its threads), on simulated devices:
//! the blocks stay intact and are freed exactly by whoever frees them, on the streams the
//! threads used or on others, whether the memory was awake or slept meanwhile; the pool gets
//! every byte back and the device's streams stay ordered.

mod common;

use common::{allocate_on, asleep, device_used, free_on, last_message, over, races, setup_with, stamp, stamped, Rng};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::{cudaStream_t, RMM_SLEEP_KEEP};
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Barrier;

const NULL_STREAM: cudaStream_t = null_mut();
const PER_THREAD_STREAM: cudaStream_t = 2 as cudaStream_t;

/// A block a thread left behind: where, how big, its tag, and whether it came from RMM_ALLOC.
#[derive(Clone, Copy, Debug)]
struct Left {
    ptr: usize,
    size: usize,
    tag: u8,
    legacy: bool,
}

/// Thread `thread`'s life: allocates on a stream of its own making (destroyed before it ends),
/// on its per-thread default stream or on NULL, through `pool` and through RMM_ALLOC, stamps
/// every block, frees about a third again, and answers the rest.
fn work_and_leave(pool: usize, thread: u64) -> Vec<Left> {
    let pool = pool as rmmResource_t;
    let mut rng = Rng::new(100 + thread);
    let mut own: cudaStream_t = null_mut();
    let stream = match thread % 3 {
        0 => {
            assert_eq!(rmmStreamCreate(&mut own), RMM_SUCCESS);
            own
        }
        1 => PER_THREAD_STREAM,
        _ => NULL_STREAM,
    };
    let mut left = Vec::new();
    for i in 0..48u64 {
        let size = rng.log_uniform(22).max(1);
        let tag = (thread * 48 + i) as u8 | 1;
        let legacy = i % 4 == 0;
        let ptr = match legacy {
            true => {
                let mut ptr: *mut c_void = null_mut();
                assert_eq!(rmmAlloc(&mut ptr, size, stream, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
                ptr as usize
            }
            false => allocate_on(pool, size, stream).unwrap_or_else(|e| panic!("{e:?}: {}", last_message())),
        };
        assert_eq!(rmmStreamSynchronize(stream), RMM_SUCCESS);
        stamp(ptr, size, tag);
        left.push(Left { ptr, size, tag, legacy });
        if rng.chance(33) {
            let gone = left.swap_remove(rng.below(left.len() as u64) as usize);
            free(pool, gone, stream);
        }
    }
    assert_eq!(rmmStreamSynchronize(stream), RMM_SUCCESS);
    if !own.is_null() {
        assert_eq!(rmmStreamDestroy(own), RMM_SUCCESS);
    }
    left
}

fn free(pool: rmmResource_t, block: Left, stream: cudaStream_t) {
    match block.legacy {
        true => assert_eq!(rmmFree(block.ptr as *mut c_void, stream, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message()),
        false => free_on(pool, block.ptr, block.size, stream),
    }
}

/// Every block intact and no two overlapping.
fn check_intact(left: &mut [Left], when: &str) {
    left.sort_by_key(|block| block.ptr);
    for pair in left.windows(2) {
        assert!(pair[0].ptr + pair[0].size <= pair[1].ptr, "{when}: {:?} and {:?} overlap", pair[0], pair[1]);
    }
    for block in left.iter() {
        assert!(stamped(block.ptr, block.size, block.tag), "{when}: {block:?} lost its contents");
    }
}

/// The pool gives back everything it holds (nothing is live in it any more).
fn release_all(pool: rmmResource_t) {
    let mut released = 0;
    assert_eq!(rmmResourceRelease(pool, &mut released), RMM_SUCCESS, "{}", last_message());
    let mut held = usize::MAX;
    assert_eq!(rmmPoolResourceGetSize(pool, &mut held), RMM_SUCCESS);
    assert_eq!(held, 0, "the pool still holds {held} bytes after giving back {released}");
}

#[test]
fn blocks_of_threads_that_ended_are_freed_exactly_by_another_thread() {
    let _guard = setup_with("1:1GiB");
    let races_before = races().len();
    let before = device_used();
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 0, 0));
    let mut previous = null_mut();
    assert_eq!(rmmSetCurrentDeviceResource(pool, &mut previous), RMM_SUCCESS);

    // Two generations of threads, as a pool that replaces its workers: the second starts
    // after the first ended, on the memory the first freed and on the biases it held.
    let mut left = Vec::new();
    for generation in 0..2u64 {
        let ended: Vec<Vec<Left>> = std::thread::scope(|scope| {
            let shared_pool = pool as usize;
            let workers: Vec<_> = (0..6).map(|t| scope.spawn(move || work_and_leave(shared_pool, generation * 6 + t))).collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        left.extend(ended.into_iter().flatten());
        check_intact(&mut left, &format!("after generation {generation} ended"));
    }

    // Refused as ever: a wrong size, and (below) a second free.
    let first = *left.iter().find(|block| !block.legacy).unwrap();
    assert_eq!(rmmResourceDeallocate(pool, first.ptr as *mut c_void, first.size + 4096, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    // Freed on the NULL stream by this thread, which allocated none of them.
    for block in &left {
        free(pool, *block, NULL_STREAM);
    }
    assert_eq!(rmmResourceDeallocate(pool, first.ptr as *mut c_void, first.size, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("already freed"), "{}", last_message());
    let legacy = *left.iter().find(|block| block.legacy).unwrap();
    assert_eq!(rmmFree(legacy.ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0), RMM_ERROR_INVALID_ARGUMENT);

    release_all(pool);
    assert_eq!(rmmSetCurrentDeviceResource(previous, null_mut()), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
    assert_eq!(device_used(), before, "the device has every byte back");
    assert_eq!(races()[races_before..], [] as [String; 0], "no stream-ordering race");
}

#[test]
fn a_thread_ends_while_its_memory_sleeps() {
    let _guard = setup_with("1:1GiB");
    let races_before = races().len();
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let pool = over(|h| rmmPoolResourceCreate(h, expandable, 0, 0));
    let (allocated, slept) = (Barrier::new(2), Barrier::new(2));
    let (left, freed_asleep) = std::thread::scope(|scope| {
        let (allocated, slept, shared_pool) = (&allocated, &slept, pool as usize);
        let worker = scope.spawn(move || {
            let pool = shared_pool as rmmResource_t;
            let mut stream = null_mut();
            assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
            let mut rng = Rng::new(5);
            let mut blocks: Vec<Left> = (0..40u8)
                .map(|i| {
                    let size = rng.log_uniform(21).max(1);
                    let ptr = allocate_on(pool, size, stream).unwrap();
                    stamp(ptr, size, i | 1);
                    Left { ptr, size, tag: i | 1, legacy: false }
                })
                .collect();
            assert_eq!(rmmStreamSynchronize(stream), RMM_SUCCESS);
            allocated.wait();
            slept.wait();
            // Asleep: frees are taken (allocations are refused), then the thread goes.
            assert!(allocate_on(pool, 256, stream).is_err());
            let gone: Vec<Left> = blocks.drain(..20).collect();
            for block in &gone {
                free_on(pool, block.ptr, block.size, stream);
            }
            assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
            (blocks, gone.len())
        });
        allocated.wait();
        assert_eq!(rmmResourceSleep(pool, RMM_SLEEP_KEEP, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
        slept.wait();
        worker.join().unwrap()
    });
    assert_eq!(freed_asleep, 20);
    assert!(asleep(pool));
    assert_eq!(rmmResourceWake(pool, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    let mut left = left;
    check_intact(&mut left, "after the wake");
    // The memory the ended thread freed while asleep is used again, at no overlap.
    let again: Vec<usize> = (0..20).map(|_| allocate_on(pool, 64 << 10, NULL_STREAM).unwrap()).collect();
    for &ptr in &again {
        stamp(ptr, 64 << 10, 0xee);
    }
    check_intact(&mut left, "after new blocks were stamped");
    for ptr in again {
        free_on(pool, ptr, 64 << 10, NULL_STREAM);
    }
    for block in &left {
        free_on(pool, block.ptr, block.size, NULL_STREAM);
    }
    release_all(pool);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(device_used(), before, "the device has every byte back");
    assert_eq!(races()[races_before..], [] as [String; 0], "no stream-ordering race");
}
