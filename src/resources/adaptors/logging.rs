//! Logging (RMM's `logging_resource_adaptor`): one CSV line per event, in RMM's format, so
//! RAPIDS tools read our logs and `rmm-replay` reads theirs:
//!
//!   Thread,Time,Action,Pointer,Size,Stream
//!   4031547,14:03:07.123456,allocate,0x7f3a40000000,1024,0
//!
//! Thread is the OS thread id, Time the local time of day with microseconds, Action one of
//! `allocate`, `allocate failure`, `free`; a failed allocation's pointer is `(nil)`; the
//! stream is the handle in hex (`0` for the default stream).
//!
//! An allocating thread only records its event (order, time, thread, action, pointer, size,
//! stream: seven words) in a buffer of its own (a shard, under a lock no other thread takes
//! but to collect). When one thread's buffer fills up, or on flush, every thread's buffer is
//! collected at once (swapped for an empty one, not copied) and handed to a writer thread,
//! which merges them in order, formats the lines and writes them: no allocating thread formats
//! text, waits for the disk, or shares a cache line with another to log. Each thread's events
//! keep their order; an allocation's event is recorded before its pointer is returned, so its
//! free, on whatever thread, comes after it in the file.
//!
//! Where the time-stamp counter orders events across processors (`clock::OrderedCounter`), an
//! event's reading of it is both its place in the order and its time, which the writer turns
//! into wall-clock time through anchors (readings of both clocks) each thread records every
//! 2^21 ticks (0.5 to 2 ms): threads share nothing to log. Elsewhere each event takes a number
//! from one counter and reads the wall clock.

use super::shards::{self, Shard, Shards};
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::bias::Bias;
use crate::platform::biased_lock::BiasedLock;
use crate::platform::clock::{Anchor, OrderedCounter};
use crate::platform::Stream;
use crate::resources::MemoryResource;
use parking_lot::{Mutex, ReentrantMutex};
use std::cell::RefCell;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Weak};

pub const HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream\n";

/// Events a thread buffers before every buffer goes to the writer thread (224 KiB a thread:
/// fewer hand-overs, each of which wakes the writer).
const BUFFER_EVENTS: usize = 4096;

/// Counter ticks between a thread's anchors: 0.5 to 2 ms at the 1 to 4 GHz counters run at,
/// over which the measured rate's error adds well under a microsecond.
const ANCHOR_TICKS: u64 = 1 << 21;

/// Emptied buffers the writer gives back for collections to swap in, at most.
const SPARE_BUFFERS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Allocate,
    AllocateFailure,
    Free,
    /// Not a line: a reading of both clocks (`time` the wall clock, `ptr` the counter) that
    /// dates the events after it.
    Anchor,
}

/// One line of the log, before formatting.
#[derive(Debug, Clone, Copy)]
struct Event {
    /// The event's place in the adaptor's order of events (see `LoggingAdaptor::logged`): its
    /// counter reading, or its number.
    order: u64,
    /// Wall-clock time, ns since the Unix epoch (where events are numbered; the writer dates
    /// counter readings).
    time: u64,
    thread: u64,
    action: Action,
    ptr: usize,
    size: usize,
    stream: usize,
}

/// Events in the order one thread (or the nested lock's holders) recorded them.
#[derive(Default)]
struct Events {
    list: Vec<Event>,
    /// The counter reading from which the next event needs an anchor first.
    anchor_due: u64,
}

impl Events {
    #[inline(always)]
    fn record(&mut self, counter: Option<OrderedCounter>, event: Event) {
        if let Some(counter) = counter {
            if event.order >= self.anchor_due {
                self.anchor(counter, event.order);
            }
        }
        self.list.push(event);
    }

    /// An anchor placed just before the event at `order`.
    #[cold]
    #[inline(never)]
    fn anchor(&mut self, counter: OrderedCounter, order: u64) {
        let Anchor { ticks, ns } = counter.anchor();
        self.list.push(Event { order, time: ns, thread: 0, action: Action::Anchor, ptr: ticks as usize, size: 0, stream: 0 });
        self.anchor_due = order.saturating_add(ANCHOR_TICKS);
    }
}

/// One thread's events not yet handed to the writer. The lock is biased to its thread, which
/// then takes it without an atomic read-modify-write.
struct Buffer {
    events: BiasedLock<Events>,
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer { events: BiasedLock::new(Events::default()) }
    }
}

impl Shard for Buffer {
    type Shared = ();
    /// A buffer whose thread has gone stays with the adaptor, which collects it with the rest.
    fn retire(&self, _: &()) {}
}

thread_local! {
    static BUFFERS: shards::Local<Buffer> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Every thread's buffered events (a list per buffer), and the place in the order below which
/// all events are in this batch or an earlier one.
struct Batch {
    lists: Vec<Vec<Event>>,
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
type Spares = Arc<Mutex<Vec<Vec<Event>>>>;

pub struct LoggingAdaptor {
    upstream: Upstream,
    path: String,
    /// The time-stamp counter where it orders events across threads.
    counter: Option<OrderedCounter>,
    buffers: Shards<Buffer>,
    /// Where the counter does not order events: the next event's number. Clocks read on
    /// different processors do not order events that close, so each event takes a number:
    /// with plain loads and stores while one thread logs (it holds `order_bias`), with an
    /// atomic add once others do.
    next_order: AtomicU64,
    order_bias: Bias,
    /// Events of calls made from inside another logged call on the same thread, or from a
    /// thread whose thread-locals are gone (see `logged`).
    nested: ReentrantMutex<RefCell<Events>>,
    spares: Spares,
    /// Held while a batch is collected and sent, so that batches reach the file in order.
    writer: Mutex<Option<(Sender<Job>, std::thread::JoinHandle<()>)>>,
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
        file.write_all(HEADER.as_bytes()).map_err(|e| Error::Io(format!("cannot write log file {path}: {e}")))?;
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
            next_order: AtomicU64::new(0),
            order_bias: Bias::new(),
            nested: ReentrantMutex::new(RefCell::new(Events::default())),
            spares,
            writer: Mutex::new(Some((sender, writer))),
        });
        let mut live = LIVE.lock();
        live.retain(|weak| weak.strong_count() > 0);
        live.push(Arc::downgrade(&adaptor));
        Ok(adaptor)
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Writes every buffered line to the file and flushes it; reports any write error since
    /// the last flush.
    pub fn flush(&self) -> Result<()> {
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

    /// Runs `operation` and records its event (None: no event) in this thread's buffer, under
    /// the buffer's lock: a collection sees the event if it sees the operation's effect. A free
    /// takes its place in the order before it gives the block back, an allocation after it has
    /// the block, so a block freed on one thread and allocated again on another is freed first
    /// in the file, and allocated before it is freed.
    ///
    /// An operation can come back into a logging adaptor on the same thread: an upstream out of
    /// memory makes every pool of the device give chunks back, through this adaptor when it
    /// lies under one of them, and failure callbacks allocate. The thread's buffers are in use
    /// then (`Shards::with` says None), and such a nested call records under the reentrant
    /// `nested` lock instead, as does a call from a thread whose thread-locals are gone.
    #[inline(always)]
    fn logged<T>(&self, frees: bool, operation: impl Fn() -> Outcome<T>, size: usize, stream: Stream) -> Result<T> {
        let run = |buffer: &Buffer| {
            let mut events = buffer.events.lock();
            let (result, event) = self.placed(frees, &operation);
            if let Some(event) = event {
                self.record(&mut events, event, size, stream);
            }
            (result, events.list.len() >= BUFFER_EVENTS)
        };
        let Some((result, full)) = self.buffers.with(run) else {
            return self.logged_nested(frees, operation, size, stream);
        };
        if full {
            self.hand_over();
        }
        result
    }

    /// `logged` from inside another logged call on this thread, or without thread-locals.
    #[cold]
    #[inline(never)]
    fn logged_nested<T>(&self, frees: bool, operation: impl Fn() -> Outcome<T>, size: usize, stream: Stream) -> Result<T> {
        let nested = self.nested.lock();
        let (result, event) = self.placed(frees, &operation);
        if let Some(event) = event {
            self.record(&mut nested.borrow_mut(), event, size, stream);
        }
        result
    }

    /// Runs `operation`; its event, if any, with its place in the order: taken before the
    /// operation for a free, after it for an allocation.
    #[inline(always)]
    fn placed<T>(&self, frees: bool, operation: &impl Fn() -> Outcome<T>) -> (Result<T>, Option<(u64, Action, usize)>) {
        let before = frees.then(|| self.next_order());
        let (result, event) = operation();
        (result, event.map(|(action, ptr)| (before.unwrap_or_else(|| self.next_order()), action, ptr)))
    }

    #[inline(always)]
    fn record(&self, events: &mut Events, (order, action, ptr): (u64, Action, usize), size: usize, stream: Stream) {
        let time = if self.counter.is_none() { crate::platform::clock::wall_clock_ns() } else { 0 };
        let thread = crate::platform::os_thread_id();
        events.record(self.counter, Event { order, time, thread, action, ptr, size, stream: stream.0 });
    }

    /// The next event's place in the order: its counter reading, or the next number.
    #[inline(always)]
    fn next_order(&self) -> u64 {
        match self.counter {
            Some(counter) => counter.read(),
            None => self.next_number(),
        }
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
        let mut take = |events: &mut Events| {
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
        let _ = self.flush();
        if let Some((sender, thread)) = self.writer.lock().take() {
            drop(sender);
            let _ = thread.join();
        }
    }
}

/// Flushes every live logging adaptor (at process exit).
pub fn flush_all_logs() {
    let live: Vec<_> = LIVE.lock().iter().filter_map(Weak::upgrade).collect();
    for adaptor in live {
        let _ = adaptor.flush();
    }
}

/// Adds a batch to the events held back, and takes out, in order, those that no later batch
/// can precede. The batch's lists go back to `spares`, emptied.
fn ready(held: &mut Vec<Event>, batch: Batch, spares: &Mutex<Vec<Vec<Event>>>) -> Vec<Event> {
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
    time_of_day: TimeOfDay,
    counter: Option<OrderedCounter>,
    anchor: Option<Anchor>,
    rate: u64,
}

impl Dates {
    fn new(utc_offset: i64, counter: Option<OrderedCounter>) -> Self {
        Dates { time_of_day: TimeOfDay::new(utc_offset), counter, anchor: None, rate: 0 }
    }

    /// Before a batch: the counter's rate, as measured so far.
    fn refresh(&mut self) {
        if let Some(counter) = self.counter {
            self.rate = counter.rate();
        }
    }

    /// Takes in an event in the order of the file; the line to write for it, if any.
    fn line(&mut self, event: &Event) -> Option<Line> {
        let time = match self.counter {
            None => event.time,
            Some(_) if event.action == Action::Anchor => {
                self.anchor = Some(Anchor { ticks: event.ptr as u64, ns: event.time });
                return None;
            }
            // Every list starts with an anchor; none before an event would be a bug, but the
            // line is still worth writing, dated from now.
            Some(counter) => self.anchor.get_or_insert_with(|| counter.anchor()).wall_ns(event.order, self.rate),
        };
        Some(format_line(event, time, &mut self.time_of_day))
    }
}

/// Writes events in order; the first write error goes to `failure`.
fn write_events(events: Vec<Event>, dates: &mut Dates, file: &mut impl Write, failure: &mut Option<String>) {
    dates.refresh();
    for event in &events {
        if let Some(line) = dates.line(event) {
            if let Err(e) = file.write_all(line.bytes()) {
                failure.get_or_insert(e.to_string());
            }
        }
    }
}

fn write_jobs(file: std::fs::File, jobs: std::sync::mpsc::Receiver<Job>, mut dates: Dates, spares: Spares) {
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut failure: Option<String> = None;
    let mut held = Vec::new();
    for job in jobs {
        let (batch, answer) = match job {
            Job::Write(batch) => (batch, None),
            Job::Flush(batch, answer) => (batch, Some(answer)),
        };
        write_events(ready(&mut held, batch, &spares), &mut dates, &mut file, &mut failure);
        if let Some(answer) = answer {
            if let Err(e) = file.flush() {
                failure.get_or_insert(e.to_string());
            }
            let _ = answer.send(failure.take().map_or(Ok(()), Err));
        }
    }
    // The adaptor is gone: nothing can come before what is still held.
    let rest = ready(&mut held, Batch { lists: Vec::new(), complete_below: u64::MAX }, &spares);
    write_events(rest, &mut dates, &mut file, &mut failure);
    let _ = file.flush();
}

/// `HH:MM:SS.` of local time, formatted once per second of log time.
struct TimeOfDay {
    utc_offset: i64,
    second: u64,
    text: [u8; 9],
}

impl TimeOfDay {
    fn new(utc_offset: i64) -> Self {
        TimeOfDay { utc_offset, second: u64::MAX, text: *b"00:00:00." }
    }

    fn of(&mut self, second: u64) -> &[u8; 9] {
        if second != self.second {
            let seconds = (second as i64 + self.utc_offset).rem_euclid(86_400) as u64;
            for (at, value) in [(0, seconds / 3600), (3, seconds / 60 % 60), (6, seconds % 60)] {
                self.text[at..at + 2].copy_from_slice(&PAIRS[value as usize * 2..value as usize * 2 + 2]);
            }
            self.second = second;
        }
        &self.text
    }
}

/// `thread,HH:MM:SS.ffffff,action,pointer,size,stream` and a newline, as RMM writes it, for
/// an event at `time` (ns since the Unix epoch).
fn format_line(event: &Event, time: u64, clock: &mut TimeOfDay) -> Line {
    let mut line = Line::default();
    line.number(event.thread);
    line.push(b",");
    line.push(clock.of(time / 1_000_000_000));
    line.padded(time % 1_000_000_000 / 1000, 6);
    line.push(match event.action {
        Action::Allocate => b",allocate,",
        Action::AllocateFailure => b",allocate failure,",
        Action::Free | Action::Anchor => b",free,",
    });
    match event.ptr {
        0 => line.push(b"(nil)"),
        ptr => line.hex(ptr),
    }
    line.push(b",");
    line.number(event.size as u64);
    line.push(b",");
    match event.stream {
        0 => line.push(b"0"),
        handle => line.hex(handle),
    }
    line.push(b"\n");
    line
}

impl Drop for LoggingAdaptor {
    fn drop(&mut self) {
        self.close();
    }
}

impl LoggingAdaptor {
    #[inline(always)]
    fn allocate_upstream(&self, bytes: usize, stream: Stream) -> Outcome<usize> {
        let result = self.upstream.allocate(bytes, stream);
        let event = match result {
            Ok(ptr) => (Action::Allocate, ptr),
            Err(_) => (Action::AllocateFailure, 0),
        };
        (result, Some(event))
    }

    #[inline(always)]
    fn deallocate_upstream(&self, ptr: usize, bytes: usize, stream: Stream) -> Outcome<()> {
        let result = self.upstream.deallocate(ptr, bytes, stream);
        let event = result.is_ok().then_some((Action::Free, ptr));
        (result, event)
    }
}

impl MemoryResource for LoggingAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.logged(false, || self.allocate_upstream(bytes, stream), bytes, stream)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.logged(true, || self.deallocate_upstream(ptr, bytes, stream), bytes, stream)
    }

    fn name(&self) -> &'static str {
        "logging"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "path": self.path, "upstream": self.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(upstream);
}

/// The longest line: thread id (20 digits), time, the longest action, pointer, size and
/// stream (16 hex digits each with "0x", 20 digits), commas and the newline.
const LINE_MAX: usize = 20 + 1 + 15 + 1 + 16 + 1 + 18 + 1 + 20 + 1 + 18 + 1;

/// Room past the end of a line, so that pieces are copied as fixed-size blocks (a move or two
/// each, where a copy of a variable length is a call to memmove).
const SLACK: usize = 40;

/// A CSV line built on the stack: formatting costs no heap allocation.
struct Line {
    bytes: [u8; LINE_MAX + SLACK],
    len: usize,
}

/// "00" to "99", for writing two decimal digits at a time.
const PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

impl Default for Line {
    fn default() -> Self {
        Line { bytes: [0; LINE_MAX + SLACK], len: 0 }
    }
}

impl Line {
    #[inline]
    fn push(&mut self, text: &[u8]) {
        let end = self.len + text.len();
        if end <= LINE_MAX {
            self.bytes[self.len..end].copy_from_slice(text);
            self.len = end;
        }
    }

    /// Appends the first `len` bytes of `block` (all of it is copied).
    #[inline]
    fn put<const N: usize>(&mut self, block: &[u8; N], len: usize) {
        const { assert!(N <= SLACK) };
        if self.len + len <= LINE_MAX {
            self.bytes[self.len..self.len + N].copy_from_slice(block);
            self.len += len.min(N);
        }
    }

    fn number(&mut self, mut value: u64) {
        let mut count = 1;
        while count < 20 && value >= 10u64.pow(count as u32) {
            count += 1;
        }
        let mut digits = [0u8; 20];
        let mut at = count;
        while at >= 2 {
            let pair = (value % 100) as usize * 2;
            value /= 100;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if at == 1 {
            digits[0] = b'0' + value as u8;
        }
        self.put(&digits, count);
    }

    /// `value` (below 10^width) with leading zeros, `width` even.
    fn padded(&mut self, mut value: u64, width: usize) {
        let mut digits = [b'0'; 20];
        let mut at = width;
        while at > 0 {
            let pair = (value % 100) as usize * 2;
            value /= 100;
            at -= 2;
            digits[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        self.put(&digits, width);
    }

    fn hex(&mut self, value: usize) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let count = ((usize::BITS - value.leading_zeros()).div_ceil(4) as usize).max(1);
        let mut digits = *b"0x0000000000000000";
        for at in 0..count {
            digits[2 + count - 1 - at] = DIGITS[(value >> (4 * at)) & 15];
        }
        self.put(&digits, 2 + count);
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::{format_line, ready, Action, Batch, Dates, Event, Spares, TimeOfDay};
    use crate::platform::clock::OrderedCounter;

    fn event(order: u64, action: Action) -> Event {
        Event { order, time: 0, thread: 1, action, ptr: 0x100, size: 256, stream: 0 }
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
        let orders = |events: Vec<Event>| events.iter().map(|e| e.order).collect::<Vec<_>>();
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
    /// at the measured rate, and anchors make no line.
    #[test]
    fn counter_readings_are_dated_through_the_anchor_before_them() {
        let Some(counter) = OrderedCounter::get() else { return };
        let mut dates = Dates::new(0, Some(counter));
        dates.refresh();
        let rate = dates.rate;
        let anchor = |ticks: u64, ns: u64| Event {
            order: ticks,
            time: ns,
            thread: 0,
            action: Action::Anchor,
            ptr: ticks as usize,
            size: 0,
            stream: 0,
        };
        let time_of =
            |line: Option<super::Line>| String::from_utf8(line.unwrap().bytes().to_vec()).unwrap().split(',').nth(1).unwrap().to_string();
        assert!(dates.line(&anchor(1 << 40, 5_000_000_000)).is_none());
        // The fewest ticks that make `ns` at the measured rate.
        let ticks_for = |ns: u128| ((ns << 32).div_ceil(rate as u128)) as u64;
        assert_eq!(time_of(dates.line(&event((1 << 40) + ticks_for(1_000_000_000), Action::Allocate))), "00:00:06.000000");
        assert!(dates.line(&anchor(1 << 41, 7_000_000_000)).is_none());
        assert_eq!(time_of(dates.line(&event((1 << 41) + ticks_for(500_000_000), Action::Free))), "00:00:07.500000");
        assert_eq!(time_of(dates.line(&event((1 << 41) - ticks_for(1_000), Action::Free))), "00:00:06.999999");
    }

    /// Lines come out exactly as RMM writes them, whatever the widths of the numbers.
    #[test]
    fn lines_are_rmm_csv() {
        let mut clock = TimeOfDay::new(3600);
        // 1970-01-02 13:04:05.000042 UTC is 14:04:05.000042 an hour east of UTC.
        let time = (86_400 + 13 * 3600 + 4 * 60 + 5) * 1_000_000_000 + 42_999;
        let cases = [
            (
                Event { order: 0, time, thread: 7, action: Action::Allocate, ptr: 0x7f3a_4000_0000, size: 1024, stream: 0 },
                "7,14:04:05.000042,allocate,0x7f3a40000000,1024,0\n",
            ),
            (
                Event {
                    order: 0,
                    time,
                    thread: 4031547,
                    action: Action::AllocateFailure,
                    ptr: 0,
                    size: 123456789012,
                    stream: 0x55d0_0a1b_2c30,
                },
                "4031547,14:04:05.000042,allocate failure,(nil),123456789012,0x55d00a1b2c30\n",
            ),
            (
                Event { order: 0, time: 0, thread: u64::MAX, action: Action::Free, ptr: usize::MAX, size: 0, stream: 1 },
                "18446744073709551615,01:00:00.000000,free,0xffffffffffffffff,0,0x1\n",
            ),
        ];
        for (event, expected) in cases {
            assert_eq!(std::str::from_utf8(format_line(&event, event.time, &mut clock).bytes()).unwrap(), expected);
        }
    }
}
