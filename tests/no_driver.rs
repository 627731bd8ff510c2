//! Without a driver and without `RMM_SIM_DEVICES`, every call is a clear error code: no panic,
//! no abort, no silent fallback to the simulator.

use rmm::boundary;
use rmm::error::rmmError_t;
use std::ffi::CStr;

#[test]
fn a_missing_driver_is_an_error_code_with_a_message() {
    std::env::remove_var("RMM_SIM_DEVICES");
    let mut count = -1;
    let status = boundary::rmmGetDeviceCount(&mut count);
    if status == rmmError_t::RMM_SUCCESS {
        eprintln!("a CUDA driver is present here: nothing to check");
        return;
    }
    assert_eq!(status, rmmError_t::RMM_ERROR_CUDA_ERROR);
    assert_eq!(count, -1, "out-pointers are written only on success");
    // SAFETY: rmmGetLastErrorMessage returns a NUL-terminated thread-local string.
    let message = unsafe { CStr::from_ptr(boundary::rmmGetLastErrorMessage()) }.to_string_lossy().into_owned();
    assert!(message.contains("libcuda.so.1") && message.contains("RMM_SIM_DEVICES"), "{message}");
    let mut ptr = std::ptr::null_mut();
    // Legacy RMM's contract: nothing is allocated before rmmInitialize, driver or not.
    assert_eq!(boundary::rmmAlloc(&mut ptr, 256, std::ptr::null_mut(), std::ptr::null(), 0), rmmError_t::RMM_ERROR_NOT_INITIALIZED);
    assert_eq!(boundary::rmmInitialize(std::ptr::null()), rmmError_t::RMM_ERROR_CUDA_ERROR);
    assert!(!boundary::rmmIsInitialized(std::ptr::null_mut()));
}
