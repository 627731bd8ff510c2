//! The C boundary: the only place with `#[no_mangle]`. Every exported body runs inside
//! `boundary`, which catches panics, turns errors into `rmmError_t` and keeps the message for
//! `rmmGetLastErrorMessage`. No allocation logic lives here.

// Exported functions take raw pointers from C by design; each dereference checks for NULL and
// carries a SAFETY note on what the C caller promises.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod adaptors;
mod configure;
mod device_buffer;
mod devices;
mod diagnostics;
pub(crate) mod exit;
mod frameworks;
pub mod handles;
mod ipc;
mod legacy;
mod report;
mod resources;
mod sleep;
mod snapshot;
mod streams;
mod suballocators;
pub mod types;
mod version;

pub use adaptors::*;
pub use configure::*;
pub use device_buffer::*;
pub use devices::*;
pub use diagnostics::*;
pub use frameworks::*;
pub use ipc::*;
pub use legacy::*;
pub use report::*;
pub use resources::*;
pub use sleep::*;
pub use snapshot::*;
pub use streams::*;
pub use suballocators::*;
pub use version::*;

use crate::error::{rmmError_t, Error, Result};
use std::cell::RefCell;
use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

static LOGGER: Once = Once::new();

/// Diagnostics go through `log` (see `diagnostics`); `RMM_LOG_LEVEL` (or `RUST_LOG`) picks the
/// level, default warn.
#[inline(always)]
fn init_logger() {
    if !LOGGER.is_completed() {
        start_logger();
    }
}

#[cold]
#[inline(never)]
fn start_logger() {
    LOGGER.call_once(|| {
        diagnostics::install();
        crate::boundary::exit::watch_process_exit();
    });
}

/// Keeps the message for `rmmGetLastErrorMessage`. A thread whose thread-locals are already
/// destroyed (a call from a thread-local destructor) keeps none: `try_with`, because a panic
/// here would cross into C.
fn remember(function: &str, error: &Error) {
    let text = format!("{function}: {error}");
    log::debug!("{text}");
    let text = CString::new(text.replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|last| {
        if let Ok(mut last) = last.try_borrow_mut() {
            *last = text;
        }
    });
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs an exported function's body: no panic crosses into C. Everything the call does,
/// starting the logger and keeping a failure's message included, runs inside `catch_unwind`;
/// a panic in keeping the message of a panic is answered without a message. Inlined, with the
/// failure paths out of line, so that a successful call costs a few instructions over its
/// body.
#[inline(always)]
pub(crate) fn boundary(function: &'static str, body: impl FnOnce() -> Result<()>) -> rmmError_t {
    let answered = catch_unwind(AssertUnwindSafe(|| {
        init_logger();
        match body() {
            Ok(()) => rmmError_t::RMM_SUCCESS,
            Err(error) => failed(function, error),
        }
    }));
    match answered {
        Ok(code) => code,
        Err(payload) => panicked(function, payload),
    }
}

#[cold]
#[inline(never)]
fn panicked(function: &'static str, payload: Box<dyn std::any::Any + Send>) -> rmmError_t {
    let error = Error::Internal(format!("panic in {function}: {}", panic_message(&*payload)));
    catch_unwind(AssertUnwindSafe(|| failed(function, error))).unwrap_or(rmmError_t::RMM_ERROR_UNKNOWN)
}

/// Keeps the message of a failed call, which starts with the call's name, and answers its
/// code.
#[cold]
#[inline(never)]
fn failed(function: &'static str, error: Error) -> rmmError_t {
    remember(function, &error);
    error.code()
}

/// Like `boundary` for functions that answer a value instead of an error code.
pub(crate) fn boundary_value<T>(function: &'static str, fallback: T, body: impl FnOnce() -> Result<T>) -> T {
    let mut value = None;
    boundary(function, || {
        value = Some(body()?);
        Ok(())
    });
    value.unwrap_or(fallback)
}

/// The message of the most recent failed call on this thread, for `rmmGetLastErrorMessage`
/// ("" on a thread whose thread-locals are gone).
pub(crate) fn last_error_message() -> *const std::ffi::c_char {
    LAST_ERROR.try_with(|last| last.try_borrow().map(|text| text.as_ptr()).unwrap_or(c"".as_ptr())).unwrap_or(c"".as_ptr())
}

/// Writes `value` through a caller's out-pointer, refusing NULL.
pub(crate) fn write_out<T>(out: *mut T, name: &str, value: T) -> Result<()> {
    let out = non_null(out, name)?;
    // SAFETY: non-NULL, and the C caller promises it points to a writable `T`.
    unsafe { out.write(value) };
    Ok(())
}

#[inline]
pub(crate) fn non_null<T>(ptr: *mut T, name: &str) -> Result<*mut T> {
    if ptr.is_null() {
        return Err(null_argument(name));
    }
    Ok(ptr)
}

#[cold]
#[inline(never)]
fn null_argument(name: &str) -> Error {
    Error::invalid(format!("{name} is NULL"))
}

/// Copies `text` and a terminating NUL into the caller's `buffer` of `size` bytes, and writes
/// the text's length (without the NUL) to `*length` unless it is NULL. A NULL `buffer` only
/// asks for the length; a buffer too small is refused (nothing written), naming the size
/// needed.
pub(crate) fn copy_text(text: &str, buffer: *mut std::ffi::c_char, size: usize, length: *mut usize) -> Result<()> {
    if !length.is_null() {
        write_out(length, "length", text.len())?;
    }
    if buffer.is_null() {
        return match length.is_null() {
            true => Err(Error::invalid("buffer and length are both NULL")),
            false => Ok(()),
        };
    }
    if size <= text.len() {
        return Err(Error::invalid(format!("the buffer holds {size} bytes; {} are needed", text.len() + 1)));
    }
    // SAFETY: `buffer` is non-NULL and the caller promises `size` writable bytes, of which we
    // write text.len() + 1 < size + 1.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buffer as *mut u8, text.len());
        buffer.add(text.len()).write(0);
    }
    Ok(())
}

/// A C string argument as UTF-8; NULL is None.
pub(crate) fn optional_str<'a>(text: *const std::ffi::c_char, name: &str) -> Result<Option<&'a str>> {
    if text.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string that outlives the call.
    let text = unsafe { std::ffi::CStr::from_ptr(text) };
    text.to_str().map(Some).map_err(|_| Error::invalid(format!("{name} is not valid UTF-8")))
}

/// Copies at most `size` bytes of `text` into `buffer`, and a NUL after them when there is
/// room (legacy RMM's `rmmGetLog` contract).
pub(crate) fn copy_text_truncated(text: &str, buffer: *mut std::ffi::c_char, size: usize) -> Result<()> {
    non_null(buffer, "buffer")?;
    let copied = text.len().min(size);
    // SAFETY: `buffer` is non-NULL and the caller promises `size` writable bytes; we write
    // `copied` <= size bytes, and the NUL only when copied < size.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buffer as *mut u8, copied);
        if copied < size {
            buffer.add(copied).write(0);
        }
    }
    Ok(())
}
