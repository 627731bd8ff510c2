//! The driver's allocation functions, which programs linked against the static CUDA runtime
//! reach through `cuGetProcAddress`, and `dlsym`, interposed so that the runtime's lookup of
//! `cuGetProcAddress` in `libcuda.so.1` finds ours. `cuGetProcAddress` asks the real one and
//! replaces its answer when it is one of the driver functions hooked here: the driver keeps
//! choosing the version and stream flavour (`_ptsz`) the caller asked for.

use crate::hook;
use crate::real::{self, Real};
use crate::route::{add_pool_free, allocate, allocate_pitched, missing_unless_null, release, Order};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// CUDA_ERROR_NOT_FOUND: the driver lacks the real function.
const NOT_FOUND: c_int = 500;
/// CU_STREAM_PER_THREAD: what stream 0 means to the `_ptsz` entry points.
const PER_THREAD_STREAM: usize = 2;

type AllocFn = unsafe extern "C" fn(*mut u64, usize) -> c_int;
type FreeFn = unsafe extern "C" fn(u64) -> c_int;
type AllocAsyncFn = unsafe extern "C" fn(*mut u64, usize, *mut c_void) -> c_int;
type FreeAsyncFn = unsafe extern "C" fn(u64, *mut c_void) -> c_int;
type AllocPitchFn = unsafe extern "C" fn(*mut u64, *mut usize, usize, usize, c_uint) -> c_int;
type MemGetInfoFn = unsafe extern "C" fn(*mut usize, *mut usize) -> c_int;
type GetProcAddressFn = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64) -> c_int;
type GetProcAddressV2Fn = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> c_int;

static ALLOC: Real<AllocFn> = Real::new();
static FREE: Real<FreeFn> = Real::new();
static ALLOC_ASYNC: Real<AllocAsyncFn> = Real::new();
static FREE_ASYNC: Real<FreeAsyncFn> = Real::new();
static ALLOC_ASYNC_PTSZ: Real<AllocAsyncFn> = Real::new();
static FREE_ASYNC_PTSZ: Real<FreeAsyncFn> = Real::new();
static ALLOC_PITCH: Real<AllocPitchFn> = Real::new();
static MEM_GET_INFO: Real<MemGetInfoFn> = Real::new();
static GET_PROC_ADDRESS: Real<GetProcAddressFn> = Real::new();
static GET_PROC_ADDRESS_V2: Real<GetProcAddressV2Fn> = Real::new();

fn device_pointer_out(ptr: *mut u64) -> *mut *mut c_void {
    ptr.cast()
}

/// # Safety
/// As `cuMemAlloc_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAlloc_v2(ptr: *mut u64, size: usize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || ALLOC.get(|| real::driver(c"cuMemAlloc_v2")).map_or(NOT_FOUND, |f| unsafe { f(ptr, size) });
    hook(|| allocate(device_pointer_out(ptr), size, Order::Device, real), real)
}

/// # Safety
/// As `cuMemFree_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemFree_v2(ptr: u64) -> c_int {
    // SAFETY: the caller's argument, passed on unchanged.
    let real = || FREE.get(|| real::driver(c"cuMemFree_v2")).map_or(missing_unless_null(ptr as usize, NOT_FOUND), |f| unsafe { f(ptr) });
    hook(|| release(ptr as *mut c_void, Order::Device, real), real)
}

/// # Safety
/// As `cuMemAllocAsync`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync(ptr: *mut u64, size: usize, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || ALLOC_ASYNC.get(|| real::driver(c"cuMemAllocAsync")).map_or(NOT_FOUND, |f| unsafe { f(ptr, size, stream) });
    hook(|| allocate(device_pointer_out(ptr), size, Order::Stream(stream), real), real)
}

/// # Safety
/// As `cuMemFreeAsync`.
#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync(ptr: u64, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || {
        FREE_ASYNC
            .get(|| real::driver(c"cuMemFreeAsync"))
            .map_or(missing_unless_null(ptr as usize, NOT_FOUND), |f| unsafe { f(ptr, stream) })
    };
    hook(|| release(ptr as *mut c_void, Order::Stream(stream), real), real)
}

fn per_thread(stream: *mut c_void) -> *mut c_void {
    if stream.is_null() {
        PER_THREAD_STREAM as *mut c_void
    } else {
        stream
    }
}

/// # Safety
/// As `cuMemAllocAsync_ptsz` (stream 0 is the per-thread default stream).
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocAsync_ptsz(ptr: *mut u64, size: usize, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || ALLOC_ASYNC_PTSZ.get(|| real::driver(c"cuMemAllocAsync_ptsz")).map_or(NOT_FOUND, |f| unsafe { f(ptr, size, stream) });
    hook(|| allocate(device_pointer_out(ptr), size, Order::Stream(per_thread(stream)), real), real)
}

/// # Safety
/// As `cuMemFreeAsync_ptsz` (stream 0 is the per-thread default stream).
#[no_mangle]
pub unsafe extern "C" fn cuMemFreeAsync_ptsz(ptr: u64, stream: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || {
        FREE_ASYNC_PTSZ
            .get(|| real::driver(c"cuMemFreeAsync_ptsz"))
            .map_or(missing_unless_null(ptr as usize, NOT_FOUND), |f| unsafe { f(ptr, stream) })
    };
    hook(|| release(ptr as *mut c_void, Order::Stream(per_thread(stream)), real), real)
}

/// # Safety
/// As `cuMemAllocPitch_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemAllocPitch_v2(ptr: *mut u64, pitch: *mut usize, width: usize, height: usize, element: c_uint) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real =
        || ALLOC_PITCH.get(|| real::driver(c"cuMemAllocPitch_v2")).map_or(NOT_FOUND, |f| unsafe { f(ptr, pitch, width, height, element) });
    hook(|| allocate_pitched(device_pointer_out(ptr), pitch, width, height, real), real)
}

/// # Safety
/// As `cuMemGetInfo_v2`.
#[no_mangle]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> c_int {
    // SAFETY: the caller's arguments, passed on unchanged.
    let real = || MEM_GET_INFO.get(|| real::driver(c"cuMemGetInfo_v2")).map_or(NOT_FOUND, |f| unsafe { f(free, total) });
    hook(|| add_pool_free(real(), free), real)
}

/// (real entry point, hook) pairs, by address, for the driver functions named.
fn pairs(hooks: &[(&std::ffi::CStr, usize)]) -> Vec<(usize, usize)> {
    hooks.iter().map(|(name, hook)| (real::driver(name) as usize, *hook)).filter(|(real, _)| *real != 0).collect()
}

/// The driver's two `cuGetProcAddress` entry points, as `dlsym` found them (0 until then), and
/// ours: what `dlsym` hands out instead.
static SEEN_GET_PROC_ADDRESS: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

fn get_proc_address_hooks() -> [(&'static std::ffi::CStr, usize); 2] {
    [(c"cuGetProcAddress", cuGetProcAddress as *const () as usize), (c"cuGetProcAddress_v2", cuGetProcAddress_v2 as *const () as usize)]
}

/// Every hooked driver function: what `cuGetProcAddress` replaces.
fn driver_hooks() -> &'static [(usize, usize)] {
    static TABLE: OnceLock<Vec<(usize, usize)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = pairs(&[
            (c"cuMemAlloc_v2", cuMemAlloc_v2 as *const () as usize),
            (c"cuMemFree_v2", cuMemFree_v2 as *const () as usize),
            (c"cuMemAllocAsync", cuMemAllocAsync as *const () as usize),
            (c"cuMemFreeAsync", cuMemFreeAsync as *const () as usize),
            (c"cuMemAllocAsync_ptsz", cuMemAllocAsync_ptsz as *const () as usize),
            (c"cuMemFreeAsync_ptsz", cuMemFreeAsync_ptsz as *const () as usize),
            (c"cuMemGetInfo_v2", cuMemGetInfo_v2 as *const () as usize),
            (c"cuMemAllocPitch_v2", cuMemAllocPitch_v2 as *const () as usize),
        ]);
        table.extend(pairs(&crate::streams::driver_hooks()));
        table.extend(pairs(&get_proc_address_hooks()));
        table
    })
}

/// The hook `table` has for the real function at `found`, else `found`.
fn substitute(found: *mut c_void, table: &[(usize, usize)]) -> *mut c_void {
    match table.iter().find(|(real, _)| *real == found as usize) {
        Some((_, hook)) => *hook as *mut c_void,
        None => found,
    }
}

/// # Safety
/// As `cuGetProcAddress` (CUDA 11.3-12 signature).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, version: c_int, flags: u64) -> c_int {
    let Some(real) = GET_PROC_ADDRESS.get(|| seen_or_driver(0)) else { return NOT_FOUND };
    // SAFETY: the caller's arguments, passed on unchanged.
    let result = unsafe { real(symbol, pfn, version, flags) };
    replace_answer(result, pfn)
}

/// # Safety
/// As `cuGetProcAddress_v2` (CUDA 12+: with the symbol status).
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: u64,
    status: *mut c_int,
) -> c_int {
    let Some(real) = GET_PROC_ADDRESS_V2.get(|| seen_or_driver(1)) else { return NOT_FOUND };
    // SAFETY: the caller's arguments, passed on unchanged.
    let result = unsafe { real(symbol, pfn, version, flags, status) };
    replace_answer(result, pfn)
}

fn replace_answer(result: c_int, pfn: *mut *mut c_void) -> c_int {
    if result == 0 && !pfn.is_null() {
        // SAFETY: the real function succeeded and wrote a function pointer through `pfn`.
        unsafe { pfn.write(substitute(pfn.read(), driver_hooks())) };
    }
    result
}

/// glibc's dlsym, for `RTLD_NEXT` lookups: those depend on the caller's address, so the
/// trampoline below jumps straight to it with the caller's return address untouched.
static DLSYM_FOR_NEXT: AtomicUsize = AtomicUsize::new(0);

/// Records glibc's dlsym early (a library constructor), so `RTLD_NEXT` lookups keep their
/// caller's address from the start.
extern "C" fn record_real_dlsym() {
    if let Some(dlsym) = real::dlsym() {
        DLSYM_FOR_NEXT.store(dlsym as *const () as usize, Ordering::Release);
    }
}

#[used]
#[link_section = ".init_array"]
static RECORD_REAL_DLSYM: extern "C" fn() = record_real_dlsym;

/// The driver's `cuGetProcAddress` entry point `which` (0: the first, 1: `_v2`).
fn seen_or_driver(which: usize) -> *mut c_void {
    match SEEN_GET_PROC_ADDRESS[which].load(Ordering::Relaxed) {
        0 => real::driver(get_proc_address_hooks()[which].0),
        seen => seen as *mut c_void,
    }
}

/// Every other lookup: the real answer, except that the driver's two `cuGetProcAddress` entry
/// points become ours. Tools call `dlsym` from inside their own `dlopen` (compute-sanitizer's
/// injection does, while the driver loads it), where loading a library or waiting for a lock
/// of this library deadlocks: the name decides, and nothing is loaded or locked here.
extern "C" fn dlsym_lookup(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let Some(dlsym) = real::dlsym() else { return std::ptr::null_mut() };
    DLSYM_FOR_NEXT.store(dlsym as *const () as usize, Ordering::Release);
    // SAFETY: the caller's arguments, passed on to glibc's dlsym.
    let found = unsafe { dlsym(handle, symbol) };
    if found.is_null() || symbol.is_null() || crate::FORKED_CHILD.load(Ordering::Relaxed) {
        return found;
    }
    // SAFETY: dlsym found a symbol by this name, so it is a NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(symbol) };
    for (which, (hooked, hook)) in get_proc_address_hooks().into_iter().enumerate() {
        if name == hooked && found as usize != hook {
            SEEN_GET_PROC_ADDRESS[which].store(found as usize, Ordering::Relaxed);
            real::note_driver_address(found);
            return hook as *mut c_void;
        }
    }
    found
}

#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
/// # Safety
/// As `dlsym`.
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "cmp rdi, -1",
        "jne 2f",
        "mov rax, qword ptr [rip + {next}]",
        "test rax, rax",
        "je 2f",
        "jmp rax",
        "2:",
        "jmp {lookup}",
        next = sym DLSYM_FOR_NEXT,
        lookup = sym dlsym_lookup,
    )
}

#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
/// # Safety
/// As `dlsym`.
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "cmn x0, #1",
        "b.ne 2f",
        "adrp x16, {next}",
        "ldr x16, [x16, :lo12:{next}]",
        "cbz x16, 2f",
        "br x16",
        "2:",
        "b {lookup}",
        next = sym DLSYM_FOR_NEXT,
        lookup = sym dlsym_lookup,
    )
}
