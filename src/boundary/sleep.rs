//! Sleep and wake (docs/src/sleep.md): a resource over virtual memory gives its device memory
//! back, live blocks' included, and takes it again with every address unchanged.

use super::handles::{self, rmmResource_t};
use super::types::{cudaStream_t, stream_of, RMM_SLEEP_DISCARD, RMM_SLEEP_KEEP};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error, Result};
use crate::ownership::per_device;
use crate::platform::backend;
use crate::resources::sleep::{self, SleepMode};
use std::ffi::c_int;

fn mode_of(mode: u32) -> Result<SleepMode> {
    match mode {
        RMM_SLEEP_DISCARD => Ok(SleepMode::Discard),
        RMM_SLEEP_KEEP => Ok(SleepMode::Keep),
        other => Err(Error::invalid(format!("sleep mode {other}: RMM_SLEEP_DISCARD (0) or RMM_SLEEP_KEEP (1)"))),
    }
}

/// Puts `resource` to sleep: every expandable resource it takes memory from (itself, or the
/// ones under a pool, arena, binning resource or adaptor) gives back all its device memory,
/// the memory of live blocks included. First the device is synchronized and the stack releases
/// what it keeps free; then each page holding blocks is copied to pinned host memory on
/// `stream` (`RMM_SLEEP_KEEP`) or dropped (`RMM_SLEEP_DISCARD`), and unmapped. Every pointer
/// keeps its value and is valid again after `rmmResourceWake`; meanwhile frees are taken and
/// done, allocations from the resource fail with RMM_ERROR_INVALID_ARGUMENT, and the resource
/// holds no device memory. Tags: a resource per tag (sleep one, not the others).
/// Errors: a resource over no expandable resource is RMM_ERROR_NOT_SUPPORTED; one already
/// asleep or an unknown mode RMM_ERROR_INVALID_ARGUMENT; an expandable resource with blocks
/// exported to other processes RMM_ERROR_NOT_SUPPORTED; no pinned host memory for the copy
/// RMM_ERROR_OUT_OF_MEMORY. On any error nothing sleeps.
#[no_mangle]
pub extern "C" fn rmmResourceSleep(resource: rmmResource_t, mode: u32, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmResourceSleep", || {
        let mode = mode_of(mode)?;
        handles::with(resource, |stack| sleep::sleep(stack.stack().resource(), mode, stream_of(stream)).map(drop))
    })
}

/// Wakes `resource`: device memory is taken again for every page that slept, mapped at the same
/// addresses, and the contents kept at sleep are copied back on `stream`, which is synchronized
/// before the call returns. The pinned host memory of the copy is kept for the device's next
/// keep-mode sleep, which then costs the copies alone (pinning 10 GiB took 5.7 s on an H100
/// host); `rmmDeviceRelease` gives it back. When the device cannot give the memory (another
/// process holds it), RMM_ERROR_OUT_OF_MEMORY and the resource stays asleep with its host copy
/// intact: call again later. A resource that is awake: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmResourceWake(resource: rmmResource_t, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmResourceWake", || handles::with(resource, |stack| sleep::wake(stack.stack().resource(), stream_of(stream))))
}

/// Writes 1 to `*asleep` while `resource` (or an expandable resource under it) sleeps, else 0.
/// A resource over no expandable resource: RMM_ERROR_NOT_SUPPORTED.
#[no_mangle]
pub extern "C" fn rmmResourceIsAsleep(resource: rmmResource_t, asleep: *mut c_int) -> rmmError_t {
    boundary("rmmResourceIsAsleep", || {
        non_null(asleep, "asleep")?;
        let answer = handles::with(resource, |stack| sleep::is_asleep(stack.stack().resource()))?;
        write_out(asleep, "asleep", c_int::from(answer))
    })
}

/// `rmmResourceSleep` on `device`'s current resource (`rmmSetPerDeviceResource`, or what
/// `RMM_ALLOC_CONF` made, e.g. `expandable`): the way for a program under the preload library,
/// or a library it loads, to reach sleep without a handle (`dlsym(RTLD_DEFAULT,
/// "rmmDeviceSleep")`).
#[no_mangle]
pub extern "C" fn rmmDeviceSleep(device: c_int, mode: u32, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmDeviceSleep", || {
        let mode = mode_of(mode)?;
        backend()?.check_device(device)?;
        per_device::with_stack(device, |stack| sleep::sleep(stack.resource(), mode, stream_of(stream)).map(drop))
    })
}

/// `rmmResourceWake` on `device`'s current resource.
#[no_mangle]
pub extern "C" fn rmmDeviceWake(device: c_int, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmDeviceWake", || {
        backend()?.check_device(device)?;
        per_device::with_stack(device, |stack| sleep::wake(stack.resource(), stream_of(stream)))
    })
}
