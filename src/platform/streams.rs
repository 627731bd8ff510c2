//! How the library tells streams apart, and the one gate through which it asks the driver
//! about a stream handle.
//!
//! A stream handle is a pointer the driver may hand out again once the stream is destroyed,
//! possibly while the old stream's work still runs (RMM #2251): memory freed on the old stream
//! must not go to the new one unordered. And a handle that names no live stream (made up, or
//! destroyed, above all long ago) must never reach the driver: no CUDA call is safe on it
//! (`cuStreamGetId` crashed an H200's driver, asked about handles destroyed long ago). So a
//! handle is trusted only where the library sees the stream's whole life:
//! - the default streams (the legacy one lives forever; each thread's per-thread default stream
//!   lives as long as the thread, and only that thread can name it);
//! - streams made by `rmmStreamCreate`, and streams announced with `rmmStreamRegister` (the
//!   preload library announces every stream the program creates). Their destruction goes
//!   through `forget` first, while the stream is still alive. Their identity and device are
//!   kept here, so nothing asks the driver about them again.
//!
//! Any other handle is unknown, and what it gets depends on what the resource needs it for:
//! - resources that do not order memory by stream (cuda, managed, pinned_host, system,
//!   callback, and the adaptors over them) never hand an unknown handle to the driver: the
//!   stream is passed on as it is (to a callback's functions, to a log), and its value does not
//!   matter;
//! - the stream-ordered resources order memory on it, and tell a new stream from a destroyed
//!   one with the same handle by the driver's stream id (`identity_of`, `device_of`): they
//!   ask the driver about the handle the call names, as `cudaMallocAsync` and RAPIDS RMM do,
//!   so it must name a live stream. Unless the process said it announces every stream it uses
//!   (`set_registered_only`, the `registered_streams` keyword): then an unknown handle is
//!   refused and the driver is never asked about it.
//!
//! The suballocators find unknown streams destroyed by themselves: a new stream given an older
//! one's handle, or (on simulated devices only) a sweep asking which handles still name their
//! streams (`resources::stream_ordered::Core::note_unannounced`).
//!
//! Every `forget`, and every `register` of a new stream, moves the epoch on: a cache of handles
//! (the suballocators' per-thread caches) made in an earlier epoch is looked up again.

use super::{backend, Stream};
use crate::error::{Error, Result};
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Handle -> the driver's identity of the stream it names now, and its device.
static KNOWN: RwLock<Option<HashMap<usize, (u64, i32)>>> = RwLock::new(None);
static EPOCH: AtomicU64 = AtomicU64::new(1);
/// The process uses no stream it did not announce (`set_registered_only`).
static REGISTERED_ONLY: AtomicBool = AtomicBool::new(false);

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
/// must treat as gone. The driver is asked about the handle (its id and device) whatever
/// `registered_only` says: the caller vouches that it names a live stream (it just made it,
/// or announces it).
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

/// Whether `stream` is one of the default streams (NULL, `cudaStreamLegacy`,
/// `cudaStreamPerThread`), which are always live.
#[inline(always)]
pub fn is_default(stream: Stream) -> bool {
    matches!(stream, Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD)
}

/// Whether the handle of `stream` may be handed to the driver without asking it anything: a
/// default stream or a trusted handle.
pub fn is_known(stream: Stream) -> bool {
    is_default(stream) || known_device(stream).is_some()
}

/// From now on (`on`), the process says every stream it hands rmm-rs is a default stream or
/// one rmm-rs made or was told of (`rmmStreamRegister`), as the preload library makes true:
/// any other handle is refused where it would be asked about (`identity_of`, `device_of`),
/// so rmm-rs never hands the driver a handle it cannot vouch for. Off (the default), such a
/// handle is asked about, as the one way to tell its stream from an earlier one with the
/// same handle. The `registered_streams` keyword of a spec sets it.
pub fn set_registered_only(on: bool) {
    REGISTERED_ONLY.store(on, Ordering::Relaxed);
}

/// Whether only announced streams are taken (`set_registered_only`).
pub fn registered_only() -> bool {
    REGISTERED_ONLY.load(Ordering::Relaxed)
}

/// Refuses `stream`, a handle that is neither a default stream nor trusted, when only such
/// handles are taken (`set_registered_only`); the error a stream-ordered call gets then.
pub fn refuse_unknown(stream: Stream) -> Result<()> {
    match registered_only() {
        false => Ok(()),
        true => Err(Error::invalid(format!(
            "stream {:#x} is not a live stream rmm-rs knows: with registered_streams, a stream other than the default ones must \
             be made by rmmStreamCreate or announced with rmmStreamRegister before use (rmm-rs asks the driver nothing about \
             other handles)",
            stream.0
        ))),
    }
}

/// For a call that hands `stream` to the driver to order work on it, as the call under way
/// asks (`cuMemAllocFromPoolAsync`), without asking about it first: refuses a handle that is
/// neither a default stream nor trusted when only announced streams are taken
/// (`refuse_unknown`). No cost on the default streams.
#[inline(always)]
pub fn check_usable(stream: Stream) -> Result<()> {
    match is_default(stream) || !registered_only() {
        true => Ok(()),
        false => match known_device(stream) {
            Some(_) => Ok(()),
            None => refuse_unknown(stream),
        },
    }
}

/// The identity of `stream`, named by the call under way (for which it must be live): 0 for
/// the legacy default stream, a trusted handle's from the table, and any other handle's asked
/// of the driver (`cuStreamGetId`), unless only announced streams are taken
/// (`refuse_unknown`). The per-thread default stream's is the driver's, always safe to ask
/// (the suballocators key it by thread instead: `per_thread_identity`).
pub fn identity_of(stream: Stream) -> Result<u64> {
    match stream {
        Stream::DEFAULT | Stream::LEGACY => Ok(0),
        Stream::PER_THREAD => backend()?.stream_identity(stream),
        stream => match known_identity(stream) {
            Some(identity) => Ok(identity),
            None => {
                refuse_unknown(stream)?;
                backend()?.stream_identity(stream)
            }
        },
    }
}

/// `identity_of` for a handle the caller found untrusted before (a thread's cached stream
/// state): asked of the driver without looking at the table of trusted handles, whose lock all
/// threads would share on every allocation. A handle trusted since names the same stream, so
/// the driver's answer stands; with only announced streams taken, the table is consulted.
pub fn identity_of_untrusted(stream: Stream) -> Result<u64> {
    match registered_only() || is_default(stream) {
        true => identity_of(stream),
        false => backend()?.stream_identity(stream),
    }
}

/// The device of `stream`, named by the call under way (for which it must be live): the
/// default streams are the current device's, a trusted handle's device is known without
/// asking the driver, and any other handle is asked of the driver (`cuStreamGetCtx`), unless
/// only announced streams are taken (`refuse_unknown`).
///
/// Only for the calls that order memory on the stream: those that do not never look at an
/// unknown handle (see the module comment).
pub fn device_of(stream: Stream) -> Result<i32> {
    if is_default(stream) {
        return backend()?.current_device();
    }
    match known_device(stream) {
        Some(device) => Ok(device),
        None => {
            refuse_unknown(stream)?;
            backend()?.stream_device(stream)
        }
    }
}

/// Runs `f` on the live streams of `device` whose handles are trusted, none of which is
/// forgotten (`forget`: `rmmStreamUnregister`, `rmmStreamDestroy`, the preload library's
/// `cudaStreamDestroy`) until `f` returns: as a trusted stream is forgotten before it is
/// destroyed, `f` may hand any of them to the driver. `f` must not look a handle up here (the
/// table stays read-locked, and a writer waiting would block it).
pub fn with_known_streams<R>(device: i32, f: impl FnOnce(&[Stream]) -> R) -> R {
    let known = KNOWN.read();
    let streams: Vec<Stream> = known.iter().flatten().filter(|(_, &(_, of))| of == device).map(|(&handle, _)| Stream(handle)).collect();
    f(&streams)
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
