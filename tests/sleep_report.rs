//! The report of a configured device says what sleeps (a program of its own: `rmmConfigure`
//! is process-wide).

mod common;

use common::{last_message, setup_with};
use rmm::boundary::types::RMM_SLEEP_KEEP;
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;

fn report() -> String {
    let mut length = 0;
    assert_eq!(rmmGetReport(null_mut(), 0, &mut length), RMM_SUCCESS, "{}", last_message());
    let mut buffer = vec![0u8; length + 1];
    assert_eq!(rmmGetReport(buffer.as_mut_ptr().cast(), buffer.len(), &mut length), RMM_SUCCESS, "{}", last_message());
    String::from_utf8_lossy(&buffer[..length]).into_owned()
}

#[test]
fn the_report_shows_a_sleeping_device_and_what_it_keeps_on_the_host() {
    let _guard = setup_with("1:256MiB");
    assert_eq!(rmmConfigure(c"report/expandable".as_ptr()), RMM_SUCCESS, "{}", last_message());
    let mut block: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut block, 5 << 20, null_mut(), c"sleep_report.rs".as_ptr(), 1), RMM_SUCCESS, "{}", last_message());
    assert!(!report().contains("asleep"));
    assert_eq!(rmmDeviceSleep(0, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());
    let text = report();
    assert!(text.contains("    asleep (keep): "), "{text}");
    assert!(text.contains("kept on the host"), "{text}");
    assert_eq!(rmmDeviceWake(0, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(!report().contains("asleep"), "{}", report());
    assert_eq!(rmmFree(block, null_mut(), c"sleep_report.rs".as_ptr(), 2), RMM_SUCCESS);
}
