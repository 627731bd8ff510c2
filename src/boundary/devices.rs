//! Devices and the per-device resource registry.

use super::handles::{self, rmmResource_t};
use super::types::{cudaStream_t, stream_of};
use super::{boundary, non_null, write_out};
use crate::error::rmmError_t;
use crate::error::{ErrorKind, Result};
use crate::ownership::per_device;
use crate::platform::{backend, simulator};
use std::ffi::c_int;

fn set_resource(device: i32, resource: rmmResource_t, previous: *mut rmmResource_t) -> Result<()> {
    let stack = handles::stack(resource)?;
    let replaced = per_device::set(device, stack)?;
    if !previous.is_null() {
        write_out(previous, "previous", handles::create_for(replaced)?)?;
    }
    Ok(())
}

/// Makes `resource` the resource of `device` (the registry keeps its own reference, so the
/// caller may destroy its handle). If `previous` is not NULL it receives a new handle to the
/// resource replaced, owned by the caller. The resource must belong to `device`. Each thread
/// keeps the resource it last allocated from on each device (so that allocating takes no lock);
/// before this returns, every thread that is not inside an allocation lets go of the replaced
/// resource, and each thread inside one lets go of it as that call returns. So a replaced
/// resource goes, and gives its memory back, once its handles are destroyed and the calls that
/// use it have returned, whatever other threads do. Where the kernel offers no membarrier (or
/// with `RMM_RETIRE_REPLACED=0`), each thread lets go of it only when an allocation of its own
/// on any device returns, or when it exits.
/// A `device` that does not exist, or a resource of another device (or of pinned host memory):
/// RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmSetPerDeviceResource(device: c_int, resource: rmmResource_t, previous: *mut rmmResource_t) -> rmmError_t {
    boundary("rmmSetPerDeviceResource", || set_resource(device, resource, previous))
}

/// Writes a new handle to `device`'s resource to `*resource` (a cuda resource unless one was
/// set). The caller owns the handle and destroys it with `rmmResourceDestroy`.
/// A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
/// CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmGetPerDeviceResource(device: c_int, resource: *mut rmmResource_t) -> rmmError_t {
    boundary("rmmGetPerDeviceResource", || {
        non_null(resource, "resource")?;
        write_out(resource, "resource", handles::create_for(per_device::get(device)?)?)
    })
}

/// `rmmSetPerDeviceResource` for the calling thread's current device (the replaced resource
/// goes as that function says, without waiting for idle threads).
/// A resource of another device than the current one: RMM_ERROR_INVALID_ARGUMENT;
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmSetCurrentDeviceResource(resource: rmmResource_t, previous: *mut rmmResource_t) -> rmmError_t {
    boundary("rmmSetCurrentDeviceResource", || set_resource(backend()?.current_device()?, resource, previous))
}

/// `rmmGetPerDeviceResource` for the calling thread's current device.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmGetCurrentDeviceResource(resource: *mut rmmResource_t) -> rmmError_t {
    boundary("rmmGetCurrentDeviceResource", || {
        non_null(resource, "resource")?;
        write_out(resource, "resource", handles::create_for(per_device::get(backend()?.current_device()?)?)?)
    })
}

/// Writes the calling thread's current device (as `cudaGetDevice`) to `*device`.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmGetDevice(device: *mut c_int) -> rmmError_t {
    boundary("rmmGetDevice", || {
        non_null(device, "device")?;
        write_out(device, "device", backend()?.current_device()?)
    })
}

/// Makes `device` current on the calling thread (as `cudaSetDevice`: its primary context).
/// A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
/// CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmSetDevice(device: c_int) -> rmmError_t {
    boundary("rmmSetDevice", || backend()?.set_device(device))
}

/// Writes the number of devices to `*count`.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmGetDeviceCount(count: *mut c_int) -> rmmError_t {
    boundary("rmmGetDeviceCount", || {
        non_null(count, "count")?;
        write_out(count, "count", backend()?.device_count()?)
    })
}

/// Writes the free and total bytes of `device`'s memory to `*free_bytes` and `*total_bytes`,
/// as `cudaMemGetInfo` does for the current device (on simulated devices: the capacity
/// `RMM_SIM_DEVICES` gives, less what device and managed memory hold). Needs no
/// `rmmInitialize`, unlike `rmmGetInfo`. Neither out-pointer may be NULL.
/// A `device` that does not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
/// CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmGetDeviceMemInfo(free_bytes: *mut usize, total_bytes: *mut usize, device: c_int) -> rmmError_t {
    boundary("rmmGetDeviceMemInfo", || {
        non_null(free_bytes, "free_bytes")?;
        non_null(total_bytes, "total_bytes")?;
        let platform = backend()?;
        platform.check_device(device)?;
        let (free, total) = platform.mem_get_info(device)?;
        write_out(free_bytes, "free_bytes", free)?;
        write_out(total_bytes, "total_bytes", total)
    })
}

/// Writes true to `*simulated` when rmm runs on simulated devices (`RMM_SIM_DEVICES`), false
/// on the CUDA driver. Fails with RMM_ERROR_CUDA_ERROR when neither is available.
#[no_mangle]
pub extern "C" fn rmmIsSimulated(simulated: *mut bool) -> rmmError_t {
    boundary("rmmIsSimulated", || {
        non_null(simulated, "simulated")?;
        write_out(simulated, "simulated", backend()?.is_simulated())
    })
}

/// On simulated devices, what the simulator knows of `ptr`, numbered as CUDA's
/// `cudaMemoryType`: writes to `*memory_type` 2 (device memory), 3 (managed) or 1 (pinned host) for a
/// pointer inside a simulated allocation, with its device to `*device`; 0 (unregistered host
/// memory) and -1 for any other pointer (virtual memory mappings included). For stand-ins of
/// `cudaPointerGetAttributes` in tests. Neither out-pointer may be NULL. On real devices:
/// RMM_ERROR_NOT_SUPPORTED (ask the CUDA runtime).
#[no_mangle]
pub extern "C" fn rmmSimGetPointerAttributes(memory_type: *mut c_int, device: *mut c_int, ptr: *const std::ffi::c_void) -> rmmError_t {
    boundary("rmmSimGetPointerAttributes", || {
        non_null(memory_type, "memory_type")?;
        non_null(device, "device")?;
        backend()?;
        let simulator = simulator()
            .ok_or_else(|| crate::error::Error::NotSupported("pointer attributes are answered on simulated devices only".into()))?;
        let (kind, owner) = match simulator.pointer_kind(ptr as usize) {
            Some((owner, crate::platform::MemoryKind::Device)) => (2, owner),
            Some((owner, crate::platform::MemoryKind::Managed)) => (3, owner),
            Some((owner, crate::platform::MemoryKind::PinnedHost)) => (1, owner),
            None => (0, -1),
        };
        write_out(device, "device", owner)?;
        write_out(memory_type, "memory_type", kind)
    })
}

/// Migrates `[ptr, ptr + bytes)` of managed memory to `device` in the order of `stream`
/// (`cudaMemPrefetchAsync`), as RAPIDS RMM's `rmm::prefetch` and `DeviceBuffer.prefetch` do.
/// Memory that is not managed stays where it is and needs no prefetch: RMM_SUCCESS, as RAPIDS
/// gives. NULL or 0 bytes: nothing. `stream`: as `rmmStreamSynchronize`'s. A `device` that does
/// not exist: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a CUDA driver (and
/// without `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmPrefetch(ptr: *const std::ffi::c_void, bytes: usize, device: c_int, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmPrefetch", || {
        let platform = backend()?;
        platform.check_device(device)?;
        if ptr.is_null() || bytes == 0 {
            return Ok(());
        }
        let stream = stream_of(stream);
        crate::platform::streams::check_usable(stream)?;
        match platform.prefetch(device, ptr as usize, bytes, stream) {
            Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument(_) | ErrorKind::NotSupported(_)) => {
                log::debug!("rmmPrefetch: {e}: nothing to migrate");
                Ok(())
            }
            done => done,
        }
    })
}

/// Gives back to `device` every byte rmm-rs holds there without using it, and writes the bytes
/// given back to `*released` unless it is NULL: the frees `rmmCudaFree` deferred
/// (`async_free`) whose work is done go back to their pools first, then every resource of the
/// device releases everything it keeps free, in every stream, lane and thread: pools', arenas',
/// bins' and fixed-size resources' wholly free chunks (after synchronizing the device), and the
/// expandable resource's free pages, also inside chunks still in use. Memory in use stays, and
/// so does the free part of a chunk that holds memory in use (a pool over `cuda` cannot return
/// part of a `cudaMalloc` allocation). The pinned host memory that keep-mode sleeps of the
/// device keep for the next one (`rmmResourceSleep`) goes too, uncounted in `*released`.
/// PyTorch's `torch.cuda.empty_cache()` calls it through the rmm-rs backend. Called from inside
/// a callback while a pool grows, it passes over that pool. A `device` that does not exist:
/// RMM_ERROR_INVALID_ARGUMENT; a failure while the device is synchronized or memory given back:
/// RMM_ERROR_CUDA_ERROR (every resource was still asked).
#[no_mangle]
pub extern "C" fn rmmDeviceRelease(device: c_int, released: *mut usize) -> rmmError_t {
    boundary("rmmDeviceRelease", || {
        backend()?.check_device(device)?;
        let bytes = crate::resources::caches::release_device(device)?;
        if !released.is_null() {
            write_out(released, "released", bytes)?;
        }
        Ok(())
    })
}

/// Writes the number of stream-ordering races the simulator found (with
/// `RMM_SIM_ON_RACE=count`; by default the first race aborts the process), counting also every
/// stream handle that names no live stream handed to a driver call, which a CUDA driver may
/// crash on. On real devices: RMM_ERROR_NOT_SUPPORTED.
#[no_mangle]
pub extern "C" fn rmmSimGetRaceCount(count: *mut usize) -> rmmError_t {
    boundary("rmmSimGetRaceCount", || {
        non_null(count, "count")?;
        backend()?;
        let simulator =
            simulator().ok_or_else(|| crate::error::Error::NotSupported("the race checker runs on simulated devices only".into()))?;
        write_out(count, "count", simulator.race_reports().len())
    })
}
