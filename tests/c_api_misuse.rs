//! Random sequences of C API calls that mix valid and invalid input (made-up and destroyed
//! handles, foreign and interior pointers, double frees, wrong sizes, NULLs, huge sizes),
//! checked against a model of what is live: every call answers an error code, nothing
//! crashes, and nothing allocated is lost.

mod common;

use common::{last_message, setup, Rng};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::collections::HashMap;
use std::ffi::c_void;

const NULL_STREAM: cudaStream_t = std::ptr::null_mut();

fn make(kind: u64, upstream: rmmResource_t) -> (rmmError_t, rmmResource_t) {
    let mut handle: rmmResource_t = std::ptr::null_mut();
    let status = match kind {
        0 => rmmCudaResourceCreate(&mut handle),
        1 => rmmPoolResourceCreate(&mut handle, upstream, 1 << 20, 32 << 20),
        2 => rmmBinningResourceCreate(&mut handle, upstream, 8, 16),
        3 => rmmArenaResourceCreate(&mut handle, upstream, 0),
        _ => rmmFixedSizeResourceCreate(&mut handle, upstream, 4096, 8),
    };
    (status, handle)
}

#[test]
fn random_misuse_never_crashes_or_loses_memory() {
    let _guard = setup();
    let mut rng = Rng(2024);
    let (status, base) = make(0, std::ptr::null_mut());
    assert_eq!(status, RMM_SUCCESS);
    let mut live_handles: Vec<rmmResource_t> = vec![base];
    let mut dead_handles: Vec<rmmResource_t> = Vec::new();
    // Live allocations: pointer -> (handle it came from, size).
    let mut live: HashMap<usize, (rmmResource_t, usize)> = HashMap::new();
    let mut freed: Vec<usize> = Vec::new();
    let on_stack = 0u64;
    for step in 0..6000 {
        let pick = |rng: &mut Rng, v: &Vec<rmmResource_t>| v[rng.below(v.len() as u64) as usize];
        match rng.below(12) {
            0 => {
                let upstream = pick(&mut rng, &live_handles);
                let (status, handle) = make(rng.below(5), upstream);
                if status == RMM_SUCCESS {
                    live_handles.push(handle);
                } else {
                    assert!(handle.is_null(), "step {step}: no handle on failure");
                }
            }
            1 if live_handles.len() > 1 => {
                // Destroying a handle never invalidates its allocations.
                let at = 1 + rng.below(live_handles.len() as u64 - 1) as usize;
                let handle = live_handles.swap_remove(at);
                assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
                dead_handles.push(handle);
            }
            2..=5 => {
                let handle = pick(&mut rng, &live_handles);
                let size = match rng.below(20) {
                    0 => 0,
                    1 => usize::MAX,
                    2 => usize::MAX / 2,
                    _ => rng.log_uniform(16),
                };
                let mut ptr: *mut c_void = std::ptr::null_mut();
                let status = rmmResourceAllocate(handle, &mut ptr, size, NULL_STREAM);
                match status {
                    RMM_SUCCESS if size == 0 => assert!(ptr.is_null()),
                    RMM_SUCCESS => assert!(live.insert(ptr as usize, (handle, size)).is_none(), "step {step}: handed out twice"),
                    RMM_ERROR_OUT_OF_MEMORY | RMM_ERROR_INVALID_ARGUMENT => assert!(ptr.is_null()),
                    other => panic!("step {step}: allocate of {size} bytes answered {other:?}"),
                }
            }
            6..=8 if !live.is_empty() => {
                let ptr = *live.keys().nth(rng.below(live.len() as u64) as usize).unwrap();
                let (handle, size) = live[&ptr];
                let handle_alive = live_handles.contains(&handle);
                let status = match rng.below(4) {
                    0 => rmmFree(ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0),
                    _ if handle_alive => rmmResourceDeallocate(handle, ptr as *mut c_void, size, NULL_STREAM),
                    _ => rmmFree(ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0),
                };
                assert_eq!(status, RMM_SUCCESS, "step {step}: a valid free failed: {}", last_message());
                live.remove(&ptr);
                freed.push(ptr);
            }
            9 => {
                // Frees that must be refused, leaving every live allocation intact.
                let candidates = [
                    freed.last().copied().unwrap_or(0x1000),
                    &on_stack as *const u64 as usize,
                    live.keys().next().map_or(0x2000, |p| p + 256),
                    rng.next() as usize & !0xff,
                ];
                let ptr = candidates[rng.below(4) as usize];
                if ptr == 0 || live.contains_key(&ptr) {
                    continue;
                }
                let status = rmmFree(ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0);
                assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "step {step}: freeing {ptr:#x}");
            }
            10 if !live.is_empty() => {
                // A live pointer through the wrong resource or with the wrong size.
                let ptr = *live.keys().next().unwrap();
                let (handle, size) = live[&ptr];
                let other = pick(&mut rng, &live_handles);
                let wrong_size = size + 4096;
                let (target, bytes) = if other != handle { (other, size) } else { (handle, wrong_size) };
                if live_handles.contains(&target) {
                    assert_eq!(
                        rmmResourceDeallocate(target, ptr as *mut c_void, bytes, NULL_STREAM),
                        RMM_ERROR_INVALID_ARGUMENT,
                        "step {step}"
                    );
                }
            }
            _ => {
                // Made-up and destroyed handles.
                let bogus: rmmResource_t = match (rng.below(3), dead_handles.last()) {
                    (0, Some(&dead)) => dead,
                    (1, _) => (rng.next() as usize | 1) as rmmResource_t,
                    _ => 0x1234 as rmmResource_t,
                };
                let mut ptr: *mut c_void = std::ptr::null_mut();
                assert_eq!(rmmResourceAllocate(bogus, &mut ptr, 256, NULL_STREAM), RMM_ERROR_INVALID_HANDLE, "step {step}");
                assert_eq!(rmmResourceDestroy(bogus), RMM_ERROR_INVALID_HANDLE, "step {step}");
                assert_eq!(rmmResourceAllocate(base, std::ptr::null_mut(), 256, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
            }
        }
    }
    assert!(dead_handles.len() > 100 && freed.len() > 1000, "the run exercised too little");
    for (ptr, _) in live.drain() {
        assert_eq!(rmmFree(ptr as *mut c_void, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
    }
    for handle in live_handles {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(rmm::ownership::records::totals(), (0, 0), "no pointer record left behind");
    assert!(common::races().is_empty(), "{:?}", common::races());
}

/// A refusal's message starts with the call, names the resource and its device, and gives
/// sizes both readable and exact.
#[test]
fn messages_name_the_call_the_resource_and_the_device() {
    let _guard = setup();
    let (mut cuda, mut fixed, mut stats) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmFixedSizeResourceCreate(&mut fixed, cuda, 1 << 20, 2), RMM_SUCCESS);
    assert_eq!(rmmStatisticsAdaptorCreate(&mut stats, fixed), RMM_SUCCESS);
    let mut ptr: *mut c_void = std::ptr::null_mut();
    assert_eq!(rmmResourceAllocate(fixed, &mut ptr, 3 << 20, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(
        last_message(),
        "rmmResourceAllocate: invalid argument: 3.00 MiB (3145728 bytes) exceed the fixed_size resource's block size of \
         1.00 MiB (1048576 bytes) (device 0)"
    );
    assert_eq!(rmmResourceAllocate(stats, &mut ptr, 1000, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceDeallocate(stats, ptr, 2048, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(
        last_message(),
        format!(
            "rmmResourceDeallocate: invalid argument: {ptr:p} was allocated from the statistics resource of device 0 with 1000 \
             bytes, not 2.00 KiB (2048 bytes)"
        )
    );
    let interior = (ptr as usize + 256) as *mut c_void;
    assert_eq!(rmmResourceDeallocate(fixed, interior, 1000, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    let message = last_message();
    assert!(message.starts_with("rmmResourceDeallocate: invalid argument: "), "{message}");
    assert!(message.contains("not a live allocation of this fixed_size resource (device 0)"), "{message}");
    assert_eq!(rmmResourceDeallocate(stats, ptr, 1000, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(stats), RMM_SUCCESS);
    assert_eq!(rmmResourceAllocate(stats, &mut ptr, 1000, NULL_STREAM), RMM_ERROR_INVALID_HANDLE);
    assert!(last_message().starts_with("rmmResourceAllocate: invalid handle: "), "{}", last_message());
    let mut pool = std::ptr::null_mut();
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 2 << 20, 1 << 20), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(
        last_message(),
        "rmmPoolResourceCreate: invalid argument: the pool resource's initial size 2.00 MiB (2097152 bytes) exceeds its \
         maximum 1.00 MiB (1048576 bytes) (device 0)"
    );
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 1 << 20, 4 << 20), RMM_SUCCESS);
    assert_eq!(rmmResourceAllocate(pool, &mut ptr, 8 << 20, NULL_STREAM), RMM_ERROR_OUT_OF_MEMORY);
    assert_eq!(
        last_message(),
        "rmmResourceAllocate: out of memory: could not allocate 8.00 MiB (8388608 bytes) (the pool resource of device 0 \
         holds 1.00 MiB (1048576 bytes), 1.00 MiB (1048576 bytes) of it free, the largest free block 1.00 MiB (1048576 \
         bytes), and may hold at most 4.00 MiB (4194304 bytes); it could not grow: the request is larger than its maximum \
         size, 4.00 MiB (4194304 bytes))"
    );
    // A request that fits the maximum, but not beside what is in use: the maximum is reached.
    let mut held = std::ptr::null_mut();
    assert_eq!(rmmResourceAllocate(pool, &mut held, 3 << 20, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceAllocate(pool, &mut ptr, 2 << 20, NULL_STREAM), RMM_ERROR_OUT_OF_MEMORY);
    assert!(last_message().ends_with("it could not grow: its maximum size, 4.00 MiB (4194304 bytes), is reached)"), "{}", last_message());
    assert_eq!(rmmResourceDeallocate(pool, held, 3 << 20, NULL_STREAM), RMM_SUCCESS);
    // Without a maximum the message says so (it read "at most no limit").
    let mut unlimited = std::ptr::null_mut();
    assert_eq!(rmmPoolResourceCreate(&mut unlimited, cuda, 1 << 20, 0), RMM_SUCCESS);
    assert_eq!(rmmResourceAllocate(unlimited, &mut ptr, 1 << 40, NULL_STREAM), RMM_ERROR_OUT_OF_MEMORY);
    let message = last_message();
    assert!(
        message.contains("the largest free block 1.00 MiB (1048576 bytes), and has no maximum size; it could not grow: ")
            && !message.contains("at most"),
        "{message}"
    );
    assert_eq!(rmmResourceDestroy(unlimited), RMM_SUCCESS);
    for handle in [pool, fixed, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
}

#[test]
fn initial_sizes_past_the_address_space_are_out_of_memory_with_their_size() {
    let _guard = setup();
    let (status, cuda) = make(0, std::ptr::null_mut());
    assert_eq!(status, RMM_SUCCESS);
    let mut handle: rmmResource_t = std::ptr::null_mut();
    // Rounding SIZE_MAX up to the pool's granule once wrapped to a request for 0 bytes.
    for (what, status) in [
        ("pool", rmmPoolResourceCreate(&mut handle, cuda, usize::MAX, 0)),
        ("arena", rmmArenaResourceCreate(&mut handle, cuda, usize::MAX)),
        ("pool below SIZE_MAX", rmmPoolResourceCreate(&mut handle, cuda, usize::MAX - 100, 0)),
    ] {
        assert_eq!(status, RMM_ERROR_OUT_OF_MEMORY, "{what}");
        let message = last_message();
        assert!(message.contains("larger than the address space") && !message.contains("0 bytes"), "{what}: {message}");
        assert!(handle.is_null(), "{what}");
    }
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
}

#[test]
fn a_device_buffer_refuses_a_destroyed_stream_and_keeps_its_own() {
    let _guard = setup();
    // A buffer of a stream-ordered resource, with only streams rmm-rs knows taken
    // (`registered_streams`): a destroyed stream's handle is refused without asking the driver.
    rmm::platform::streams::set_registered_only(true);
    let (status, cuda) = make(0, std::ptr::null_mut());
    assert_eq!(status, RMM_SUCCESS);
    let (status, pool) = make(1, cuda);
    assert_eq!(status, RMM_SUCCESS);
    let mut buffer = std::ptr::null_mut();
    assert_eq!(rmmDeviceBufferCreate(&mut buffer, 4096, NULL_STREAM, pool), RMM_SUCCESS, "{}", last_message());
    let mut stream: cudaStream_t = std::ptr::null_mut();
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmDeviceBufferSetStream(buffer, stream), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmDeviceBufferSetStream(buffer, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmDeviceBufferSetStream(buffer, stream), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("not a live stream rmm-rs knows"), "{}", last_message());
    // The buffer kept the NULL stream: its memory is freed in that order.
    assert_eq!(rmmDeviceBufferDestroy(buffer), RMM_SUCCESS, "{}", last_message());
    rmm::platform::streams::set_registered_only(false);
    // A buffer of a resource that frees at once (cuda) takes any handle: it is never looked at.
    assert_eq!(rmmDeviceBufferCreate(&mut buffer, 4096, NULL_STREAM, cuda), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmDeviceBufferSetStream(buffer, stream), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmDeviceBufferDestroy(buffer), RMM_SUCCESS, "{}", last_message());
    for handle in [pool, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert!(common::races().is_empty(), "no stale handle reached the driver: {:?}", common::races());
}

#[test]
fn a_double_free_and_a_pointer_inside_a_block_are_told_apart() {
    let _guard = setup();
    let cuda = {
        let mut handle = std::ptr::null_mut();
        assert_eq!(rmmCudaResourceCreate(&mut handle), RMM_SUCCESS);
        handle
    };
    let mut pool = std::ptr::null_mut();
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 16 << 20, 0), RMM_SUCCESS);
    let (mut a, mut b) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmResourceAllocate(pool, &mut a, 3 << 20, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceAllocate(pool, &mut b, 4096, NULL_STREAM), RMM_SUCCESS);

    // Inside a block, even in a later record window than its start (3 MiB blocks span two).
    for offset in [256usize, (2 << 20) + 512] {
        let inside = (a as usize + offset) as *mut c_void;
        assert_eq!(rmmResourceDeallocate(pool, inside, 256, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
        let expected = format!("it lies inside the block at {:#x} (3145728 bytes), {offset} bytes from its start", a as usize);
        assert!(last_message().contains(&expected), "{}", last_message());
    }
    // Freed twice.
    assert_eq!(rmmResourceDeallocate(pool, b, 4096, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceDeallocate(pool, b, 4096, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("it was already freed (a double free)"), "{}", last_message());
    assert_eq!(rmmFree(b, NULL_STREAM, std::ptr::null(), 0), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("a double free"), "{}", last_message());
    // Never handed out: neither.
    assert_eq!(rmmFree(0x1000 as *mut c_void, NULL_STREAM, std::ptr::null(), 0), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("never allocated"), "{}", last_message());

    assert_eq!(rmmResourceDeallocate(pool, a, 3 << 20, NULL_STREAM), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
}
