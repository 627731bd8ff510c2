//! Memory timeline reports of a live process (see `rmm::replay::report`).

use super::handles::{self, rmmResource_t};
use super::{boundary, optional_str};
use crate::error::{rmmError_t, Error};
use std::ffi::c_char;

/// Writes a memory timeline of this process to the HTML file `html_path`: one self-contained
/// page (no network use) with bytes live and reserved over time, per stream, the peak marked,
/// fragmentation (1 - live / reserved), the largest allocations alive at the peak and the
/// segments and free blocks at the peak. `logged` is a stack with a logging adaptor (e.g. the
/// current device resource): every logging adaptor is flushed, and the log of the outermost
/// one in `logged` is replayed against a fresh stack built from `spec` (`rmm-replay`'s
/// resource spec; NULL: `pool`) on the current device, which is followed after every call:
/// while it runs, the replay holds up to the stack's peak footprint of device memory. A
/// tracking adaptor in `logged` names the call sites of allocations alive at the peak and
/// still alive now. `logged` stays the caller's. RMM_ERROR_INVALID_HANDLE: `logged` is NULL
/// or no handle; RMM_ERROR_INVALID_ARGUMENT: `html_path` is NULL, the stack has no logging
/// adaptor, a bad spec, a log line that does not parse; RMM_ERROR_IO: the log cannot be read
/// or the page written; RMM_ERROR_UNKNOWN: the replay failed (its message says why).
/// Thread-safe; other threads' allocations after the flush are not in the page.
#[no_mangle]
pub extern "C" fn rmmTimelineReportWrite(logged: rmmResource_t, spec: *const c_char, html_path: *const c_char) -> rmmError_t {
    boundary("rmmTimelineReportWrite", || {
        let html_path = optional_str(html_path, "html_path")?.ok_or_else(|| Error::invalid("html_path is NULL"))?;
        let spec = optional_str(spec, "spec")?;
        let stack = handles::get(logged)?;
        crate::replay::report::write_live(&*stack, spec, html_path).map(|_| ())
    })
}
