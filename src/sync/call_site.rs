//! The file and line `RMM_ALLOC` passes, kept for the duration of the call so the tracking
//! adaptor can record them without every resource taking them as arguments: the boundary sets
//! it, an adaptor below reads it.

use std::cell::Cell;
use std::ffi::{c_char, CStr};

thread_local! {
    static CALL_SITE: Cell<(*const c_char, u32)> = const { Cell::new((std::ptr::null(), 0)) };
}

/// Puts the previous call site back when the call ends, also when it unwinds: a call site
/// left behind would point at a caller's string that may be gone.
struct Restore((*const c_char, u32));

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = CALL_SITE.try_with(|site| site.set(self.0));
    }
}

/// Runs `call` with `file`:`line` as the current call site (a NULL `file`: none).
pub fn with<T>(file: *const c_char, line: u32, call: impl FnOnce() -> T) -> T {
    let previous = CALL_SITE.try_with(|site| site.replace((file, line))).unwrap_or((std::ptr::null(), 0));
    let _restore = Restore(previous);
    call()
}

/// `f` of the call site of the rmm call in progress on this thread, if it named one.
pub fn with_current<R>(f: impl FnOnce(&CStr, u32) -> R) -> Option<R> {
    let (file, line) = CALL_SITE.try_with(Cell::get).ok()?;
    if file.is_null() {
        return None;
    }
    // SAFETY: `file` is the NUL-terminated string the caller passed to the rmm call that is
    // still in progress on this thread (`with` clears it before returning).
    let file = unsafe { CStr::from_ptr(file) };
    Some(f(file, line))
}
