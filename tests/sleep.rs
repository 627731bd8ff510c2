//! Sleep and wake on simulated devices (their virtual memory is host memory mapped at the
//! reserved addresses, so a sleeping page is really gone and a block's bytes can be read):
//! every address stays the same, kept contents come back, discarded memory goes to the device,
//! and bad calls are refused with nothing changed.

mod common;

use common::{allocate_on, asleep, device_used, free_on, last_message, over, races, setup_with, Rng};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::{cudaStream_t, RMM_SLEEP_DISCARD, RMM_SLEEP_KEEP};
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

/// A byte pattern that differs per block and per position, so that a page put back at the
/// wrong address shows.
fn pattern(ptr: usize, bytes: usize, seed: u8) {
    // SAFETY: simulated device memory is host memory; the block has `bytes` bytes.
    let block = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, bytes) };
    for (i, byte) in block.iter_mut().enumerate() {
        *byte = (i / 4096) as u8 ^ (i as u8).wrapping_mul(31) ^ seed;
    }
}

fn has_pattern(ptr: usize, bytes: usize, seed: u8) -> bool {
    // SAFETY: as in `pattern`.
    let block = unsafe { std::slice::from_raw_parts(ptr as *const u8, bytes) };
    block.iter().enumerate().all(|(i, &byte)| byte == (i / 4096) as u8 ^ (i as u8).wrapping_mul(31) ^ seed)
}

fn snapshot(resource: rmmResource_t) -> serde_json::Value {
    let mut length = 0;
    assert_eq!(rmmResourceGetSnapshot(resource, null_mut(), 0, &mut length), RMM_SUCCESS);
    let mut buffer = vec![0u8; length + 1];
    assert_eq!(rmmResourceGetSnapshot(resource, buffer.as_mut_ptr().cast(), buffer.len(), &mut length), RMM_SUCCESS);
    serde_json::from_slice(&buffer[..length]).expect("the snapshot is JSON")
}

#[test]
fn a_stack_over_an_expandable_resource_sleeps_keeping_every_address_and_its_contents() {
    let _guard = setup_with("2:256MiB");
    // The race reports of this process so far: the threaded test below may leave some (it says
    // why), and the tests of this file run in any order.
    let races_before = races().len();
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let pool = over(|h| rmmPoolResourceCreate(h, expandable, 0, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, pool));
    let mut stream = null_mut();
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);

    // Blocks of both parts (small ones below 256 KiB) on two streams, some freed again so
    // that the live ones sit between free ranges.
    let mut rng = Rng::new(7);
    let mut live: Vec<(usize, usize, u8)> = Vec::new();
    for i in 0..60u8 {
        let size = match i % 3 {
            0 => 1 + rng.below(64 << 10) as usize,
            1 => (1 + rng.below(6)) as usize * MIB + rng.below(4096) as usize,
            _ => 300 << 10,
        };
        let on = if i % 2 == 0 { null_mut() } else { stream };
        let ptr = allocate_on(stats, size, on).unwrap();
        pattern(ptr, size, i);
        live.push((ptr, size, i));
        if i % 4 == 3 {
            let (ptr, size, _) = live.remove(rng.below(live.len() as u64) as usize);
            free_on(stats, ptr, size, on);
        }
    }
    assert!(device_used() > before);

    assert!(!asleep(stats));
    assert_eq!(rmmResourceSleep(stats, RMM_SLEEP_KEEP, stream), RMM_SUCCESS, "{}", last_message());
    assert!(asleep(stats) && asleep(expandable) && asleep(pool));
    assert_eq!(device_used(), before, "a sleeping resource holds no device memory");
    let shown = snapshot(expandable);
    assert_eq!(shown["asleep"], "keep", "{shown}");
    assert!(shown["asleep_bytes"].as_u64().unwrap() > 0 && shown["kept_on_host_bytes"].as_u64().unwrap() > 0, "{shown}");

    // Allocations are refused whatever the stack, with the reason; frees are taken.
    assert_eq!(allocate_on(stats, 1000, null_mut()), Err(RMM_ERROR_INVALID_ARGUMENT));
    assert!(last_message().contains("asleep"), "{}", last_message());
    assert_eq!(allocate_on(expandable, 5 * MIB, stream), Err(RMM_ERROR_INVALID_ARGUMENT));
    let (gone, gone_size, _) = live.remove(5);
    free_on(stats, gone, gone_size, stream);
    assert_eq!(device_used(), before, "a free while asleep takes no memory");

    assert_eq!(rmmResourceWake(stats, stream), RMM_SUCCESS, "{}", last_message());
    assert!(!asleep(stats));
    assert!(snapshot(expandable)["asleep"].is_null());
    assert_eq!(snapshot(expandable)["kept_on_host_bytes"], 0);
    for &(ptr, size, seed) in &live {
        assert!(has_pattern(ptr, size, seed), "block {ptr:#x} ({size} bytes) lost its contents over sleep");
    }
    // The stack allocates again; the block freed while asleep is reusable.
    let again = allocate_on(stats, gone_size, stream).unwrap();
    pattern(again, gone_size, 200);
    free_on(stats, again, gone_size, stream);
    for (ptr, size, seed) in live.drain(..) {
        assert!(has_pattern(ptr, size, seed));
        free_on(stats, ptr, size, stream);
    }
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    for handle in [stats, pool, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before);
    assert_eq!(races().len(), races_before, "{:?}", races());
}

#[test]
fn discard_gives_everything_back_and_wake_maps_usable_memory_at_the_same_addresses() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let blocks: Vec<(usize, usize)> =
        [100, 3 * MIB, 40 * MIB, 200 << 10].iter().map(|&size| (allocate_on(expandable, size, null_mut()).unwrap(), size)).collect();
    for _ in 0..3 {
        assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, null_mut()), RMM_SUCCESS, "{}", last_message());
        assert_eq!(device_used(), before);
        assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_SUCCESS, "{}", last_message());
        for &(ptr, size) in &blocks {
            pattern(ptr, size, 3);
            assert!(has_pattern(ptr, size, 3));
        }
    }
    for (ptr, size) in blocks {
        free_on(expandable, ptr, size, null_mut());
    }
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(device_used(), before);
}

#[test]
fn bad_calls_are_refused_and_change_nothing() {
    let _guard = setup_with("2:256MiB");
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool_over_cuda = over(|h| rmmPoolResourceCreate(h, cuda, 0, 0));
    for resource in [cuda, pool_over_cuda] {
        assert_eq!(rmmResourceSleep(resource, RMM_SLEEP_KEEP, null_mut()), RMM_ERROR_NOT_SUPPORTED);
        assert!(last_message().contains("expandable"), "{}", last_message());
        assert_eq!(rmmResourceWake(resource, null_mut()), RMM_ERROR_NOT_SUPPORTED);
        let mut answer = 0;
        assert_eq!(rmmResourceIsAsleep(resource, &mut answer), RMM_ERROR_NOT_SUPPORTED);
    }
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let block = allocate_on(expandable, MIB, null_mut()).unwrap();
    assert_eq!(rmmResourceSleep(expandable, 7, null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("RMM_SLEEP_KEEP"), "{}", last_message());
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_ERROR_INVALID_ARGUMENT, "waking one that is awake");
    assert!(last_message().contains("awake"), "{}", last_message());
    assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, null_mut()), RMM_SUCCESS);
    assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, null_mut()), RMM_ERROR_INVALID_ARGUMENT, "sleeping twice");
    assert!(last_message().contains("already asleep"), "{}", last_message());
    assert_eq!(rmmResourceIsAsleep(expandable, null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmResourceSleep(null_mut(), RMM_SLEEP_KEEP, null_mut()), RMM_ERROR_INVALID_HANDLE);
    assert_eq!(rmmResourceWake(null_mut(), null_mut()), RMM_ERROR_INVALID_HANDLE);
    // A made-up stream is refused before anything moves.
    assert_eq!(rmmResourceWake(expandable, 0xdead_0000usize as cudaStream_t), RMM_ERROR_INVALID_ARGUMENT);
    assert!(asleep(expandable));
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_SUCCESS);
    free_on(expandable, block, MIB, null_mut());
    for handle in [expandable, pool_over_cuda, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

#[test]
fn a_wake_the_device_cannot_serve_leaves_it_asleep_with_its_contents_and_a_later_wake_succeeds() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let size = 96 * MIB;
    let block = allocate_on(expandable, size, null_mut()).unwrap();
    pattern(block, size, 9);
    assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());

    // Someone else takes most of the device meanwhile.
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let other = allocate_on(cuda, 200 * MIB, null_mut()).unwrap();
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_ERROR_OUT_OF_MEMORY);
    assert!(asleep(expandable), "a failed wake leaves it asleep");
    assert_eq!(device_used(), before + 200 * MIB, "a failed wake holds nothing");
    // Retried, also through a pool over it, still refused.
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_ERROR_OUT_OF_MEMORY);

    free_on(cuda, other, 200 * MIB, null_mut());
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(has_pattern(block, size, 9), "the host copy survived the failed wakes");
    free_on(expandable, block, size, null_mut());
    for handle in [cuda, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before);
}

#[test]
fn allocations_and_frees_racing_sleep_and_wake_lose_nothing_and_hand_nothing_out_twice() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let pool = over(|h| rmmPoolResourceCreate(h, expandable, 0, 0));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (pool_value, stop) = (pool as usize, &stop);
    std::thread::scope(|scope| {
        for seed in 0..3u64 {
            scope.spawn(move || {
                let pool = pool_value as rmmResource_t;
                let mut rng = Rng::new(seed);
                let mut live: Vec<(usize, usize)> = Vec::new();
                let mut steps = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || steps < 200 {
                    steps += 1;
                    if live.len() < 16 && (live.is_empty() || rng.chance(55)) {
                        let size = rng.log_uniform(22);
                        match allocate_on(pool, size, null_mut()) {
                            Ok(ptr) => live.push((ptr, size)),
                            Err(RMM_ERROR_INVALID_ARGUMENT) => assert!(last_message().contains("asleep"), "{}", last_message()),
                            Err(other) => panic!("{other:?}: {}", last_message()),
                        }
                    } else {
                        let (ptr, size) = live.swap_remove(rng.below(live.len() as u64) as usize);
                        free_on(pool, ptr, size, null_mut());
                    }
                }
                for (ptr, size) in live {
                    free_on(pool, ptr, size, null_mut());
                }
            });
        }
        for round in 0..20 {
            let mode = if round % 2 == 0 { RMM_SLEEP_KEEP } else { RMM_SLEEP_DISCARD };
            assert_eq!(rmmResourceSleep(pool, mode, null_mut()), RMM_SUCCESS, "{}", last_message());
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert_eq!(rmmResourceWake(pool, null_mut()), RMM_SUCCESS, "{}", last_message());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    for handle in [pool, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before, "every block came back and every page went");
    // The race checker is not asked here: a free that lands between the sleep's last device
    // synchronization and its unmap is ordered on a stream the host has not waited for since,
    // which the checker reports although no work was enqueued on that memory after the sleep
    // began (the contract: work on a resource's memory is enqueued before it is put to sleep;
    // frees may come at any time). The other tests check that the sleep itself orders its
    // copies and unmaps.
}

#[test]
fn the_current_resource_of_a_device_sleeps_without_a_handle() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let mut previous = null_mut();
    assert_eq!(rmmSetPerDeviceResource(0, expandable, &mut previous), RMM_SUCCESS);
    let mut ptr: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut ptr, 5 * MIB, null_mut(), c"sleep.rs".as_ptr(), 1), RMM_SUCCESS);
    pattern(ptr as usize, 5 * MIB, 4);
    assert_eq!(rmmDeviceSleep(0, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert_eq!(device_used(), before);
    let mut refused: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut refused, 100, null_mut(), c"sleep.rs".as_ptr(), 2), RMM_ERROR_INVALID_ARGUMENT);
    assert!(refused.is_null());
    assert_eq!(rmmDeviceWake(0, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(has_pattern(ptr as usize, 5 * MIB, 4));
    assert_eq!(rmmFree(ptr, null_mut(), c"sleep.rs".as_ptr(), 3), RMM_SUCCESS);
    assert_eq!(rmmDeviceSleep(9, RMM_SLEEP_KEEP, null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    let mut restored = null_mut();
    assert_eq!(rmmSetPerDeviceResource(0, previous, &mut restored), RMM_SUCCESS);
    for handle in [restored, previous, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

#[test]
fn a_stack_that_reaches_one_expandable_resource_twice_sleeps_it_once() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let pool = over(|h| rmmPoolResourceCreate(h, expandable, 0, 0));
    // Small requests in a pool over the expandable resource, the rest from it directly.
    let binning = over(|h| rmmBinningResourceCreate(h, expandable, 1, 0));
    assert_eq!(rmmBinningResourceAddBin(binning, 64 << 10, pool), RMM_SUCCESS, "{}", last_message());
    let small = allocate_on(binning, 5000, null_mut()).unwrap();
    let large = allocate_on(binning, 3 * MIB, null_mut()).unwrap();
    pattern(small, 5000, 1);
    pattern(large, 3 * MIB, 2);
    assert_eq!(rmmResourceSleep(binning, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert_eq!(device_used(), before);
    assert_eq!(rmmResourceWake(binning, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(has_pattern(small, 5000, 1) && has_pattern(large, 3 * MIB, 2));
    free_on(binning, small, 5000, null_mut());
    free_on(binning, large, 3 * MIB, null_mut());
    for handle in [binning, pool, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

#[test]
fn an_allocation_refused_as_asleep_is_counted_by_no_adaptor() {
    let _guard = setup_with("2:256MiB");
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let pool = over(|h| rmmPoolResourceCreate(h, expandable, 0, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, pool));
    let block = allocate_on(stats, MIB, null_mut()).unwrap();
    // Only the expandable resource sleeps: the pool above still has free blocks in its chunk.
    assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert_eq!(allocate_on(stats, 1000, null_mut()), Err(RMM_ERROR_INVALID_ARGUMENT));
    assert!(last_message().contains("sleeps"), "{}", last_message());
    let mut counts = rmmStatistics_t::default();
    assert_eq!(rmmStatisticsAdaptorGetCounts(stats, &mut counts), RMM_SUCCESS);
    assert_eq!((counts.total_count, counts.current_count, counts.total_bytes), (1, 1, MIB as i64), "{counts:?}");
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_SUCCESS);
    free_on(stats, block, MIB, null_mut());
    for handle in [stats, pool, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}
