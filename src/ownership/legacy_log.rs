//! Legacy RMM's event log: with `enable_logging` in `rmmOptions_t`, every `rmmAlloc`,
//! `rmmRealloc` and `rmmFree` is recorded with its call site, and `rmmWriteLog`, `rmmLogSize`
//! and `rmmGetLog` give it back as legacy RMM's CSV:
//!
//!   Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,Location
//!
//! Start and End are seconds since logging began, Elapsed their difference, Location
//! `file:line`. As legacy RMM did by default, Free Memory and Total Memory are 0 (a device
//! query per event would cost more than the allocation).

use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The CSV's first line, as legacy RMM wrote it (see the module comment for the columns).
pub const HEADER: &str =
    "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,Location\n";

/// Which legacy call an event records (the CSV's Event Type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// `rmmAlloc`.
    Alloc,
    /// `rmmRealloc`: the new pointer is recorded; the old one stops being live.
    Realloc,
    /// `rmmFree`.
    Free,
}

/// A call to record: what, where and when.
pub struct Call {
    /// Which call.
    pub kind: EventKind,
    /// The device the memory is on.
    pub device: i32,
    /// The pointer handed out (the new one, for a realloc) or freed.
    pub ptr: usize,
    /// The raw `cudaStream_t` the call named.
    pub stream: usize,
    /// Bytes asked for (for a free, the allocation's size as recorded; 0 if it was unknown).
    pub size: usize,
    /// When the call began; its end is taken when it is recorded.
    pub start: Instant,
    /// The caller's source file (`__FILE__` through the `RMM_ALLOC` macros), when it gave one.
    pub file: Option<String>,
    /// The caller's source line (0 when it gave no file).
    pub line: u32,
}

struct Event {
    call: Call,
    end: Instant,
    live: usize,
}

struct Log {
    began: Instant,
    events: Vec<Event>,
    live: HashSet<usize>,
}

static ENABLED: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Option<Log>> = Mutex::new(None);

/// Starts a new, empty log (`rmmInitialize` with `enable_logging`), or stops recording.
pub fn enable(on: bool) {
    if on {
        *LOG.lock() = Some(Log { began: Instant::now(), events: Vec::new(), live: HashSet::new() });
    }
    ENABLED.store(on, Ordering::Release);
}

/// Whether calls are being recorded now (between `rmmInitialize` with `enable_logging` and
/// `rmmFinalize`); callers check it before gathering a `Call`.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// Records a call that succeeded; `freed` is the pointer a realloc released.
pub fn record(call: Call, freed: Option<usize>) {
    if !enabled() {
        return;
    }
    let end = Instant::now();
    let mut log = LOG.lock();
    let Some(log) = log.as_mut() else { return };
    match call.kind {
        EventKind::Free => {
            log.live.remove(&call.ptr);
        }
        EventKind::Alloc | EventKind::Realloc => {
            if let Some(freed) = freed {
                log.live.remove(&freed);
            }
            if call.ptr != 0 {
                log.live.insert(call.ptr);
            }
        }
    }
    let live = log.live.len();
    log.events.push(Event { call, end, live });
}

/// The log as legacy RMM's CSV (just the header when nothing was recorded).
pub fn csv() -> String {
    let log = LOG.lock();
    let mut text = String::from(HEADER);
    let Some(log) = log.as_ref() else { return text };
    for Event { call, end, live } in &log.events {
        let kind = match call.kind {
            EventKind::Alloc => "Alloc",
            EventKind::Realloc => "Realloc",
            EventKind::Free => "Free",
        };
        let start = call.start.saturating_duration_since(log.began).as_secs_f64();
        let end = end.saturating_duration_since(log.began).as_secs_f64();
        let location = match &call.file {
            Some(file) => format!("{file}:{}", call.line),
            None => String::new(),
        };
        let _ = writeln!(
            text,
            "{kind},{},{:#x},{:#x},{},0,0,{live},{start:.6},{end:.6},{:.6},{location}",
            call.device,
            call.ptr,
            call.stream,
            call.size,
            end - start
        );
    }
    text
}
