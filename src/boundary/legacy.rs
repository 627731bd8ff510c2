//! Legacy RMM entry points, with their original names and signatures.

use super::types::{cudaStream_t, rmmOptions_t, stream_of};
use super::{boundary, boundary_value, last_error_message, non_null, write_out};
use super::{copy_text_truncated, optional_str};
use crate::error::{code_description, code_name, rmmError_t, Error};
use crate::ownership::legacy;
use crate::ownership::legacy_log::{self, Call, EventKind};
use crate::sync::call_site;
use std::ffi::{c_char, c_uint, c_void};
use std::time::Instant;

/// When the event log is on (`enable_logging`), the time a call started: reading the clock
/// costs more than a pooled allocation, so calls that are not logged do not.
#[inline(always)]
fn started() -> Option<Instant> {
    legacy_log::enabled().then(Instant::now)
}

/// Records a successful legacy call that `started` in the event log (inline: a call that is
/// not logged pays one test).
#[inline(always)]
fn log_call(
    kind: EventKind,
    ptr: usize,
    size: usize,
    stream: cudaStream_t,
    started: Option<Instant>,
    site: (*const c_char, c_uint),
    freed: Option<usize>,
) {
    if let Some(start) = started {
        record_call(kind, ptr, size, stream, start, site, freed);
    }
}

#[cold]
#[inline(never)]
fn record_call(
    kind: EventKind,
    ptr: usize,
    size: usize,
    stream: cudaStream_t,
    start: Instant,
    (file, line): (*const c_char, c_uint),
    freed: Option<usize>,
) {
    let device = crate::platform::backend().and_then(|b| b.current_device()).unwrap_or(-1);
    let file = optional_str(file, "file").ok().flatten().map(str::to_string);
    legacy_log::record(Call { kind, device, ptr, stream: stream as usize, size, start, file, line }, freed);
}

/// Initializes rmm: installs, on each device of `options->devices` (or the current device),
/// the resource `options->allocation_mode` names, replacing that device's resource until
/// `rmmFinalize`. `options` may be NULL (defaults: device memory, current device) and is only
/// read. A second call without `rmmFinalize` returns RMM_ERROR_ALREADY_INITIALIZED.
/// It succeeds or changes nothing: every option and listed device is checked before any
/// memory is taken (RMM_ERROR_INVALID_ARGUMENT for a device that does not exist or is listed
/// twice, unknown mode flags, an initial pool size above the maximum), and a device whose
/// resource cannot be made (RMM_ERROR_OUT_OF_MEMORY for a pool larger than its free memory)
/// leaves every device with the resource and the free memory it had.
#[no_mangle]
pub extern "C" fn rmmInitialize(options: *const rmmOptions_t) -> rmmError_t {
    boundary("rmmInitialize", || {
        let options = match options.is_null() {
            true => None,
            // SAFETY: non-NULL, and the caller promises a readable rmmOptions_t.
            false => Some(unsafe { *options }.to_options()?),
        };
        legacy::initialize(options)
    })
}

/// Ends what `rmmInitialize` set up: each device gets back the resource it had before (one
/// that had none yet gets its default resource at its next use).
/// Live allocations stay valid and can still be freed with `rmmFree`; new allocations are
/// refused with RMM_ERROR_NOT_INITIALIZED until `rmmInitialize` is called again.
#[no_mangle]
pub extern "C" fn rmmFinalize() -> rmmError_t {
    boundary("rmmFinalize", legacy::finalize)
}

/// True when rmm is initialized; then copies the options in force to `options` unless it is
/// NULL.
#[no_mangle]
pub extern "C" fn rmmIsInitialized(options: *mut rmmOptions_t) -> bool {
    boundary_value("rmmIsInitialized", false, || {
        let Some(current) = legacy::initialized_options() else {
            return Ok(false);
        };
        if !options.is_null() {
            write_out(options, "options", rmmOptions_t::from_options(&current))?;
        }
        Ok(true)
    })
}

/// Allocates `size` bytes from the current device's resource for use on any stream, as
/// `cudaMalloc` does, and writes the address to `*ptr` (NULL for 0 bytes). Give it back with
/// `rmmCudaFree` (or `rmmFree`). Ready as `rmmAlloc` is (RMM_ERROR_NOT_INITIALIZED unless rmm is
/// initialized or configured); RMM_ERROR_INVALID_ARGUMENT when `ptr` is NULL; out of memory after
/// memory that `rmmCudaFree` left waiting for the device came back. The preload library's
/// `cudaMalloc` and `cuMemAlloc` are this.
#[no_mangle]
pub extern "C" fn rmmCudaMalloc(ptr: *mut *mut c_void, size: usize) -> rmmError_t {
    boundary("rmmCudaMalloc", || {
        non_null(ptr, "ptr")?;
        let address = crate::ownership::cuda_free::allocate(size)?;
        write_out(ptr, "ptr", address as *mut c_void)
    })
}

/// Frees `ptr` (from `rmmCudaMalloc`, `rmmAlloc` or `RMM_ALLOC`; NULL: nothing) as `cudaFree`
/// does: the memory is free once the device has done all the work it was given before the
/// call, on every stream. By default the call waits for that (it synchronizes the pointer's
/// device). With `async_free` in the configured spec (`RMM_ALLOC_CONF=async_free/statistics/pool`)
/// it returns at once and the memory waits instead, for events recorded on the legacy default
/// stream and on every stream rmm-rs knows the handle of (`rmmStreamRegister`; under the
/// preload library, every stream the program made): the program then loses `cudaFree` as a
/// point where the host waits for the device. A pointer that is not live, or a device buffer's,
/// is RMM_ERROR_INVALID_ARGUMENT with nothing changed (a second free of memory that is still
/// waiting too). The preload library's `cudaFree` and `cuMemFree` are this.
#[no_mangle]
pub extern "C" fn rmmCudaFree(ptr: *mut c_void) -> rmmError_t {
    boundary("rmmCudaFree", || crate::ownership::cuda_free::free(ptr as usize))
}

/// As legacy RMM: `ptr` NULL with size 0 succeeds (once rmm is initialized) and does nothing;
/// NULL with any other size is RMM_ERROR_INVALID_ARGUMENT.
fn null_out_pointer(size: usize) -> crate::error::Result<()> {
    legacy::require_ready()?;
    match size {
        0 => Ok(()),
        _ => Err(Error::invalid("ptr is NULL")),
    }
}

/// Allocates `size` bytes for use on `stream` from the current device's resource and writes
/// the address to `*ptr` (NULL for 0 bytes). The caller owns the memory and returns it with
/// `rmmFree`. With size 0 a NULL out-pointer is accepted too and nothing happens, as in
/// legacy RMM. `file` and `line` name the call site (the macro `RMM_ALLOC` fills them in);
/// `file` may be NULL.
/// As RMM 0.14: RMM_ERROR_NOT_INITIALIZED before `rmmInitialize` and after `rmmFinalize`,
/// unless the program configured rmm (`RMM_ALLOC_CONF`, `rmmConfigure`, a per-device resource).
/// `stream`: as `rmmResourceAllocate`'s (the resources that free at once do not look at it; a
/// stream-ordered resource needs a live stream); RMM_ERROR_INVALID_ARGUMENT for a stream a
/// stream-ordered resource cannot take or, for a pool or expandable resource, a stream of
/// another device.
#[no_mangle]
pub extern "C" fn rmmAlloc(ptr: *mut *mut c_void, size: usize, stream: cudaStream_t, file: *const c_char, line: c_uint) -> rmmError_t {
    boundary("rmmAlloc", || {
        if ptr.is_null() {
            return null_out_pointer(size);
        }
        let started = started();
        let address = call_site::with(file, line, || legacy::alloc(size, stream_of(stream)))?;
        write_out(ptr, "ptr", address as *mut c_void)?;
        log_call(EventKind::Alloc, address, size, stream, started, (file, line), None);
        Ok(())
    })
}

/// Resizes the allocation at `*ptr` to `new_size` bytes: a new allocation from the same
/// resource, the contents up to the smaller size copied in the order of `stream`, the old one
/// freed in that order, and `*ptr` updated. `*ptr` NULL allocates; `new_size` 0 frees and
/// writes NULL. With `new_size` 0 a NULL out-pointer is accepted too and nothing happens;
/// `file` may be NULL. On failure `*ptr` and its memory are unchanged.
/// Before rmm is initialized or configured: RMM_ERROR_NOT_INITIALIZED; `*ptr` not live:
/// RMM_ERROR_INVALID_ARGUMENT; no room for the new size: RMM_ERROR_OUT_OF_MEMORY, with the old
/// allocation unchanged. A stream that is not live: RMM_ERROR_INVALID_ARGUMENT, as `rmmAlloc`.
#[no_mangle]
pub extern "C" fn rmmRealloc(
    ptr: *mut *mut c_void,
    new_size: usize,
    stream: cudaStream_t,
    file: *const c_char,
    line: c_uint,
) -> rmmError_t {
    boundary("rmmRealloc", || {
        if ptr.is_null() {
            return null_out_pointer(new_size);
        }
        // SAFETY: non-NULL, and the caller promises a readable `void*`.
        let old = unsafe { *ptr } as usize;
        let started = started();
        let address = call_site::with(file, line, || legacy::realloc(old, new_size, stream_of(stream)))?;
        write_out(ptr, "ptr", address as *mut c_void)?;
        log_call(EventKind::Realloc, address, new_size, stream, started, (file, line), Some(old));
        Ok(())
    })
}

/// Frees memory rmm allocated (through `rmmAlloc` or `rmmResourceAllocate`), in the order of
/// `stream`; `file` may be NULL. NULL is a no-op. A pointer rmm did not hand out, or one
/// already freed, is RMM_ERROR_INVALID_ARGUMENT and nothing is freed. Live pointers can be
/// freed at any time, but NULL before `rmmInitialize` or after `rmmFinalize` is
/// RMM_ERROR_NOT_INITIALIZED, as in RMM 0.14 (see `rmmAlloc`). `stream` may be any live stream
/// (another device's too) or a default stream; NULL always works, also once the stream the
/// memory was allocated on is destroyed. The memory of a resource that frees at once (cuda,
/// managed, pinned_host, system, callback, adaptors over them) is freed whatever the handle:
/// it is not looked at. A stream-ordered resource (pool, arena, binning, fixed_size,
/// expandable, cuda_async) needs a live stream, as `rmmAlloc` does; one it cannot take is
/// RMM_ERROR_INVALID_ARGUMENT with nothing freed.
#[no_mangle]
pub extern "C" fn rmmFree(ptr: *mut c_void, stream: cudaStream_t, file: *const c_char, line: c_uint) -> rmmError_t {
    boundary("rmmFree", || {
        let started = started();
        let size = match started {
            Some(_) => crate::ownership::records::find(ptr as usize).map_or(0, |found| found.size),
            None => 0,
        };
        // No call site: only allocations record one (the tracking adaptor's).
        legacy::free(ptr as usize, stream_of(stream))?;
        log_call(EventKind::Free, ptr as usize, size, stream, started, (file, line), None);
        Ok(())
    })
}

/// Writes the event log (`enable_logging` in `rmmOptions_t`) to the file `filename` as legacy
/// RMM's CSV: `Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,
/// Current Allocs,Start,End,Elapsed,Location`, one line per `rmmAlloc`, `rmmRealloc` and
/// `rmmFree`. RMM_ERROR_IO when the file cannot be written.
#[no_mangle]
pub extern "C" fn rmmWriteLog(filename: *const c_char) -> rmmError_t {
    boundary("rmmWriteLog", || {
        let path = optional_str(filename, "filename")?.ok_or_else(|| Error::invalid("filename is NULL"))?;
        std::fs::write(path, legacy_log::csv()).map_err(|e| Error::Io(format!("cannot write {path}: {e}")))
    })
}

/// The length in bytes of the event log's CSV text (without a terminating NUL), as
/// `rmmGetLog` copies it.
#[no_mangle]
pub extern "C" fn rmmLogSize() -> usize {
    super::boundary_value("rmmLogSize", 0, || Ok(legacy_log::csv().len()))
}

/// Copies the event log's CSV text into `buffer`: at most `buffer_size` bytes, as legacy RMM
/// did, plus a terminating NUL when there is room for it (give `rmmLogSize() + 1` bytes for a
/// C string).
/// `buffer` NULL: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmGetLog(buffer: *mut c_char, buffer_size: usize) -> rmmError_t {
    boundary("rmmGetLog", || copy_text_truncated(&legacy_log::csv(), buffer, buffer_size))
}

/// Writes the free and total bytes of the current device. Neither pointer may be NULL.
/// RMM_ERROR_NOT_INITIALIZED when `rmmAlloc` would be.
#[no_mangle]
pub extern "C" fn rmmGetInfo(free_size: *mut usize, total_size: *mut usize, stream: cudaStream_t) -> rmmError_t {
    let _ = stream;
    boundary("rmmGetInfo", || {
        non_null(free_size, "free_size")?;
        non_null(total_size, "total_size")?;
        let (free, total) = legacy::memory_info()?;
        write_out(free_size, "free_size", free)?;
        write_out(total_size, "total_size", total)
    })
}

/// Writes to `*offset` how far `ptr` lies from the start of the device allocation that holds
/// it. `offset` may not be NULL; `ptr` must be device memory.
/// `ptr` not inside device memory: RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a
/// CUDA driver (and without `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmGetAllocationOffset(offset: *mut isize, ptr: *const c_void, stream: cudaStream_t) -> rmmError_t {
    let _ = stream;
    boundary("rmmGetAllocationOffset", || {
        non_null(offset, "offset")?;
        if ptr.is_null() {
            return Err(Error::invalid("ptr is NULL"));
        }
        write_out(offset, "offset", legacy::allocation_offset(ptr as usize)?)
    })
}

/// A static description of an error code, its name first ("RMM_ERROR_OUT_OF_MEMORY: out of
/// memory"); never NULL, never to be freed.
#[no_mangle]
pub extern "C" fn rmmGetErrorString(errcode: i32) -> *const c_char {
    code_description(errcode).as_ptr()
}

/// The name of an error code as the enumerator is spelled ("RMM_ERROR_OUT_OF_MEMORY"), or
/// "RMM_ERROR_UNRECOGNIZED" for a value that is none; never NULL, never to be freed.
#[no_mangle]
pub extern "C" fn rmmGetErrorName(errcode: i32) -> *const c_char {
    code_name(errcode).as_ptr()
}

/// The detailed message of the most recent failed rmm call on the calling thread ("" if
/// none). Owned by rmm and valid until the thread's next failing call; never NULL.
#[no_mangle]
pub extern "C" fn rmmGetLastErrorMessage() -> *const c_char {
    last_error_message()
}
