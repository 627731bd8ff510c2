//! The CUDA runtime's allocation functions, for programs that use the shared `libcudart.so`.

use crate::hook;
use crate::real::{self, Real};
use crate::route::{add_pool_free, allocate, allocate_pitched, missing_unless_null, release, Order};
use std::ffi::{c_int, c_void};

/// cudaErrorUnknown / CUDA_ERROR_NOT_FOUND-like answer when a real function is missing.
const MISSING: c_int = 999;

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

/// Initializes the CUDA runtime, once, before rmm serves its first allocation: the program's
/// own `cudaMalloc` would have, and a program may count on it (a context current on the
/// thread for its driver calls, the runtime's device state).
fn runtime_initialized() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(free) = FREE.get(|| real::next(c"cudaFree")) {
            // SAFETY: cudaFree(NULL) frees nothing and initializes the runtime.
            unsafe { free(std::ptr::null_mut()) };
        }
    });
}

/// `hook` for the runtime's allocations: the runtime initialized before rmm serves one.
fn allocation_hook(hooked: impl FnOnce() -> c_int, real: impl FnOnce() -> c_int) -> c_int {
    hook(
        || {
            runtime_initialized();
            hooked()
        },
        real,
    )
}

/// # Safety
/// As `cudaMalloc`.
#[no_mangle]
pub unsafe extern "C" fn cudaMalloc(ptr: *mut *mut c_void, size: usize) -> c_int {
    // SAFETY (both closures): the caller's arguments, passed on unchanged.
    let real = || MALLOC.get(|| real::next(c"cudaMalloc")).map_or(MISSING, |f| unsafe { f(ptr, size) });
    allocation_hook(|| allocate(ptr, size, Order::Device, real), real)
}

/// # Safety
/// As `cudaFree`.
#[no_mangle]
pub unsafe extern "C" fn cudaFree(ptr: *mut c_void) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || FREE.get(|| real::next(c"cudaFree")).map_or(missing_unless_null(ptr as usize, MISSING), |f| unsafe { f(ptr) });
    hook(|| release(ptr, Order::Device, real), real)
}

/// # Safety
/// As `cudaMallocAsync`.
#[no_mangle]
pub unsafe extern "C" fn cudaMallocAsync(ptr: *mut *mut c_void, size: usize, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MALLOC_ASYNC.get(|| real::next(c"cudaMallocAsync")).map_or(MISSING, |f| unsafe { f(ptr, size, stream) });
    allocation_hook(|| allocate(ptr, size, Order::Stream(stream), real), real)
}

/// # Safety
/// As `cudaFreeAsync`.
#[no_mangle]
pub unsafe extern "C" fn cudaFreeAsync(ptr: *mut c_void, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || {
        FREE_ASYNC.get(|| real::next(c"cudaFreeAsync")).map_or(missing_unless_null(ptr as usize, MISSING), |f| unsafe { f(ptr, stream) })
    };
    hook(|| release(ptr, Order::Stream(stream), real), real)
}

/// # Safety
/// As `cudaMallocPitch`.
#[no_mangle]
pub unsafe extern "C" fn cudaMallocPitch(ptr: *mut *mut c_void, pitch: *mut usize, width: usize, height: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MALLOC_PITCH.get(|| real::next(c"cudaMallocPitch")).map_or(MISSING, |f| unsafe { f(ptr, pitch, width, height) });
    allocation_hook(|| allocate_pitched(ptr, pitch, width, height, real), real)
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
