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

pub const HEADER: &str =
    "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,Location\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Alloc,
    Realloc,
    Free,
}

/// A call to record: what, where and when.
pub struct Call {
    pub kind: EventKind,
    pub device: i32,
    pub ptr: usize,
    pub stream: usize,
    pub size: usize,
    pub start: Instant,
    pub file: Option<String>,
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
