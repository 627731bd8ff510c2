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
//! An allocating thread only records its event (time, thread, action, pointer, size,
//! stream: six words) in a buffer of its own (a shard, under a lock no other thread takes
//! but to collect). When one thread's buffer fills up, or on flush, every thread's buffer is
//! collected at once and handed to a writer thread, which merges them in time order, formats
//! the lines and writes them: no allocating thread formats text, waits for the disk, or shares
//! a cache line with another to log. Each thread's events keep their order; an allocation's
//! event is recorded before its pointer is returned, so its free, on whatever thread, comes
//! after it in the file.

use super::shards::{self, Shard, Shards};
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::bias::Bias;
use crate::platform::biased_lock::BiasedLock;
use crate::platform::Stream;
use crate::resources::MemoryResource;
use parking_lot::{Mutex, ReentrantMutex};
use std::cell::{Cell, RefCell};
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Weak};

pub const HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream\n";

/// Events a thread buffers before every buffer goes to the writer thread (224 KiB a thread:
/// fewer hand-overs, each of which wakes the writer).
const BUFFER_EVENTS: usize = 4096;

#[derive(Debug, Clone, Copy)]
enum Action {
    Allocate,
    AllocateFailure,
    Free,
}

/// One line of the log, before formatting.
#[derive(Debug, Clone, Copy)]
struct Event {
    /// The event's place in the adaptor's order of events (see `LoggingAdaptor::logged`).
    order: u64,
    /// Wall-clock time, ns since the Unix epoch.
    time: u64,
    thread: u64,
    action: Action,
    ptr: usize,
    size: usize,
    stream: usize,
}

thread_local! {
    /// Whether this thread is inside a logged operation, holding its buffer's lock.
    static LOGGING_ON_THIS_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as inside a logged operation until dropped (also when it unwinds).
struct InsideLogged;

impl InsideLogged {
    fn enter() -> Self {
        let _ = LOGGING_ON_THIS_THREAD.try_with(|inside| inside.set(true));
        InsideLogged
    }
}

impl Drop for InsideLogged {
    fn drop(&mut self) {
        let _ = LOGGING_ON_THIS_THREAD.try_with(|inside| inside.set(false));
    }
}

/// One thread's events not yet handed to the writer, in the order it recorded them. The lock
/// is biased to its thread, which then takes it without an atomic read-modify-write.
struct Buffer {
    events: BiasedLock<Vec<Event>>,
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer { events: BiasedLock::new(Vec::new()) }
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

/// Every thread's buffered events, and the place in the order below which all events are in
/// this batch or an earlier one.
struct Batch {
    events: Vec<Event>,
    complete_below: u64,
}

enum Job {
    Write(Batch),
    /// Write, flush the file, and answer with the first write error since the last flush.
    Flush(Batch, Sender<std::result::Result<(), String>>),
}

pub struct LoggingAdaptor {
    upstream: Upstream,
    path: String,
    buffers: Shards<Buffer>,
    /// The next event's place in the order of events. Clocks read on different processors do
    /// not order events that close, so each event takes a number: with plain loads and stores
    /// while one thread logs (it holds `order_bias`), with an atomic add once others do.
    next_order: AtomicU64,
    order_bias: Bias,
    /// Events of threads whose thread-locals are gone (logging from a thread-local destructor).
    stray: Buffer,
    /// Events of calls made from inside another logged call on the same thread (see `logged`).
    nested: ReentrantMutex<RefCell<Vec<Event>>>,
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
        let writer = std::thread::Builder::new()
            .name("rmm-log-writer".into())
            .spawn(move || write_jobs(file, jobs, utc_offset))
            .map_err(|e| Error::Io(format!("cannot start the log writer thread: {e}")))?;
        let adaptor = Arc::new(LoggingAdaptor {
            upstream: Upstream::new(upstream),
            path,
            buffers: Shards::new((), &BUFFERS),
            next_order: AtomicU64::new(0),
            order_bias: Bias::new(),
            stray: Buffer::default(),
            nested: ReentrantMutex::new(RefCell::new(Vec::new())),
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
    /// lies under one of them, and failure callbacks allocate. Such a nested call records under
    /// the reentrant `nested` lock instead of the thread's buffer, which its caller holds.
    #[inline]
    fn logged<T>(
        &self,
        frees: bool,
        operation: impl Fn() -> (Result<T>, Option<(Action, usize)>),
        size: usize,
        stream: Stream,
    ) -> Result<T> {
        let place = || self.next_place();
        let record = |events: &mut Vec<Event>, before: Option<u64>, event: Option<(Action, usize)>| {
            if let Some((action, ptr)) = event {
                let order = before.unwrap_or_else(place);
                let time = crate::platform::clock::wall_clock_ns();
                events.push(Event { order, time, thread: crate::platform::os_thread_id(), action, ptr, size, stream: stream.0 });
            }
        };
        if LOGGING_ON_THIS_THREAD.try_with(Cell::get).unwrap_or(false) {
            let nested = self.nested.lock();
            let before = frees.then(place);
            let (result, event) = operation();
            record(&mut nested.borrow_mut(), before, event);
            return result;
        }
        let run = |buffer: &Buffer| {
            let mut events = buffer.events.lock();
            let before = frees.then(place);
            let (result, event) = {
                let _inside = InsideLogged::enter();
                operation()
            };
            record(&mut events, before, event);
            (result, events.len() >= BUFFER_EVENTS)
        };
        let (result, full) = self.buffers.with(run).unwrap_or_else(|| run(&self.stray));
        if full {
            self.hand_over();
        }
        result
    }

    fn next_place(&self) -> u64 {
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
    /// before this collection began is in it or in an earlier one.
    fn collect(&self) -> Batch {
        let complete_below = self.next_order.load(Ordering::SeqCst);
        let mut events = Vec::with_capacity(BUFFER_EVENTS);
        let mut take = |buffer: &Buffer| events.append(&mut buffer.events.lock());
        self.buffers.for_each(&mut take);
        take(&self.stray);
        events.append(&mut self.nested.lock().borrow_mut());
        Batch { events, complete_below }
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
/// can precede.
fn ready(held: &mut Vec<Event>, batch: Batch) -> Vec<Event> {
    held.extend(batch.events);
    held.sort_unstable_by_key(|event| event.order);
    let split = held.partition_point(|event| event.order < batch.complete_below);
    let rest = held.split_off(split);
    std::mem::replace(held, rest)
}

fn write_jobs(file: std::fs::File, jobs: std::sync::mpsc::Receiver<Job>, utc_offset: i64) {
    let mut file = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut failure: Option<String> = None;
    let mut clock = TimeOfDay::new(utc_offset);
    let mut held = Vec::new();
    for job in jobs {
        let (batch, answer) = match job {
            Job::Write(batch) => (batch, None),
            Job::Flush(batch, answer) => (batch, Some(answer)),
        };
        for event in ready(&mut held, batch) {
            if let Err(e) = file.write_all(format_line(&event, &mut clock).bytes()) {
                failure.get_or_insert(e.to_string());
            }
        }
        if let Some(answer) = answer {
            if let Err(e) = file.flush() {
                failure.get_or_insert(e.to_string());
            }
            let _ = answer.send(failure.take().map_or(Ok(()), Err));
        }
    }
    // The adaptor is gone: nothing can come before what is still held.
    for event in ready(&mut held, Batch { events: Vec::new(), complete_below: u64::MAX }) {
        let _ = file.write_all(format_line(&event, &mut clock).bytes());
    }
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

/// `thread,HH:MM:SS.ffffff,action,pointer,size,stream` and a newline, as RMM writes it.
fn format_line(event: &Event, clock: &mut TimeOfDay) -> Line {
    let mut line = Line::default();
    line.number(event.thread);
    line.push(b",");
    line.push(clock.of(event.time / 1_000_000_000));
    line.padded(event.time % 1_000_000_000 / 1000, 6);
    line.push(match event.action {
        Action::Allocate => b",allocate,",
        Action::AllocateFailure => b",allocate failure,",
        Action::Free => b",free,",
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

impl MemoryResource for LoggingAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        let allocate = || {
            let result = self.upstream.allocate(bytes, stream);
            let event = match result {
                Ok(ptr) => (Action::Allocate, ptr),
                Err(_) => (Action::AllocateFailure, 0),
            };
            (result, Some(event))
        };
        self.logged(false, allocate, bytes, stream)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        let deallocate = || {
            let result = self.upstream.deallocate(ptr, bytes, stream);
            let event = result.is_ok().then_some((Action::Free, ptr));
            (result, event)
        };
        self.logged(true, deallocate, bytes, stream)
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
    use super::{format_line, ready, Action, Batch, Event, TimeOfDay};

    /// The writer writes events in their places' order across batches: what a batch brings at
    /// or above the place where its collection began may be preceded by the next batch.
    #[test]
    fn batches_are_written_in_order_up_to_where_their_collection_began() {
        let event = |order| Event { order, time: 0, thread: 1, action: Action::Free, ptr: 0x100, size: 256, stream: 0 };
        let batch = |orders: &[u64], complete_below| Batch { events: orders.iter().map(|&o| event(o)).collect(), complete_below };
        let orders = |events: Vec<Event>| events.iter().map(|e| e.order).collect::<Vec<_>>();
        let mut held = Vec::new();
        assert_eq!(orders(ready(&mut held, batch(&[5, 0, 2], 3))), [0, 2]);
        assert_eq!(orders(ready(&mut held, batch(&[7, 3, 4], 6))), [3, 4, 5]);
        assert_eq!(orders(ready(&mut held, batch(&[6], u64::MAX))), [6, 7]);
        assert!(held.is_empty());
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
            assert_eq!(std::str::from_utf8(format_line(&event, &mut clock).bytes()).unwrap(), expected);
        }
    }
}
