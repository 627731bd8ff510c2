//! Streams, for C and Fortran code without the CUDA runtime and for tests on simulated
//! devices. The values are ordinary `cudaStream_t`s on real devices.

use super::types::{cudaStream_t, stream_of};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error};
use crate::platform::{backend, Stream};

/// Creates a stream on the current device (as `cudaStreamCreate`: it synchronizes with the
/// legacy default stream) and writes it to `*stream`. The caller destroys it with
/// `rmmStreamDestroy`.
#[no_mangle]
pub extern "C" fn rmmStreamCreate(stream: *mut cudaStream_t) -> rmmError_t {
    boundary("rmmStreamCreate", || {
        non_null(stream, "stream")?;
        let platform = backend()?;
        let created = platform.stream_create(platform.current_device()?)?;
        write_out(stream, "stream", created.0 as cudaStream_t)
    })
}

/// Destroys a stream made by `rmmStreamCreate` (or `cudaStreamCreate`). The default streams
/// cannot be destroyed.
#[no_mangle]
pub extern "C" fn rmmStreamDestroy(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamDestroy", || {
        let stream = stream_of(stream);
        if matches!(stream, Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD) {
            return Err(Error::invalid("the default streams cannot be destroyed"));
        }
        backend()?.stream_destroy(stream)
    })
}

/// Waits until all work enqueued on `stream` has finished.
#[no_mangle]
pub extern "C" fn rmmStreamSynchronize(stream: cudaStream_t) -> rmmError_t {
    boundary("rmmStreamSynchronize", || backend()?.stream_synchronize(stream_of(stream)))
}

/// Copies `bytes` from `src` to `dst` in the order of `stream`; either side may be device or
/// host memory (unified addressing, as `cudaMemcpyAsync` with `cudaMemcpyDefault`). Copies
/// from or to pageable host memory may return only when done; call `rmmStreamSynchronize`
/// before using the destination on the host. NULL pointers are RMM_ERROR_INVALID_ARGUMENT
/// unless `bytes` is 0.
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
        let platform = backend()?;
        platform.copy_async(platform.current_device()?, dst as usize, src as usize, bytes, stream_of(stream))
    })
}
