//! `librmm_preload.so`: with `LD_PRELOAD=librmm_preload.so`, a program's device allocations go
//! through rmm-rs without rebuilding it.
//!
//! - The CUDA runtime (programs that use the shared `libcudart.so`): `cudaMalloc`, `cudaFree`,
//!   `cudaMallocAsync`, `cudaFreeAsync`, `cudaMallocPitch` and `cudaMemGetInfo` are defined
//!   here, so the dynamic linker binds the program's calls to them.
//! - Streams, in the runtime and the driver: creation and destruction are announced to rmm-rs
//!   (`streams.rs`), so that it trusts every stream's handle and retires it when it goes.
//! - The driver (which also catches the static runtime, nvcc's default): `cuMemAlloc_v2`,
//!   `cuMemFree_v2`, `cuMemAllocAsync`, `cuMemFreeAsync` (and their per-thread-stream `_ptsz`
//!   variants) and `cuMemGetInfo_v2`, both as exported symbols and through `cuGetProcAddress`,
//!   which the runtime gets with `dlsym` from `libcuda.so.1`: `dlsym` is interposed for
//!   exactly the two `cuGetProcAddress` entry points.
//!
//! The allocations go to `librmm.so` (found next to this library, else on the library path),
//! loaded once: a program that links `librmm.so` itself shares its state. `RMM_ALLOC_CONF`
//! configures the resources (`rmmConfigure`); a bad string is reported on stderr and the
//! defaults are used. Pointers rmm-rs did not hand out go to the real functions. librmm reaches
//! the driver through its own `dlsym` lookups of the `cuMem*` names, which pass through
//! untouched, so it never calls back into these hooks.

mod driver;
mod librmm;
mod real;
mod route;
mod runtime;
mod streams;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// Set while this thread is inside a hook: a hook reached again (from librmm, or from a
    /// callback) goes straight to the real function.
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

/// Set in the child of a `fork`: CUDA state does not survive a fork, and locks another thread
/// held may never be released there, so the child uses the real functions only.
static FORKED_CHILD: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    FORKED_CHILD.store(true, Ordering::SeqCst);
}

/// Runs `hooked` unless this thread is already inside a hook or this is a forked child, in
/// which case `real` runs.
fn hook<T>(hooked: impl FnOnce() -> T, real: impl FnOnce() -> T) -> T {
    static ATFORK: std::sync::Once = std::sync::Once::new();
    ATFORK.call_once(|| {
        // SAFETY: registers a plain function with no captured state for the life of the process.
        unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
    });
    if FORKED_CHILD.load(Ordering::Relaxed) || IN_HOOK.with(Cell::get) {
        return real();
    }
    IN_HOOK.with(|flag| flag.set(true));
    let result = hooked();
    IN_HOOK.with(|flag| flag.set(false));
    result
}
