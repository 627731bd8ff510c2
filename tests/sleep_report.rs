//! The report of a configured device says what sleeps and what pinned host memory it keeps for
//! the next sleep (a program of its own: `rmmConfigure` is process-wide).

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
fn the_report_shows_a_sleeping_device_and_the_host_memory_it_keeps_for_the_next_sleep() {
    let _guard = setup_with("1:256MiB");
    assert_eq!(rmmConfigure(c"report/expandable".as_ptr()), RMM_SUCCESS, "{}", last_message());
    let mut block: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut block, 5 << 20, null_mut(), c"sleep_report.rs".as_ptr(), 1), RMM_SUCCESS, "{}", last_message());
    assert!(!report().contains("asleep"));
    assert_eq!(rmmDeviceSleep(0, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());
    let text = report();
    assert!(text.contains("    asleep (keep): "), "{text}");
    assert!(text.contains("kept on the host"), "{text}");
    assert!(!text.contains("kept for the next keep-mode sleep"), "{text}");
    assert_eq!(rmmDeviceWake(0, null_mut()), RMM_SUCCESS, "{}", last_message());
    let text = report();
    assert!(!text.contains("asleep"), "{text}");
    assert!(text.contains("of pinned host memory kept for the next keep-mode sleep"), "{text}");

    // The next keep sleep takes the kept host memory (no spare left while it sleeps), and the
    // contents come back through it as through a new one.
    // SAFETY: simulated device memory is host memory; the block has 5 MiB.
    let bytes = unsafe { std::slice::from_raw_parts_mut(block.cast::<u8>(), 5 << 20) };
    bytes.iter_mut().enumerate().for_each(|(i, b)| *b = (i % 251) as u8);
    assert_eq!(rmmDeviceSleep(0, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(!report().contains("kept for the next keep-mode sleep"), "{}", report());
    assert_eq!(rmmDeviceWake(0, null_mut()), RMM_SUCCESS, "{}", last_message());
    // SAFETY: as above, awake again.
    let bytes = unsafe { std::slice::from_raw_parts(block.cast::<u8>(), 5 << 20) };
    assert!(bytes.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "the contents came back");
    assert!(report().contains("kept for the next keep-mode sleep"), "{}", report());
    assert_eq!(rmmDeviceRelease(0, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(!report().contains("kept for the next keep-mode sleep"), "{}", report());
    assert_eq!(rmmFree(block, null_mut(), c"sleep_report.rs".as_ptr(), 2), RMM_SUCCESS);
}
