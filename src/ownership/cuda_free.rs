//! `cudaMalloc` and `cudaFree` as their callers expect them (`rmmCudaMalloc`, `rmmCudaFree`;
//! the preload library routes `cudaMalloc`/`cudaFree` and `cuMemAlloc`/`cuMemFree` here).
//!
//! `cudaFree` takes no stream: the memory is free only once the device has done all the work
//! it was given before the call, on every stream, and `cudaFree` waits for that (it
//! synchronizes the device), so the program may use the memory's next owner on any stream.
//! rmm-rs does the same by default. With `async_free` in the configured spec it does not wait:
//! the call records an event on the device's legacy default stream (whose place in order
//! follows every earlier piece of work of every blocking stream, per-thread default streams
//! included) and on each of the device's streams whose handle rmm-rs trusts (under the preload
//! library: every stream the program made, the non-blocking ones among them), and the memory
//! stays out of every pool until those events have completed. What the program loses is
//! `cudaFree` as a point where the host waits for the device: results the device writes into
//! host-visible memory (pinned, mapped or managed) are not known to be there when `cudaFree`
//! returns.
//!
//! Frees made without waiting gather in a batch; an allocation closes the batch (records its
//! events), so a run of frees costs one set of events; batches whose events have completed go
//! back to their stacks at the next free or allocation, and all of them, after waiting, before
//! an allocation is refused for want of memory.

use super::config;
use super::records::{self, Expected, Holder};
use crate::error::Result;
use crate::platform::{backend, streams, Event, Stream};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

/// Frees that wait for events, oldest batch first.
struct Deferred {
    /// Freed since the last batch was closed: (pointer, its device).
    open: Vec<(usize, i32)>,
    closed: VecDeque<Batch>,
    /// Events of completed batches, for the next ones.
    spare: Vec<(i32, Event)>,
}

/// Pointers whose memory is free once all `events` have completed.
struct Batch {
    pointers: Vec<(usize, i32)>,
    events: Vec<(i32, Event)>,
}

static DEFERRED: Mutex<Deferred> = Mutex::new(Deferred { open: Vec::new(), closed: VecDeque::new(), spare: Vec::new() });
/// Something is deferred: allocations look after it.
static PENDING: AtomicBool = AtomicBool::new(false);

/// `cudaMalloc`: `bytes` from the current device's resource for use on any stream; NULL for 0.
pub fn allocate(bytes: usize) -> Result<usize> {
    if PENDING.load(Ordering::Relaxed) {
        settle(false)?;
    }
    match super::legacy::alloc(bytes, Stream::DEFAULT) {
        Err(e) if e.is_out_of_memory() && PENDING.load(Ordering::Relaxed) => {
            settle(true)?;
            super::legacy::alloc(bytes, Stream::DEFAULT)
        }
        done => done,
    }
}

/// `cudaFree`: `ptr` (NULL: nothing) back once the device has done the work given before this
/// call; waits for that unless the configuration says `async_free`.
pub fn free(ptr: usize) -> Result<()> {
    if ptr == 0 {
        return Ok(());
    }
    if !config::async_free() {
        let device = records::find(ptr).filter(|found| found.holder == Holder::Caller).map(|found| found.stack.device());
        if let Some(device) = device {
            backend()?.device_synchronize(device)?;
        }
        return records::free(ptr, Stream::DEFAULT, Expected::ANY_OF_CALLERS);
    }
    let device = records::hand_over(ptr, Holder::Caller, Holder::Freeing)?;
    let mut deferred = DEFERRED.lock();
    deferred.open.push((ptr, device));
    PENDING.store(true, Ordering::Relaxed);
    // A program that frees much and allocates little still gets its memory back.
    if deferred.open.len() >= BATCH_LIMIT {
        close(&mut deferred)?;
    }
    reclaim(&mut deferred, false)
}

/// The most frees a batch gathers before it is closed without waiting for an allocation.
const BATCH_LIMIT: usize = 256;

/// Closes the open batch and gives back the batches whose events have completed; with `wait`,
/// all of them, waiting for their events.
pub fn settle(wait: bool) -> Result<()> {
    let mut deferred = DEFERRED.lock();
    close(&mut deferred)?;
    reclaim(&mut deferred, wait)
}

/// Records the open batch's events: on the legacy default stream and every trusted stream of
/// each device its pointers belong to.
fn close(deferred: &mut Deferred) -> Result<()> {
    if deferred.open.is_empty() {
        return Ok(());
    }
    let platform = backend()?;
    let pointers = std::mem::take(&mut deferred.open);
    let mut devices: Vec<i32> = pointers.iter().map(|&(_, device)| device).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut events = Vec::new();
    for device in devices {
        for stream in std::iter::once(Stream::DEFAULT).chain(streams::known_streams(device)) {
            let event = match deferred.spare.iter().position(|&(of, _)| of == device) {
                Some(at) => deferred.spare.swap_remove(at).1,
                None => platform.event_create(device)?,
            };
            events.push((device, event));
            platform.event_record(device, event, stream)?;
        }
    }
    deferred.closed.push_back(Batch { pointers, events });
    Ok(())
}

/// Gives back every closed batch, oldest first, whose events have completed (with `wait`: all,
/// after waiting for them).
fn reclaim(deferred: &mut Deferred, wait: bool) -> Result<()> {
    let platform = backend()?;
    while let Some(batch) = deferred.closed.front() {
        for &(_, event) in &batch.events {
            match wait {
                true => platform.event_synchronize(event)?,
                false if !platform.event_query(event)? => return Ok(()),
                false => {}
            }
        }
        let batch = deferred.closed.pop_front().expect("a batch was there");
        deferred.spare.extend(batch.events);
        for (ptr, _) in batch.pointers {
            let freeing = Expected { stack: None, size: None, holder: Holder::Freeing };
            records::free(ptr, Stream::DEFAULT, freeing)?;
        }
    }
    PENDING.store(!deferred.open.is_empty(), Ordering::Relaxed);
    Ok(())
}

/// Whether frees are waiting for the device (for tests).
pub fn pending() -> usize {
    let deferred = DEFERRED.lock();
    deferred.open.len() + deferred.closed.iter().map(|batch| batch.pointers.len()).sum::<usize>()
}
