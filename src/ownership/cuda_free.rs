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
//! Frees made without waiting gather in a batch. A batch closes (records its events) once it
//! holds `BATCH_LIMIT` frees or has been open longer than `CLOSE_AFTER_PER_EVENT` for each event
//! its last close recorded, so a program that made many streams closes batches less often, and
//! recording costs each free about the same whatever the number of streams. Closed batches
//! whose events have completed go back to their stacks, checked by one thread at a time, at
//! most every `CHECK_EVERY`; all of them, after waiting, before an allocation is refused for
//! want of memory. No lock is held while the driver records or queries events, so threads that
//! free at once do not wait for each other's driver calls. A stream that goes through
//! `rmmStreamUnregister` or `rmmStreamDestroy` first closes the open batch, so its event is
//! recorded while it lives; one destroyed unannounced (or while a batch was being closed) makes
//! that close wait for the whole device instead.

use super::config;
use super::records::{self, Expected, Holder};
use crate::error::Result;
use crate::platform::{backend, streams, Event, Stream};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Frees that wait for events, oldest batch first.
struct Deferred {
    /// Freed since the last batch was closed: (pointer, its device).
    open: Vec<(usize, i32)>,
    closed: VecDeque<Batch>,
    /// Events of completed batches, for the next ones.
    spare: Vec<(i32, Event)>,
    /// How many events the last close recorded (the open batch's likely cost).
    last_close_events: u32,
}

/// Pointers whose memory is free once all `events` have completed.
struct Batch {
    pointers: Vec<(usize, i32)>,
    events: Vec<(i32, Event)>,
}

static DEFERRED: Mutex<Deferred> =
    Mutex::new(Deferred { open: Vec::new(), closed: VecDeque::new(), spare: Vec::new(), last_close_events: 1 });
/// Something is deferred: allocations look after it.
static PENDING: AtomicBool = AtomicBool::new(false);
/// Held by the one thread that checks the closed batches' events.
static RECLAIMING: Mutex<()> = Mutex::new(());
/// When the closed batches were last checked, in nanoseconds of `elapsed`.
static LAST_CHECK: AtomicU64 = AtomicU64::new(0);
/// When the open batch is due to close by age, in nanoseconds of `elapsed`: set when its first
/// free comes, under `DEFERRED`'s lock (read without it, a stale value only moves a close to the
/// next call).
static CLOSE_DUE: AtomicU64 = AtomicU64::new(u64::MAX);

/// The most frees a batch gathers before it is closed.
const BATCH_LIMIT: usize = 256;
/// How long a batch stays open, for each event its close records.
const CLOSE_AFTER_PER_EVENT: Duration = Duration::from_micros(50);
/// How often the closed batches' events are checked.
const CHECK_EVERY: Duration = Duration::from_micros(50);

fn nanos(time: Duration) -> u64 {
    u64::try_from(time.as_nanos()).unwrap_or(u64::MAX)
}

/// Time since the first deferred free or allocation asked.
fn elapsed() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// `cudaMalloc`: `bytes` from the current device's resource for use on any stream; NULL for 0.
pub fn allocate(bytes: usize) -> Result<usize> {
    if PENDING.load(Ordering::Relaxed) {
        let now = elapsed();
        if nanos(now) >= CLOSE_DUE.load(Ordering::Relaxed) {
            close_if_due(now, false)?;
        }
        reclaim_if_due(now)?;
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
    let now = elapsed();
    let due = {
        let mut deferred = DEFERRED.lock();
        if deferred.open.is_empty() {
            CLOSE_DUE.store(nanos(now + CLOSE_AFTER_PER_EVENT * deferred.last_close_events), Ordering::Relaxed);
        }
        deferred.open.push((ptr, device));
        PENDING.store(true, Ordering::Relaxed);
        deferred.open.len() >= BATCH_LIMIT
    };
    if due || nanos(now) >= CLOSE_DUE.load(Ordering::Relaxed) {
        close_if_due(now, false)?;
    }
    reclaim_if_due(now)
}

/// Closes the open batch when it is due (or with `now_anyway`, when it holds anything).
fn close_if_due(now: Duration, now_anyway: bool) -> Result<()> {
    let (pointers, spare) = {
        let mut deferred = DEFERRED.lock();
        let due = deferred.open.len() >= BATCH_LIMIT || nanos(now) >= CLOSE_DUE.load(Ordering::Relaxed);
        if deferred.open.is_empty() || !(due || now_anyway) {
            return Ok(());
        }
        CLOSE_DUE.store(u64::MAX, Ordering::Relaxed);
        (std::mem::take(&mut deferred.open), std::mem::take(&mut deferred.spare))
    };
    let (batch, spare) = record_events(pointers, spare);
    let mut deferred = DEFERRED.lock();
    deferred.spare.extend(spare);
    match batch {
        Ok(batch) => {
            deferred.last_close_events = u32::try_from(batch.events.len()).unwrap_or(u32::MAX).max(1);
            deferred.closed.push_back(batch);
            PENDING.store(true, Ordering::Relaxed);
            Ok(())
        }
        // Not recorded: the frees stay open, for the next close.
        Err((pointers, error)) => {
            if deferred.open.is_empty() {
                CLOSE_DUE.store(nanos(now), Ordering::Relaxed);
            }
            deferred.open.extend(pointers);
            Err(error)
        }
    }
}

type Recorded = std::result::Result<Batch, (Vec<(usize, i32)>, crate::error::Error)>;

/// Records, on the legacy default stream and every trusted stream of each device `pointers`
/// belong to, the events after which they are free; `spare` events first. Returns the batch
/// (or the pointers and the error) and the spare events left.
fn record_events(pointers: Vec<(usize, i32)>, mut spare: Vec<(i32, Event)>) -> (Recorded, Vec<(i32, Event)>) {
    let mut devices: Vec<i32> = pointers.iter().map(|&(_, device)| device).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut events = Vec::new();
    let mut record = || -> Result<()> {
        let platform = backend()?;
        for &device in &devices {
            for stream in std::iter::once(Stream::DEFAULT).chain(streams::known_streams(device)) {
                let event = match spare.iter().position(|&(of, _)| of == device) {
                    Some(at) => spare.swap_remove(at).1,
                    None => platform.event_create(device)?,
                };
                let identity = streams::known_identity(stream);
                let recorded = platform.event_record(device, event, stream);
                if stream != Stream::DEFAULT && (recorded.is_err() || streams::known_identity(stream) != identity) {
                    // The program destroyed `stream` since it was listed (its handle may name
                    // another stream by now): the work it was given may still run, and only
                    // the whole device covers it.
                    spare.push((device, event));
                    platform.device_synchronize(device)?;
                    continue;
                }
                events.push((device, event));
                recorded?;
            }
        }
        Ok(())
    };
    match record() {
        Ok(()) => (Ok(Batch { pointers, events }), spare),
        Err(error) => {
            spare.extend(events);
            (Err((pointers, error)), spare)
        }
    }
}

/// Before a stream rmm-rs trusts goes (`rmmStreamUnregister`, `rmmStreamDestroy`): the frees
/// still open get their events now, this stream's among them, as it cannot be asked later.
pub fn before_stream_goes() -> Result<()> {
    match PENDING.load(Ordering::Relaxed) {
        true => close_if_due(elapsed(), true),
        false => Ok(()),
    }
}

/// Checks the closed batches when the last check is `CHECK_EVERY` old and no other thread is
/// checking.
fn reclaim_if_due(now: Duration) -> Result<()> {
    let now_ns = nanos(now);
    if now_ns.saturating_sub(LAST_CHECK.load(Ordering::Relaxed)) < nanos(CHECK_EVERY) {
        return Ok(());
    }
    let Some(_checking) = RECLAIMING.try_lock() else { return Ok(()) };
    LAST_CHECK.store(now_ns, Ordering::Relaxed);
    reclaim(false)
}

/// Closes the open batch and gives back the batches whose events have completed; with `wait`,
/// all of them, waiting for their events.
pub fn settle(wait: bool) -> Result<()> {
    let _checking = RECLAIMING.lock();
    close_if_due(elapsed(), true)?;
    reclaim(wait)
}

/// Gives back every closed batch, oldest first, whose events have completed (with `wait`: all,
/// after waiting for them). The caller holds `RECLAIMING`.
fn reclaim(wait: bool) -> Result<()> {
    let platform = backend()?;
    let mut outcome = Ok(());
    loop {
        let Some(batch) = DEFERRED.lock().closed.pop_front() else { break };
        let mut complete = Ok(true);
        for &(_, event) in &batch.events {
            complete = match wait {
                true => platform.event_synchronize(event).map(|()| true),
                false => platform.event_query(event),
            };
            if complete != Ok(true) {
                break;
            }
        }
        if complete != Ok(true) {
            DEFERRED.lock().closed.push_front(batch);
            if let Err(error) = complete {
                outcome = Err(error);
            }
            break;
        }
        for &(ptr, _) in &batch.pointers {
            let freeing = Expected { stack: None, size: None, holder: Holder::Freeing };
            if let Err(error) = records::free(ptr, Stream::DEFAULT, freeing) {
                outcome = outcome.and(Err(error));
            }
        }
        DEFERRED.lock().spare.extend(batch.events);
    }
    let deferred = DEFERRED.lock();
    PENDING.store(!deferred.open.is_empty() || !deferred.closed.is_empty(), Ordering::Relaxed);
    outcome
}

/// Whether frees are waiting for the device (for tests).
pub fn pending() -> usize {
    let deferred = DEFERRED.lock();
    deferred.open.len() + deferred.closed.iter().map(|batch| batch.pointers.len()).sum::<usize>()
}
