//! The CUDA runtime's allocation functions, for programs that use the shared `libcudart.so`.
//! Error codes: cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2 (the driver's
//! CUDA_ERROR_INVALID_VALUE and CUDA_ERROR_OUT_OF_MEMORY have the same values).

use crate::hook;
use crate::librmm::{self, RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_OUT_OF_MEMORY, RMM_SUCCESS};
use crate::real::{self, Real};
use std::ffi::{c_int, c_void};

pub const SUCCESS: c_int = 0;
pub const INVALID_VALUE: c_int = 1;
pub const OUT_OF_MEMORY: c_int = 2;
/// cudaErrorUnknown / CUDA_ERROR_NOT_FOUND-like answer when a real function is missing.
const MISSING: c_int = 999;

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
        crate::driver::synchronize_context();
    }
    // SAFETY: rmmFree accepts any pointer and refuses those it did not hand out.
    match unsafe { (rmm.free)(ptr, stream, std::ptr::null(), 0) } {
        RMM_SUCCESS => SUCCESS,
        RMM_ERROR_INVALID_ARGUMENT => fallback(),
        _ => INVALID_VALUE,
    }
}

type MallocFn = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type MallocAsyncFn = unsafe extern "C" fn(*mut *mut c_void, usize, *mut c_void) -> c_int;
type FreeAsyncFn = unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int;
type MallocPitchFn = unsafe extern "C" fn(*mut *mut c_void, *mut usize, usize, usize) -> c_int;
type MemGetInfoFn = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;

static MALLOC: Real<MallocFn> = Real::new();
static FREE: Real<FreeFn> = Real::new();
static MALLOC_ASYNC: Real<MallocAsyncFn> = Real::new();
static FREE_ASYNC: Real<FreeAsyncFn> = Real::new();
static MALLOC_PITCH: Real<MallocPitchFn> = Real::new();
static MEM_GET_INFO: Real<MemGetInfoFn> = Real::new();

/// Pitched rows start at multiples of this (a multiple of every GPU's texture pitch alignment).
const PITCH_ALIGNMENT: usize = 512;

/// # Safety
/// As `cudaMalloc`.
#[no_mangle]
pub unsafe extern "C" fn cudaMalloc(ptr: *mut *mut c_void, size: usize) -> c_int {
    // SAFETY (both closures): the caller's arguments, passed on unchanged.
    let real = || MALLOC.get(|| real::next(c"cudaMalloc")).map_or(MISSING, |f| unsafe { f(ptr, size) });
    hook(|| allocate(ptr, size, std::ptr::null_mut(), real), real)
}

/// # Safety
/// As `cudaFree`.
#[no_mangle]
pub unsafe extern "C" fn cudaFree(ptr: *mut c_void) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || FREE.get(|| real::next(c"cudaFree")).map_or(MISSING, |f| unsafe { f(ptr) });
    hook(|| release(ptr, std::ptr::null_mut(), true, real), real)
}

/// # Safety
/// As `cudaMallocAsync`.
#[no_mangle]
pub unsafe extern "C" fn cudaMallocAsync(ptr: *mut *mut c_void, size: usize, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MALLOC_ASYNC.get(|| real::next(c"cudaMallocAsync")).map_or(MISSING, |f| unsafe { f(ptr, size, stream) });
    hook(|| allocate(ptr, size, stream, real), real)
}

/// # Safety
/// As `cudaFreeAsync`.
#[no_mangle]
pub unsafe extern "C" fn cudaFreeAsync(ptr: *mut c_void, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || FREE_ASYNC.get(|| real::next(c"cudaFreeAsync")).map_or(MISSING, |f| unsafe { f(ptr, stream) });
    hook(|| release(ptr, stream, false, real), real)
}

/// # Safety
/// As `cudaMallocPitch`.
#[no_mangle]
pub unsafe extern "C" fn cudaMallocPitch(ptr: *mut *mut c_void, pitch: *mut usize, width: usize, height: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MALLOC_PITCH.get(|| real::next(c"cudaMallocPitch")).map_or(MISSING, |f| unsafe { f(ptr, pitch, width, height) });
    hook(|| allocate_pitched(ptr, pitch, width, height, real), real)
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

/// Free device memory plus what rmm holds free in its pool: what the program can still get.
///
/// # Safety
/// As `cudaMemGetInfo`.
#[no_mangle]
pub unsafe extern "C" fn cudaMemGetInfo(free: *mut usize, total: *mut usize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MEM_GET_INFO.get(|| real::next(c"cudaMemGetInfo")).map_or(MISSING, |f| unsafe { f(free, total) });
    hook(|| add_pool_free(real(), free), real)
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
