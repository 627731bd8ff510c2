//! Where a hooked allocation or free goes: to librmm, or (when librmm is unavailable, refuses a
//! pointer it did not hand out, or fails for another reason than memory) to the real function.
//! The runtime's hooks and the driver's share it. Error codes: cudaErrorInvalidValue = 1,
//! cudaErrorMemoryAllocation = 2 (the driver's CUDA_ERROR_INVALID_VALUE and
//! CUDA_ERROR_OUT_OF_MEMORY have the same values).

use crate::librmm::{self, Rmm, RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_OUT_OF_MEMORY, RMM_SUCCESS};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

pub const SUCCESS: c_int = 0;
pub const INVALID_VALUE: c_int = 1;
pub const OUT_OF_MEMORY: c_int = 2;

/// Pitched rows start at multiples of this (a multiple of every GPU's texture pitch alignment).
const PITCH_ALIGNMENT: usize = 512;

/// How a hooked call names its stream: not at all (`cudaMalloc`, `cudaFree`: usable on any
/// stream, free once the device is done with it), or a stream it is ordered on.
#[derive(Clone, Copy)]
pub enum Order {
    Device,
    Stream(*mut c_void),
}

/// Allocates `size` bytes through rmm in `order`; `fallback` (the real function) when rmm is
/// unavailable or fails for another reason than memory.
pub fn allocate(ptr: *mut *mut c_void, size: usize, order: Order, fallback: impl FnOnce() -> c_int) -> c_int {
    if ptr.is_null() {
        return INVALID_VALUE;
    }
    let Some(rmm) = librmm::get() else { return fallback() };
    let result = match order {
        // SAFETY: `ptr` is a non-NULL out-pointer of the caller.
        Order::Device => unsafe { (rmm.cuda_malloc)(ptr, size) },
        // SAFETY: as above; NULL file, line 0: no call site.
        Order::Stream(stream) => unsafe { (rmm.alloc)(ptr, size, stream, std::ptr::null(), 0) },
    };
    match result {
        RMM_SUCCESS => SUCCESS,
        RMM_ERROR_OUT_OF_MEMORY => {
            Failure::OutOfMemory.note(|| refused_allocation(rmm, size, "the program gets cudaErrorMemoryAllocation"));
            OUT_OF_MEMORY
        }
        _ => {
            Failure::NotServed.note(|| refused_allocation(rmm, size, "it goes to CUDA directly"));
            fallback()
        }
    }
}

fn refused_allocation(rmm: &Rmm, size: usize, outcome: &str) -> String {
    format!("an allocation of {size} bytes failed in rmm ({}); {outcome}", rmm.last_error())
}

/// Why rmm did not serve a hooked allocation or free. A program under the preload library sees
/// only the CUDA error code, so the first failure of each kind is said on stderr (whatever the
/// log level), with rmm's message: what the device and the stack hold, the configuration that
/// could not be built, the missing driver, the pointer freed twice. The process's exit repeats
/// each with its count.
#[derive(Clone, Copy)]
enum Failure {
    OutOfMemory,
    NotServed,
    /// A free that neither rmm nor CUDA took (freed twice, never allocated, inside a block).
    Free,
}

/// Per kind: the number of failures and the first one's line.
static FAILURES: [(AtomicUsize, Mutex<String>); 3] = [const { (AtomicUsize::new(0), Mutex::new(String::new())) }; 3];

impl Failure {
    /// What failed, for the line at exit.
    fn calls(self) -> &'static str {
        match self {
            Failure::OutOfMemory | Failure::NotServed => "allocation(s)",
            Failure::Free => "free(s)",
        }
    }

    /// Counts a failure; the first is said at once, as `line` words it.
    fn note(self, line: impl FnOnce() -> String) {
        let (count, first) = &FAILURES[self as usize];
        if count.fetch_add(1, Ordering::Relaxed) != 0 {
            return;
        }
        let line = line();
        eprintln!("rmm preload: {line}");
        *first.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = line;
        static AT_EXIT: Once = Once::new();
        // SAFETY: registers a function without captured state, run once at exit.
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(repeat_at_exit);
        });
    }
}

extern "C" fn repeat_at_exit() {
    for (kind, (count, first)) in [Failure::OutOfMemory, Failure::NotServed, Failure::Free].into_iter().zip(&FAILURES) {
        let count = count.load(Ordering::Relaxed);
        if count != 0 {
            let first = first.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            eprintln!("rmm preload: at exit: {count} {} failed this way; the first: {first}", kind.calls());
        }
    }
}

/// What a free answers when the CUDA function it would pass a pointer to does not exist (no
/// CUDA runtime or driver in the process, as on simulated devices): success for NULL, which
/// programs free to initialise CUDA and which is a no-op everywhere, else `missing`.
pub fn missing_unless_null(ptr: usize, missing: c_int) -> c_int {
    if ptr == 0 {
        SUCCESS
    } else {
        missing
    }
}

/// Frees `ptr` through rmm in `order` when rmm handed it out (`Order::Device`: as `cudaFree`
/// and `cuMemFree`, once the device is done with it: `rmmCudaFree` waits for the device unless
/// the configuration says `async_free`); otherwise (or for NULL, which the real functions use
/// to set up a context) `fallback`.
pub fn release(ptr: *mut c_void, order: Order, fallback: impl FnOnce() -> c_int) -> c_int {
    if ptr.is_null() {
        return fallback();
    }
    let Some(rmm) = librmm::get() else { return fallback() };
    let result = match order {
        // SAFETY: rmmCudaFree accepts any pointer and refuses those it did not hand out.
        Order::Device => unsafe { (rmm.cuda_free)(ptr) },
        // SAFETY: rmmFree accepts any pointer and refuses those it did not hand out.
        Order::Stream(stream) => unsafe { (rmm.free)(ptr, stream, std::ptr::null(), 0) },
    };
    match result {
        RMM_SUCCESS => SUCCESS,
        RMM_ERROR_INVALID_ARGUMENT => {
            // Not rmm's (or not any more): CUDA's, if the program allocated it there.
            let refused = rmm.last_error();
            let code = fallback();
            if code != SUCCESS {
                Failure::Free.note(|| format!("a free of {ptr:p} failed: rmm refused it ({refused}) and CUDA answered error {code}"));
            }
            code
        }
        _ => {
            Failure::Free
                .note(|| format!("a free of {ptr:p} failed in rmm ({}); the program gets cudaErrorInvalidValue", rmm.last_error()));
            INVALID_VALUE
        }
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
    let result = allocate(ptr, size, Order::Device, fallback);
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
