//! Where a hooked allocation or free goes: to librmm, or (when librmm is unavailable, refuses a
//! pointer it did not hand out, or fails for another reason than memory) to the real function.
//! The runtime's hooks and the driver's share it. Error codes: cudaErrorInvalidValue = 1,
//! cudaErrorMemoryAllocation = 2 (the driver's CUDA_ERROR_INVALID_VALUE and
//! CUDA_ERROR_OUT_OF_MEMORY have the same values).

use crate::librmm::{self, RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_OUT_OF_MEMORY, RMM_SUCCESS};
use crate::real::{self, Real};
use std::ffi::{c_int, c_void};

pub const SUCCESS: c_int = 0;
pub const INVALID_VALUE: c_int = 1;
pub const OUT_OF_MEMORY: c_int = 2;
type SynchronizeFn = unsafe extern "C" fn() -> c_int;

static SYNCHRONIZE: Real<SynchronizeFn> = Real::new();

/// Pitched rows start at multiples of this (a multiple of every GPU's texture pitch alignment).
const PITCH_ALIGNMENT: usize = 512;

/// Allocates `size` bytes on `stream` through rmm; `fallback` (the real function) when rmm is
/// unavailable or fails for another reason than memory.
pub fn allocate(ptr: *mut *mut c_void, size: usize, stream: *mut c_void, fallback: impl FnOnce() -> c_int) -> c_int {
    if ptr.is_null() {
        return INVALID_VALUE;
    }
    let Some(rmm) = librmm::get() else { return fallback() };
    // SAFETY: `ptr` is a non-NULL out-pointer of the caller; NULL file, line 0: no call site.
    match unsafe { (rmm.alloc)(ptr, size, stream, std::ptr::null(), 0) } {
        RMM_SUCCESS => SUCCESS,
        RMM_ERROR_OUT_OF_MEMORY => OUT_OF_MEMORY,
        _ => fallback(),
    }
}

/// Frees `ptr` on `stream` through rmm when rmm handed it out; otherwise (or for NULL, which
/// the real functions use to set up a context) `fallback`. With `synchronize`, waits for the
/// device first, as `cudaFree` and `cuMemFree` do.
pub fn release(ptr: *mut c_void, stream: *mut c_void, synchronize: bool, fallback: impl FnOnce() -> c_int) -> c_int {
    if ptr.is_null() {
        return fallback();
    }
    let Some(rmm) = librmm::get() else { return fallback() };
    if synchronize {
        synchronize_context();
    }
    // SAFETY: rmmFree accepts any pointer and refuses those it did not hand out.
    match unsafe { (rmm.free)(ptr, stream, std::ptr::null(), 0) } {
        RMM_SUCCESS => SUCCESS,
        RMM_ERROR_INVALID_ARGUMENT => fallback(),
        _ => INVALID_VALUE,
    }
}

/// Waits for the current context's work (`cuCtxSynchronize`), as the real frees do.
pub fn synchronize_context() {
    if let Some(synchronize) = SYNCHRONIZE.get(|| real::driver(c"cuCtxSynchronize")) {
        // SAFETY: no arguments; without a current context it returns an error, ignored here.
        unsafe { synchronize() };
    }
}

/// `height` rows of `width` bytes, each row starting at a multiple of `PITCH_ALIGNMENT`; the
/// row pitch goes to `*pitch`. Empty or unrepresentable requests go to `fallback`.
pub fn allocate_pitched(
    ptr: *mut *mut c_void,
    pitch: *mut usize,
    width: usize,
    height: usize,
    fallback: impl FnOnce() -> c_int + Copy,
) -> c_int {
    let Some(row) = width.checked_next_multiple_of(PITCH_ALIGNMENT) else { return OUT_OF_MEMORY };
    let Some(size) = row.checked_mul(height) else { return OUT_OF_MEMORY };
    if pitch.is_null() || size == 0 {
        return fallback();
    }
    let result = allocate(ptr, size, std::ptr::null_mut(), fallback);
    if result == SUCCESS {
        // SAFETY: non-NULL out-pointer of the caller.
        unsafe { pitch.write(row) };
    }
    result
}

/// After a successful memory query, counts rmm's free pool bytes as free.
pub fn add_pool_free(result: c_int, free: *mut usize) -> c_int {
    if result == SUCCESS && !free.is_null() {
        if let Some(rmm) = librmm::get() {
            let pooled = rmm.pool_free();
            // SAFETY: non-NULL out-pointer the real function just wrote.
            unsafe { free.write(free.read().saturating_add(pooled)) };
        }
    }
    result
}
