//! Device buffers (`rmmDeviceBuffer_t`): stream-ordered allocations that know their size, as
//! RMM's `rmm::device_buffer`. Handles are numbers never reused, so a destroyed or made-up
//! handle is refused with RMM_ERROR_INVALID_HANDLE.

use super::handles::{self, rmmResource_t};
use super::types::{cudaStream_t, stream_of};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error, Result};
use crate::ownership::device_buffer::DeviceBuffer;
use crate::ownership::{per_device, StackRef};
use crate::platform::backend;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A device buffer handle.
#[repr(C)]
pub struct rmmDeviceBuffer_st {
    _opaque: [u8; 0],
}

/// A device buffer handle as C holds it: a number in pointer form, never dereferenced. The
/// header declares it itself (cbindgen.toml).
#[allow(non_camel_case_types)]
pub type rmmDeviceBuffer_t = *mut rmmDeviceBuffer_st;

type Shared = Arc<Mutex<DeviceBuffer>>;

static BUFFERS: Mutex<Option<HashMap<usize, Shared>>> = Mutex::new(None);
static NEXT: AtomicUsize = AtomicUsize::new(1);

fn register(buffer: DeviceBuffer) -> rmmDeviceBuffer_t {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    BUFFERS.lock().get_or_insert_with(HashMap::new).insert(id, Arc::new(Mutex::new(buffer)));
    id as rmmDeviceBuffer_t
}

fn lookup(handle: rmmDeviceBuffer_t) -> Result<Shared> {
    if handle.is_null() {
        return Err(Error::InvalidHandle("the device buffer handle is NULL".into()));
    }
    BUFFERS
        .lock()
        .as_ref()
        .and_then(|buffers| buffers.get(&(handle as usize)).cloned())
        .ok_or_else(|| Error::InvalidHandle(format!("{handle:p} is not a live device buffer (destroyed, or never created)")))
}

/// `resource`, or the current device's resource when it is NULL.
fn resource_or_current(resource: rmmResource_t) -> Result<StackRef> {
    if resource.is_null() {
        per_device::get(backend()?.current_device()?)
    } else {
        handles::stack(resource)
    }
}

/// Creates a buffer of `size` bytes (uninitialized; 0 gives an empty buffer with a NULL data
/// pointer) from `resource` (NULL: the current device's resource), usable in the order of
/// `stream`. The buffer keeps its own reference to the resource; the caller destroys the buffer
/// with `rmmDeviceBufferDestroy`.
/// RMM_ERROR_OUT_OF_MEMORY when the resource cannot give `size` bytes;
/// RMM_ERROR_INVALID_ARGUMENT for a stream the resource cannot take (see `rmmResourceAllocate`;
/// with `registered_streams`, also a handle rmm-rs does not know, whatever the resource, since
/// the buffer's copies go in the stream's order) or, for a pool, a stream of another device.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferCreate(
    buffer: *mut rmmDeviceBuffer_t,
    size: usize,
    stream: cudaStream_t,
    resource: rmmResource_t,
) -> rmmError_t {
    boundary("rmmDeviceBufferCreate", || {
        non_null(buffer, "buffer")?;
        let created = DeviceBuffer::new(size, stream_of(stream), resource_or_current(resource)?)?;
        write_out(buffer, "buffer", register(created))
    })
}

/// Creates a buffer holding a copy of the `size` bytes at `host` (NULL only when `size` is 0).
/// The copy is complete when this returns, so `host` may be reused at once.
/// `host` NULL with `size` above 0: RMM_ERROR_INVALID_ARGUMENT; otherwise as
/// `rmmDeviceBufferCreate` (RMM_ERROR_OUT_OF_MEMORY), and RMM_ERROR_CUDA_ERROR when the copy
/// fails.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferCreateFromHost(
    buffer: *mut rmmDeviceBuffer_t,
    host: *const c_void,
    size: usize,
    stream: cudaStream_t,
    resource: rmmResource_t,
) -> rmmError_t {
    boundary("rmmDeviceBufferCreateFromHost", || {
        non_null(buffer, "buffer")?;
        if host.is_null() && size > 0 {
            return Err(Error::invalid("host is NULL"));
        }
        let bytes: &[u8] = match size {
            0 => &[],
            // SAFETY: non-NULL, and the caller promises `size` readable bytes at `host`.
            _ => unsafe { std::slice::from_raw_parts(host as *const u8, size) },
        };
        let created = DeviceBuffer::from_host(bytes, stream_of(stream), resource_or_current(resource)?)?;
        write_out(buffer, "buffer", register(created))
    })
}

/// Copies the buffer's contents to `host`, which holds `host_size` bytes (at least the buffer's
/// size), in the order of `stream`, and waits for the copy.
/// `host_size` below the buffer's size, or `host` NULL for a buffer that is not empty:
/// RMM_ERROR_INVALID_ARGUMENT; a failed copy or stream: RMM_ERROR_CUDA_ERROR.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferCopyToHost(
    buffer: rmmDeviceBuffer_t,
    host: *mut c_void,
    host_size: usize,
    stream: cudaStream_t,
) -> rmmError_t {
    boundary("rmmDeviceBufferCopyToHost", || {
        let shared = lookup(buffer)?;
        let buffer = shared.lock();
        if buffer.size() == 0 {
            return Ok(());
        }
        if host.is_null() {
            return Err(Error::invalid("host is NULL"));
        }
        // SAFETY: non-NULL, and the caller promises `host_size` writable bytes at `host`.
        let out = unsafe { std::slice::from_raw_parts_mut(host as *mut u8, host_size) };
        buffer.copy_to_host(out, stream_of(stream))
    })
}

/// Sets the buffer's size: within its capacity nothing moves; beyond it the contents move to
/// a new allocation of exactly `size` bytes, in the order of `stream` (new bytes are
/// uninitialized). On failure the buffer is unchanged.
/// RMM_ERROR_OUT_OF_MEMORY when the new allocation cannot be made; RMM_ERROR_INVALID_ARGUMENT
/// for a stream that is not live; either way the buffer is unchanged.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferResize(buffer: rmmDeviceBuffer_t, size: usize, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmDeviceBufferResize", || lookup(buffer)?.lock().resize(size, stream_of(stream)))
}

/// Gives back the capacity beyond the size (the contents move to an allocation of exactly
/// the size), in the order of `stream`.
/// As `rmmDeviceBufferResize`: RMM_ERROR_OUT_OF_MEMORY or RMM_ERROR_INVALID_ARGUMENT, with the
/// buffer unchanged.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferShrinkToFit(buffer: rmmDeviceBuffer_t, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmDeviceBufferShrinkToFit", || lookup(buffer)?.lock().shrink_to_fit(stream_of(stream)))
}

/// Creates in `*copy` a new buffer with the same contents, copied in the order of `stream`,
/// from `resource` (NULL: the source buffer's resource).
/// RMM_ERROR_OUT_OF_MEMORY when `resource` cannot hold the copy; RMM_ERROR_INVALID_ARGUMENT for
/// a stream that is not live; RMM_ERROR_CUDA_ERROR when the copy fails.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferCopy(
    copy: *mut rmmDeviceBuffer_t,
    source: rmmDeviceBuffer_t,
    stream: cudaStream_t,
    resource: rmmResource_t,
) -> rmmError_t {
    boundary("rmmDeviceBufferCopy", || {
        non_null(copy, "copy")?;
        let resource = if resource.is_null() { None } else { Some(handles::stack(resource)?) };
        let duplicate = lookup(source)?.lock().deep_copy(stream_of(stream), resource)?;
        write_out(copy, "copy", register(duplicate))
    })
}

/// Writes the buffer's device address to `*data` (NULL for an empty buffer). Valid until the
/// buffer is resized beyond its capacity, shrunk or destroyed.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `buffer`,
/// RMM_ERROR_INVALID_ARGUMENT when `data` is NULL).
#[no_mangle]
pub extern "C" fn rmmDeviceBufferData(buffer: rmmDeviceBuffer_t, data: *mut *mut c_void) -> rmmError_t {
    boundary("rmmDeviceBufferData", || {
        non_null(data, "data")?;
        let address = lookup(buffer)?.lock().data();
        write_out(data, "data", address as *mut c_void)
    })
}

/// Writes the buffer's size in bytes to `*size` and, unless `capacity` is NULL, the bytes its
/// allocation holds to `*capacity`.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `buffer`,
/// RMM_ERROR_INVALID_ARGUMENT when `size` is NULL).
#[no_mangle]
pub extern "C" fn rmmDeviceBufferSize(buffer: rmmDeviceBuffer_t, size: *mut usize, capacity: *mut usize) -> rmmError_t {
    boundary("rmmDeviceBufferSize", || {
        non_null(size, "size")?;
        let shared = lookup(buffer)?;
        let buffer = shared.lock();
        write_out(size, "size", buffer.size())?;
        if !capacity.is_null() {
            write_out(capacity, "capacity", buffer.capacity())?;
        }
        Ok(())
    })
}

/// Makes `stream` the buffer's stream: later resizes default to it and the buffer is freed in
/// its order. For a buffer of a resource that orders memory by stream (a pool, say), the stream
/// must be live: a default stream, one rmm-rs made or was told of (`rmmStreamRegister`), or
/// any other live stream, which rmm-rs asks the driver about (a destroyed handle is then
/// RMM_ERROR_INVALID_ARGUMENT on simulated devices, and may crash a CUDA driver). With the
/// `registered_streams` configuration, a handle rmm-rs does not know is
/// RMM_ERROR_INVALID_ARGUMENT without asking. Refused, the buffer's stream stays unchanged, so
/// that its destroy still frees it. The memory of resources that free at once (cuda, managed,
/// pinned_host, system, callback) is freed whatever the stream: its handle is not looked at.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferSetStream(buffer: rmmDeviceBuffer_t, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmDeviceBufferSetStream", || {
        let shared = lookup(buffer)?;
        let stream = stream_of(stream);
        let mut buffer = shared.lock();
        // Asked now rather than at the destroy, which would fail and keep the memory; only for
        // memory ordered by stream (`platform::streams`).
        match buffer.stack().stack().orders_by_stream() {
            true => crate::platform::streams::device_of(stream).map(drop)?,
            false => crate::platform::streams::check_usable(stream)?,
        }
        buffer.set_stream(stream);
        Ok(())
    })
}

/// Frees the buffer's memory in the order of its stream (the last one used, or the one set
/// with `rmmDeviceBufferSetStream`) and destroys the handle. NULL is a no-op. If the memory
/// cannot be freed (its stream was destroyed, say), the buffer and its handle stay as they were:
/// set another stream and destroy it again.
/// When the memory cannot be freed, the free's error (RMM_ERROR_INVALID_ARGUMENT for a stream
/// that is no longer live), with the buffer kept.
#[no_mangle]
pub extern "C" fn rmmDeviceBufferDestroy(buffer: rmmDeviceBuffer_t) -> rmmError_t {
    boundary("rmmDeviceBufferDestroy", || {
        if buffer.is_null() {
            return Ok(());
        }
        let shared = BUFFERS
            .lock()
            .as_mut()
            .and_then(|buffers| buffers.remove(&(buffer as usize)))
            .ok_or_else(|| Error::InvalidHandle(format!("{buffer:p} is not a live device buffer (destroyed, or never created)")))?;
        // Another thread inside a call on this buffer may hold the other reference: the memory
        // is freed here all the same, in the buffer's order.
        let freed = shared.lock().free_memory();
        if freed.is_err() {
            BUFFERS.lock().get_or_insert_with(HashMap::new).insert(buffer as usize, shared);
        }
        freed
    })
}
