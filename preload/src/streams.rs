//! Stream creation and destruction, so that rmm-rs knows every stream the program makes: a
//! stream announced at creation (`rmmStreamRegister`) is recognized by its handle alone, with no
//! driver call on its allocations, and one announced before its destruction
//! (`rmmStreamUnregister`, while it still lives) has what rmm-rs keeps in its order covered by
//! an event first, so that a later stream given the same handle never inherits it. Hooked both
//! in the runtime (`cudaStreamCreate*`, `cudaStreamDestroy`) and in the driver
//! (`cuStreamCreate*`, `cuStreamDestroy_v2`, also through `cuGetProcAddress`); a hook reached
//! from inside another goes straight to the real function.

use crate::hook;
use crate::librmm;
use crate::real::{self, Real};
use std::ffi::{c_int, c_uint, c_void};

/// CUDA_ERROR_NOT_FOUND / cudaErrorUnknown-like answer when a real function is missing.
const MISSING: c_int = 999;

type CreateFn = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type CreateWithFlagsFn = unsafe extern "C" fn(*mut *mut c_void, c_uint) -> c_int;
type CreateWithPriorityFn = unsafe extern "C" fn(*mut *mut c_void, c_uint, c_int) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut c_void) -> c_int;

static CUDA_CREATE: Real<CreateFn> = Real::new();
static CUDA_CREATE_WITH_FLAGS: Real<CreateWithFlagsFn> = Real::new();
static CUDA_CREATE_WITH_PRIORITY: Real<CreateWithPriorityFn> = Real::new();
static CUDA_DESTROY: Real<DestroyFn> = Real::new();
static CU_CREATE: Real<CreateWithFlagsFn> = Real::new();
static CU_CREATE_WITH_PRIORITY: Real<CreateWithPriorityFn> = Real::new();
static CU_DESTROY: Real<DestroyFn> = Real::new();

/// `create` (the real function), then the new stream announced to rmm-rs.
fn created(stream: *mut *mut c_void, create: impl FnOnce() -> c_int) -> c_int {
    let result = create();
    if result == 0 && !stream.is_null() {
        if let Some(rmm) = librmm::get() {
            // SAFETY: the real function succeeded and wrote the new stream through `stream`.
            rmm.register_stream(unsafe { stream.read() });
        }
    }
    result
}

/// The stream announced to rmm-rs as going away, then `destroy` (the real function).
fn destroyed(stream: *mut c_void, destroy: impl FnOnce() -> c_int) -> c_int {
    if !stream.is_null() {
        if let Some(rmm) = librmm::get() {
            rmm.unregister_stream(stream);
        }
    }
    destroy()
}

/// # Safety
/// As `cudaStreamCreate`.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamCreate(stream: *mut *mut c_void) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || CUDA_CREATE.get(|| real::next(c"cudaStreamCreate")).map_or(MISSING, |f| unsafe { f(stream) });
    hook(|| created(stream, real), real)
}

/// # Safety
/// As `cudaStreamCreateWithFlags`.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamCreateWithFlags(stream: *mut *mut c_void, flags: c_uint) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || CUDA_CREATE_WITH_FLAGS.get(|| real::next(c"cudaStreamCreateWithFlags")).map_or(MISSING, |f| unsafe { f(stream, flags) });
    hook(|| created(stream, real), real)
}

/// # Safety
/// As `cudaStreamCreateWithPriority`.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamCreateWithPriority(stream: *mut *mut c_void, flags: c_uint, priority: c_int) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || {
        CUDA_CREATE_WITH_PRIORITY
            .get(|| real::next(c"cudaStreamCreateWithPriority"))
            .map_or(MISSING, |f| unsafe { f(stream, flags, priority) })
    };
    hook(|| created(stream, real), real)
}

/// # Safety
/// As `cudaStreamDestroy`.
#[no_mangle]
pub unsafe extern "C" fn cudaStreamDestroy(stream: *mut c_void) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || CUDA_DESTROY.get(|| real::next(c"cudaStreamDestroy")).map_or(MISSING, |f| unsafe { f(stream) });
    hook(|| destroyed(stream, real), real)
}

/// # Safety
/// As `cuStreamCreate`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreate(stream: *mut *mut c_void, flags: c_uint) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || CU_CREATE.get(|| real::driver(c"cuStreamCreate")).map_or(MISSING, |f| unsafe { f(stream, flags) });
    hook(|| created(stream, real), real)
}

/// # Safety
/// As `cuStreamCreateWithPriority`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamCreateWithPriority(stream: *mut *mut c_void, flags: c_uint, priority: c_int) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || {
        CU_CREATE_WITH_PRIORITY
            .get(|| real::driver(c"cuStreamCreateWithPriority"))
            .map_or(MISSING, |f| unsafe { f(stream, flags, priority) })
    };
    hook(|| created(stream, real), real)
}

/// # Safety
/// As `cuStreamDestroy_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuStreamDestroy_v2(stream: *mut c_void) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || CU_DESTROY.get(|| real::driver(c"cuStreamDestroy_v2")).map_or(MISSING, |f| unsafe { f(stream) });
    hook(|| destroyed(stream, real), real)
}

/// (name, hook) of the driver's stream functions, for `cuGetProcAddress`.
pub fn driver_hooks() -> [(&'static std::ffi::CStr, usize); 3] {
    [
        (c"cuStreamCreate", cuStreamCreate as *const () as usize),
        (c"cuStreamCreateWithPriority", cuStreamCreateWithPriority as *const () as usize),
        (c"cuStreamDestroy_v2", cuStreamDestroy_v2 as *const () as usize),
    ]
}
