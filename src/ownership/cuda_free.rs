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
//!
//! Frees waiting are memory nobody can use, and a host that runs far ahead of the device would
//! grow the pool by them without end. So they are bounded per device (`async_free:pending=`,
//! `spec::PendingBound`, resolved against the device's memory at its first deferred free or
//! default stack): a free that takes the bytes waiting on its device past the bound first gives
//! back the closed batches whose events have completed, oldest first, without waiting; if the
//! bytes are still past it, it closes the open batch and waits for the oldest batches, one at
//! a time, until they are back under it. Under the bound no free waits. And when a device
//! refuses an allocation anywhere (a resource's growth, not only `rmmCudaMalloc`), the frees
//! waiting go back, after waiting for them, before any resource releases what it keeps
//! (`caches`, where each device's waiting frees are a cache that goes first), so the memory
//! they held can be released and the allocation retried.
//!
//! `RECLAIMING` keeps the checks and the waits for the bound to one thread at a time; a thread
//! never takes it twice (a callback resource's function may free from inside a give-back). A
//! device's refusal does not take it: it can come from any thread inside a resource's growth,
//! with that resource's locks held (a logging adaptor's buffer), which a thread holding
//! `RECLAIMING` may be waiting for while it gives a batch back. It takes the batches not yet
//! being given back instead, and waits for them itself; the one that thread holds is not
//! waited for.

use super::config;
use super::records::{self, Expected, Holder};
use super::spec::PendingBound;
use crate::error::Result;
use crate::platform::{backend, streams, Event, Stream};
use crate::resources::{caches, callback};
use parking_lot::{Mutex, MutexGuard};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A free that waits for the device: the pointer, its device and the bytes of its record.
#[derive(Clone, Copy)]
struct Freed {
    ptr: usize,
    device: i32,
    bytes: usize,
}

/// Frees that wait for events, oldest batch first.
struct Deferred {
    /// Freed since the last batch was closed.
    open: Vec<Freed>,
    closed: VecDeque<Batch>,
    /// Events of completed batches, for the next ones.
    spare: Vec<(i32, Event)>,
    /// How many events the last close recorded (the open batch's likely cost).
    last_close_events: u32,
    /// The configured bound (`async_free:pending=`).
    bound: PendingBound,
    /// By device number: what waits there, and the bound in bytes once resolved.
    devices: Vec<PendingFrees>,
    /// The devices whose refused allocations give the waiting frees back (`WaitingFrees`
    /// registered with `caches`), from their first bound on.
    registered: Vec<i32>,
}

impl Deferred {
    fn device(&mut self, device: i32) -> &mut PendingFrees {
        let at = usize::try_from(device).unwrap_or(0);
        if self.devices.len() <= at {
            self.devices.resize(at + 1, PendingFrees::default());
        }
        &mut self.devices[at]
    }

    /// Whether the bytes waiting on `device` are past its bound.
    fn over(&mut self, device: i32) -> bool {
        let pending = self.device(device);
        pending.bound.is_some_and(|bound| pending.bytes > bound)
    }
}

/// Pointers whose memory is free once all `events` have completed.
struct Batch {
    pointers: Vec<Freed>,
    events: Vec<(i32, Event)>,
}

/// What waits for one device: frees (open and closed batches), their bytes, and the bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingFrees {
    /// Frees waiting.
    pub count: usize,
    /// Their bytes (the sizes asked for).
    pub bytes: usize,
    /// The most `bytes` may be before a free waits; None until the device's first deferred
    /// free (or its default stack) resolved the configured bound.
    pub bound: Option<usize>,
}

static DEFERRED: Mutex<Deferred> = Mutex::new(Deferred {
    open: Vec::new(),
    closed: VecDeque::new(),
    spare: Vec::new(),
    last_close_events: 1,
    bound: PendingBound::Default,
    devices: Vec::new(),
    registered: Vec::new(),
});
/// Something is deferred: allocations look after it.
static PENDING: AtomicBool = AtomicBool::new(false);
/// Held by the one thread that checks the closed batches' events or waits for the bound
/// (through `reclaiming`).
static RECLAIMING: Mutex<()> = Mutex::new(());
thread_local! {
    /// Whether this thread holds `RECLAIMING`.
    static HOLDS_RECLAIMING: Cell<bool> = const { Cell::new(false) };
}
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

/// `RECLAIMING`, waiting for it with `wait`; None when this thread holds it already (a free
/// from inside a give-back) or, without `wait`, when another thread does.
fn reclaiming(wait: bool) -> Option<Reclaiming> {
    if holds_reclaiming() {
        return None;
    }
    let guard = match wait {
        true => RECLAIMING.lock(),
        false => RECLAIMING.try_lock()?,
    };
    let _ = HOLDS_RECLAIMING.try_with(|holds| holds.set(true));
    Some(Reclaiming { _guard: guard })
}

fn holds_reclaiming() -> bool {
    HOLDS_RECLAIMING.try_with(Cell::get).unwrap_or(false)
}

/// `RECLAIMING` held by this thread, which `holds_reclaiming` tells until it is dropped.
struct Reclaiming {
    _guard: MutexGuard<'static, ()>,
}

impl Drop for Reclaiming {
    fn drop(&mut self) {
        let _ = HOLDS_RECLAIMING.try_with(|holds| holds.set(false));
    }
}

/// Makes `bound` the bound of frees waiting, resolved again for each device at its next
/// deferred free (`config` calls it with the configured spec's).
pub(super) fn configure(bound: PendingBound) {
    let mut deferred = DEFERRED.lock();
    deferred.bound = bound;
    deferred.devices.iter_mut().for_each(|pending| pending.bound = None);
}

/// The configured bound in bytes on `device`, resolved against its memory the first time
/// (InvalidArgument, with the reason, for a bound it cannot hold).
pub fn bound(device: i32) -> Result<usize> {
    if let Some(bound) = DEFERRED.lock().device(device).bound {
        return Ok(bound);
    }
    let configured = DEFERRED.lock().bound;
    let total = backend()?.mem_get_info(device)?.1;
    let bytes = configured.bytes_of(device, total)?;
    let register = {
        let mut deferred = DEFERRED.lock();
        if deferred.bound == configured {
            deferred.device(device).bound = Some(bytes);
        }
        let register = !deferred.registered.contains(&device);
        if register {
            deferred.registered.push(device);
        }
        register
    };
    if register {
        // Kept for the life of the process: `caches` holds it weakly.
        static WAITING_FREES: OnceLock<Arc<dyn caches::Cache>> = OnceLock::new();
        let cache = WAITING_FREES.get_or_init(|| Arc::new(WaitingFrees));
        caches::register(device, Arc::downgrade(cache));
    }
    Ok(bytes)
}

/// What waits for `device` now (for reports and tests).
pub fn pending_frees(device: i32) -> PendingFrees {
    *DEFERRED.lock().device(device)
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
/// call; waits for that unless the configuration says `async_free`, and then only when the
/// frees waiting on its device pass the bound.
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
    let (device, bytes) = records::hand_over(ptr, Holder::Caller, Holder::Freeing)?;
    let now = elapsed();
    let (due, over) = loop {
        let mut deferred = DEFERRED.lock();
        let Some(limit) = deferred.device(device).bound else {
            drop(deferred);
            if let Err(error) = bound(device) {
                // Refused with nothing changed: the pointer is the caller's again.
                records::hand_over(ptr, Holder::Freeing, Holder::Caller)?;
                return Err(error);
            }
            continue;
        };
        if deferred.open.is_empty() {
            CLOSE_DUE.store(nanos(now + CLOSE_AFTER_PER_EVENT * deferred.last_close_events), Ordering::Relaxed);
        }
        deferred.open.push(Freed { ptr, device, bytes });
        let pending = deferred.device(device);
        pending.count += 1;
        pending.bytes += bytes;
        let over = pending.bytes > limit;
        PENDING.store(true, Ordering::Relaxed);
        break (deferred.open.len() >= BATCH_LIMIT, over);
    };
    if due || nanos(now) >= CLOSE_DUE.load(Ordering::Relaxed) {
        close_if_due(now, false)?;
    }
    match over {
        true => keep_under_bound(device),
        false => reclaim_if_due(now),
    }
}

/// The frees waiting on `device` are past its bound: gives back the batches whose events have
/// completed (no wait); if still past it, closes the open batch and waits for the oldest
/// batches, one at a time, until they are under it.
fn keep_under_bound(device: i32) -> Result<()> {
    let Some(_reclaiming) = reclaiming(true) else { return Ok(()) };
    LAST_CHECK.store(nanos(elapsed()), Ordering::Relaxed);
    reclaim(Wait::No)?;
    if !DEFERRED.lock().over(device) {
        return Ok(());
    }
    close_if_due(elapsed(), true)?;
    reclaim(Wait::UntilUnder(device)).map(drop)
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

type Recorded = std::result::Result<Batch, (Vec<Freed>, crate::error::Error)>;

/// Records, on the legacy default stream and every trusted stream of each device `pointers`
/// belong to, the events after which they are free; `spare` events first. Returns the batch
/// (or the pointers and the error) and the spare events left.
fn record_events(pointers: Vec<Freed>, mut spare: Vec<(i32, Event)>) -> (Recorded, Vec<(i32, Event)>) {
    let mut devices: Vec<i32> = pointers.iter().map(|freed| freed.device).collect();
    devices.sort_unstable();
    devices.dedup();
    let mut events = Vec::new();
    let mut record = || -> Result<()> {
        let platform = backend()?;
        for &device in &devices {
            // The trusted streams are listed and recorded on while none can be forgotten, so
            // none is destroyed meanwhile (`streams::with_known_streams`): no event goes to a
            // dead handle, which a CUDA driver may crash on.
            streams::with_known_streams(device, |trusted| -> Result<()> {
                for &stream in std::iter::once(&Stream::DEFAULT).chain(trusted) {
                    let event = match spare.iter().position(|&(of, _)| of == device) {
                        Some(at) => spare.swap_remove(at).1,
                        None => platform.event_create(device)?,
                    };
                    let recorded = platform.event_record(device, event, stream);
                    if stream != Stream::DEFAULT && recorded.is_err() {
                        // The program destroyed `stream` without telling rmm-rs, breaking
                        // `rmmStreamRegister`'s promise: the work it was given may still run,
                        // and only the whole device covers it.
                        spare.push((device, event));
                        platform.device_synchronize(device)?;
                        continue;
                    }
                    events.push((device, event));
                    recorded?;
                }
                Ok(())
            })?;
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
    let Some(_checking) = reclaiming(false) else { return Ok(()) };
    LAST_CHECK.store(now_ns, Ordering::Relaxed);
    reclaim(Wait::No).map(drop)
}

/// Closes the open batch and gives back the batches whose events have completed; with `wait`,
/// all of them, waiting for their events. Nothing on a thread that is giving frees back
/// already.
pub fn settle(wait: bool) -> Result<()> {
    let Some(_checking) = reclaiming(true) else { return Ok(()) };
    close_if_due(elapsed(), true)?;
    reclaim(if wait { Wait::All } else { Wait::No }).map(drop)
}

/// How far `reclaim` waits for events that have not completed.
#[derive(Clone, Copy)]
enum Wait {
    No,
    All,
    /// While the frees waiting on the device are past its bound.
    UntilUnder(i32),
}

/// Gives back every closed batch, oldest first, whose events have completed, and waits for
/// those that have not as `wait` says; the bytes given back. Batches taken out by another
/// thread meanwhile are that thread's to give back.
fn reclaim(wait: Wait) -> Result<usize> {
    let platform = backend()?;
    let mut outcome = Ok(());
    let mut given_back = 0;
    loop {
        let Some(batch) = DEFERRED.lock().closed.pop_front() else { break };
        let mut complete = Ok(true);
        let mut may_wait = None;
        for &(_, event) in &batch.events {
            complete = match platform.event_query(event) {
                Ok(false) if *may_wait.get_or_insert_with(|| should_wait(wait)) => platform.event_synchronize(event).map(|()| true),
                queried => queried,
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
        for freed in &batch.pointers {
            let freeing = Expected { stack: None, size: None, holder: Holder::Freeing };
            if let Err(error) = records::free(freed.ptr, Stream::DEFAULT, freeing) {
                outcome = outcome.and(Err(error));
            }
        }
        let mut deferred = DEFERRED.lock();
        for freed in &batch.pointers {
            let pending = deferred.device(freed.device);
            pending.count -= 1;
            pending.bytes -= freed.bytes;
            given_back += freed.bytes;
        }
        deferred.spare.extend(batch.events);
    }
    let deferred = DEFERRED.lock();
    PENDING.store(!deferred.open.is_empty() || !deferred.closed.is_empty(), Ordering::Relaxed);
    outcome.map(|()| given_back)
}

fn should_wait(wait: Wait) -> bool {
    match wait {
        Wait::No => false,
        Wait::All => true,
        Wait::UntilUnder(device) => DEFERRED.lock().over(device),
    }
}

/// A device refused an allocation: every frees waiting goes back, after waiting for it; the
/// bytes given back. Not on a thread inside a callback resource's function (the free that
/// called it may hold the record of a pointer given back here) or giving frees back already.
fn give_back_for_want_of_memory() -> Result<usize> {
    give_back(Wait::All)
}

/// Gives the waiting frees back as `wait` says (see `give_back_for_want_of_memory` for when
/// nothing is done); the bytes given back.
fn give_back(wait: Wait) -> Result<usize> {
    if !PENDING.load(Ordering::Relaxed) || callback::running_on_this_thread() || holds_reclaiming() {
        return Ok(0);
    }
    close_if_due(elapsed(), true)?;
    reclaim(wait)
}

/// The waiting frees, as `caches` asks a device's resources to release when it refuses an
/// allocation (registered for each device with frees): they go back first, so that the
/// resources they go back to can release the memory in turn. All waiting frees go, whatever
/// their device: waiting for them device by device would take batches out of order for a rare
/// case (several devices).
struct WaitingFrees;

impl caches::Cache for WaitingFrees {
    fn release_cached(&self) -> Result<usize> {
        give_back_for_want_of_memory()
    }

    /// On demand (`rmmDeviceRelease`): the frees whose work is done, without waiting.
    fn release_all_free(&self) -> Result<usize> {
        give_back(Wait::No)
    }

    fn holding(&self) -> Option<(String, usize, usize)> {
        let bytes = DEFERRED.lock().devices.iter().map(|pending| pending.bytes).sum();
        Some(("frees waiting for the device (async_free)".into(), bytes, bytes))
    }

    fn goes_first(&self) -> bool {
        true
    }
}

/// Whether frees are waiting for the device, on every device (for tests).
pub fn pending() -> usize {
    DEFERRED.lock().devices.iter().map(|pending| pending.count).sum()
}
