//! rmm-rs's own diagnostics (the `log` crate's records): their level, which the C API sets
//! and reads (`rmmLogSetLevel`, `rmmLogGetLevel`), and where they go: to stderr, or, while a
//! caller has registered sinks (`rmmLogSinkAdd`), to those sinks instead. The C++ layer's
//! `rmm::default_logger()` is such a sink: RAPIDS code sees rmm-rs's lines on its logger's
//! sinks, and its `set_level` is this level.
//!
//! Levels are RAPIDS' (`rapids_logger::level_enum`, spdlog's): trace 0, debug 1, info 2, warn
//! 3, error 4, critical 5, off 6. rmm-rs writes nothing at critical.

use super::boundary;
use crate::error::{rmmError_t, Error, Result};
use arc_swap::ArcSwap;
use log::{Level, LevelFilter, Log, Metadata, Record};
use once_cell::sync::Lazy;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Log level trace (RAPIDS' `rapids_logger::level_enum::trace`): everything.
pub const RMM_LOG_LEVEL_TRACE: c_int = 0;
/// Log level debug.
pub const RMM_LOG_LEVEL_DEBUG: c_int = 1;
/// Log level info.
pub const RMM_LOG_LEVEL_INFO: c_int = 2;
/// Log level warn (rmm-rs's default, unless the environment variable RMM_LOG_LEVEL names
/// another).
pub const RMM_LOG_LEVEL_WARN: c_int = 3;
/// Log level error.
pub const RMM_LOG_LEVEL_ERROR: c_int = 4;
/// Log level critical (rmm-rs writes nothing at this level).
pub const RMM_LOG_LEVEL_CRITICAL: c_int = 5;
/// Log level off: nothing is written.
pub const RMM_LOG_LEVEL_OFF: c_int = 6;

/// Receives one diagnostic of rmm-rs: its level (`RMM_LOG_LEVEL_*`), the message (`length`
/// bytes of UTF-8, NUL-terminated, without an end-of-line; a message may span several lines),
/// and the `user_data` given to `rmmLogSinkAdd`. The message is valid during the call only.
#[allow(non_camel_case_types)]
pub type rmmLogCallback_t = Option<extern "C" fn(level: c_int, message: *const c_char, length: usize, user_data: *mut c_void)>;

/// A registered sink.
struct Sink {
    id: u64,
    callback: extern "C" fn(c_int, *const c_char, usize, *mut c_void),
    user_data: super::types::CallbackArgument,
    /// Calls of `callback` in progress.
    in_flight: AtomicUsize,
    removed: AtomicBool,
}

/// The level (`RMM_LOG_LEVEL_*`).
static LEVEL: AtomicI32 = AtomicI32::new(RMM_LOG_LEVEL_WARN);
static SINKS: Lazy<ArcSwap<Vec<Arc<Sink>>>> = Lazy::new(|| ArcSwap::from_pointee(Vec::new()));
/// Serializes changes to `SINKS`.
static CHANGING: Mutex<()> = Mutex::new(());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Where diagnostics go with no sink: stderr, formatted as env_logger does.
static STDERR: Lazy<env_logger::Logger> =
    Lazy::new(|| env_logger::Builder::new().filter_level(LevelFilter::Trace).format_target(false).build());

thread_local! {
    /// The sinks whose callback this thread is in: a diagnostic written from inside a sink
    /// goes to stderr (no sink is entered twice), and a sink removed from inside its own
    /// callback does not wait for that call.
    static INSIDE: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The process's logger (installed by `install`).
struct Diagnostics;

static DIAGNOSTICS: Diagnostics = Diagnostics;

fn rapids_level(level: Level) -> c_int {
    match level {
        Level::Trace => RMM_LOG_LEVEL_TRACE,
        Level::Debug => RMM_LOG_LEVEL_DEBUG,
        Level::Info => RMM_LOG_LEVEL_INFO,
        Level::Warn => RMM_LOG_LEVEL_WARN,
        Level::Error => RMM_LOG_LEVEL_ERROR,
    }
}

fn level_filter(level: c_int) -> LevelFilter {
    match level {
        RMM_LOG_LEVEL_TRACE => LevelFilter::Trace,
        RMM_LOG_LEVEL_DEBUG => LevelFilter::Debug,
        RMM_LOG_LEVEL_INFO => LevelFilter::Info,
        RMM_LOG_LEVEL_WARN => LevelFilter::Warn,
        RMM_LOG_LEVEL_ERROR => LevelFilter::Error,
        _ => LevelFilter::Off,
    }
}

fn set_level(level: c_int) {
    LEVEL.store(level, Ordering::Relaxed);
    log::set_max_level(level_filter(level));
}

/// The level an environment variable's value names: RAPIDS' level names in any case
/// ("DEBUG", "critical"), or env_logger's filter syntax, whose most verbose level counts
/// ("rmm=debug,warn" is debug).
fn parse_level(text: &str) -> c_int {
    let text = text.trim();
    if text.eq_ignore_ascii_case("critical") {
        return RMM_LOG_LEVEL_CRITICAL;
    }
    match env_logger::Builder::new().parse_filters(text).build().filter() {
        LevelFilter::Off => RMM_LOG_LEVEL_OFF,
        filter => filter.to_level().map_or(RMM_LOG_LEVEL_OFF, rapids_level),
    }
}

/// Installs the process's logger, at the level `RMM_LOG_LEVEL` (or `RUST_LOG`) names, warn
/// without either. Another `log` logger already installed (by a Rust program that links
/// rmm-rs) keeps the records; the level still applies.
pub(crate) fn install() {
    let level = std::env::var("RMM_LOG_LEVEL").or_else(|_| std::env::var("RUST_LOG")).map_or(RMM_LOG_LEVEL_WARN, |text| parse_level(&text));
    let _ = log::set_logger(&DIAGNOSTICS);
    set_level(level);
}

impl Log for Diagnostics {
    fn enabled(&self, metadata: &Metadata) -> bool {
        rapids_level(metadata.level()) >= LEVEL.load(Ordering::Relaxed)
    }

    fn log(&self, record: &Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let sinks = SINKS.load();
        let nested = INSIDE.try_with(|inside| inside.try_borrow().map_or(true, |inside| !inside.is_empty())).unwrap_or(true);
        if sinks.is_empty() || nested {
            STDERR.log(record);
            return;
        }
        let mut message = record.args().to_string().replace('\0', " ");
        let length = message.len();
        message.push('\0');
        let level = rapids_level(record.level());
        for sink in sinks.iter() {
            sink.in_flight.fetch_add(1, Ordering::SeqCst);
            if !sink.removed.load(Ordering::SeqCst) {
                let _ = INSIDE.try_with(|inside| inside.borrow_mut().push(sink.id));
                (sink.callback)(level, message.as_ptr() as *const c_char, length, sink.user_data.get());
                let _ = INSIDE.try_with(|inside| inside.borrow_mut().pop());
            }
            sink.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn flush(&self) {
        STDERR.flush();
    }
}

/// Sets the level of rmm-rs's diagnostics (`RMM_LOG_LEVEL_TRACE` .. `RMM_LOG_LEVEL_OFF`, the
/// values of RAPIDS' `rapids_logger::level_enum`), for every thread; messages below it are
/// not written. The environment variable RMM_LOG_LEVEL sets the level at the first call
/// (default `RMM_LOG_LEVEL_WARN`). `rmm::default_logger().set_level()` calls this.
/// Another value: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLogSetLevel(level: c_int) -> rmmError_t {
    boundary("rmmLogSetLevel", || {
        if !(RMM_LOG_LEVEL_TRACE..=RMM_LOG_LEVEL_OFF).contains(&level) {
            return Err(Error::invalid(format!("log level {level} is not one of RMM_LOG_LEVEL_TRACE (0) .. RMM_LOG_LEVEL_OFF (6)")));
        }
        set_level(level);
        Ok(())
    })
}

/// Writes the level of rmm-rs's diagnostics (`RMM_LOG_LEVEL_*`) to `*level`.
/// `level` NULL: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLogGetLevel(level: *mut c_int) -> rmmError_t {
    boundary("rmmLogGetLevel", || super::write_out(level, "level", LEVEL.load(Ordering::Relaxed)))
}

/// Registers a sink for rmm-rs's diagnostics: each message at or above the level
/// (`rmmLogSetLevel`) is handed to `callback(level, message, length, user_data)` on the thread
/// that writes it, possibly on several threads at once, and, while any sink is registered, is
/// no longer written to stderr. Sinks are called in the order they were added. A message
/// written from inside a callback (on its thread) goes to stderr, not to a sink. The callback
/// must not unwind (a C++ exception, a Rust panic) or longjmp out. Its id, for
/// `rmmLogSinkRemove`, goes to `*sink` (ids are never reused). `user_data` may be NULL and must
/// stay valid until `rmmLogSinkRemove` returns. `sink` or `callback` NULL:
/// RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLogSinkAdd(sink: *mut u64, callback: rmmLogCallback_t, user_data: *mut c_void) -> rmmError_t {
    boundary("rmmLogSinkAdd", || {
        super::non_null(sink, "sink")?;
        let callback = callback.ok_or_else(|| Error::invalid("callback is NULL"))?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let added = Arc::new(Sink {
            id,
            callback,
            user_data: super::types::CallbackArgument(user_data),
            in_flight: AtomicUsize::new(0),
            removed: AtomicBool::new(false),
        });
        let _changing = CHANGING.lock();
        let mut sinks = Vec::clone(&SINKS.load());
        sinks.push(added);
        SINKS.store(Arc::new(sinks));
        super::write_out(sink, "sink", id)
    })
}

/// Removes the sink `sink` (`rmmLogSinkAdd`'s id): once this returns, its callback is not
/// called again, and calls in progress on other threads have returned (called from inside the
/// callback itself, it waits for the other threads' calls only), so `user_data` may be freed.
/// With no sink left, diagnostics go to stderr again. An id that is not registered (removed
/// already, or never given): RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLogSinkRemove(sink: u64) -> rmmError_t {
    boundary("rmmLogSinkRemove", || remove_sink(sink))
}

fn remove_sink(id: u64) -> Result<()> {
    let removed = {
        let _changing = CHANGING.lock();
        let sinks = SINKS.load_full();
        let Some(at) = sinks.iter().position(|sink| sink.id == id) else {
            return Err(Error::invalid(format!("no log sink {id} is registered (removed already?)")));
        };
        let mut kept = Vec::clone(&sinks);
        let removed = kept.remove(at);
        SINKS.store(Arc::new(kept));
        removed
    };
    removed.removed.store(true, Ordering::SeqCst);
    // A call that counted itself in before `removed` was set may still be running: wait for
    // it (not for this thread's own, when removing from inside the callback).
    let own = INSIDE
        .try_with(|inside| inside.try_borrow().map_or(0, |inside| inside.iter().filter(|&&inside| inside == id).count()))
        .unwrap_or(0);
    let mut spins = 0u32;
    while removed.in_flight.load(Ordering::SeqCst) > own {
        spins += 1;
        if spins < 64 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    Ok(())
}
