//! Streams, for C and Fortran code without the CUDA runtime and for tests on simulated
//! devices. The values are ordinary `cudaStream_t`s on real devices.

use super::types::{cudaStream_t, stream_of};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error};
use crate::platform::{backend, Stream};
use crate::resources::streams;
use std::ffi::c_uint;

/// Creates a stream on the current device (as `cudaStreamCreate`: it synchronizes with the
/// legacy default stream) and writes it to `*stream`. The caller destroys it with
/// `rmmStreamDestroy`. rmm-rs recognizes it by its handle alone (see `rmmStreamRegister`).
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmStreamCreate(stream: *mut cudaStream_t) -> rmmError_t {
    boundary("rmmStreamCreate", || {
        non_null(stream, "stream")?;
        let created = streams::create(backend()?.current_device()?)?;
        write_out(stream, "stream", created.0 as cudaStream_t)
    })
}

/// `rmmStreamCreate` with `flags`: `RMM_STREAM_DEFAULT` (0, that stream) or
/// `RMM_STREAM_NON_BLOCKING` (1, the value of `cudaStreamNonBlocking`): a stream that does not
/// synchronize with the legacy default stream. Other flags, or `stream` NULL:
/// RMM_ERROR_INVALID_ARGUMENT; RMM_ERROR_CUDA_ERROR without a CUDA driver (and without
/// `RMM_SIM_DEVICES`) or when the driver fails.
#[no_mangle]
pub extern "C" fn rmmStreamCreateWithFlags(stream: *mut cudaStream_t, flags: c_uint) -> rmmError_t {
    boundary("rmmStreamCreateWithFlags", || {
        non_null(stream, "stream")?;
        let non_blocking = match flags {
            RMM_STREAM_DEFAULT => false,
            RMM_STREAM_NON_BLOCKING => true,
            other => {
                return Err(Error::invalid(format!("unknown stream flags {other:#x} (RMM_STREAM_DEFAULT or RMM_STREAM_NON_BLOCKING)")))
            }
        };
        let created = streams::create_with_flags(backend()?.current_device()?, non_blocking)?;
        write_out(stream, "stream", created.0 as cudaStream_t)
    })
}

/// A stream that synchronizes with the legacy default stream (`rmmStreamCreateWithFlags`).
pub const RMM_STREAM_DEFAULT: c_uint = 0;
/// A stream that does not synchronize with the legacy default stream (`cudaStreamNonBlocking`).
pub const RMM_STREAM_NON_BLOCKING: c_uint = 1;

/// Destroys a stream made by `rmmStreamCreate`, or by the program (`cudaStreamCreate`), after
/// what `rmmStreamUnregister` does. The default streams cannot be destroyed. As with
/// `cudaStreamDestroy`, the stream must be live: rmm-rs knows its own streams' handles until
/// they are destroyed, and asks the driver about any other.
/// A default stream: RMM_ERROR_INVALID_ARGUMENT; so is, with `registered_streams` configured,
/// a handle rmm-rs does not know (one destroyed already, say), without asking the driver.
#[no_mangle]
pub extern "C" fn rmmStreamDestroy(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamDestroy", || {
        let stream = created_stream(stream)?;
        crate::ownership::cuda_free::before_stream_goes()?;
        streams::destroy(stream)
    })
}

/// Tells rmm-rs that the program's live `stream` (from `cudaStreamCreate`, say) will be
/// destroyed only after `rmmStreamUnregister` (or through `rmmStreamDestroy`). rmm-rs then
/// recognizes it by its handle alone, so allocations on it make no driver call, as on the
/// default streams. Registering twice is harmless; the default streams need no registration
/// and are refused. The preload library registers every stream the program creates.
/// What rmm-rs does with a handle it does not know (not a default stream, not made by
/// `rmmStreamCreate`, not registered): the resources that free at once (cuda, managed,
/// pinned_host, system, callback, and the adaptors over them) never look at the stream, so any
/// value goes, even one that names no stream. The stream-ordered resources (pool, arena,
/// binning, fixed_size, expandable, cuda_async), which order memory on the stream, ask the
/// driver for its id (`cuStreamGetId`, about 30 ns, at each allocation), because a destroyed
/// stream's handle may be handed to a new stream while the old one's work still runs (cuda_async
/// hands it to the driver's own `cuMemAllocFromPoolAsync`): such a handle must name a live
/// stream, as for `cudaMallocAsync` (a CUDA driver asked about a destroyed or made-up handle may
/// crash). With `registered_streams` configured (`rmmConfigure`,
/// RMM_ALLOC_CONF) they refuse it instead, with RMM_ERROR_INVALID_ARGUMENT, and rmm-rs never
/// hands the driver a handle it does not know.
/// The driver is asked about `stream` here, which must be live. A default stream:
/// RMM_ERROR_INVALID_ARGUMENT (a handle that names no stream: the driver's answer,
/// RMM_ERROR_INVALID_ARGUMENT on simulated devices).
#[no_mangle]
pub extern "C" fn rmmStreamRegister(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamRegister", || streams::register(created_stream(stream)?))
}

/// Call with `stream` still alive, right before destroying it with `cudaStreamDestroy`:
/// rmm-rs records on it what orders the reuse of memory freed there, stops using its handle,
/// and no longer trusts it (a later stream may get the same handle). Any stream rmm-rs was
/// used with may be unregistered, registered or not (the driver is asked for the id of one
/// that was not registered, so it must be live); `rmmStreamDestroy` does this itself.
/// The default streams are refused.
/// A default stream: RMM_ERROR_INVALID_ARGUMENT; so is, with `registered_streams` configured,
/// a handle rmm-rs does not know (see `rmmStreamRegister`), without asking the driver.
#[no_mangle]
pub extern "C" fn rmmStreamUnregister(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamUnregister", || {
        let stream = created_stream(stream)?;
        crate::ownership::cuda_free::before_stream_goes()?;
        streams::unregister(stream)
    })
}

/// `stream`, refused when it is one of the default streams, which live forever.
fn created_stream(stream: cudaStream_t) -> crate::error::Result<Stream> {
    match stream_of(stream) {
        Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD => {
            Err(Error::invalid("the default streams cannot be registered, unregistered or destroyed"))
        }
        stream => Ok(stream),
    }
}

/// Waits until all work enqueued on `stream` has finished. `stream` goes to the driver as it
/// is, as with `cudaStreamSynchronize`, so it must be live, except that with
/// `registered_streams` configured a handle rmm-rs does not know (see `rmmStreamRegister`) is
/// RMM_ERROR_INVALID_ARGUMENT without asking the driver.
/// A handle that is not a live stream: the driver's answer (RMM_ERROR_INVALID_ARGUMENT on
/// simulated devices); a failure on the device: RMM_ERROR_CUDA_ERROR.
#[no_mangle]
pub extern "C" fn rmmStreamSynchronize(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamSynchronize", || {
        let stream = stream_of(stream);
        crate::platform::streams::check_usable(stream)?;
        backend()?.stream_synchronize(stream)
    })
}

/// Copies `bytes` from `src` to `dst` in the order of `stream`; either side may be device or
/// host memory (unified addressing, as `cudaMemcpyAsync` with `cudaMemcpyDefault`). Copies
/// from or to pageable host memory may return only when done; call `rmmStreamSynchronize`
/// before using the destination on the host. NULL pointers are RMM_ERROR_INVALID_ARGUMENT
/// unless `bytes` is 0. `stream`: as `rmmStreamSynchronize`'s.
#[no_mangle]
pub extern "C" fn rmmMemcpyAsync(
    dst: *mut std::ffi::c_void,
    src: *const std::ffi::c_void,
    bytes: usize,
    stream: cudaStream_t,
) -> rmmError_t {
    boundary("rmmMemcpyAsync", || {
        if bytes == 0 {
            return Ok(());
        }
        if dst.is_null() || src.is_null() {
            return Err(Error::invalid("dst or src is NULL"));
        }
        let stream = stream_of(stream);
        crate::platform::streams::check_usable(stream)?;
        let platform = backend()?;
        platform.copy_async(platform.current_device()?, dst as usize, src as usize, bytes, stream)
    })
}
