//! Exact ownership through the C API: a pointer may be freed only by the exact address its
//! caller got, once, through the stack it came from, with the size it was allocated with.
//! One test per kind of bad free that once handed memory out twice or lost it (issue 15).

mod common;

use common::{device_used, last_message, over, races, setup, stamp, stamped};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::c_void;
use std::ptr::null_mut;

const NULL_STREAM: cudaStream_t = null_mut();

fn cuda() -> rmmResource_t {
    let mut handle = null_mut();
    assert_eq!(rmmCudaResourceCreate(&mut handle), RMM_SUCCESS);
    handle
}

fn allocate(resource: rmmResource_t, bytes: usize) -> usize {
    let mut ptr: *mut c_void = null_mut();
    assert_eq!(rmmResourceAllocate(resource, &mut ptr, bytes, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    ptr as usize
}

fn rmm_free(ptr: usize) -> rmmError_t {
    rmmFree(ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0)
}

fn destroy(handles: &[rmmResource_t]) {
    for &handle in handles.iter().rev() {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

/// Allocates `count` blocks of `bytes` from `resource`, stamps each, and checks that none
/// overlaps `victim` (whose contents must survive).
fn hand_out_again(resource: rmmResource_t, bytes: usize, count: usize, victim: (usize, usize, u8)) -> Vec<usize> {
    let (victim_ptr, victim_size, tag) = victim;
    let mut got = Vec::new();
    for _ in 0..count {
        let mut ptr: *mut c_void = null_mut();
        if rmmResourceAllocate(resource, &mut ptr, bytes, NULL_STREAM) != RMM_SUCCESS {
            break;
        }
        let ptr = ptr as usize;
        assert!(ptr + bytes <= victim_ptr || victim_ptr + victim_size <= ptr, "{ptr:#x} overlaps the live block {victim_ptr:#x}");
        stamp(ptr, bytes, 0xEE);
        got.push(ptr);
    }
    assert!(stamped(victim_ptr, victim_size, tag), "the live block's contents were overwritten");
    got
}

/// Kind 1: a double free, an interior pointer and a one-past-the-end pointer are refused for
/// every pool-like resource and an adaptor over one, and the refused block is not handed out
/// again while it is live.
#[test]
fn double_interior_and_past_the_end_frees_are_refused() {
    let _guard = setup();
    let races_before = races().len();
    let base = cuda();
    let stacks: Vec<(&str, rmmResource_t, Vec<rmmResource_t>)> = {
        let pool = over(|h| rmmPoolResourceCreate(h, base, 1 << 20, 0));
        let arena = over(|h| rmmArenaResourceCreate(h, base, 0));
        let binning = over(|h| rmmBinningResourceCreate(h, pool, 8, 16));
        let fixed = over(|h| rmmFixedSizeResourceCreate(h, pool, 4096, 4));
        let stats_pool = over(|h| rmmPoolResourceCreate(h, base, 0, 0));
        let stats = over(|h| rmmStatisticsAdaptorCreate(h, stats_pool));
        vec![
            ("pool", pool, vec![]),
            ("arena", arena, vec![]),
            ("binning", binning, vec![]),
            ("fixed_size", fixed, vec![]),
            ("statistics over pool", stats, vec![stats_pool]),
        ]
    };
    for (name, resource, _) in &stacks {
        let size = 4096;
        let first = allocate(*resource, size);
        let live = allocate(*resource, size);
        stamp(live, size, 0x5A);
        assert_eq!(rmm_free(first), RMM_SUCCESS, "{name}: {}", last_message());
        assert_eq!(rmm_free(first), RMM_ERROR_INVALID_ARGUMENT, "{name}: double free accepted");
        assert_eq!(rmm_free(live + 256), RMM_ERROR_INVALID_ARGUMENT, "{name}: interior pointer accepted");
        assert_eq!(rmm_free(live + size), RMM_ERROR_INVALID_ARGUMENT, "{name}: one-past-the-end accepted");
        assert_eq!(
            rmmResourceDeallocate(*resource, first as *mut c_void, size, NULL_STREAM),
            RMM_ERROR_INVALID_ARGUMENT,
            "{name}: double free through the resource accepted"
        );
        let again = hand_out_again(*resource, size, 8, (live, size, 0x5A));
        for ptr in again {
            assert_eq!(rmm_free(ptr), RMM_SUCCESS, "{name}: {}", last_message());
        }
        assert_eq!(rmm_free(live), RMM_SUCCESS, "{name}: {}", last_message());
    }
    for (_, resource, below) in stacks {
        destroy(&[resource]);
        destroy(&below);
    }
    destroy(&[base]);
    assert_eq!(races().len(), races_before, "{:?}", races());
}

/// Kind 1, blocks the library took for itself: a fixed-size resource's chunk inside a pool is
/// not the caller's to free through the pool.
#[test]
fn a_fixed_size_chunk_cannot_be_freed_through_its_pool() {
    let _guard = setup();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 4 << 20, 0));
    let fixed = over(|h| rmmFixedSizeResourceCreate(h, pool, 4096, 4));
    // The first block of a chunk starts the pool block that holds the chunk.
    let block = allocate(fixed, 4096);
    stamp(block, 4096, 0x33);
    let second = allocate(fixed, 4096);
    assert_eq!(rmmResourceDeallocate(fixed, second as *mut c_void, 4096, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmm_free(second), RMM_ERROR_INVALID_ARGUMENT, "a free fixed-size block was freed again");
    assert_eq!(
        rmmResourceDeallocate(pool, block as *mut c_void, 4 * 4096, NULL_STREAM),
        RMM_ERROR_INVALID_ARGUMENT,
        "the fixed-size chunk was freed through the pool"
    );
    hand_out_again(pool, 4 * 4096, 8, (block, 4096, 0x33));
    assert_eq!(rmm_free(block), RMM_SUCCESS, "{}", last_message());
    destroy(&[base, pool, fixed]);
}

/// Kind 1, blocks the library took for itself: the aligned adaptor hands out an address inside
/// an upstream block, and that block's own address is not the caller's, whether a caller
/// reaches it by a double free of a block that used to start there, one past the end of the
/// block before it, or any other address below the aligned one.
#[test]
fn an_aligned_adaptors_upstream_block_cannot_be_freed() {
    let _guard = setup();
    let base = cuda();
    let alignment = 1 << 16;
    for case in ["double free", "one past the end"] {
        let pool = over(|h| rmmPoolResourceCreate(h, base, 4 << 20, 0));
        let aligned = over(|h| rmmAlignedAdaptorCreate(h, pool, alignment, 1));
        // A block of 256 bytes first, so the aligned adaptor's upstream block starts 256 bytes
        // past the chunk's start and the address handed out lies above it.
        let before = allocate(pool, 256);
        let suspect = match case {
            "double free" => {
                let earlier = allocate(pool, 256);
                assert_eq!(rmm_free(earlier), RMM_SUCCESS);
                earlier
            }
            _ => before + 256,
        };
        let a = allocate(aligned, 1000);
        assert_eq!(a % alignment, 0);
        stamp(a, 1000, 0x44);
        assert!(a - alignment < suspect && suspect < a, "{case}: the upstream block {suspect:#x} does not hold {a:#x}");
        // Every address below the aligned block within its upstream block but the caller's own
        // block `before`.
        let below = (1..alignment / 256).map(|k| a - k * 256).filter(|&p| p > before);
        for candidate in [suspect].into_iter().chain(below) {
            assert_eq!(
                rmm_free(candidate),
                RMM_ERROR_INVALID_ARGUMENT,
                "{case}: {candidate:#x} (suspect {suspect:#x}, before {before:#x}), under the aligned block {a:#x}, was freed"
            );
        }
        hand_out_again(pool, alignment, 8, (a, 1000, 0x44));
        assert_eq!(rmm_free(a), RMM_SUCCESS, "{case}: {}", last_message());
        assert_eq!(rmm_free(before), RMM_SUCCESS, "{case}: {}", last_message());
        destroy(&[pool, aligned]);
    }
    destroy(&[base]);
}

/// Kind 2: a device buffer's data pointer belongs to the buffer.
#[test]
fn a_device_buffers_memory_is_not_freed_by_rmm_free() {
    let _guard = setup();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 1 << 20, 0));
    for resource in [pool, base] {
        let mut buffer = null_mut();
        assert_eq!(rmmDeviceBufferCreate(&mut buffer, 4096, NULL_STREAM, resource), RMM_SUCCESS);
        let mut data: *mut c_void = null_mut();
        assert_eq!(rmmDeviceBufferData(buffer, &mut data), RMM_SUCCESS);
        stamp(data as usize, 4096, 0x77);
        assert_eq!(rmm_free(data as usize), RMM_ERROR_INVALID_ARGUMENT, "rmmFree took a device buffer's memory");
        assert_eq!(
            rmmResourceDeallocate(resource, data, 4096, NULL_STREAM),
            RMM_ERROR_INVALID_ARGUMENT,
            "rmmResourceDeallocate took a device buffer's memory"
        );
        hand_out_again(resource, 4096, 8, (data as usize, 4096, 0x77));
        assert_eq!(rmmDeviceBufferDestroy(buffer), RMM_SUCCESS, "{}", last_message());
    }
    destroy(&[base, pool]);
}

/// Kind 3: a free through rmmFree goes back down the whole stack it came up, so adaptors under
/// a binning resource see it, and the memory returns to the device once every handle is gone.
#[test]
fn rmm_free_goes_down_the_stack_it_came_up() {
    let _guard = setup();
    let before = device_used();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 0, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, pool));
    let tracking = over(|h| rmmTrackingAdaptorCreate(h, stats, false));
    let binning = over(|h| rmmBinningResourceCreate(h, tracking, 8, 14));
    let small: Vec<usize> = (0..16).map(|_| allocate(binning, 1000)).collect();
    let large = allocate(binning, 1 << 20);
    for ptr in small.iter().chain([&large]) {
        assert_eq!(rmm_free(*ptr), RMM_SUCCESS, "{}", last_message());
    }
    // The bins keep their chunks, which the adaptors under them count, until released.
    let mut released = 0;
    assert_eq!(rmmResourceRelease(binning, &mut released), RMM_SUCCESS);
    assert!(released > 0);
    let mut outstanding = 99;
    assert_eq!(rmmTrackingAdaptorGetOutstanding(tracking, null_mut(), 0, &mut outstanding), RMM_SUCCESS);
    assert_eq!(outstanding, 0, "the tracking adaptor did not see the frees");
    let mut counts = rmmStatistics_t::default();
    assert_eq!(rmmStatisticsAdaptorGetCounts(stats, &mut counts), RMM_SUCCESS);
    assert_eq!(counts.current_count, 0, "the statistics adaptor did not see the frees: {counts:?}");
    destroy(&[base, pool, stats, tracking, binning]);
    assert_eq!(device_used(), before, "memory stayed reserved after every handle was destroyed");
}

/// Kind 4: adding or replacing a bin does not strand blocks allocated before, whether they
/// are freed through the binning resource or with rmmFree (which goes through it when the
/// upstream is an adaptor).
#[test]
fn blocks_survive_adding_and_replacing_bins() {
    let _guard = setup();
    let before = device_used();
    let base = cuda();
    for upstream_kind in ["pool", "statistics over pool"] {
        let pool = over(|h| rmmPoolResourceCreate(h, base, 0, 0));
        let upstream = match upstream_kind {
            "pool" => pool,
            _ => over(|h| rmmStatisticsAdaptorCreate(h, pool)),
        };
        let binning = over(|h| rmmBinningResourceCreate(h, upstream, 10, 12));
        let from_bin = [allocate(binning, 3000), allocate(binning, 3000)];
        let from_upstream = [allocate(binning, 100_000), allocate(binning, 100_000)];
        let other_bin = over(|h| rmmPoolResourceCreate(h, base, 0, 0));
        // Replace the 4 KiB bin, then add one that now serves the upstream's block size.
        assert_eq!(rmmBinningResourceAddBin(binning, 4096, other_bin), RMM_SUCCESS);
        assert_eq!(rmmBinningResourceAddBin(binning, 1 << 17, null_mut()), RMM_SUCCESS);
        let through_new_bins = [allocate(binning, 3000), allocate(binning, 100_000), allocate(binning, 300_000)];
        // Replace the new 128 KiB bin (sizes its blocks have went upstream when the binning
        // resource was made), and have a bin serve the size of the last block, which went
        // upstream after the bins had changed.
        assert_eq!(rmmBinningResourceAddBin(binning, 1 << 17, null_mut()), RMM_SUCCESS);
        assert_eq!(rmmBinningResourceAddBin(binning, 1 << 19, null_mut()), RMM_SUCCESS);
        for (ptr, size) in [(from_bin[0], 3000), (from_upstream[0], 100_000)] {
            assert_eq!(
                rmmResourceDeallocate(binning, ptr as *mut c_void, size, NULL_STREAM),
                RMM_SUCCESS,
                "{upstream_kind}: {ptr:#x}: {}",
                last_message()
            );
        }
        for ptr in [from_bin[1], from_upstream[1]].iter().chain(&through_new_bins) {
            assert_eq!(rmm_free(*ptr), RMM_SUCCESS, "{upstream_kind}: {ptr:#x}: {}", last_message());
        }
        if upstream != pool {
            // The bins keep their chunks, which the adaptor under them counts, until released.
            assert_eq!(rmmResourceRelease(binning, null_mut()), RMM_SUCCESS);
            let mut counts = rmmStatistics_t::default();
            assert_eq!(rmmStatisticsAdaptorGetCounts(upstream, &mut counts), RMM_SUCCESS);
            assert_eq!(counts.current_count, 0, "{upstream_kind}: {counts:?}");
            destroy(&[upstream]);
        }
        destroy(&[pool, binning, other_bin]);
    }
    destroy(&[base]);
    assert_eq!(device_used(), before, "blocks allocated before the bins changed leaked");
}

/// Kind 5: `rmmResourceDeallocate` with a size other than the allocation's is refused and
/// frees nothing, for pool-like resources as for cuda.
#[test]
fn a_wrong_size_is_refused_and_frees_nothing() {
    let _guard = setup();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 1 << 20, 0));
    let fixed = over(|h| rmmFixedSizeResourceCreate(h, pool, 4096, 4));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, pool));
    for (name, resource, size, wrong) in
        [("cuda", base, 1000, 1001), ("pool", pool, 1000, 1001), ("fixed_size", fixed, 1000, 4096), ("statistics", stats, 1000, 1024)]
    {
        let ptr = allocate(resource, size);
        stamp(ptr, size, 0x11);
        assert_eq!(
            rmmResourceDeallocate(resource, ptr as *mut c_void, wrong, NULL_STREAM),
            RMM_ERROR_INVALID_ARGUMENT,
            "{name}: freed with {wrong} bytes instead of {size}"
        );
        for again in hand_out_again(resource, size, 4, (ptr, size, 0x11)) {
            assert_eq!(rmm_free(again), RMM_SUCCESS, "{name}: {}", last_message());
        }
        if resource == stats {
            let mut counts = rmmStatistics_t::default();
            assert_eq!(rmmStatisticsAdaptorGetCounts(stats, &mut counts), RMM_SUCCESS);
            assert_eq!(counts.current_bytes, size as i64, "{counts:?}");
        }
        assert_eq!(rmmResourceDeallocate(resource, ptr as *mut c_void, size, NULL_STREAM), RMM_SUCCESS, "{name}: {}", last_message());
    }
    destroy(&[base, pool, fixed, stats]);
}

/// Kind 6: `rmmRealloc` of a block from `rmmResourceAllocate` makes the new block from the
/// block's own resource, with its limits.
#[test]
fn realloc_stays_in_the_blocks_own_resource() {
    let _guard = setup();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 1 << 20, 0));
    let limited = over(|h| rmmLimitingAdaptorCreate(h, pool, 64 << 10));
    let mut ptr: *mut c_void = null_mut();
    assert_eq!(rmmResourceAllocate(limited, &mut ptr, 32 << 10, NULL_STREAM), RMM_SUCCESS);
    stamp(ptr as usize, 32 << 10, 0x21);
    // Beyond the limit: refused, and the block is untouched.
    let old = ptr;
    assert_eq!(rmmRealloc(&mut ptr, 128 << 10, NULL_STREAM, std::ptr::null(), 0), RMM_ERROR_OUT_OF_MEMORY, "the limit was bypassed");
    assert_eq!(ptr, old);
    // Within the limit: the contents move, the limit counts the new block, and it returns
    // to the resource it came from.
    assert_eq!(rmmRealloc(&mut ptr, 16 << 10, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
    assert!(stamped(ptr as usize, 16 << 10, 0x21));
    let mut counted = 0;
    assert_eq!(rmmLimitingAdaptorGetAllocatedBytes(limited, &mut counted), RMM_SUCCESS);
    assert_eq!(counted, 16 << 10);
    assert_eq!(rmmResourceDeallocate(limited, ptr, 16 << 10, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    // A fixed-size block cannot grow past its block size.
    let fixed = over(|h| rmmFixedSizeResourceCreate(h, pool, 4096, 4));
    let mut block: *mut c_void = null_mut();
    assert_eq!(rmmResourceAllocate(fixed, &mut block, 1000, NULL_STREAM), RMM_SUCCESS);
    let kept = block;
    assert_eq!(rmmRealloc(&mut block, 8192, NULL_STREAM, std::ptr::null(), 0), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(block, kept);
    assert_eq!(rmmRealloc(&mut block, 2000, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmResourceDeallocate(fixed, block, 2000, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    destroy(&[base, pool, limited, fixed]);
}

/// Kind 7: a block of a device-0 resource freed with the default stream while device 1 is
/// current is ordered on device 0 before it is handed out again there.
#[test]
fn a_free_from_another_current_device_is_ordered_on_the_blocks_device() {
    let _guard = setup();
    let before = races().len();
    let base = cuda();
    let pool = over(|h| rmmPoolResourceCreate(h, base, 1 << 20, 0));
    for through_resource in [false, true] {
        let ptr = allocate(pool, 4096);
        assert_eq!(rmmSetDevice(1), RMM_SUCCESS);
        let status = match through_resource {
            false => rmm_free(ptr),
            true => rmmResourceDeallocate(pool, ptr as *mut c_void, 4096, NULL_STREAM),
        };
        assert_eq!(status, RMM_SUCCESS, "{}", last_message());
        assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
        let again = allocate(pool, 4096);
        assert_eq!(rmm_free(again), RMM_SUCCESS);
    }
    destroy(&[base, pool]);
    let found = &races()[before..];
    assert!(found.is_empty(), "{found:?}");
}

/// An aligned adaptor refuses an alignment no allocation could honour instead of failing
/// every allocation with out of memory.
#[test]
fn an_impossible_alignment_is_refused_when_the_adaptor_is_made() {
    let _guard = setup();
    let base = cuda();
    for alignment in [1usize << 40, 1 << 62, 1 << 63] {
        let mut handle = null_mut();
        assert_eq!(rmmAlignedAdaptorCreate(&mut handle, base, alignment, 0), RMM_ERROR_INVALID_ARGUMENT, "alignment {alignment:#x}");
        assert!(handle.is_null());
    }
    destroy(&[base]);
}
