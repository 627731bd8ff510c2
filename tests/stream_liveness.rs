//! What each resource does with a stream handle that names no live stream (made up, or
//! destroyed, long ago or just now), and that rmm-rs must never hand to the driver: a CUDA
//! driver asked about such handles crashed the process (issue 51). The simulator reports every
//! such handle a driver call is handed (`SimState::stale_handle`), so each case here ends with
//! no report.
//!
//! - Resources that do not order memory by stream (cuda, managed, pinned_host, system,
//!   callback, and every adaptor over them) never look at the stream: any handle is taken, by
//!   allocations and frees alike, through `rmmResourceAllocate` and `rmmAlloc`, whichever
//!   device is current (issue 39 had them refuse such handles, by asking the driver).
//! - The stream-ordered resources ask the driver about a handle rmm-rs was not told of, which
//!   must then be live; with `registered_streams` they refuse it without asking, as every
//!   resource then leaves rmm-rs's hands with no stale handle given to the driver.
//! - A pointer allocated on a live stream is freed with that stream, with either device
//!   current; freed after the stream is destroyed, the memory of a resource that frees at once
//!   goes with the destroyed handle too, and any memory with the NULL stream.
//!
//! Simulated devices are set up once per process: each case runs in a child process of this
//! test program with one or two devices (`RMM_STREAM_LIVENESS_DEVICES`).

mod common;

use common::{driver_calls, last_message, over, setup_with};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::c_void;
use std::ptr::null_mut;

const DEVICES_VAR: &str = "RMM_STREAM_LIVENESS_DEVICES";
const NULL_STREAM: cudaStream_t = null_mut();

/// Runs the ignored test `child` in a process of its own with `devices` simulated devices
/// (that reach pageable host memory, for the system resource).
fn in_child(child: &str, devices: u32) {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--ignored", "--nocapture", "--test-threads=1"])
        .env(DEVICES_VAR, devices.to_string())
        .env("RMM_SIM_PAGEABLE_MEMORY_ACCESS", "on")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{child} on {devices} device(s):\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{child} did not run:\n{stdout}\n{stderr}");
}

/// In a child: its device count, with the simulated devices set up (hold the guard); None
/// outside one, where the ignored tests do nothing.
fn child() -> Option<(i32, std::sync::MutexGuard<'static, ()>)> {
    let devices: i32 = std::env::var(DEVICES_VAR).ok()?.parse().unwrap();
    Some((devices, setup_with(&format!("{devices}:1GiB"))))
}

/// The end of a child: no failure, no record, no race, and no stale handle handed to the
/// driver (the simulator counts those with the races).
fn finish(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
    assert_eq!(rmm::ownership::records::totals(), (0, 0), "no pointer record left behind");
    assert!(common::races().is_empty(), "{:?}", common::races());
}

/// Whether the stack `name` (a kind, or "adaptor over kind") orders its memory by stream.
fn ordered(name: &str) -> bool {
    let base = name.rsplit(' ').next().unwrap();
    !["cuda", "managed", "pinned_host", "system", "callback"].contains(&base)
}

fn set_device(device: i32) {
    assert_eq!(rmmSetDevice(device), RMM_SUCCESS);
}

extern "C" fn host_allocate(bytes: usize, _stream: cudaStream_t, _user_data: *mut c_void) -> *mut c_void {
    // SAFETY: a non-zero size (resources refuse 0 bytes before calling) and a valid alignment.
    unsafe { std::alloc::alloc(std::alloc::Layout::from_size_align(bytes, 256).unwrap()) as *mut c_void }
}

extern "C" fn host_deallocate(ptr: *mut c_void, bytes: usize, _stream: cudaStream_t, _user_data: *mut c_void) {
    // SAFETY: `ptr` came from `host_allocate` with `bytes`.
    unsafe { std::alloc::dealloc(ptr as *mut u8, std::alloc::Layout::from_size_align(bytes, 256).unwrap()) }
}

/// Every kind of resource and adaptor of `device` (made with it current), by name, with the
/// sizes to allocate from it (a binning resource's own bin and its upstream).
fn stacks_of(device: i32) -> Vec<(String, rmmResource_t, Vec<usize>)> {
    set_device(device);
    let cuda = over(|r| rmmCudaResourceCreate(r));
    let mut stacks = vec![
        ("cuda".to_string(), cuda, vec![4096]),
        ("managed".to_string(), over(|r| rmmManagedResourceCreate(r)), vec![4096]),
        ("system".to_string(), over(|r| rmmSystemResourceCreate(r)), vec![4096]),
        ("pinned_host".to_string(), over(|r| rmmPinnedHostResourceCreate(r)), vec![4096]),
        ("cuda_async".to_string(), over(|r| rmmAsyncResourceCreate(r, 0, 0)), vec![4096]),
        ("expandable".to_string(), over(|r| rmmExpandableResourceCreate(r, 0)), vec![4096]),
        ("pool".to_string(), over(|r| rmmPoolResourceCreate(r, cuda, 0, 0)), vec![4096]),
        ("arena".to_string(), over(|r| rmmArenaResourceCreate(r, cuda, 0)), vec![4096, 8 << 20]),
        ("binning".to_string(), over(|r| rmmBinningResourceCreate(r, cuda, 8, 14)), vec![4096, 1 << 20]),
        ("fixed_size".to_string(), over(|r| rmmFixedSizeResourceCreate(r, cuda, 4096, 2)), vec![4096]),
        (
            "callback".to_string(),
            over(|r| rmmCallbackResourceCreate(Some(host_allocate), Some(host_deallocate), null_mut(), device, r)),
            vec![4096],
        ),
    ];
    let bases: Vec<(&str, rmmResource_t)> = ["cuda", "managed", "pool", "callback", "expandable"]
        .iter()
        .map(|&base| (base, stacks.iter().find(|(name, _, _)| name == base).unwrap().1))
        .collect();
    for adaptor in ["aligned", "statistics", "limiting", "tracking", "logging", "failure_callback", "prefetch", "aligned above 1000"] {
        for &(base, upstream) in &bases {
            stacks.push((format!("{adaptor} over {base}"), over(|r| adapt(adaptor, r, upstream)), vec![4096]));
        }
    }
    stacks
}

/// Creates the adaptor `name` over `upstream`.
fn adapt(name: &str, resource: *mut rmmResource_t, upstream: rmmResource_t) -> rmmError_t {
    match name {
        "aligned" => rmmAlignedAdaptorCreate(resource, upstream, 1 << 16, 0),
        "aligned above 1000" => rmmAlignedAdaptorCreate(resource, upstream, 4096, 1000),
        "statistics" => rmmStatisticsAdaptorCreate(resource, upstream),
        "limiting" => rmmLimitingAdaptorCreate(resource, upstream, 1 << 30),
        "tracking" => rmmTrackingAdaptorCreate(resource, upstream, false),
        "logging" => {
            let path = std::env::temp_dir().join(format!("rmm-liveness-{}.csv", std::process::id()));
            let path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            rmmLoggingAdaptorCreate(resource, upstream, path.as_ptr())
        }
        "failure_callback" => rmmFailureCallbackAdaptorCreate(resource, upstream, Some(never_retry), null_mut()),
        "prefetch" => rmmPrefetchAdaptorCreate(resource, upstream),
        other => unreachable!("{other}"),
    }
}

extern "C" fn never_retry(_bytes: usize, _arg: *mut c_void) -> bool {
    false
}

/// Handles that name no live stream now: made up, destroyed after `rmmStreamCreate` (first of
/// a batch of 256, then three batches more made and destroyed, as the stream churn that
/// crashed a driver did), and one the program made and destroyed without telling rmm. No
/// stream is made after them in a child, so none of them is handed out again.
fn dead_streams(device: i32) -> Vec<(&'static str, cudaStream_t)> {
    set_device(device);
    let mut long_ago: cudaStream_t = null_mut();
    for batch in 0..4 {
        let mut made = vec![null_mut(); 256];
        for stream in &mut made {
            assert_eq!(rmmStreamCreate(stream), RMM_SUCCESS);
        }
        for &stream in &made {
            assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
        }
        if batch == 0 {
            long_ago = made[0];
        }
    }
    let mut created: cudaStream_t = null_mut();
    assert_eq!(rmmStreamCreate(&mut created), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(created), RMM_SUCCESS);
    let platform = rmm::platform::backend().unwrap();
    let unannounced = platform.stream_create(device).unwrap();
    platform.stream_destroy(unannounced).unwrap();
    vec![
        ("0x3", 0x3 as cudaStream_t),
        ("0x1234", 0x1234 as cudaStream_t),
        ("0xdeadbeef000", 0xdea_dbee_f000_usize as cudaStream_t),
        ("destroyed long ago", long_ago),
        ("destroyed", created),
        ("destroyed unannounced", unannounced.0 as cudaStream_t),
    ]
}

#[test]
fn stale_handles_reach_no_driver_call_on_one_device() {
    in_child("child_stale_handles_reach_no_driver_call", 1);
}

#[test]
fn stale_handles_reach_no_driver_call_on_two_devices() {
    in_child("child_stale_handles_reach_no_driver_call", 2);
}

/// Every resource of every device that does not order memory by stream, and every adaptor over
/// one, takes a stale handle, whichever device is current: allocations and frees through
/// `rmmResourceAllocate`/`rmmResourceDeallocate` and `rmmAlloc`/`rmmFree` succeed, and no
/// stale handle reaches the driver. (The stream-ordered resources ask the driver about a handle
/// rmm-rs does not know, so they get live streams only, below, or `registered_streams`.)
#[test]
#[ignore = "run by stale_handles_reach_no_driver_call_on_*_device(s)"]
fn child_stale_handles_reach_no_driver_call() {
    let Some((devices, _guard)) = child() else { return };
    let mut failures = Vec::new();
    for device in 0..devices {
        let stacks: Vec<_> = stacks_of(device).into_iter().collect();
        for (stream_name, stream) in dead_streams(device) {
            for (name, handle, sizes) in stacks.iter().filter(|(name, _, _)| !ordered(name)) {
                for &size in sizes {
                    for (allocating, freeing) in (0..devices).flat_map(|a| (0..devices).map(move |f| (a, f))) {
                        let what = format!(
                            "{name} of device {device}, {size} bytes on {stream_name}, device {allocating} current, freed with device \
                             {freeing} current"
                        );
                        set_device(allocating);
                        let mut ptr: *mut c_void = null_mut();
                        let status = rmmResourceAllocate(*handle, &mut ptr, size, stream);
                        if status != RMM_SUCCESS {
                            failures.push(format!("rmmResourceAllocate: {what}: {status:?}: {}", last_message()));
                            continue;
                        }
                        set_device(freeing);
                        let status = match (allocating + freeing) % 2 {
                            0 => rmmResourceDeallocate(*handle, ptr, size, stream),
                            _ => rmmFree(ptr, stream, c"liveness.c".as_ptr(), 3),
                        };
                        if status != RMM_SUCCESS {
                            failures.push(format!("free: {what}: {status:?}: {}", last_message()));
                            assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
                        }
                    }
                }
            }
            // rmmAlloc and rmmFree through each such stack installed as the device's resource.
            for (name, handle, sizes) in stacks.iter().filter(|(name, _, _)| !ordered(name)) {
                let mut previous: rmmResource_t = null_mut();
                assert_eq!(rmmSetPerDeviceResource(device, *handle, &mut previous), RMM_SUCCESS, "{name}: {}", last_message());
                set_device(device);
                let mut ptr: *mut c_void = null_mut();
                let what = format!("rmmAlloc: {name} of device {device} on {stream_name}");
                match rmmAlloc(&mut ptr, sizes[0], stream, c"liveness.c".as_ptr(), 1) {
                    RMM_SUCCESS => {
                        let status = rmmFree(ptr, stream, c"liveness.c".as_ptr(), 2);
                        if status != RMM_SUCCESS {
                            failures.push(format!("{what}: rmmFree {status:?}: {}", last_message()));
                            assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS);
                        }
                    }
                    status => failures.push(format!("{what}: {status:?}: {}", last_message())),
                }
                assert_eq!(rmmSetPerDeviceResource(device, previous, null_mut()), RMM_SUCCESS);
                assert_eq!(rmmResourceDestroy(previous), RMM_SUCCESS);
            }
        }
        for (_, handle, _) in stacks.into_iter().rev() {
            assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
        }
    }
    finish(failures);
}

#[test]
fn with_registered_streams_every_resource_survives_stale_handles_on_one_device() {
    in_child("child_with_registered_streams_every_resource_survives_stale_handles", 1);
}

#[test]
fn with_registered_streams_every_resource_survives_stale_handles_on_two_devices() {
    in_child("child_with_registered_streams_every_resource_survives_stale_handles", 2);
}

/// With `registered_streams` configured, every resource and adaptor of every device takes a
/// stale handle without handing it to the driver: those that do not order by stream take it
/// (as without the keyword), the stream-ordered ones refuse it with RMM_ERROR_INVALID_ARGUMENT,
/// at allocations and at frees alike (the pointer then stays live), and so they do a live
/// stream rmm-rs was not told of, without asking the driver anything about it.
#[test]
#[ignore = "run by with_registered_streams_every_resource_survives_stale_handles_on_*_device(s)"]
fn child_with_registered_streams_every_resource_survives_stale_handles() {
    let Some((devices, _guard)) = child() else { return };
    assert_eq!(rmmConfigure(c"registered_streams/cuda".as_ptr()), RMM_SUCCESS, "{}", last_message());
    let platform = rmm::platform::backend().unwrap();
    let mut failures = Vec::new();
    for device in 0..devices {
        let stacks = stacks_of(device);
        let live_unannounced = platform.stream_create(device).unwrap();
        let mut streams = dead_streams(device);
        streams.push(("live but unannounced", live_unannounced.0 as cudaStream_t));
        for (stream_name, stream) in streams {
            let asked_before = driver_calls().stream_identity;
            for (name, handle, sizes) in &stacks {
                for &size in sizes {
                    for current in 0..devices {
                        set_device(current);
                        let what = format!("{name} of device {device}, {size} bytes on {stream_name}, device {current} current");
                        let mut ptr: *mut c_void = null_mut();
                        let status = rmmResourceAllocate(*handle, &mut ptr, size, stream);
                        match (ordered(name), status) {
                            (true, _) => check_refused(status, ptr, &format!("rmmResourceAllocate: {what}"), &mut failures),
                            (false, RMM_SUCCESS) => {
                                let status = rmmResourceDeallocate(*handle, ptr, size, stream);
                                if status != RMM_SUCCESS {
                                    failures.push(format!("rmmResourceDeallocate: {what}: {status:?}: {}", last_message()));
                                    assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS);
                                }
                            }
                            (false, status) => failures.push(format!("rmmResourceAllocate: {what}: {status:?}: {}", last_message())),
                        }
                    }
                    // Allocated on the NULL stream, freed with the handle: a stream-ordered
                    // resource refuses the free and the pointer stays live.
                    set_device(device);
                    let mut ptr: *mut c_void = null_mut();
                    assert_eq!(rmmResourceAllocate(*handle, &mut ptr, size, NULL_STREAM), RMM_SUCCESS, "{name}: {}", last_message());
                    let status = rmmFree(ptr, stream, std::ptr::null(), 0);
                    match (ordered(name), status) {
                        (false, RMM_SUCCESS) => continue,
                        (true, RMM_ERROR_INVALID_ARGUMENT) if last_message().contains("rmmStreamRegister") => {}
                        (_, status) => {
                            failures.push(format!("rmmFree: {name} of device {device} on {stream_name}: {status:?}: {}", last_message()))
                        }
                    }
                    if status != RMM_SUCCESS {
                        assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "a refused free keeps the pointer");
                    }
                }
            }
            // rmmAlloc through each stack installed as the device's current resource.
            for (name, handle, sizes) in &stacks {
                let mut previous: rmmResource_t = null_mut();
                assert_eq!(rmmSetPerDeviceResource(device, *handle, &mut previous), RMM_SUCCESS, "{name}: {}", last_message());
                set_device(device);
                let mut ptr: *mut c_void = null_mut();
                let what = format!("rmmAlloc: {name} of device {device} on {stream_name}");
                let status = rmmAlloc(&mut ptr, sizes[0], stream, c"liveness.c".as_ptr(), 1);
                match (ordered(name), status) {
                    (true, _) => check_refused(status, ptr, &what, &mut failures),
                    (false, RMM_SUCCESS) => assert_eq!(rmmFree(ptr, stream, std::ptr::null(), 0), RMM_SUCCESS, "{what}"),
                    (false, status) => failures.push(format!("{what}: {status:?}: {}", last_message())),
                }
                assert_eq!(rmmSetPerDeviceResource(device, previous, null_mut()), RMM_SUCCESS);
                assert_eq!(rmmResourceDestroy(previous), RMM_SUCCESS);
            }
            let asked = driver_calls().stream_identity - asked_before;
            if asked != 0 {
                failures.push(format!("{stream_name}: the driver was asked {asked} stream ids"));
            }
        }
        platform.stream_destroy(live_unannounced).unwrap();
        for (_, handle, _) in stacks.into_iter().rev() {
            assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
        }
    }
    finish(failures);
}

/// A refused allocation: RMM_ERROR_INVALID_ARGUMENT saying the stream is not one rmm-rs
/// knows, nothing handed out. An allocation that succeeded instead is freed (with NULL) and
/// noted.
fn check_refused(status: rmmError_t, ptr: *mut c_void, what: &str, failures: &mut Vec<String>) {
    if status == RMM_SUCCESS {
        failures.push(format!("{what}: accepted"));
        assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{what}: {}", last_message());
        return;
    }
    let message = last_message();
    if status != RMM_ERROR_INVALID_ARGUMENT
        || !message.contains("is not a live stream rmm-rs knows")
        || !message.contains("rmmStreamRegister")
    {
        failures.push(format!("{what}: {status:?}: {message}"));
    }
    assert!(ptr.is_null(), "{what}: a refusal wrote the pointer");
}

#[test]
fn pointers_are_freed_on_their_live_stream_with_either_device_current_on_one_device() {
    in_child("child_pointers_are_freed_on_their_live_stream_with_either_device_current", 1);
}

#[test]
fn pointers_are_freed_on_their_live_stream_with_either_device_current_on_two_devices() {
    in_child("child_pointers_are_freed_on_their_live_stream_with_either_device_current", 2);
}

/// Allocated on a live stream (the default ones, one made by `rmmStreamCreate`, one the program
/// made without telling rmm) with one device current, freed on it with each device current,
/// through `rmmFree` and `rmmResourceDeallocate`; then freed after the stream is destroyed.
#[test]
#[ignore = "run by pointers_are_freed_on_their_live_stream_with_either_device_current_on_*_device(s)"]
fn child_pointers_are_freed_on_their_live_stream_with_either_device_current() {
    let Some((devices, _guard)) = child() else { return };
    let platform = rmm::platform::backend().unwrap();
    let mut failures = Vec::new();
    for device in 0..devices {
        let stacks = stacks_of(device);
        set_device(device);
        let mut created: cudaStream_t = null_mut();
        assert_eq!(rmmStreamCreate(&mut created), RMM_SUCCESS);
        let unannounced = platform.stream_create(device).unwrap().0 as cudaStream_t;
        let streams = [
            ("NULL", NULL_STREAM),
            ("legacy", 0x1 as cudaStream_t),
            ("per-thread", 0x2 as cudaStream_t),
            ("created", created),
            ("unannounced", unannounced),
        ];
        for (name, handle, sizes) in &stacks {
            for &size in sizes {
                for (stream_name, stream) in streams {
                    for allocating in 0..devices {
                        for freeing in 0..devices {
                            for through_handle in [false, true] {
                                let what = format!(
                                    "{name} of device {device}, {size} bytes on {stream_name}, allocated with device \
                                     {allocating} current, freed with device {freeing} current{}",
                                    if through_handle { " through its handle" } else { " by rmmFree" }
                                );
                                set_device(allocating);
                                let mut ptr: *mut c_void = null_mut();
                                let status = rmmResourceAllocate(*handle, &mut ptr, size, stream);
                                if status != RMM_SUCCESS {
                                    failures.push(format!("{what}: allocation {status:?}: {}", last_message()));
                                    continue;
                                }
                                set_device(freeing);
                                let status = match through_handle {
                                    true => rmmResourceDeallocate(*handle, ptr, size, stream),
                                    false => rmmFree(ptr, stream, c"liveness.c".as_ptr(), 2),
                                };
                                if status != RMM_SUCCESS {
                                    failures.push(format!("{what}: free {status:?}: {}", last_message()));
                                    assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
                                }
                            }
                        }
                    }
                }
            }
        }
        // Freed after its stream is destroyed (see `free_after_destroy`).
        let mut pointers = Vec::new();
        set_device(device);
        for (name, handle, sizes) in &stacks {
            for (stream_name, stream) in [("destroyed", created), ("destroyed unannounced", unannounced)] {
                for (with_null, current) in [false, true].into_iter().flat_map(|null| (0..devices).map(move |current| (null, current))) {
                    let mut ptr: *mut c_void = null_mut();
                    let status = rmmResourceAllocate(*handle, &mut ptr, sizes[0], stream);
                    assert_eq!(status, RMM_SUCCESS, "{name}: {}", last_message());
                    pointers.push((name.as_str(), stream_name, stream, with_null, current, ptr));
                }
            }
        }
        assert_eq!(rmmStreamSynchronize(created), RMM_SUCCESS);
        assert_eq!(rmmStreamDestroy(created), RMM_SUCCESS);
        let unannounced = rmm::platform::Stream(unannounced as usize);
        platform.stream_synchronize(unannounced).unwrap();
        platform.stream_destroy(unannounced).unwrap();
        for (name, stream_name, stream, with_null, current, ptr) in pointers {
            set_device(current);
            let what = format!("{name} of device {device}, freed after {stream_name} with device {current} current");
            failures.extend(free_after_destroy(name, ptr, stream, with_null, &what));
        }
        for (_, handle, _) in stacks.into_iter().rev() {
            assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
        }
    }
    finish(failures);
}

/// Frees `ptr`, allocated from the stack `name` on a stream since destroyed, with the NULL
/// stream (`with_null`) or with the destroyed `stream`. NULL always works. A resource that
/// frees at once (cuda, managed, pinned_host, system, callback, adaptors over them) frees with
/// the destroyed handle as well, on one device or two, handing it to no driver call (issue 39
/// had two devices refuse it, by asking the driver). A stream-ordered resource would ask the
/// driver about a handle rmm-rs does not know (which may crash a CUDA driver, and which the
/// simulator reports): its memory is freed with NULL here too. A failure, in words.
fn free_after_destroy(name: &str, ptr: *mut c_void, stream: cudaStream_t, with_null: bool, what: &str) -> Option<String> {
    let (stream, how) = match with_null || ordered(name) {
        true => (NULL_STREAM, " (NULL)"),
        false => (stream, ""),
    };
    let status = rmmFree(ptr, stream, std::ptr::null(), 0);
    if status == RMM_SUCCESS {
        return None;
    }
    let failure = format!("{what}{how}: {status:?}: {}", last_message());
    assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{what}: a refused free keeps the pointer: {}", last_message());
    Some(failure)
}
