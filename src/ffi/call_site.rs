//! The file and line `RMM_ALLOC` passes, kept for the duration of the call so the tracking
//! adaptor and the legacy event log can record them without every resource taking them as
//! arguments.

use std::cell::Cell;
use std::ffi::{c_char, CStr};

thread_local! {
    static CALL_SITE: Cell<(*const c_char, u32)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// Runs `call` with `file`:`line` as the current call site (a NULL `file`: none).
pub fn with<T>(file: *const c_char, line: u32, call: impl FnOnce() -> T) -> T {
    let previous = CALL_SITE.with(|site| site.replace((file, line)));
    let result = call();
    CALL_SITE.with(|site| site.set(previous));
    result
}

/// `f` of the call site of the rmm call in progress on this thread, if it named one.
pub fn with_current<R>(f: impl FnOnce(&CStr, u32) -> R) -> Option<R> {
    let (file, line) = CALL_SITE.with(Cell::get);
    if file.is_null() {
        return None;
    }
    // SAFETY: `file` is the NUL-terminated string the caller passed to the rmm call that is
    // still in progress on this thread (`with` clears it before returning).
    let file = unsafe { CStr::from_ptr(file) };
    Some(f(file, line))
}
