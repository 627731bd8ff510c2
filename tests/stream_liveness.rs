//! An allocation and the free of its pointer check the stream alike (issue 39): a handle that
//! names no live stream (made up, or destroyed) is refused by every resource's allocation with
//! RMM_ERROR_INVALID_ARGUMENT, whatever device is current, since a free on it could be refused;
//! a pointer allocated on a live stream is freed with that stream, with either device current;
//! and freeing after the stream is destroyed does what it did before (the NULL stream always
//! works).
//!
//! Simulated devices are set up once per process: each case runs in a child process of this
//! test program with one or two devices (`RMM_STREAM_LIVENESS_DEVICES`).

mod common;

use common::{last_message, over, setup_with};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::c_void;
use std::ptr::null_mut;

const DEVICES_VAR: &str = "RMM_STREAM_LIVENESS_DEVICES";
const NULL_STREAM: cudaStream_t = null_mut();

/// Runs the ignored test `child` in a process of its own with `devices` simulated devices.
fn in_child(child: &str, devices: u32) {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child, "--ignored", "--nocapture", "--test-threads=1"])
        .env(DEVICES_VAR, devices.to_string())
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

/// The end of a child: no failure, no record, no race.
fn finish(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
    assert_eq!(rmm::ownership::records::totals(), (0, 0), "no pointer record left behind");
    assert!(common::races().is_empty(), "{:?}", common::races());
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

/// Handles that name no live stream now: made up, destroyed after `rmmStreamCreate`, and one
/// the program made and destroyed without telling rmm.
fn dead_streams(device: i32) -> Vec<(&'static str, cudaStream_t)> {
    set_device(device);
    let mut created: cudaStream_t = null_mut();
    assert_eq!(rmmStreamCreate(&mut created), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(created), RMM_SUCCESS);
    let platform = rmm::platform::backend().unwrap();
    let unannounced = platform.stream_create(device).unwrap();
    platform.stream_destroy(unannounced).unwrap();
    vec![
        ("0x3", 0x3 as cudaStream_t),
        ("0x1234", 0x1234 as cudaStream_t),
        ("destroyed", created),
        ("destroyed unannounced", unannounced.0 as cudaStream_t),
    ]
}

#[test]
fn allocations_refuse_streams_that_are_not_live_on_one_device() {
    in_child("child_allocations_refuse_streams_that_are_not_live", 1);
}

#[test]
fn allocations_refuse_streams_that_are_not_live_on_two_devices() {
    in_child("child_allocations_refuse_streams_that_are_not_live", 2);
}

/// Every resource of every device, with each device current, refuses to allocate on a stream
/// that is not live, through `rmmResourceAllocate` and `rmmAlloc`, with the free's message.
#[test]
#[ignore = "run by allocations_refuse_streams_that_are_not_live_on_*_device(s)"]
fn child_allocations_refuse_streams_that_are_not_live() {
    let Some((devices, _guard)) = child() else { return };
    let mut failures = Vec::new();
    for device in 0..devices {
        let stacks = stacks_of(device);
        for (stream_name, stream) in dead_streams(device) {
            for (name, handle, sizes) in &stacks {
                for &size in sizes {
                    for current in 0..devices {
                        set_device(current);
                        let what = format!("{name} of device {device}, {size} bytes on {stream_name}, device {current} current");
                        let mut ptr: *mut c_void = null_mut();
                        let status = rmmResourceAllocate(*handle, &mut ptr, size, stream);
                        check_refused(status, ptr, &format!("rmmResourceAllocate: {what}"), &mut failures);
                    }
                }
            }
            // rmmAlloc through each stack installed as the device's current resource.
            for (name, handle, sizes) in &stacks {
                let mut previous: rmmResource_t = null_mut();
                assert_eq!(rmmSetPerDeviceResource(device, *handle, &mut previous), RMM_SUCCESS, "{name}: {}", last_message());
                set_device(device);
                let mut ptr: *mut c_void = null_mut();
                let status = rmmAlloc(&mut ptr, sizes[0], stream, c"liveness.c".as_ptr(), 1);
                check_refused(status, ptr, &format!("rmmAlloc: {name} of device {device} on {stream_name}"), &mut failures);
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

/// A refused allocation: RMM_ERROR_INVALID_ARGUMENT saying the stream is not live, nothing
/// handed out. An allocation that succeeded instead is freed (with NULL) and noted.
fn check_refused(status: rmmError_t, ptr: *mut c_void, what: &str, failures: &mut Vec<String>) {
    if status == RMM_SUCCESS {
        failures.push(format!("{what}: accepted"));
        assert_eq!(rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0), RMM_SUCCESS, "{what}: {}", last_message());
        return;
    }
    let message = last_message();
    if status != RMM_ERROR_INVALID_ARGUMENT || !message.contains("is not a live stream") {
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
            failures.extend(free_after_destroy(devices, name, ptr, stream, with_null, &what));
        }
        for (_, handle, _) in stacks.into_iter().rev() {
            assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
        }
    }
    finish(failures);
}

/// Frees `ptr`, allocated from the stack `name` on a stream since destroyed, with the NULL stream
/// (`with_null`) or with the destroyed `stream`, as before issue 39's fix: NULL always works; on
/// one device a resource that frees at once (cuda, managed, pinned_host, callback, adaptors
/// over them) does not need the stream and frees; otherwise the free is refused as the
/// stream's allocation now is, and the pointer stays live (it is then freed with NULL). A
/// failure, in words.
fn free_after_destroy(devices: i32, name: &str, ptr: *mut c_void, stream: cudaStream_t, with_null: bool, what: &str) -> Option<String> {
    if with_null {
        let status = rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0);
        return (status != RMM_SUCCESS).then(|| format!("{what} (NULL): {status:?}: {}", last_message()));
    }
    let base = name.rsplit(' ').next().unwrap();
    let frees_at_once = ["cuda", "managed", "pinned_host", "callback"].contains(&base);
    let status = rmmFree(ptr, stream, std::ptr::null(), 0);
    let failure = match (status, devices == 1 && frees_at_once) {
        (RMM_SUCCESS, true) => return None,
        (status, true) => Some(format!("{what}: {status:?} ({}), where it used to free", last_message())),
        (RMM_SUCCESS, false) => Some(format!("{what}: freed, where it used to be refused")),
        (RMM_ERROR_INVALID_ARGUMENT, false) if last_message().contains("is not a live stream") => None,
        (status, false) => Some(format!("{what}: {status:?} ({})", last_message())),
    };
    if status != RMM_SUCCESS {
        assert_eq!(
            rmmFree(ptr, NULL_STREAM, std::ptr::null(), 0),
            RMM_SUCCESS,
            "{what}: a refused free keeps the pointer: {}",
            last_message()
        );
    }
    failure
}
