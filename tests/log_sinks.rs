//! Sinks through the C API, on a simulated device: a logging adaptor that hands its CSV lines
//! to a callback (`rmmLoggingAdaptorCreateWithSink`) and the sinks of rmm-rs's own diagnostics
//! (`rmmLogSinkAdd`, `rmmLogSetLevel`): threads, flush, the callback's release, bad input.

mod common;

use common::{last_message, setup};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use rmm::log_format::{parse_log, Action, COLUMNS};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What a test's line callback collects: the lines, the thread of each, and how often it was
/// released.
#[derive(Default)]
struct Collected {
    lines: Mutex<Vec<(String, std::thread::ThreadId)>>,
    released: AtomicUsize,
    /// Lines to refuse (return 1) from this many lines on; 0: none.
    refuse_from: AtomicUsize,
}

extern "C" fn collect_line(line: *const c_char, length: usize, user_data: *mut c_void) -> c_int {
    // SAFETY: the tests pass a `Collected` that outlives the adaptor (they wait for the
    // release), and rmm-rs passes a NUL-terminated line of `length` bytes.
    let (collected, text) = unsafe { (&*(user_data as *const Collected), CStr::from_ptr(line)) };
    let text = text.to_str().unwrap().to_string();
    assert_eq!(text.len(), length);
    let mut lines = collected.lines.lock().unwrap();
    lines.push((text, std::thread::current().id()));
    let refuse_from = collected.refuse_from.load(Ordering::Relaxed);
    c_int::from(refuse_from != 0 && lines.len() >= refuse_from)
}

extern "C" fn count_release(user_data: *mut c_void) {
    // SAFETY: as in `collect_line`.
    let collected = unsafe { &*(user_data as *const Collected) };
    collected.released.fetch_add(1, Ordering::SeqCst);
}

fn user(collected: &Collected) -> *mut c_void {
    collected as *const Collected as *mut c_void
}

fn cuda() -> rmmResource_t {
    let mut handle = std::ptr::null_mut();
    assert_eq!(rmmCudaResourceCreate(&mut handle), RMM_SUCCESS);
    handle
}

fn lines(collected: &Collected) -> Vec<String> {
    collected.lines.lock().unwrap().iter().map(|(line, _)| line.clone()).collect()
}

#[test]
fn sink_gets_the_header_at_once_then_every_line_from_many_threads() {
    let _guard = setup();
    let collected = Collected::default();
    let upstream = cuda();
    let mut logging = std::ptr::null_mut();
    let status = rmmLoggingAdaptorCreateWithSink(&mut logging, upstream, Some(collect_line), Some(count_release), user(&collected));
    assert_eq!(status, RMM_SUCCESS, "{}", last_message());
    {
        let lines = collected.lines.lock().unwrap();
        assert_eq!(lines.len(), 1, "the header comes before the call returns, alone");
        assert_eq!(lines[0], (COLUMNS.to_string(), std::thread::current().id()), "on the calling thread");
    }
    const THREADS: usize = 8;
    const ROUNDS: usize = 700; // 8 * 700 * 2 events: past one thread's buffer, so some go early
    let handle = logging as usize;
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            scope.spawn(move || {
                let logging = handle as rmmResource_t;
                for round in 0..ROUNDS {
                    let size = 256 * (1 + (thread * ROUNDS + round) % 7);
                    let mut ptr = std::ptr::null_mut();
                    assert_eq!(rmmResourceAllocate(logging, &mut ptr, size, std::ptr::null_mut()), RMM_SUCCESS);
                    assert_eq!(rmmResourceDeallocate(logging, ptr, size, std::ptr::null_mut()), RMM_SUCCESS);
                }
            });
        }
    });
    assert_eq!(rmmLoggingAdaptorFlush(logging), RMM_SUCCESS, "{}", last_message());
    let text: String = lines(&collected).iter().map(|line| format!("{line}\n")).collect();
    let events = parse_log(&text).expect("the lines are RMM's CSV");
    assert_eq!(events.len(), THREADS * ROUNDS * 2, "every event, delivered by the flush");
    assert_eq!(events.iter().filter(|e| e.action == Action::Allocate).count(), THREADS * ROUNDS);
    // Each block's free follows its allocation.
    let mut live = std::collections::HashSet::new();
    for event in &events {
        match event.action {
            Action::Allocate => assert!(live.insert(event.pointer), "{:#x} allocated twice in a row", event.pointer),
            Action::Free => assert!(live.remove(&event.pointer), "{:#x} freed before it was allocated", event.pointer),
            Action::AllocateFailure => panic!("no allocation failed"),
        }
    }
    let writer = collected.lines.lock().unwrap()[1].1;
    assert_ne!(writer, std::thread::current().id(), "later lines come from the writer thread");
    assert!(collected.lines.lock().unwrap()[1..].iter().all(|(_, thread)| *thread == writer), "one writer thread");
    assert_eq!(collected.released.load(Ordering::SeqCst), 0);
    assert_eq!(rmmResourceDestroy(logging), RMM_SUCCESS);
    assert_eq!(collected.released.load(Ordering::SeqCst), 1, "released once the adaptor is gone");
    assert_eq!(rmmResourceDestroy(upstream), RMM_SUCCESS);
}

#[test]
fn release_waits_for_the_last_resource_over_the_adaptor_and_its_last_lines() {
    let _guard = setup();
    let collected = Collected::default();
    let upstream = cuda();
    let mut logging = std::ptr::null_mut();
    assert_eq!(
        rmmLoggingAdaptorCreateWithSink(&mut logging, upstream, Some(collect_line), Some(count_release), user(&collected)),
        RMM_SUCCESS
    );
    let mut pool = std::ptr::null_mut();
    assert_eq!(rmmPoolResourceCreate(&mut pool, logging, 1 << 20, 0), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(logging), RMM_SUCCESS);
    assert_eq!(collected.released.load(Ordering::SeqCst), 0, "the pool still holds the adaptor");
    assert_eq!(rmmLoggingAdaptorFlush(logging), RMM_ERROR_INVALID_HANDLE, "a destroyed handle is refused");
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(collected.released.load(Ordering::SeqCst), 1);
    let lines = lines(&collected);
    assert_eq!(lines.len(), 3, "header, the pool's chunk, and its return: {lines:?}");
    assert!(lines[1].contains(",allocate,") && lines[2].contains(",free,"), "{lines:?}");
    assert_eq!(rmmResourceDestroy(upstream), RMM_SUCCESS);
}

#[test]
fn a_refused_line_is_an_io_error_at_the_next_flush() {
    let _guard = setup();
    let collected = Collected::default();
    collected.refuse_from.store(2, Ordering::Relaxed);
    let upstream = cuda();
    let mut logging = std::ptr::null_mut();
    assert_eq!(rmmLoggingAdaptorCreateWithSink(&mut logging, upstream, Some(collect_line), None, user(&collected)), RMM_SUCCESS);
    let mut ptr = std::ptr::null_mut();
    assert_eq!(rmmResourceAllocate(logging, &mut ptr, 1024, std::ptr::null_mut()), RMM_SUCCESS);
    assert_eq!(rmmResourceDeallocate(logging, ptr, 1024, std::ptr::null_mut()), RMM_SUCCESS);
    assert_eq!(rmmLoggingAdaptorFlush(logging), RMM_ERROR_IO);
    assert!(last_message().contains("the line callback returned 1"), "{}", last_message());
    assert_eq!(lines(&collected).len(), 3, "every line was still offered");
    assert_eq!(rmmLoggingAdaptorFlush(logging), RMM_SUCCESS, "reported once");
    assert_eq!(rmmResourceDestroy(logging), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(upstream), RMM_SUCCESS);
}

#[test]
fn bad_input_is_refused_and_the_release_is_not_called() {
    let _guard = setup();
    let collected = Collected::default();
    let upstream = cuda();
    let mut logging: rmmResource_t = std::ptr::null_mut();
    let create = |out: *mut rmmResource_t, upstream, line: rmmLogLineCallback_t| {
        rmmLoggingAdaptorCreateWithSink(out, upstream, line, Some(count_release), user(&collected))
    };
    assert_eq!(create(&mut logging, upstream, None), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("line is NULL"), "{}", last_message());
    assert_eq!(create(std::ptr::null_mut(), upstream, Some(collect_line)), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(create(&mut logging, std::ptr::null_mut(), Some(collect_line)), RMM_ERROR_INVALID_HANDLE);
    let gone = cuda();
    assert_eq!(rmmResourceDestroy(gone), RMM_SUCCESS);
    assert_eq!(create(&mut logging, gone, Some(collect_line)), RMM_ERROR_INVALID_HANDLE);
    collected.refuse_from.store(1, Ordering::Relaxed);
    assert_eq!(create(&mut logging, upstream, Some(collect_line)), RMM_ERROR_IO, "the header refused");
    assert!(last_message().contains("header"), "{}", last_message());
    assert!(logging.is_null(), "nothing written on failure");
    assert_eq!(collected.released.load(Ordering::SeqCst), 0, "the caller keeps user_data when creation fails");
    assert_eq!(lines(&collected), [COLUMNS], "only the refused header reached the callback");
    // Not a logging adaptor.
    assert_eq!(rmmLoggingAdaptorFlush(upstream), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmResourceDestroy(upstream), RMM_SUCCESS);
}

// --- rmm-rs's own diagnostics ------------------------------------------------------------

/// What a diagnostics sink collects.
#[derive(Default)]
struct Messages {
    seen: Mutex<Vec<(c_int, String)>>,
    /// A sink id to remove from inside the callback, at its first call (0: none).
    remove_inside: std::sync::atomic::AtomicU64,
    /// Set once that removal has returned: a call that begins after it breaks the contract.
    removal_returned: std::sync::atomic::AtomicBool,
    /// Calls that began after the removal returned.
    late: std::sync::atomic::AtomicUsize,
}

extern "C" fn collect_message(level: c_int, message: *const c_char, length: usize, user_data: *mut c_void) {
    // SAFETY: the tests pass a `Messages` that outlives the sink's registration, and rmm-rs a
    // NUL-terminated message of `length` bytes.
    let (messages, text) = unsafe { (&*(user_data as *const Messages), CStr::from_ptr(message)) };
    if messages.removal_returned.load(Ordering::SeqCst) {
        messages.late.fetch_add(1, Ordering::SeqCst);
    }
    assert_eq!(text.to_bytes().len(), length);
    messages.seen.lock().unwrap().push((level, text.to_string_lossy().into_owned()));
    let id = messages.remove_inside.swap(0, Ordering::SeqCst);
    if id != 0 {
        assert_eq!(rmmLogSinkRemove(id), RMM_SUCCESS, "removing a sink from inside its own callback");
        messages.removal_returned.store(true, Ordering::SeqCst);
    }
}

/// A registered sink, removed when it goes (also when a test fails: no sink is left pointing
/// at a test's dead `Messages`).
struct Registered(u64);

impl Registered {
    fn add(messages: &Messages) -> Registered {
        let mut id = 0u64;
        assert_eq!(rmmLogSinkAdd(&mut id, Some(collect_message), messages as *const Messages as *mut c_void), RMM_SUCCESS);
        assert_ne!(id, 0);
        Registered(id)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = rmmLogSinkRemove(self.0);
    }
}

fn messages_from(messages: &Messages, function: &str) -> Vec<(c_int, String)> {
    messages.seen.lock().unwrap().iter().filter(|(_, text)| text.starts_with(function)).cloned().collect()
}

/// A failed call writes its message at debug (`rmmLogGetLevel(NULL)` fails).
fn fail_once() {
    assert_eq!(rmmLogGetLevel(std::ptr::null_mut()), RMM_ERROR_INVALID_ARGUMENT);
}

#[test]
fn diagnostics_reach_sinks_at_the_level_set_from_any_thread() {
    let _guard = setup();
    let mut before = -1;
    assert_eq!(rmmLogGetLevel(&mut before), RMM_SUCCESS);
    let messages = Messages::default();
    let registered = Registered::add(&messages);
    let id = registered.0;

    assert_eq!(rmmLogSetLevel(RMM_LOG_LEVEL_WARN), RMM_SUCCESS);
    fail_once();
    assert!(messages_from(&messages, "rmmLogGetLevel").is_empty(), "debug is below warn");

    assert_eq!(rmmLogSetLevel(RMM_LOG_LEVEL_DEBUG), RMM_SUCCESS);
    let mut level = -1;
    assert_eq!(rmmLogGetLevel(&mut level), RMM_SUCCESS);
    assert_eq!(level, RMM_LOG_LEVEL_DEBUG);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| (0..50).for_each(|_| fail_once()));
        }
    });
    let seen = messages_from(&messages, "rmmLogGetLevel");
    assert_eq!(seen.len(), 200, "every thread's messages");
    assert!(
        seen.iter().all(|(level, text)| *level == RMM_LOG_LEVEL_DEBUG && text == "rmmLogGetLevel: invalid argument: level is NULL"),
        "{:?}",
        seen[0]
    );

    assert_eq!(rmmLogSinkRemove(id), RMM_SUCCESS);
    fail_once();
    assert_eq!(messages_from(&messages, "rmmLogGetLevel").len(), 200, "nothing after the sink is removed");
    assert_eq!(rmmLogSinkRemove(id), RMM_ERROR_INVALID_ARGUMENT, "removed twice");
    assert_eq!(rmmLogSetLevel(before), RMM_SUCCESS);
}

#[test]
fn a_sink_removed_inside_its_callback_while_other_threads_log_is_called_no_more() {
    let _guard = setup();
    let messages = Messages::default();
    let registered = Registered::add(&messages);
    let id = registered.0;
    messages.remove_inside.store(id, Ordering::SeqCst);
    assert_eq!(rmmLogSetLevel(RMM_LOG_LEVEL_TRACE), RMM_SUCCESS);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| (0..200).for_each(|_| fail_once()));
        }
    });
    // Other threads may call the sink while the first call is removing it; none may begin
    // once the removal has returned (and those under way then have returned).
    assert!(!messages.seen.lock().unwrap().is_empty(), "the first call removed the sink");
    assert!(messages.removal_returned.load(Ordering::SeqCst));
    assert_eq!(messages.late.load(Ordering::SeqCst), 0, "calls that began after rmmLogSinkRemove returned");
    assert_eq!(rmmLogSinkRemove(id), RMM_ERROR_INVALID_ARGUMENT, "already removed");
    assert_eq!(rmmLogSetLevel(RMM_LOG_LEVEL_WARN), RMM_SUCCESS);
}

#[test]
fn diagnostics_bad_input_is_refused() {
    let _guard = setup();
    for level in [-1, 7, c_int::MAX] {
        assert_eq!(rmmLogSetLevel(level), RMM_ERROR_INVALID_ARGUMENT);
        assert!(last_message().contains(&format!("log level {level}")), "{}", last_message());
    }
    let mut level = -1;
    assert_eq!(rmmLogGetLevel(&mut level), RMM_SUCCESS);
    assert!((RMM_LOG_LEVEL_TRACE..=RMM_LOG_LEVEL_OFF).contains(&level), "unchanged by refused values");
    let mut id = 0u64;
    assert_eq!(rmmLogSinkAdd(&mut id, None, std::ptr::null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("callback is NULL"));
    assert_eq!(rmmLogSinkAdd(std::ptr::null_mut(), Some(collect_message), std::ptr::null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmLogSinkRemove(0), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmLogSinkRemove(u64::MAX), RMM_ERROR_INVALID_ARGUMENT);
}

#[test]
fn tracking_gives_each_outstanding_allocation_s_stack() {
    let _guard = setup();
    let upstream = cuda();
    for capture in [true, false] {
        let mut tracking = std::ptr::null_mut();
        assert_eq!(rmmTrackingAdaptorCreate(&mut tracking, upstream, capture), RMM_SUCCESS);
        let mut ptr = std::ptr::null_mut();
        assert_eq!(rmmResourceAllocate(tracking, &mut ptr, 4096, std::ptr::null_mut()), RMM_SUCCESS);
        let mut length = 0usize;
        assert_eq!(rmmTrackingAdaptorGetStack(tracking, ptr, std::ptr::null_mut(), 0, &mut length), RMM_SUCCESS);
        assert_eq!(length > 0, capture, "a stack only where stacks are captured");
        let mut text = vec![0 as c_char; length + 1];
        assert_eq!(rmmTrackingAdaptorGetStack(tracking, ptr, text.as_mut_ptr(), text.len(), &mut length), RMM_SUCCESS);
        if length > 0 {
            assert_eq!(
                rmmTrackingAdaptorGetStack(tracking, ptr, text.as_mut_ptr(), length, std::ptr::null_mut()),
                RMM_ERROR_INVALID_ARGUMENT,
                "too small"
            );
        }
        let interior = (ptr as usize + 256) as *mut c_void;
        assert_eq!(rmmTrackingAdaptorGetStack(tracking, interior, std::ptr::null_mut(), 0, &mut length), RMM_ERROR_INVALID_ARGUMENT);
        assert!(last_message().contains("not an outstanding allocation"), "{}", last_message());
        assert_eq!(
            rmmTrackingAdaptorGetStack(upstream, ptr, std::ptr::null_mut(), 0, &mut length),
            RMM_ERROR_INVALID_ARGUMENT,
            "not a tracker"
        );
        assert_eq!(rmmResourceDeallocate(tracking, ptr, 4096, std::ptr::null_mut()), RMM_SUCCESS);
        assert_eq!(rmmTrackingAdaptorGetStack(tracking, ptr, std::ptr::null_mut(), 0, &mut length), RMM_ERROR_INVALID_ARGUMENT, "freed");
        assert_eq!(rmmResourceDestroy(tracking), RMM_SUCCESS);
        assert_eq!(rmmTrackingAdaptorGetStack(tracking, ptr, std::ptr::null_mut(), 0, &mut length), RMM_ERROR_INVALID_HANDLE);
    }
    assert_eq!(rmmResourceDestroy(upstream), RMM_SUCCESS);
}
