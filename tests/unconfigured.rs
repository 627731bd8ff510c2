//! A linked program that configures nothing (docs/src/configuration.md, "The default stack"):
//! the per-device calls give `cuda`, the legacy calls answer NOT_INITIALIZED with the way out.

use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;

fn last_message() -> String {
    // SAFETY: the library's own NUL-terminated message.
    unsafe { CStr::from_ptr(rmmGetLastErrorMessage()) }.to_string_lossy().into_owned()
}

#[test]
fn an_unconfigured_program_gets_cuda_per_device_and_not_initialized_from_the_legacy_calls() {
    std::env::set_var("RMM_SIM_DEVICES", "1:256MiB");
    std::env::remove_var("RMM_ALLOC_CONF");
    let mut current = null_mut();
    assert_eq!(rmmGetCurrentDeviceResource(&mut current), RMM_SUCCESS, "{}", last_message());
    let mut name: *const c_char = std::ptr::null();
    assert_eq!(rmmResourceGetName(current, &mut name), RMM_SUCCESS);
    // SAFETY: a static NUL-terminated name.
    assert_eq!(unsafe { CStr::from_ptr(name) }.to_str().unwrap(), "cuda");
    assert_eq!(rmmResourceDestroy(current), RMM_SUCCESS);

    let mut block: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut block, 1 << 20, null_mut(), c"unconfigured.rs".as_ptr(), 1), RMM_ERROR_NOT_INITIALIZED);
    let message = last_message();
    assert!(message.contains("rmmInitialize"), "{message}");
}
