//! `RMM_ALLOC_CONF=report` in a linked program that never calls `rmmConfigure`: the report on
//! the pooled default, as under the preload library (a program of its own: the variable is read
//! once, at the first allocation).

use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;

#[test]
fn report_alone_means_the_report_on_the_pooled_default_in_a_linked_program() {
    std::env::set_var("RMM_SIM_DEVICES", "1:256MiB");
    std::env::set_var("RMM_ALLOC_CONF", "report");
    let mut block: *mut c_void = null_mut();
    let status = rmmAlloc(&mut block, 1 << 20, null_mut(), c"report_alone.rs".as_ptr(), 1);
    // SAFETY: the library's own NUL-terminated message.
    let message = unsafe { std::ffi::CStr::from_ptr(rmmGetLastErrorMessage()) }.to_string_lossy().into_owned();
    assert_eq!(status, RMM_SUCCESS, "{message}");
    let mut length = 0;
    assert_eq!(rmmGetReport(null_mut(), 0, &mut length), RMM_SUCCESS);
    let mut buffer = vec![0u8; length + 1];
    assert_eq!(rmmGetReport(buffer.as_mut_ptr().cast(), buffer.len(), &mut length), RMM_SUCCESS);
    let report = String::from_utf8_lossy(&buffer[..length]).into_owned();
    assert!(report.contains("device 0: pool resource"), "{report}");
    assert_eq!(rmmFree(block, null_mut(), c"report_alone.rs".as_ptr(), 2), RMM_SUCCESS);
}
