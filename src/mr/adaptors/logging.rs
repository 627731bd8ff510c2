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
//! Threads format their line themselves and append it to a shared buffer under a lock held
//! only for the copy; full buffers go to a writer thread, so no allocating thread ever waits
//! for the disk.

use super::Outer;
use crate::platform::biased_lock::BiasedLock;
use crate::error::{Error, Result};
use crate::mr::{MemoryResource, Via};
use crate::platform::Stream;
use parking_lot::Mutex;
use std::io::Write;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Weak};

pub const HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream\n";

/// Bytes buffered before they go to the writer thread.
const BUFFER_BYTES: usize = 64 << 10;

struct Buffered {
    lines: Vec<u8>,
    live: usize,
}

enum Job {
    Write(Vec<u8>),
    /// Write, flush the file, and answer with the first write error since the last flush.
    Flush(Vec<u8>, Sender<std::result::Result<(), String>>),
}

pub struct LoggingAdaptor {
    outer: Outer,
    path: String,
    /// Lines not yet handed to the writer, and the allocations live through this adaptor
    /// (counted here, under the lock the line takes anyway, rather than by extra atomics).
    buffer: BiasedLock<Buffered>,
    /// Buffers the writer thread has written out, for reuse: fresh ones would cost page faults.
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    writer: Mutex<Option<(Sender<Job>, std::thread::JoinHandle<()>)>>,
    /// Seconds east of UTC, read once: the log shows local time as RMM's does.
    utc_offset: i64,
}

static LIVE: Mutex<Vec<Weak<LoggingAdaptor>>> = Mutex::new(Vec::new());

impl LoggingAdaptor {
    /// Logs to `path`, or, when None, to the file `RMM_LOG_FILE` names. The file is created
    /// (truncated) at once, so an unwritable path fails here.
    pub fn new(upstream: Arc<dyn MemoryResource>, path: Option<&str>) -> Result<Arc<Self>> {
        let path = match path {
            Some(path) => path.to_string(),
            None => std::env::var("RMM_LOG_FILE")
                .map_err(|_| Error::invalid("no log file: the path is NULL and RMM_LOG_FILE is not set"))?,
        };
        if path.is_empty() {
            return Err(Error::invalid("the log file path is empty"));
        }
        let mut file = std::fs::File::create(&path).map_err(|e| Error::Io(format!("cannot create log file {path}: {e}")))?;
        file.write_all(HEADER.as_bytes()).map_err(|e| Error::Io(format!("cannot write log file {path}: {e}")))?;
        let (sender, jobs) = channel::<Job>();
        let spare = Arc::new(Mutex::new(Vec::new()));
        let returned = spare.clone();
        let writer = std::thread::Builder::new()
            .name("rmm-log-writer".into())
            .spawn(move || write_jobs(file, jobs, &returned))
            .map_err(|e| Error::Io(format!("cannot start the log writer thread: {e}")))?;
        let adaptor = Outer::build(upstream, |outer| LoggingAdaptor {
            outer,
            path,
            buffer: BiasedLock::new(Buffered { lines: Vec::with_capacity(BUFFER_BYTES), live: 0 }),
            spare,
            writer: Mutex::new(Some((sender, writer))),
            utc_offset: utc_offset(),
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
            let mut buffer = self.buffer.lock();
            let lines = std::mem::take(&mut buffer.lines);
            let writer = self.writer.lock();
            let Some((sender, _)) = writer.as_ref() else { return Ok(()) };
            sender.send(Job::Flush(lines, answer)).map_err(|_| Error::Io(format!("the writer of {} stopped", self.path)))?;
        }
        answered
            .recv()
            .map_err(|_| Error::Io(format!("the writer of {} stopped", self.path)))?
            .map_err(|e| Error::Io(format!("writing log file {}: {e}", self.path)))
    }

    /// Appends one line; `live` is what the event changes in the live allocation count.
    fn log(&self, action: &str, ptr: usize, bytes: usize, stream: Stream, live: isize) {
        let mut line = Line::default();
        line.thread_and_time(self.utc_offset);
        line.push(action.as_bytes());
        line.push(b",");
        match ptr {
            0 => line.push(b"(nil)"),
            ptr => line.hex(ptr),
        }
        line.push(b",");
        line.number(bytes as u64);
        line.push(b",");
        match stream.0 {
            0 => line.push(b"0"),
            handle => line.hex(handle),
        }
        line.push(b"\n");
        let mut buffer = self.buffer.lock();
        buffer.live = buffer.live.wrapping_add_signed(live);
        buffer.lines.extend_from_slice(line.bytes());
        if buffer.lines.len() >= BUFFER_BYTES {
            let empty = self.spare.lock().pop().unwrap_or_else(|| Vec::with_capacity(BUFFER_BYTES));
            let full = std::mem::replace(&mut buffer.lines, empty);
            // Sent under the buffer lock, so lines reach the file in the order they were
            // buffered; sending never blocks.
            if let Some((sender, _)) = self.writer.lock().as_ref() {
                let _ = sender.send(Job::Write(full));
            }
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
pub fn flush_all() {
    let live: Vec<_> = LIVE.lock().iter().filter_map(Weak::upgrade).collect();
    for adaptor in live {
        let _ = adaptor.flush();
    }
}

/// How many written buffers wait for reuse at most.
const SPARE_BUFFERS: usize = 4;

fn write_jobs(file: std::fs::File, jobs: std::sync::mpsc::Receiver<Job>, spare: &Mutex<Vec<Vec<u8>>>) {
    let mut file = std::io::BufWriter::with_capacity(BUFFER_BYTES, file);
    let mut failure: Option<String> = None;
    for job in jobs {
        match job {
            Job::Write(mut lines) => {
                if let Err(e) = file.write_all(&lines) {
                    failure.get_or_insert(e.to_string());
                }
                let mut spare = spare.lock();
                if spare.len() < SPARE_BUFFERS {
                    lines.clear();
                    spare.push(lines);
                }
            }
            Job::Flush(lines, answer) => {
                if let Err(e) = file.write_all(&lines).and_then(|_| file.flush()) {
                    failure.get_or_insert(e.to_string());
                }
                let _ = answer.send(failure.take().map_or(Ok(()), Err));
            }
        }
    }
    let _ = file.flush();
}

impl Drop for LoggingAdaptor {
    fn drop(&mut self) {
        self.close();
    }
}

impl MemoryResource for LoggingAdaptor {
    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        match self.outer.upstream.allocate_via(bytes, stream, via) {
            Ok(ptr) => {
                self.log("allocate", ptr, bytes, stream, 1);
                Ok(ptr)
            }
            Err(e) => {
                self.log("allocate failure", 0, bytes, stream, 0);
                Err(e)
            }
        }
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.outer.upstream.deallocate_via(ptr, bytes, stream, via)?;
        self.log("free", ptr, bytes, stream, -1);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "logging"
    }

    fn has_live_allocations(&self) -> bool {
        self.buffer.lock().live > 0
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({ "resource": self.name(), "device": self.device(), "path": self.path, "upstream": self.outer.upstream.snapshot() })
    }

    crate::adaptor_forwarding_methods!(outer);
}

/// A CSV line built on the stack: formatting costs no heap allocation.
struct Line {
    bytes: [u8; 160],
    len: usize,
}

impl Default for Line {
    fn default() -> Self {
        Line { bytes: [0; 160], len: 0 }
    }
}

impl Line {
    fn push(&mut self, text: &[u8]) {
        // Byte by byte: the pieces are a few bytes long, where a memcpy call costs more.
        for &byte in text {
            if self.len < self.bytes.len() {
                self.bytes[self.len] = byte;
                self.len += 1;
            }
        }
    }

    fn number(&mut self, mut value: u64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        loop {
            at -= 1;
            digits[at] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        self.push(&digits[at..]);
    }

    fn padded(&mut self, value: u64, width: usize) {
        let mut digits = [b'0'; 20];
        let mut rest = value;
        for at in (0..width).rev() {
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        self.push(&digits[..width]);
    }

    fn hex(&mut self, value: usize) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut digits = [0u8; 16];
        let mut at = digits.len();
        let mut rest = value;
        loop {
            at -= 1;
            digits[at] = DIGITS[rest & 15];
            rest >>= 4;
            if rest == 0 {
                break;
            }
        }
        self.push(b"0x");
        self.push(&digits[at..]);
    }

    /// `thread,HH:MM:SS.ffffff,` in local time. The thread id and the time up to the second
    /// are formatted once per thread and second, not per line.
    fn thread_and_time(&mut self, utc_offset: i64) {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let second = now.as_secs();
        LINE_START.with(|start| {
            let mut start = start.borrow_mut();
            if start.1 != second || start.2 == 0 {
                let mut prefix = Line::default();
                prefix.number(crate::platform::os_thread_id());
                prefix.push(b",");
                let seconds = (second as i64 + utc_offset).rem_euclid(86_400) as u64;
                prefix.padded(seconds / 3600, 2);
                prefix.push(b":");
                prefix.padded(seconds / 60 % 60, 2);
                prefix.push(b":");
                prefix.padded(seconds % 60, 2);
                prefix.push(b".");
                let len = prefix.len.min(start.0.len());
                start.0[..len].copy_from_slice(&prefix.bytes[..len]);
                start.1 = second;
                start.2 = len;
            }
            let len = start.2;
            self.push(&start.0[..len]);
        });
        self.padded(u64::from(now.subsec_micros()), 6);
        self.push(b",");
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

thread_local! {
    /// This thread's `thread,HH:MM:SS.` for the second it was made in: (bytes, second, length).
    static LINE_START: std::cell::RefCell<([u8; 40], u64, usize)> = const { std::cell::RefCell::new(([0; 40], 0, 0)) };
}

fn utc_offset() -> i64 {
    crate::platform::local_utc_offset_seconds()
}
