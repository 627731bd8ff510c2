//! Logging (RMM's `logging_resource_adaptor`): one CSV line per event, in RMM's format
//! (`crate::log_format`, which writes the lines and which `rmm-replay` reads).
//!
//! An allocating thread only records its event (order, time, thread, action, pointer, size,
//! stream: 48 bytes) in a buffer of its own (a shard, under a lock no other thread takes but
//! to collect), which it keeps at hand in a thread-local. When one thread's buffer fills up,
//! or on flush, every thread's buffer is collected at once (swapped for an empty one, not
//! copied) and handed to a writer thread, which merges them in order, formats the lines and
//! writes them: no allocating thread formats text, waits for the disk, or shares a cache line
//! with another to log. Each thread's events keep their order; an allocation's event is
//! recorded before its pointer is returned, so its free, on whatever thread, comes after it in
//! the file.
//!
//! Where the time-stamp counter orders events across processors (`clock::OrderedCounter`), an
//! event's reading of it is both its place in the order and its time, which the writer turns
//! into wall-clock time through anchors (readings of both clocks) each thread records every
//! 2^21 ticks (0.5 to 2 ms): threads share nothing to log. A reading that must follow what
//! another thread did waits for every earlier instruction, a fence that drains the pipeline;
//! while one thread logs alone, its readings only need to keep its own order, and skip it (see
//! `LoggingAdaptor::sole`). Elsewhere each event takes a number from one counter and reads the
//! wall clock.

use super::shards::{self, Shard, Shards};
use super::Upstream;
use crate::error::{Error, Result};
use crate::log_format::{Action, Lines, TimeOfDay, COLUMNS};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use crate::sync::bias::Bias;
use crate::sync::biased_lock::{BiasedGuard, BiasedLock};
use crate::sync::clock::{Anchor, OrderedCounter};
use parking_lot::{Mutex, ReentrantMutex};
use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Weak};

/// Events a thread buffers before every buffer goes to the writer thread (192 KiB a thread:
/// fewer hand-overs, each of which wakes the writer).
const BUFFER_EVENTS: usize = 4096;

/// Counter ticks between a thread's anchors: 0.5 to 2 ms at the 1 to 4 GHz counters run at,
/// over which the measured rate's error adds well under a microsecond. A thread that logs
/// alone for as long may stop fencing its readings (see `LoggingAdaptor::sole`).
const ANCHOR_TICKS: u64 = 1 << 21;

/// Bytes of lines the writer formats before it writes them (see `Lines::new`).
const TEXT_BYTES: usize = 32 << 10;

/// Emptied buffers the writer gives back for collections to swap in, at most.
const SPARE_BUFFERS: usize = 64;

/// What a thread records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A line of the log.
    Line(Action),
    /// Not a line: a reading of both clocks (`time` the wall clock, `ptr` the counter) that
    /// dates the events after it.
    Anchor,
}

/// One event or anchor as a thread records it: a line of the log before it is dated and
/// formatted.
#[derive(Debug, Clone, Copy)]
struct Record {
    /// The event's place in the adaptor's order of events (see `LoggingAdaptor::place`): its
    /// counter reading, or its number.
    order: u64,
    /// Wall-clock time, ns since the Unix epoch (where events are numbered; the writer dates
    /// counter readings).
    time: u64,
    ptr: usize,
    size: usize,
    stream: usize,
    /// The OS thread id (Linux's are below 2^22), beside the kind in one word.
    thread: u32,
    kind: Kind,
}

#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<Record>() == 48, "a record is 48 bytes (see the module comment)");

/// Events in the order one thread (or the nested lock's holders) recorded them.
struct Records {
    list: Vec<Record>,
    /// The place in the order from which the next event needs an anchor first.
    anchor_due: u64,
    /// The length of `list` at which the thread that logged stops to attend to the buffer:
    /// `BUFFER_EVENTS`, or 0 after an anchor (see `LoggingAdaptor::attend`).
    attend_at: usize,
}

impl Default for Records {
    fn default() -> Self {
        Records { list: Vec::new(), anchor_due: 0, attend_at: BUFFER_EVENTS }
    }
}

impl Records {
    #[inline(always)]
    fn record(&mut self, counter: Option<OrderedCounter>, event: Record) {
        if event.order >= self.anchor_due {
            self.anchor(counter, event.order);
        }
        self.list.push(event);
    }

    /// An anchor placed just before the event at `order` (numbered events carry their time and
    /// need none).
    #[cold]
    #[inline(never)]
    fn anchor(&mut self, counter: Option<OrderedCounter>, order: u64) {
        let Some(counter) = counter else {
            self.anchor_due = u64::MAX;
            return;
        };
        let Anchor { ticks, ns } = counter.anchor();
        self.list.push(Record { order, time: ns, ptr: ticks as usize, size: 0, stream: 0, thread: 0, kind: Kind::Anchor });
        self.anchor_due = order.saturating_add(ANCHOR_TICKS);
        self.attend_at = 0;
    }
}

/// One thread's events not yet handed to the writer. The lock is biased to its thread, which
/// then takes it without an atomic read-modify-write.
struct Buffer {
    events: BiasedLock<Records>,
    /// The latest place in the order its events took (written by its thread only): the next
    /// is never below it, and other threads see from it how long ago the thread logged.
    last_order: AtomicU64,
    /// The thread that made it (`bias::thread_key`).
    thread: u64,
    /// That thread's OS id, which its events show (asked once here, not per event).
    os_thread: u32,
}

impl Default for Buffer {
    /// Made on the thread that logs to it (see `Shards::with`).
    fn default() -> Self {
        Buffer {
            events: BiasedLock::new(Records::default()),
            last_order: AtomicU64::new(0),
            thread: crate::sync::bias::thread_key(),
            os_thread: crate::platform::os_thread_id() as u32,
        }
    }
}

impl Buffer {
    fn address(&self) -> usize {
        self as *const Buffer as usize
    }
}

impl Shard for Buffer {
    type Shared = ();
    /// A buffer whose thread has gone stays with the adaptor, which collects it with the rest.
    fn retire(&self, _: &()) {}
}

thread_local! {
    static BUFFERS: shards::Local<Buffer> = const { std::cell::RefCell::new(Vec::new()) };
    /// The buffer this thread last logged to, with its adaptor's id (`Shards::id`): where a
    /// thread logs to one adaptor, finding its buffer costs a compare. Borrowed while the
    /// thread logs an event, so that a call which comes back into a logging adaptor on this
    /// thread finds it in use.
    static CURRENT: RefCell<Option<(u64, Arc<Buffer>)>> = const { RefCell::new(None) };
}

/// Every thread's buffered events (a list per buffer), and the place in the order below which
/// all events are in this batch or an earlier one.
struct Batch {
    lists: Vec<Vec<Record>>,
    complete_below: u64,
}

enum Job {
    Write(Batch),
    /// Write, flush the file, and answer with the first write error since the last flush.
    Flush(Batch, Sender<std::result::Result<(), String>>),
}

/// What a logged operation gives back, with its event's action and pointer (None: no event).
type Outcome<T> = (Result<T>, Option<(Action, usize)>);

/// Emptied lists, from the writer back to collections.
type Spares = Arc<Mutex<Vec<Vec<Record>>>>;

/// `LoggingAdaptor::sole` before any buffer has logged.
const NO_BUFFER: usize = 0;
/// `LoggingAdaptor::sole` while every reading is fenced. Buffers lie at aligned addresses, so
/// no buffer is at 0 or 1.
const SHARED: usize = 1;

/// Logs every allocation and free through it to a file in RMM's CSV format (see the module
/// comment for how, and `crate::log_format` for the format).
pub struct LoggingAdaptor {
    upstream: Upstream,
    path: String,
    /// The time-stamp counter where it orders events across threads.
    counter: Option<OrderedCounter>,
    buffers: Shards<Buffer>,
    /// Where the counter orders events: the address of the buffer whose thread logs alone and
    /// reads the counter without the fence, or `SHARED` (also where events are numbered).
    ///
    /// The first buffer to log is the sole one; the first event of any other buffer, or of
    /// another thread's nested call, first takes that back (`end_sole`): it takes the sole
    /// buffer's lock, which waits for the event in progress there, and sets `SHARED` before it
    /// lets go. A buffer's thread that has logged alone for `ANCHOR_TICKS` (no other buffer's
    /// `last_order` and no nested event that recent) becomes sole again (`begin_sole`): it
    /// sets its address, then takes and lets go every other buffer's lock and the nested lock,
    /// which waits out every event that began before, and fences once. Each event reads
    /// `sole` under its buffer's lock, which orders the read after those changes.
    ///
    /// Why the file stays in order. The sole thread's events are in its program order, which
    /// `place` keeps its readings in. Every event of another thread either ended before the
    /// sole thread's unfenced readings began (it let go of its lock before `begin_sole` took
    /// it, and the fence after that waits for what was seen) or comes after `end_sole` took
    /// the sole buffer's lock from the sole thread, which read the counter for each of its
    /// events before it let go of that lock; the other thread's reading is fenced, so it comes
    /// after every unfenced one. A block freed on one thread and allocated on another thus
    /// keeps its events' order whichever of the two logs alone. A collection on another thread
    /// reads the counter, then takes each buffer's lock: if the sole thread is inside, it
    /// waits for its event; if not, it revokes the lock's bias, whose barrier interrupts the
    /// sole thread, so a reading the thread takes later comes after the collection's. Until
    /// the bias is back, the sole thread takes its lock by the spin lock, which does not order
    /// a later reading, and fences (`unfenced` needs `is_biased`).
    sole: AtomicUsize,
    /// The sole buffer, for `end_sole` to lock.
    sole_buffer: Mutex<Option<Arc<Buffer>>>,
    /// Where the counter does not order events: the next event's number. Clocks read on
    /// different processors do not order events that close, so each event takes a number:
    /// with plain loads and stores while one thread logs (it holds `order_bias`), with an
    /// atomic add once others do.
    next_order: AtomicU64,
    order_bias: Bias,
    /// Events of calls made from inside another logged call on the same thread, or from a
    /// thread whose thread-locals are gone (see `with_buffer`).
    nested: ReentrantMutex<RefCell<Records>>,
    /// The latest place a nested event took.
    nested_last_order: AtomicU64,
    spares: Spares,
    /// Held while a batch is collected and sent, so that batches reach the file in order.
    writer: Mutex<Option<(Sender<Job>, std::thread::JoinHandle<()>)>>,
    /// The process whose writer thread writes the log. A child it forks has no such thread,
    /// so there the adaptor passes calls through unlogged and neither flushes nor waits at
    /// exit (the parent writes what was buffered before the fork, once).
    writing_process: crate::platform::Process,
}

/// Where a logging adaptor made by `LoggingAdaptor::with_sink` writes: one call per line, the
/// line without its end-of-line, in the file's order, from one thread at a time.
pub trait LineSink: Send {
    /// Takes one line; an error is reported by the next flush, as a failed write to a file is.
    fn line(&mut self, line: &str) -> std::io::Result<()>;
}

/// The writer thread's `Write` over a `LineSink`: the text it is given is whole lines, which
/// it hands over one by one (a line cut between two writes waits for its end).
struct SinkWriter {
    sink: Box<dyn LineSink>,
    partial: Vec<u8>,
}

impl Write for SinkWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut rest = bytes;
        let mut failure = None;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let line = match self.partial.is_empty() {
                true => &rest[..end],
                false => {
                    self.partial.extend_from_slice(&rest[..end]);
                    &self.partial[..]
                }
            };
            // The writer formats ASCII only.
            let result = self.sink.line(&String::from_utf8_lossy(line));
            if let Err(e) = result {
                failure.get_or_insert(e);
            }
            self.partial.clear();
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        match failure {
            Some(e) => Err(e),
            None => Ok(bytes.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

static LIVE: Mutex<Vec<Weak<LoggingAdaptor>>> = Mutex::new(Vec::new());

impl LoggingAdaptor {
    /// Logs to `path`, or, when None, to the file `RMM_LOG_FILE` names. The file is created
    /// (truncated) at once, so an unwritable path fails here.
    pub fn new(upstream: Arc<dyn MemoryResource>, path: Option<&str>) -> Result<Arc<Self>> {
        let path = match path {
            Some(path) => path.to_string(),
            None => {
                std::env::var("RMM_LOG_FILE").map_err(|_| Error::invalid("no log file: the path is NULL and RMM_LOG_FILE is not set"))?
            }
        };
        if path.is_empty() {
            return Err(Error::invalid("the log file path is empty"));
        }
        let mut file = std::fs::File::create(&path).map_err(|e| Error::Io(format!("cannot create log file {path}: {e}")))?;
        file.write_all(format!("{COLUMNS}\n").as_bytes()).map_err(|e| Error::Io(format!("cannot write log file {path}: {e}")))?;
        Self::writing_to(upstream, path, Box::new(file))
    }

    /// Logs to `sink`, which receives each line whole (the header line first, before this
    /// returns) on the adaptor's writer thread, and is dropped once the adaptor has written its
    /// last line. Where this fails, `sink` has received at most the header and is dropped too.
    pub fn with_sink(upstream: Arc<dyn MemoryResource>, mut sink: Box<dyn LineSink>) -> Result<Arc<Self>> {
        sink.line(COLUMNS).map_err(|e| Error::Io(format!("the log sink refused the header line: {e}")))?;
        Self::writing_to(upstream, "<sink>".to_string(), Box::new(SinkWriter { sink, partial: Vec::new() }))
    }

    /// The adaptor over `upstream` whose writer thread writes lines to `file` (which has the
    /// header already); `path` names it in messages.
    fn writing_to(upstream: Arc<dyn MemoryResource>, path: String, file: Box<dyn Write + Send>) -> Result<Arc<Self>> {
        let (sender, jobs) = channel::<Job>();
        // Seconds east of UTC, read once: the log shows local time as RMM's does.
        let utc_offset = crate::platform::local_utc_offset_seconds();
        let counter = OrderedCounter::get();
        let spares = Spares::default();
        let writer_spares = spares.clone();
        let writer = std::thread::Builder::new()
            .name("rmm-log-writer".into())
            .spawn(move || write_jobs(file, jobs, Dates::new(utc_offset, counter), writer_spares))
            .map_err(|e| Error::Io(format!("cannot start the log writer thread: {e}")))?;
        let adaptor = Arc::new(LoggingAdaptor {
            upstream: Upstream::new(upstream),
            path,
            counter,
            buffers: Shards::new((), &BUFFERS),
            sole: AtomicUsize::new(if counter.is_some() { NO_BUFFER } else { SHARED }),
            sole_buffer: Mutex::new(None),
            next_order: AtomicU64::new(0),
            order_bias: Bias::new(),
            nested: ReentrantMutex::new(RefCell::new(Records::default())),
            nested_last_order: AtomicU64::new(0),
            spares,
            writer: Mutex::new(Some((sender, writer))),
            writing_process: crate::platform::Process::current(),
        });
        static WATCH_FORKS: std::sync::Once = std::sync::Once::new();
        WATCH_FORKS.call_once(|| {
            crate::platform::in_forked_children(forget_current_buffer_in_child, "a forked child would log to buffers no one writes")
        });
        let mut live = LIVE.lock();
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(&adaptor));
        Ok(adaptor)
    }

    /// The log file (`"<sink>"` where lines go to a `LineSink`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the calling thread logs to this adaptor alone now, and reads the counter
    /// without the fence while its buffer's lock is biased to it (see `sole`; for tests).
    pub fn logs_alone(&self) -> bool {
        let sole = self.sole.load(Ordering::Acquire);
        self.sole_buffer.lock().as_ref().is_some_and(|buffer| buffer.address() == sole && buffer.thread == crate::sync::bias::thread_key())
    }

    /// Whether this process is a fork of the one whose writer thread writes the log (see
    /// `writing_process`).
    fn forked(&self) -> bool {
        self.writing_process.forked_since()
    }

    /// Writes every buffered line to the file and flushes it; reports any write error since
    /// the last flush.
    pub fn flush(&self) -> Result<()> {
        if self.forked() {
            return Err(Error::Io(format!(
                "{} is written by process {}; this process, forked from it, does not log there",
                self.path,
                self.writing_process.id()
            )));
        }
        let (answer, answered) = channel();
        {
            let writer = self.writer.lock();
            let Some((sender, _)) = writer.as_ref() else { return Ok(()) };
            let batch = self.collect();
            sender.send(Job::Flush(batch, answer)).map_err(|_| Error::Io(format!("the writer of {} stopped", self.path)))?;
        }
        answered
            .recv()
            .map_err(|_| Error::Io(format!("the writer of {} stopped", self.path)))?
            .map_err(|e| Error::Io(format!("writing log file {}: {e}", self.path)))
    }

    /// Runs `event` on this thread's buffer, locked, given the counter where its reading may
    /// skip the fence (see `sole`), or `nested` where the thread is inside another logged call,
    /// or its thread-locals are gone. An event holds the lock from before it takes its place in
    /// the order until it is recorded, so a collection sees the event if it sees the
    /// operation's effect.
    ///
    /// An operation can come back into a logging adaptor on the same thread: an upstream out of
    /// memory makes every pool of the device give chunks back, through this adaptor when it
    /// lies under one of them, and failure callbacks allocate. The thread's buffer is in use
    /// then, and such a nested call records under the reentrant `nested` lock instead
    /// (`logged_nested`), as does a call from a thread whose thread-locals are gone.
    #[inline(always)]
    fn with_buffer<R>(&self, event: impl FnOnce(&mut Records, &Buffer, Option<OrderedCounter>) -> R, nested: impl FnOnce() -> R) -> R {
        let logged = CURRENT.try_with(|current| {
            let mut current = current.try_borrow_mut().ok()?;
            if !matches!(&*current, Some((adaptor, _)) if *adaptor == self.buffers.id()) {
                self.adopt(&mut current)?;
            }
            let (_, buffer) = current.as_ref()?;
            let mut events = buffer.events.lock();
            let sole = self.sole.load(Ordering::Relaxed);
            let unfenced = if sole == buffer.address() {
                self.counter.filter(|_| events.is_biased())
            } else {
                if sole != SHARED {
                    drop(events);
                    events = self.lock_shared(buffer);
                }
                None
            };
            let result = event(&mut events, buffer, unfenced);
            let attend = events.list.len() >= events.attend_at;
            drop(events);
            if attend {
                self.attend(buffer);
            }
            Some(result)
        });
        match logged {
            Ok(Some(result)) => result,
            _ => nested(),
        }
    }

    /// `buffer`'s lock, once no other buffer is sole (see `sole`).
    #[cold]
    #[inline(never)]
    fn lock_shared<'a>(&self, buffer: &'a Buffer) -> BiasedGuard<'a, Records> {
        loop {
            self.end_sole();
            let events = buffer.events.lock();
            if matches!(self.sole.load(Ordering::Relaxed), SHARED) {
                return events;
            }
        }
    }

    /// Puts this thread's buffer of this adaptor in `current`; the first buffer to log is the
    /// sole one. None without thread-locals.
    #[cold]
    #[inline(never)]
    fn adopt(&self, current: &mut Option<(u64, Arc<Buffer>)>) -> Option<()> {
        if self.forked() {
            return None;
        }
        let buffer = self.buffers.with_shard(Arc::clone)?;
        if self.sole.load(Ordering::Acquire) == NO_BUFFER {
            let mut sole_buffer = self.sole_buffer.lock();
            if self.sole.compare_exchange(NO_BUFFER, buffer.address(), Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                *sole_buffer = Some(buffer.clone());
            }
        }
        *current = Some((self.buffers.id(), buffer));
        Some(())
    }

    /// After an anchor, or when the buffer is full: the thread may become sole, and every
    /// buffer goes to the writer. Called with no lock held.
    #[cold]
    #[inline(never)]
    fn attend(&self, buffer: &Arc<Buffer>) {
        let (full, anchored_at) = {
            let mut events = buffer.events.lock();
            events.attend_at = BUFFER_EVENTS;
            (events.list.len() >= BUFFER_EVENTS, events.anchor_due.saturating_sub(ANCHOR_TICKS))
        };
        if self.sole.load(Ordering::Relaxed) == SHARED {
            self.begin_sole(buffer, anchored_at.saturating_sub(ANCHOR_TICKS));
        }
        if full {
            self.hand_over();
        }
    }

    /// Makes `buffer` the sole one if no other buffer and no nested event has taken a place
    /// since `since` (see `sole`).
    fn begin_sole(&self, buffer: &Arc<Buffer>, since: u64) {
        let Some(counter) = self.counter else { return };
        let mut alone = self.nested_last_order.load(Ordering::Relaxed) < since;
        self.buffers.for_each(|other| alone &= std::ptr::eq(other, &**buffer) || other.last_order.load(Ordering::Relaxed) < since);
        if !alone {
            return;
        }
        {
            let mut sole_buffer = self.sole_buffer.lock();
            if self.sole.compare_exchange(SHARED, buffer.address(), Ordering::AcqRel, Ordering::Relaxed).is_err() {
                return;
            }
            *sole_buffer = Some(buffer.clone());
        }
        self.buffers.for_each(|other| {
            if !std::ptr::eq(other, &**buffer) {
                drop(other.events.lock());
            }
        });
        drop(self.nested.lock());
        // The unfenced readings to come follow what the locks above saw.
        counter.read_before_later();
    }

    /// Takes the sole buffer's status back (see `sole`), unless the calling thread is its own.
    /// Called with no buffer's lock held.
    #[cold]
    #[inline(never)]
    fn end_sole(&self) {
        let sole_buffer = self.sole_buffer.lock().clone();
        match sole_buffer {
            Some(buffer) => {
                // Another thread's: its event in progress ends first. A buffer of this thread's
                // own (one it has dropped from its list of shards): its events came before, in
                // this thread's order.
                let _events = (buffer.thread != crate::sync::bias::thread_key()).then(|| buffer.events.lock());
                let _ = self.sole.compare_exchange(buffer.address(), SHARED, Ordering::AcqRel, Ordering::Relaxed);
            }
            None => {
                let _ = self.sole.compare_exchange(NO_BUFFER, SHARED, Ordering::AcqRel, Ordering::Relaxed);
            }
        }
    }

    /// `allocate` or `deallocate` from inside another logged call on this thread, or without
    /// thread-locals: `operation` runs between the event's place and its record, for a free,
    /// or before both. Its reading is fenced; the sole buffer's status ends first, unless it
    /// is this thread's (a nested call of the sole thread follows its own order).
    #[cold]
    #[inline(never)]
    fn logged_nested<T>(&self, frees: bool, operation: impl FnOnce() -> Outcome<T>, size: usize, stream: Stream) -> Result<T> {
        if self.forked() {
            return operation().0;
        }
        let nested = loop {
            let nested = self.nested.lock();
            match self.sole.load(Ordering::Acquire) {
                SHARED => break nested,
                _ if self.sole_buffer.lock().as_ref().is_some_and(|sole| sole.thread == crate::sync::bias::thread_key()) => break nested,
                _ => {
                    drop(nested);
                    self.end_sole();
                }
            }
        };
        let last_order = &self.nested_last_order;
        let before = frees.then(|| self.place(last_order, None));
        let (result, event) = operation();
        if let Some((action, ptr)) = event {
            let place = before.unwrap_or_else(|| self.place(last_order, None));
            let thread = crate::platform::os_thread_id() as u32;
            nested.borrow_mut().record(self.counter, self.event(place, action, ptr, size, stream, thread));
        }
        result
    }

    /// The event at `place` (from `place`).
    #[inline(always)]
    fn event(&self, (order, time): (u64, u64), action: Action, ptr: usize, size: usize, stream: Stream, thread: u32) -> Record {
        Record { order, time, ptr, size, stream: stream.0, thread, kind: Kind::Line(action) }
    }

    /// The next event's place in the order and its wall-clock time where events are numbered
    /// (0 where the counter reading is both). A reading waits for every earlier instruction
    /// (so that it follows whatever another thread did that this thread has seen) unless it
    /// is `unfenced`, the counter given where the event may skip the fence (see `sole`); it is
    /// never below `last_order`, which keeps one thread's unfenced readings in its program
    /// order.
    #[inline(always)]
    fn place(&self, last_order: &AtomicU64, unfenced: Option<OrderedCounter>) -> (u64, u64) {
        let reading = match (unfenced, self.counter) {
            (Some(counter), _) => counter.read_unfenced(),
            (None, Some(counter)) => counter.read(),
            (None, None) => return (self.next_number(), crate::sync::clock::wall_clock_ns()),
        };
        let place = reading.max(last_order.load(Ordering::Relaxed));
        last_order.store(place, Ordering::Relaxed);
        (place, 0)
    }

    #[cold]
    #[inline(never)]
    fn next_number(&self) -> u64 {
        if let Some(_inside) = self.order_bias.enter() {
            let place = self.next_order.load(Ordering::Relaxed);
            self.next_order.store(place + 1, Ordering::Relaxed);
            return place;
        }
        // Once: the places the owner took are then visible to every thread.
        self.order_bias.revoke(|| {});
        self.next_order.fetch_add(1, Ordering::SeqCst)
    }

    /// Takes every thread's buffered events. An event holds its thread's buffer lock from
    /// before it takes its place in the order until it is in the buffer, so every event placed
    /// before this collection began is in it or in an earlier one. Each buffer's list is
    /// swapped for an emptied one the writer gave back, so that no thread copies events.
    fn collect(&self) -> Batch {
        let complete_below = match self.counter {
            Some(counter) => counter.read_before_later(),
            None => self.next_order.load(Ordering::SeqCst),
        };
        let mut spares = std::mem::take(&mut *self.spares.lock());
        let mut lists = Vec::new();
        let mut take = |events: &mut Records| {
            if !events.list.is_empty() {
                let spare = spares.pop().unwrap_or_else(|| Vec::with_capacity(BUFFER_EVENTS));
                lists.push(std::mem::replace(&mut events.list, spare));
            }
        };
        self.buffers.for_each(|buffer| take(&mut buffer.events.lock()));
        take(&mut self.nested.lock().borrow_mut());
        self.spares.lock().append(&mut spares);
        Batch { lists, complete_below }
    }

    /// Sends every thread's events to the writer; sending never blocks.
    #[cold]
    fn hand_over(&self) {
        if let Some((sender, _)) = self.writer.lock().as_ref() {
            let _ = sender.send(Job::Write(self.collect()));
        }
    }

    fn close(&self) {
        if self.forked() {
            // The writer thread and the channel's other end are the parent's: nothing to stop
            // or wait for here, and a lock another thread held at the fork is never let go.
            if let Some(writer) = self.writer.try_lock().and_then(|mut writer| writer.take()) {
                std::mem::forget(writer);
            }
            return;
        }
        let _ = self.flush();
        if let Some((sender, thread)) = self.writer.lock().take() {
            drop(sender);
            let _ = thread.join();
        }
    }
}

/// In a forked child: the thread's buffer (the parent's thread's) is not written by anyone
/// here, so the next event looks for one again, and finds the adaptor forked (`adopt`).
extern "C" fn forget_current_buffer_in_child() {
    let _ = CURRENT.try_with(|current| current.try_borrow_mut().map(|mut current| current.take()));
}

/// Flushes every live logging adaptor (at process exit).
pub fn flush_all_logs() {
    let Some(live) = super::alive_at_exit(&LIVE) else { return };
    for adaptor in live {
        let _ = adaptor.flush();
    }
}

/// Adds a batch to the events held back, and takes out, in order, those that no later batch
/// can precede. The batch's lists go back to `spares`, emptied.
fn ready(held: &mut Vec<Record>, batch: Batch, spares: &Mutex<Vec<Vec<Record>>>) -> Vec<Record> {
    let mut lists = batch.lists;
    for list in &mut lists {
        held.append(list);
    }
    {
        let mut spares = spares.lock();
        let room = SPARE_BUFFERS.saturating_sub(spares.len());
        spares.extend(lists.into_iter().take(room));
    }
    // Stable, and each list is already in order: the sort merges runs.
    held.sort_by_key(|event| event.order);
    let split = held.partition_point(|event| event.order < batch.complete_below);
    let rest = held.split_off(split);
    std::mem::replace(held, rest)
}

/// Dates events: from their own wall-clock time where they are numbered, or from their
/// counter reading through the latest anchor before it.
struct Dates {
    /// Seconds east of UTC: the log shows local time, as RMM's does.
    utc_offset: i64,
    counter: Option<OrderedCounter>,
    anchor: Option<Anchor>,
    rate: u64,
}

impl Dates {
    fn new(utc_offset: i64, counter: Option<OrderedCounter>) -> Self {
        Dates { utc_offset, counter, anchor: None, rate: 0 }
    }

    /// Before a batch: the counter's rate, as measured so far.
    fn refresh(&mut self) {
        if let Some(counter) = self.counter {
            self.rate = counter.rate();
        }
    }

    /// Takes in an anchor, in the order of the file: it dates the events after it.
    fn take_anchor(&mut self, anchor: &Record) {
        self.anchor = Some(Anchor { ticks: anchor.ptr as u64, ns: anchor.time });
    }

    /// The time of day of an event, taken in the order of the file.
    fn time_of(&mut self, event: &Record) -> TimeOfDay {
        let unix_ns = match self.counter {
            None => event.time,
            // Every list starts with an anchor; none before an event would be a bug, but the
            // line is still worth writing, dated from now.
            Some(counter) => self.anchor.get_or_insert_with(|| counter.anchor()).wall_ns(event.order, self.rate),
        };
        TimeOfDay::from_unix_ns(unix_ns, self.utc_offset)
    }
}

/// Writes records in order: events as lines, through `lines`; the first write error goes to
/// `failure`.
fn write_records(records: Vec<Record>, dates: &mut Dates, lines: &mut Lines, file: &mut impl Write, failure: &mut Option<String>) {
    dates.refresh();
    for record in &records {
        match record.kind {
            Kind::Anchor => dates.take_anchor(record),
            Kind::Line(action) => {
                if !lines.has_room_for_a_line() {
                    lines.write_out(file, failure);
                }
                lines.push(u64::from(record.thread), dates.time_of(record), action, record.ptr, record.size, record.stream);
            }
        }
    }
    lines.write_out(file, failure);
}

fn write_jobs(mut file: Box<dyn Write + Send>, jobs: std::sync::mpsc::Receiver<Job>, mut dates: Dates, spares: Spares) {
    let mut lines = Lines::new(TEXT_BYTES);
    let mut failure: Option<String> = None;
    let mut held = Vec::new();
    for job in jobs {
        let (batch, answer) = match job {
            Job::Write(batch) => (batch, None),
            Job::Flush(batch, answer) => (batch, Some(answer)),
        };
        write_records(ready(&mut held, batch, &spares), &mut dates, &mut lines, &mut file, &mut failure);
        if let Some(answer) = answer {
            if let Err(e) = file.flush() {
                failure.get_or_insert(e.to_string());
            }
            let _ = answer.send(failure.take().map_or(Ok(()), Err));
        }
    }
    // The adaptor is gone: nothing can come before what is still held.
    let rest = ready(&mut held, Batch { lists: Vec::new(), complete_below: u64::MAX }, &spares);
    write_records(rest, &mut dates, &mut lines, &mut file, &mut failure);
    let _ = file.flush();
}

impl Drop for LoggingAdaptor {
    fn drop(&mut self) {
        self.close();
    }
}

impl LoggingAdaptor {
    #[inline(always)]
    fn allocate_upstream(&self, bytes: usize, alignment: usize, stream: Stream) -> Outcome<usize> {
        let result = self.upstream.allocate_aligned(bytes, alignment, stream);
        let event = match result {
            Ok(ptr) => (Action::Allocate, ptr),
            Err(_) => (Action::AllocateFailure, 0),
        };
        (result, Some(event))
    }

    #[inline(always)]
    fn deallocate_upstream(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Outcome<()> {
        let result = self.upstream.deallocate_aligned(ptr, bytes, alignment, stream);
        let event = result.is_ok().then_some((Action::Free, ptr));
        (result, event)
    }
}

impl MemoryResource for LoggingAdaptor {
    /// The event takes its place after the allocation, so it follows the free that gave the
    /// block back, on whatever thread.
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        self.with_buffer(
            move |events, buffer, unfenced| {
                let (result, event) = self.allocate_upstream(bytes, alignment, stream);
                let place = self.place(&buffer.last_order, unfenced);
                if let Some((action, ptr)) = event {
                    events.record(self.counter, self.event(place, action, ptr, bytes, stream, buffer.os_thread));
                }
                result
            },
            move || self.logged_nested(false, move || self.allocate_upstream(bytes, alignment, stream), bytes, stream),
        )
    }

    /// The event takes its place before the block goes back, so it precedes the block's next
    /// allocation, on whatever thread.
    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.with_buffer(
            move |events, buffer, unfenced| {
                let place = self.place(&buffer.last_order, unfenced);
                let (result, event) = self.deallocate_upstream(ptr, bytes, alignment, stream);
                if let Some((action, ptr)) = event {
                    events.record(self.counter, self.event(place, action, ptr, bytes, stream, buffer.os_thread));
                }
                result
            },
            move || self.logged_nested(true, move || self.deallocate_upstream(ptr, bytes, alignment, stream), bytes, stream),
        )
    }

    fn name(&self) -> &'static str {
        "logging"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "path": self.path, "upstream": self.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(upstream);
}

#[cfg(test)]
mod tests {
    use super::{ready, write_records, Action, Batch, Dates, Kind, Record, Spares};
    use crate::log_format::{parse_log, Event, Lines, TimeOfDay, COLUMNS};
    use crate::sync::clock::OrderedCounter;

    fn event(order: u64, action: Action) -> Record {
        Record { order, time: 0, thread: 1, kind: Kind::Line(action), ptr: 0x100, size: 256, stream: 0 }
    }

    /// The writer writes events in their places' order across batches: what a batch brings at
    /// or above the place where its collection began may be preceded by the next batch. Each
    /// thread's list is in order; the lists interleave. Emptied lists go back as spares.
    #[test]
    fn batches_are_written_in_order_up_to_where_their_collection_began() {
        let batch = |lists: &[&[u64]], complete_below| Batch {
            lists: lists.iter().map(|orders| orders.iter().map(|&o| event(o, Action::Free)).collect()).collect(),
            complete_below,
        };
        let orders = |records: Vec<Record>| records.iter().map(|e| e.order).collect::<Vec<_>>();
        let spares = Spares::default();
        let mut held = Vec::new();
        assert_eq!(orders(ready(&mut held, batch(&[&[0, 5], &[2]], 3), &spares)), [0, 2]);
        assert_eq!(spares.lock().len(), 2);
        assert!(spares.lock().iter().all(|list| list.is_empty() && list.capacity() > 0));
        assert_eq!(orders(ready(&mut held, batch(&[&[3], &[4, 7]], 6), &spares)), [3, 4, 5]);
        assert_eq!(orders(ready(&mut held, batch(&[&[6]], u64::MAX), &spares)), [6, 7]);
        assert!(held.is_empty());
    }

    /// Where events carry counter readings, each is dated through the latest anchor before it
    /// at the measured rate.
    #[test]
    fn counter_readings_are_dated_through_the_anchor_before_them() {
        let Some(counter) = OrderedCounter::get() else { return };
        let mut dates = Dates::new(0, Some(counter));
        dates.refresh();
        let rate = dates.rate;
        let anchor =
            |ticks: u64, ns: u64| Record { order: ticks, time: ns, thread: 0, kind: Kind::Anchor, ptr: ticks as usize, size: 0, stream: 0 };
        // The fewest ticks that make `ns` at the measured rate.
        let ticks_for = |ns: u128| ((ns << 32).div_ceil(rate as u128)) as u64;
        let time_of = |dates: &mut Dates, order: u64| dates.time_of(&event(order, Action::Free)).to_string();
        dates.take_anchor(&anchor(1 << 40, 5_000_000_000));
        assert_eq!(time_of(&mut dates, (1 << 40) + ticks_for(1_000_000_000)), "00:00:06.000000");
        dates.take_anchor(&anchor(1 << 41, 7_000_000_000));
        assert_eq!(time_of(&mut dates, (1 << 41) + ticks_for(500_000_000)), "00:00:07.500000");
        assert_eq!(time_of(&mut dates, (1 << 41) - ticks_for(1_000)), "00:00:06.999999");
    }

    /// What the writer writes, the replay's reader reads back as it was recorded: thread, time
    /// of day (local, to the microsecond), action, pointer, size and stream, line by line,
    /// across the writes of a small text.
    #[test]
    fn written_records_parse_back_as_recorded() {
        let utc_offset = 5 * 3600 + 1800;
        let actions = [Action::Allocate, Action::Free, Action::AllocateFailure];
        let records: Vec<Record> = (0..300u64)
            .map(|n| Record {
                order: n,
                // 2023-11-14 22:13:20.123456789 UTC, then a little under a second apart.
                time: 1_700_000_000_123_456_789 + n * 987_654_321,
                ptr: if n % 3 == 2 { 0 } else { (0x7f3a_4000_0000 + n * 0x1000) as usize >> (n % 40) },
                size: (n as usize) << (n % 50),
                stream: [0, 0x55d0_c2a3_b4c0, 2][n as usize % 3],
                thread: (4_031_547 + n % 4) as u32,
                kind: Kind::Line(actions[n as usize % 3]),
            })
            .collect();
        let mut file = format!("{COLUMNS}\n").into_bytes();
        let mut failure = None;
        write_records(records.clone(), &mut Dates::new(utc_offset, None), &mut Lines::new(0), &mut file, &mut failure);
        assert_eq!(failure, None);
        let text = String::from_utf8(file).unwrap();
        assert_eq!(text.lines().nth(1), Some("4031547,03:43:20.123456,allocate,0x7f3a40000000,0,0"), "5:30 east of UTC");
        let expected: Vec<Event> = records
            .iter()
            .enumerate()
            .map(|(at, record)| Event {
                line: at + 2,
                thread: u64::from(record.thread),
                time: Some(TimeOfDay::from_unix_ns(record.time, utc_offset)),
                action: actions[at % 3],
                pointer: record.ptr,
                size: record.size,
                stream: record.stream,
            })
            .collect();
        assert_eq!(parse_log(&text).unwrap(), expected);
    }
}
