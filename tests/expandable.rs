//! The expandable resource on simulated devices (their model of the virtual-memory API, with
//! the race checker on): blocks on several streams, memory back to the device when released,
//! adaptors over it, and out of memory.

mod common;

use common::{device_used, over, races, setup_with, stamp, stamped};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::c_void;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

fn allocate(resource: rmmResource_t, bytes: usize, stream: cudaStream_t) -> Result<usize, rmmError_t> {
    let mut ptr: *mut c_void = null_mut();
    match rmmResourceAllocate(resource, &mut ptr, bytes, stream) {
        RMM_SUCCESS => Ok(ptr as usize),
        error => Err(error),
    }
}

fn free(resource: rmmResource_t, ptr: usize, bytes: usize, stream: cudaStream_t) {
    assert_eq!(rmmResourceDeallocate(resource, ptr as *mut c_void, bytes, stream), RMM_SUCCESS);
}

#[test]
fn blocks_move_between_streams_in_order_and_memory_goes_back_when_released() {
    let _guard = setup_with("1:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, expandable));
    let (mut a, mut b) = (null_mut(), null_mut());
    assert_eq!(rmmStreamCreate(&mut a), RMM_SUCCESS);
    assert_eq!(rmmStreamCreate(&mut b), RMM_SUCCESS);

    let sizes = [3000, 5 * MIB, 700 * 1024, 17 * MIB, 256];
    let mut live: Vec<(usize, usize, u8)> = Vec::new();
    for (i, &size) in sizes.iter().cycle().take(40).enumerate() {
        let stream = if i % 2 == 0 { a } else { b };
        let ptr = allocate(stats, size, stream).unwrap();
        stamp(ptr, size.min(4096), i as u8);
        live.push((ptr, size, i as u8));
        if i % 3 == 2 {
            // Freed on one stream, the block may come back on the other: in order only.
            let (ptr, size, tag) = live.remove(i % live.len());
            assert!(stamped(ptr, size.min(4096), tag));
            free(stats, ptr, size, if i % 2 == 0 { b } else { a });
        }
    }
    assert!(device_used() > before);
    for (ptr, size, tag) in live.drain(..) {
        assert!(stamped(ptr, size.min(4096), tag), "a live block was overwritten");
        free(stats, ptr, size, a);
    }
    let mut released = 0;
    assert_eq!(rmmResourceRelease(stats, &mut released), RMM_SUCCESS);
    assert!(released > 0);
    assert_eq!(device_used(), before, "released chunks are unmapped and their memory is the device's again");
    // And it grows again after the release.
    let again = allocate(stats, 20 * MIB, a).unwrap();
    free(stats, again, 20 * MIB, a);

    assert_eq!(rmmStreamDestroy(a), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(b), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(stats), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(device_used(), before, "a destroyed resource keeps nothing mapped");
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn out_of_memory_releases_what_the_device_keeps_free_then_is_reported() {
    let _guard = setup_with("1:256MiB");
    let before = device_used();
    // A pool that keeps 192 MiB free: the expandable resource gets it back from it.
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 0, 0));
    let held = allocate(pool, 192 * MIB, null_mut()).unwrap();
    free(pool, held, 192 * MIB, null_mut());
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let big = allocate(expandable, 200 * MIB, null_mut()).expect("the pool's free chunk is released for it");
    stamp(big, 4096, 0x77);
    // More than the device has left: out of memory, with the live block untouched.
    assert_eq!(allocate(expandable, 100 * MIB, null_mut()), Err(RMM_ERROR_OUT_OF_MEMORY));
    assert!(stamped(big, 4096, 0x77));
    free(expandable, big, 200 * MIB, null_mut());
    // Everything freed: the whole device can be had again, through the same resource.
    let whole = allocate(expandable, 240 * MIB, null_mut()).expect("the device's memory after everything was freed");
    free(expandable, whole, 240 * MIB, null_mut());
    for handle in [expandable, pool, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before);
    // A maximum bounds what it reserves.
    let bounded = over(|h| rmmExpandableResourceCreate(h, 8 * MIB));
    assert_eq!(allocate(bounded, 16 * MIB, null_mut()), Err(RMM_ERROR_OUT_OF_MEMORY));
    let fits = allocate(bounded, 8 * MIB, null_mut()).unwrap();
    free(bounded, fits, 8 * MIB, null_mut());
    assert_eq!(rmmResourceDestroy(bounded), RMM_SUCCESS);
}
