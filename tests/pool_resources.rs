//! The resources over driver memory pools that are not their own or not of device memory
//! (cuda_async_view, cuda_async_managed, cuda_async_pinned_host), the hardware-decompression
//! flag of cuda_async, and system memory (system, sam_headroom), through the C API on
//! simulated devices: what each hands out, and each refusal with its code and message.

mod common;

use common::{last_message, setup};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::*;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use rmm::platform::{backend, simulator, MemPool, Stream};
use std::ffi::{c_int, c_void, CStr};

const NULL_STREAM: cudaStream_t = std::ptr::null_mut();
const DEVICE_BYTES: usize = 512 << 20;

fn made(status: rmmError_t, handle: rmmResource_t) -> rmmResource_t {
    assert_eq!(status, RMM_SUCCESS, "{}", last_message());
    assert!(!handle.is_null());
    handle
}

fn name(resource: rmmResource_t) -> String {
    let mut name = std::ptr::null();
    assert_eq!(rmmResourceGetName(resource, &mut name), RMM_SUCCESS);
    // SAFETY: a static NUL-terminated string of the library.
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

fn pool_of(resource: rmmResource_t) -> *mut c_void {
    let mut pool = std::ptr::null_mut();
    assert_eq!(rmmAsyncResourceGetPool(resource, &mut pool), RMM_SUCCESS, "{}", last_message());
    pool
}

fn allocate(resource: rmmResource_t, bytes: usize) -> *mut c_void {
    let mut ptr = std::ptr::null_mut();
    assert_eq!(rmmResourceAllocate(resource, &mut ptr, bytes, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
    ptr
}

fn free(resource: rmmResource_t, ptr: *mut c_void, bytes: usize) {
    assert_eq!(rmmResourceDeallocate(resource, ptr, bytes, NULL_STREAM), RMM_SUCCESS, "{}", last_message());
}

fn device_free() -> usize {
    backend().unwrap().mem_get_info(0).unwrap().0
}

fn supports(capability: u32) -> bool {
    let mut supported: c_int = -1;
    assert_eq!(rmmDeviceSupports(&mut supported, capability, 0), RMM_SUCCESS, "{}", last_message());
    assert!(supported == 0 || supported == 1);
    supported == 1
}

/// Runs `body` with the simulated driver at `version`, then back at the default (13000).
fn with_driver_version(version: i32, body: impl FnOnce()) {
    simulator().unwrap().set_driver_version(version);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    simulator().unwrap().set_driver_version(13000);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Writes and reads back every byte: the memory is the host's to touch.
fn touch(ptr: *mut c_void, bytes: usize) {
    // SAFETY: `ptr` is `bytes` of host-reachable memory the test owns.
    let data = unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, bytes) };
    data.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
    assert!(data.iter().enumerate().all(|(i, b)| *b == i as u8));
}

#[test]
fn a_view_allocates_from_the_callers_pool_and_leaves_it_alive() {
    let _guard = setup();
    let mut owner = std::ptr::null_mut();
    let owner = made(rmmAsyncResourceCreate(&mut owner, 0, usize::MAX), owner);
    let pool = pool_of(owner);

    let mut view = std::ptr::null_mut();
    let view = made(rmmAsyncViewResourceCreate(&mut view, pool), view);
    assert_eq!(name(view), "cuda_async_view");
    assert_eq!(pool_of(view), pool, "the view reports the caller's pool");
    let before = device_free();
    let ptr = allocate(view, 1 << 20);
    assert_eq!(device_free(), before - (1 << 20), "device memory, from the pool");
    // Memory of the view is the view's: the owner refuses it, nothing freed.
    assert_eq!(rmmResourceDeallocate(owner, ptr, 1 << 20, NULL_STREAM), RMM_ERROR_INVALID_ARGUMENT);
    free(view, ptr, 1 << 20);
    assert_eq!(rmmResourceDestroy(view), RMM_SUCCESS);

    // The view did not destroy the pool: the owner and a new view still allocate from it.
    let ptr = allocate(owner, 4096);
    free(owner, ptr, 4096);
    let mut again = std::ptr::null_mut();
    let again = made(rmmAsyncViewResourceCreate(&mut again, pool), again);
    assert_eq!(rmmResourceDestroy(again), RMM_SUCCESS);

    // Once its owner is gone, the pool is no pool.
    assert_eq!(rmmResourceDestroy(owner), RMM_SUCCESS);
    let mut dead = std::ptr::null_mut();
    assert_eq!(rmmAsyncViewResourceCreate(&mut dead, pool), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("is not a memory pool"), "{}", last_message());
    assert!(dead.is_null(), "nothing written on failure");
}

#[test]
fn a_view_refuses_what_is_not_a_pool_it_can_allocate_from() {
    let _guard = setup();
    let mut out = std::ptr::null_mut();
    assert_eq!(rmmAsyncViewResourceCreate(&mut out, std::ptr::null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("NULL"), "{}", last_message());
    assert_eq!(rmmAsyncViewResourceCreate(&mut out, 0x1234 as *mut c_void), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("0x1234 is not a memory pool"), "{}", last_message());
    assert!(out.is_null());

    let mut owner = std::ptr::null_mut();
    let owner = made(rmmAsyncResourceCreateExportable(&mut owner, 0, usize::MAX, RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), owner);
    assert_eq!(rmmAsyncViewResourceCreate(std::ptr::null_mut(), pool_of(owner)), RMM_ERROR_INVALID_ARGUMENT);
    // The resource handle given where its pool was meant.
    assert_eq!(rmmAsyncViewResourceCreate(&mut out, owner as *mut c_void), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("is an rmmResource_t"), "{}", last_message());
    // The pool as another process imports it: the driver allocates nothing from it.
    let imported = simulator().unwrap().mem_pool_import(MemPool(pool_of(owner) as usize)).unwrap();
    assert_eq!(rmmAsyncViewResourceCreate(&mut out, imported.0 as *mut c_void), RMM_ERROR_NOT_SUPPORTED);
    assert!(last_message().contains("imported from another process"), "{}", last_message());
    assert!(out.is_null());
    assert_eq!(rmmResourceDestroy(owner), RMM_SUCCESS);
}

#[test]
fn managed_resources_share_the_devices_default_managed_pool() {
    let _guard = setup();
    assert!(supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS));
    let (mut first, mut second) = (std::ptr::null_mut(), std::ptr::null_mut());
    let first = made(rmmAsyncManagedResourceCreate(&mut first), first);
    let second = made(rmmAsyncManagedResourceCreate(&mut second), second);
    assert_eq!(name(first), "cuda_async_managed");
    assert_eq!(pool_of(first), pool_of(second), "one default managed pool per device");
    let before = device_free();
    let ptr = allocate(first, 64 << 10);
    assert_eq!(device_free(), before - (64 << 10), "managed memory counts against the device");
    // Managed memory: the host writes it, and it prefetches (the simulator refuses anything else).
    touch(ptr, 64 << 10);
    backend().unwrap().prefetch(0, ptr as usize, 64 << 10, Stream::DEFAULT).expect("managed memory prefetches");
    free(first, ptr, 64 << 10);
    // Destroying both leaves the driver's pool: a new resource gets the same one.
    let pool = pool_of(first);
    assert_eq!(rmmResourceDestroy(first), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(second), RMM_SUCCESS);
    let mut third = std::ptr::null_mut();
    let third = made(rmmAsyncManagedResourceCreate(&mut third), third);
    assert_eq!(pool_of(third), pool);
    let ptr = allocate(third, 256);
    free(third, ptr, 256);
    assert_eq!(rmmResourceDestroy(third), RMM_SUCCESS);
    // On device 1, another pool.
    assert_eq!(rmmSetDevice(1), RMM_SUCCESS);
    let mut other = std::ptr::null_mut();
    let other = made(rmmAsyncManagedResourceCreate(&mut other), other);
    assert_ne!(pool_of(other), pool);
    assert_eq!(rmmResourceDestroy(other), RMM_SUCCESS);
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
}

#[test]
fn managed_and_host_pools_and_hw_decompression_need_their_driver_versions() {
    let _guard = setup();
    let mut out = std::ptr::null_mut();
    with_driver_version(12080, || {
        assert!(!supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS));
        assert!(supports(RMM_CAPABILITY_HOST_MEMORY_POOLS) && supports(RMM_CAPABILITY_HW_DECOMPRESS));
        assert_eq!(rmmAsyncManagedResourceCreate(&mut out), RMM_ERROR_NOT_SUPPORTED);
        assert!(last_message().contains("CUDA 13"), "{}", last_message());
    });
    with_driver_version(12060, || {
        assert!(!supports(RMM_CAPABILITY_HW_DECOMPRESS) && supports(RMM_CAPABILITY_HOST_MEMORY_POOLS));
        assert_eq!(rmmAsyncResourceCreateWithFlags(&mut out, 0, usize::MAX, 0, RMM_ASYNC_HW_DECOMPRESS), RMM_ERROR_NOT_SUPPORTED);
        assert!(last_message().contains("hardware decompression"), "{}", last_message());
    });
    with_driver_version(12000, || {
        assert!(!supports(RMM_CAPABILITY_HOST_MEMORY_POOLS));
        assert_eq!(rmmAsyncPinnedHostResourceCreate(&mut out, 0, usize::MAX), RMM_ERROR_NOT_SUPPORTED);
        assert!(last_message().contains("host memory pools"), "{}", last_message());
    });
    assert!(out.is_null(), "nothing written on failure");
}

#[test]
fn the_hw_decompress_flag_builds_a_pool_where_the_driver_offers_it() {
    let _guard = setup();
    assert!(supports(RMM_CAPABILITY_HW_DECOMPRESS));
    let mut out = std::ptr::null_mut();
    let resource = made(rmmAsyncResourceCreateWithFlags(&mut out, 1 << 20, usize::MAX, 0, RMM_ASYNC_HW_DECOMPRESS), out);
    assert_eq!(name(resource), "cuda_async");
    let ptr = allocate(resource, 4096);
    free(resource, ptr, 4096);
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    let mut out = std::ptr::null_mut();
    assert_eq!(rmmAsyncResourceCreateWithFlags(&mut out, 0, usize::MAX, 0, 2), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("only RMM_ASYNC_HW_DECOMPRESS"), "{}", last_message());
    assert_eq!(rmmAsyncResourceCreateWithFlags(&mut out, 0, usize::MAX, 16, 0), RMM_ERROR_INVALID_ARGUMENT);
    assert!(out.is_null());
}

#[test]
fn a_pinned_host_pool_hands_out_host_memory() {
    let _guard = setup();
    let mut out = std::ptr::null_mut();
    let resource = made(rmmAsyncPinnedHostResourceCreate(&mut out, 1 << 20, usize::MAX), out);
    assert_eq!(name(resource), "cuda_async_pinned_host");
    assert!(!pool_of(resource).is_null());
    let before = device_free();
    let ptr = allocate(resource, 3 << 20);
    assert_eq!(device_free(), before, "host memory does not count against the device");
    touch(ptr, 3 << 20);
    free(resource, ptr, 3 << 20);
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
}

#[test]
fn system_memory_needs_pageable_memory_access() {
    let _guard = setup();
    let simulated = simulator().unwrap();
    let mut out = std::ptr::null_mut();
    simulated.set_pageable_memory_access(false);
    assert!(!supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS));
    assert_eq!(rmmSystemResourceCreate(&mut out), RMM_ERROR_NOT_SUPPORTED);
    assert!(last_message().contains("cannot reach pageable host memory"), "{}", last_message());
    assert_eq!(rmmSamHeadroomResourceCreate(&mut out, 1 << 20), RMM_ERROR_NOT_SUPPORTED);
    assert!(out.is_null());

    simulated.set_pageable_memory_access(true);
    assert!(supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS));
    let resource = made(rmmSystemResourceCreate(&mut out), out);
    assert_eq!(name(resource), "system");
    let before = device_free();
    let ptr = allocate(resource, 1 << 20);
    assert_eq!(ptr as usize % 256, 0);
    assert_eq!(device_free(), before, "system memory stays on the host until the device touches it");
    touch(ptr, 1 << 20);
    // A free on a created stream waits for it, then frees.
    let mut stream = std::ptr::null_mut();
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
    assert_eq!(rmmResourceDeallocate(resource, ptr, 1 << 20, stream), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    simulated.set_pageable_memory_access(false);
}

#[test]
fn sam_headroom_prefers_the_device_only_while_the_headroom_stays_free() {
    let _guard = setup();
    let simulated = simulator().unwrap();
    simulated.set_pageable_memory_access(true);
    let mut out = std::ptr::null_mut();
    assert_eq!(rmmSamHeadroomResourceCreate(&mut out, DEVICE_BYTES + 1), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("more than device 0 has"), "{}", last_message());
    assert!(out.is_null());

    let start = device_free();
    let headroom = start - (96 << 20);
    let resource = made(rmmSamHeadroomResourceCreate(&mut out, headroom), out);
    assert_eq!(name(resource), "sam_headroom");
    // 64 MiB fit above the headroom: all of it prefers the device.
    let first = allocate(resource, 64 << 20);
    assert_eq!(device_free(), start - (64 << 20));
    // Of 64 MiB more, only 32 MiB fit above the headroom; the rest prefers the host.
    let second = allocate(resource, 64 << 20);
    assert_eq!(device_free(), headroom);
    // Nothing more goes to the device.
    let third = allocate(resource, 1 << 20);
    assert_eq!(device_free(), headroom);
    touch(third, 1 << 20);
    for (ptr, bytes) in [(first, 64 << 20), (second, 64 << 20), (third, 1 << 20)] {
        free(resource, ptr, bytes);
    }
    assert_eq!(device_free(), start, "freed system memory leaves the device");
    // The whole device as headroom: everything prefers the host.
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    let resource = made(rmmSamHeadroomResourceCreate(&mut out, DEVICE_BYTES), out);
    let ptr = allocate(resource, 1 << 20);
    assert_eq!(device_free(), start);
    free(resource, ptr, 1 << 20);
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    simulated.set_pageable_memory_access(false);
}

#[test]
fn capability_queries_refuse_bad_arguments() {
    let _guard = setup();
    let mut supported: c_int = 7;
    assert_eq!(rmmDeviceSupports(std::ptr::null_mut(), RMM_CAPABILITY_HW_DECOMPRESS, 0), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmDeviceSupports(&mut supported, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("RMM_CAPABILITY_"), "{}", last_message());
    assert_eq!(rmmDeviceSupports(&mut supported, 5, 0), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmDeviceSupports(&mut supported, RMM_CAPABILITY_HW_DECOMPRESS, 2), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmDeviceSupports(&mut supported, RMM_CAPABILITY_HW_DECOMPRESS, -1), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(supported, 7, "nothing written on failure");
}

#[test]
fn specs_build_the_new_kinds() {
    let _guard = setup();
    simulator().unwrap().set_pageable_memory_access(true);
    for (spec, kind) in [
        ("cuda_async_managed", "cuda_async_managed"),
        ("cuda_async_pinned_host:initial=1MiB", "cuda_async_pinned_host"),
        ("cuda_async:hw_decompress=true", "cuda_async"),
        ("system", "system"),
        ("sam_headroom:headroom=128MiB", "sam_headroom"),
        ("statistics/sam_headroom:headroom=128MiB", "statistics"),
    ] {
        let text = std::ffi::CString::new(spec).unwrap();
        let mut out = std::ptr::null_mut();
        let resource = made(rmmResourceCreateFromSpec(text.as_ptr(), 0, &mut out), out);
        assert_eq!(name(resource), kind, "{spec}");
        let ptr = allocate(resource, 4096);
        free(resource, ptr, 4096);
        assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    }
    simulator().unwrap().set_pageable_memory_access(false);
}
