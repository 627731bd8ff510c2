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
