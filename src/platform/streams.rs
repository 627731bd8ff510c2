//! How the library tells streams apart without asking the driver on every call.
//!
//! A stream handle is a pointer the driver may hand out again once the stream is destroyed,
//! possibly while the old stream's work still runs (RMM #2251): memory freed on the old stream
//! must not go to the new one unordered. So a handle is trusted only where the library sees
//! the stream's whole life:
//! - the default streams (the legacy one lives forever; each thread's per-thread default stream
//!   lives as long as the thread, and only that thread can name it);
//! - streams made by `rmmStreamCreate`, and streams announced with `rmmStreamRegister` (the
//!   preload library announces every stream the program creates). Their destruction goes
//!   through `forget` first, while the stream is still alive.
//!
//! Any other handle (a program's own `cudaStreamCreate` stream, linked against librmm) is
//! checked against the driver's stream id (`cuStreamGetId`) wherever reusing its memory
//! depends on it. The suballocators find such streams destroyed by themselves: a new stream
//! given an older one's handle, or the driver asked now and then which handles still name
//! their streams (`resources::stream_ordered::Core::note_unannounced`).
//!
//! Every `forget`, and every `register` of a new stream, moves the epoch on: a cache of handles
//! (the suballocators' per-thread caches) made in an earlier epoch is looked up again.

use super::{backend, Stream};
use crate::error::Result;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Handle -> the driver's identity of the stream it names now, and its device.
static KNOWN: RwLock<Option<HashMap<usize, (u64, i32)>>> = RwLock::new(None);
static EPOCH: AtomicU64 = AtomicU64::new(1);

/// The top bit of an identity is never a driver's stream id: per-thread default streams are
/// told apart by the thread that names them (`per_thread_identity`).
const PER_THREAD: u64 = 1 << 62;

/// The current epoch: a handle looked up in an earlier one may name another stream now.
#[inline(always)]
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::Acquire)
}

/// The identity of the calling thread's per-thread default stream: unique for the life of the
/// process, with no driver call.
#[inline]
pub fn per_thread_identity() -> u64 {
    PER_THREAD | crate::sync::bias::thread_key()
}

/// Whether `identity` is a thread's per-thread default stream's.
pub fn is_per_thread(identity: u64) -> bool {
    identity & PER_THREAD != 0
}

/// Starts trusting the handle of the live `stream`; its identity. When the handle was known as
/// another stream (destroyed without `forget`), also that stream's identity, which the caller
/// must treat as gone.
pub fn register(stream: Stream) -> Result<(u64, Option<u64>)> {
    let platform = backend()?;
    let (identity, device) = (platform.stream_identity(stream)?, platform.stream_device(stream)?);
    let previous = KNOWN.write().get_or_insert_with(HashMap::new).insert(stream.0, (identity, device)).map(|(old, _)| old);
    if previous != Some(identity) {
        // Caches that check this handle's id at each allocation need not any more.
        EPOCH.fetch_add(1, Ordering::AcqRel);
    }
    Ok((identity, previous.filter(|&old| old != identity)))
}

/// Stops trusting `stream`'s handle (the stream is about to be destroyed); the identity it had,
/// if it was known.
pub fn forget(stream: Stream) -> Option<u64> {
    let (identity, _) = KNOWN.write().as_mut()?.remove(&stream.0)?;
    EPOCH.fetch_add(1, Ordering::AcqRel);
    Some(identity)
}

/// The identity of `stream` when its handle is trusted (without asking the driver).
pub fn known_identity(stream: Stream) -> Option<u64> {
    KNOWN.read().as_ref()?.get(&stream.0).map(|&(identity, _)| identity)
}

/// The device of `stream` when its handle is trusted (without asking the driver).
pub fn known_device(stream: Stream) -> Option<i32> {
    KNOWN.read().as_ref()?.get(&stream.0).map(|&(_, device)| device)
}

/// The device of `stream`, which must be live: the default streams are the current device's,
/// a trusted handle's device is known without asking the driver, and any other handle is asked
/// of the driver, which refuses one that names no live stream (made up, or destroyed).
///
/// The one liveness check that allocations and frees share: `check_live` at the allocations of
/// the resources that do not look the stream up themselves, and `Backend::stream_on_device` at
/// every free with several devices. (The stream-ordered resources look every new stream up by
/// its driver id, which refuses the same handles.)
pub fn live_device(stream: Stream) -> Result<i32> {
    match known_device(stream) {
        Some(device) => Ok(device),
        None => backend()?.stream_device(stream),
    }
}

/// Refuses `stream` unless it is a default stream (NULL, `cudaStreamLegacy`,
/// `cudaStreamPerThread`) or a live stream (`live_device`): an allocation on it could not be
/// freed on it. No cost on the default streams; a map lookup for a trusted handle; otherwise
/// one driver call.
#[inline(always)]
pub fn check_live(stream: Stream) -> Result<()> {
    match stream {
        Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD => Ok(()),
        stream => live_device(stream).map(drop),
    }
}

/// The live streams of `device` whose handles are trusted.
pub fn known_streams(device: i32) -> Vec<Stream> {
    KNOWN.read().iter().flatten().filter(|(_, &(_, of))| of == device).map(|(&handle, _)| Stream(handle)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_thread_identities_differ_by_thread_and_from_driver_ids() {
        let here = per_thread_identity();
        assert_eq!(here, per_thread_identity());
        assert!(is_per_thread(here));
        let there = std::thread::spawn(per_thread_identity).join().unwrap();
        assert_ne!(here, there);
        assert!(!is_per_thread(1234));
    }
}
