//! The life of a stream as the suballocators see it: a stream whose destruction they are told
//! of beforehand is recognized by its handle alone (`platform::streams`), and what they keep
//! in its order is covered by its event one last time before it goes.

use super::caches;
use crate::error::Result;
use crate::platform::{backend, streams, Stream};

/// Makes a stream on `device` (as `cudaStreamCreate`) that `destroy` destroys.
pub fn create(device: i32) -> Result<Stream> {
    create_with_flags(device, false)
}

/// `create`, and with `non_blocking` a stream that does not synchronize with the legacy
/// default stream (as `cudaStreamCreateWithFlags(cudaStreamNonBlocking)`).
pub fn create_with_flags(device: i32, non_blocking: bool) -> Result<Stream> {
    let stream = backend()?.stream_create_with_flags(device, non_blocking)?;
    if let Err(e) = register(stream) {
        let _ = backend()?.stream_destroy(stream);
        return Err(e);
    }
    Ok(stream)
}

/// Trusts the handle of the live `stream` until `unregister`: allocations on it ask the
/// driver nothing. A stream the handle named before, destroyed unannounced, is retired.
pub fn register(stream: Stream) -> Result<()> {
    let (_, replaced) = streams::register(stream)?;
    match replaced {
        Some(gone) => caches::retire_stream(gone, None),
        None => Ok(()),
    }
}

/// `stream`, still alive, is about to be destroyed: every suballocator covers what it keeps in
/// its order with an event and stops using it, and its handle is no longer trusted.
pub fn unregister(stream: Stream) -> Result<()> {
    let identity = match streams::forget(stream) {
        Some(identity) => identity,
        None => streams::identity_of(stream)?,
    };
    caches::retire_stream(identity, Some(stream))
}

/// Destroys a stream (made by `create` or by the program) after `unregister`.
pub fn destroy(stream: Stream) -> Result<()> {
    let retired = unregister(stream);
    backend()?.stream_destroy(stream)?;
    retired
}
