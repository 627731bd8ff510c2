//! `rmmInitialize` over a device list fails as a whole (issue 51): an invalid argument anywhere
//! in the list is refused before anything is allocated, and a device that cannot take its
//! resource leaves every device as it was: no memory held, the per-device resources of before,
//! rmm not initialized, and a later `rmmInitialize` working.

mod common;

use common::{last_message, legacy_options, setup_with};
use rmm::boundary::types::{rmmOptions_t, CudaAsyncAllocation, CudaManagedMemory, PoolAllocation};
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use rmm::ownership::{per_device, StackRef};
use rmm::platform::{backend, MemoryKind};
use std::ptr::{null, null_mut};
use std::sync::Arc;

const MIB: usize = 1 << 20;
const DEVICES: i32 = 3;
const CAPACITY: usize = 256 * MIB;

fn setup() -> std::sync::MutexGuard<'static, ()> {
    setup_with("3:256MiB")
}

/// Bytes in use on each device.
fn used() -> Vec<usize> {
    let platform = backend().unwrap();
    (0..DEVICES)
        .map(|device| {
            let (free, total) = platform.mem_get_info(device).unwrap();
            assert_eq!(total, CAPACITY);
            total - free
        })
        .collect()
}

/// Each device's resource now.
fn resources() -> Vec<StackRef> {
    (0..DEVICES).map(|device| per_device::get(device).unwrap()).collect()
}

fn same_resources(before: &[StackRef], after: &[StackRef]) -> bool {
    before.iter().zip(after).all(|(a, b)| Arc::ptr_eq(a.stack(), b.stack()))
}

/// Plain device memory taken from `device` so that `free` bytes are left.
struct Filled {
    device: i32,
    ptr: usize,
}

impl Filled {
    fn leaving(device: i32, free: usize) -> Self {
        let platform = backend().unwrap();
        let bytes = platform.mem_get_info(device).unwrap().0 - free;
        Filled { device, ptr: platform.allocate(device, MemoryKind::Device, bytes).unwrap() }
    }
}

impl Drop for Filled {
    fn drop(&mut self) {
        backend().unwrap().free(self.device, MemoryKind::Device, self.ptr).unwrap();
    }
}

/// `rmmInitialize(options)` must fail with `expected` and a message holding `says`, and leave
/// every device as it was: the same resources, the same memory in use, not initialized.
fn check_refused(options: &rmmOptions_t, expected: rmmError_t, says: &str) {
    let before_used = used();
    let before = resources();
    let status = rmmInitialize(options);
    let message = last_message();
    let devices = &options.devices.ids[..options.devices.count.max(0) as usize];
    let what = format!("mode {:#x}, initial {}, devices {devices:?}", options.allocation_mode, options.initial_pool_size);
    assert_eq!(status, expected, "{what}: {message}");
    assert!(message.contains(says), "{what}: the message {message:?} does not say {says:?}");
    assert!(!rmmIsInitialized(null_mut()), "{what}: initialized after a failure");
    assert_eq!(used(), before_used, "{what}: memory left allocated");
    assert!(same_resources(&before, &resources()), "{what}: a device's resource changed");
    assert_eq!(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED, "{what}: rmmFinalize after a failed rmmInitialize");
    assert_eq!(used(), before_used, "{what}: rmmFinalize after a failure changed the memory in use");
}

/// A valid `rmmInitialize` after the failures works, allocates where it should, and
/// `rmmFinalize` puts everything back.
fn check_initialize_works(devices: &[i32]) {
    let before_used = used();
    let before = resources();
    let pool = 32 * MIB;
    assert_eq!(rmmInitialize(&legacy_options(PoolAllocation, pool, 0, devices)), RMM_SUCCESS, "{}", last_message());
    assert!(rmmIsInitialized(null_mut()));
    let during = used();
    for device in 0..DEVICES {
        let expected = before_used[device as usize] + if devices.contains(&device) { pool } else { 0 };
        assert_eq!(during[device as usize], expected, "device {device} after rmmInitialize over {devices:?}");
    }
    let mut ptr = null_mut();
    assert_eq!(rmmSetDevice(devices[0]), RMM_SUCCESS);
    assert_eq!(rmmAlloc(&mut ptr, 4096, null_mut(), null(), 0), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmFree(ptr, null_mut(), null(), 0), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
    assert_eq!(rmmFinalize(), RMM_SUCCESS, "{}", last_message());
    assert!(!rmmIsInitialized(null_mut()));
    assert_eq!(used(), before_used, "the pools of rmmInitialize outlived rmmFinalize");
    assert!(same_resources(&before, &resources()), "rmmFinalize did not put the resources back");
}

/// (1) The last entry of the device list is invalid: refused as an invalid argument, with
/// nothing allocated on any device first, also where a pool would not fit an earlier device.
#[test]
fn an_invalid_last_device_is_refused_before_anything_is_allocated() {
    let _guard = setup();
    let invalid: [(i32, &str); 6] = [
        (DEVICES, "device 3 does not exist"),
        (64, "device 64 does not exist"),
        (i32::MAX, "does not exist"),
        (-1, "device -1 does not exist"),
        (0, "device 0 is listed twice"),
        (1, "device 1 is listed twice"),
    ];
    for modes in [PoolAllocation, PoolAllocation | CudaManagedMemory, CudaAsyncAllocation, CudaManagedMemory, 0] {
        for (last, says) in invalid {
            check_refused(&legacy_options(modes, 100 * MIB, 0, &[0, 1, last]), RMM_ERROR_INVALID_ARGUMENT, says);
            // Device 1 cannot hold the pool: still the invalid argument, not out of memory.
            let _filled = Filled::leaving(1, 50 * MIB);
            check_refused(&legacy_options(modes, 100 * MIB, 0, &[0, 1, last]), RMM_ERROR_INVALID_ARGUMENT, says);
            // Nor can any device.
            check_refused(&legacy_options(modes, 2 * CAPACITY, 0, &[0, 1, last]), RMM_ERROR_INVALID_ARGUMENT, says);
        }
    }
    check_initialize_works(&[0, 2]);
    check_initialize_works(&[2, 1, 0]);
}

/// (1) Other invalid options a later device shows first: an initial size of 0 (half the free
/// memory) above the maximum on the second device only.
#[test]
fn half_the_free_memory_above_the_maximum_on_a_later_device_is_refused_up_front() {
    let _guard = setup();
    // Device 0 has 176 MiB free (a pool of 88 MiB fits the maximum), device 1 256 MiB (128 MiB
    // does not).
    let _filled = Filled::leaving(0, 176 * MIB);
    check_refused(&legacy_options(PoolAllocation, 0, 100 * MIB, &[0, 1]), RMM_ERROR_INVALID_ARGUMENT, "device 1");
    check_refused(&legacy_options(PoolAllocation, 0, 100 * MIB, &[0, 2, 1]), RMM_ERROR_INVALID_ARGUMENT, "device 2");
    check_refused(&legacy_options(PoolAllocation, 200 * MIB, 100 * MIB, &[0, 1]), RMM_ERROR_INVALID_ARGUMENT, "exceeds");
    check_refused(&legacy_options(0x100 | PoolAllocation, 10 * MIB, 0, &[0, 1]), RMM_ERROR_INVALID_ARGUMENT, "unknown flags");
    // The event log asked for is not started (nor the log of before cleared).
    let log = rmmLogSize();
    let mut logged = legacy_options(PoolAllocation, 0, 100 * MIB, &[0, 1]);
    logged.enable_logging = true;
    check_refused(&logged, RMM_ERROR_INVALID_ARGUMENT, "device 1");
    assert!(!rmm::ownership::legacy_log::enabled());
    assert_eq!(rmmLogSize(), log);
    check_initialize_works(&[1, 0]);
}

/// (2) The pool does not fit a later device only: that device's out of memory, and what was
/// made for the earlier devices is undone.
#[test]
fn a_pool_too_large_for_a_later_device_undoes_the_earlier_devices() {
    let _guard = setup();
    for modes in [PoolAllocation, PoolAllocation | CudaManagedMemory, CudaAsyncAllocation] {
        {
            let _filled = Filled::leaving(2, 50 * MIB);
            check_refused(&legacy_options(modes, 100 * MIB, 0, &[0, 1, 2]), RMM_ERROR_OUT_OF_MEMORY, "device 2");
            check_refused(&legacy_options(modes, 100 * MIB, 0, &[1, 2, 0]), RMM_ERROR_OUT_OF_MEMORY, "device 2");
            check_initialize_works(&[0, 1]);
        }
        check_initialize_works(&[0, 1, 2]);
    }
}

/// A failed `rmmInitialize` leaves the resources a program set on its devices, and memory they
/// hold, as they were; a later one replaces them and `rmmFinalize` puts them back.
#[test]
fn a_failed_initialize_keeps_the_resources_the_program_set() {
    let _guard = setup();
    let mut handles = Vec::new();
    for device in 0..DEVICES {
        assert_eq!(rmmSetDevice(device), RMM_SUCCESS);
        let mut managed = null_mut();
        assert_eq!(rmmManagedResourceCreate(&mut managed), RMM_SUCCESS, "{}", last_message());
        let mut previous = null_mut();
        assert_eq!(rmmSetPerDeviceResource(device, managed, &mut previous), RMM_SUCCESS, "{}", last_message());
        handles.push((managed, previous));
    }
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
    {
        let _filled = Filled::leaving(2, 10 * MIB);
        check_refused(&legacy_options(PoolAllocation, 20 * MIB, 0, &[0, 1, 2]), RMM_ERROR_OUT_OF_MEMORY, "device 2");
        check_refused(&legacy_options(PoolAllocation, 20 * MIB, 0, &[0, 1, 5]), RMM_ERROR_INVALID_ARGUMENT, "device 5");
    }
    check_initialize_works(&[0, 1, 2]);
    for (device, (managed, previous)) in handles.into_iter().enumerate() {
        assert_eq!(rmmSetPerDeviceResource(device as i32, previous, null_mut()), RMM_SUCCESS, "{}", last_message());
        assert_eq!(rmmResourceDestroy(previous), RMM_SUCCESS);
        assert_eq!(rmmResourceDestroy(managed), RMM_SUCCESS);
    }
}
