//! `librmm.so`, loaded once at the first hooked call: from this library's own folder first
//! (they ship side by side), else from the library path. If the program already loaded it,
//! the loader hands back that copy, so there is one rmm state in the process.

use crate::real;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

/// rmm.h's error codes (`rmmError_t`), which build.rs reads from include/rmm.h: this crate
/// keeps no copy of them (tests/error_codes.rs).
#[allow(dead_code)] // every code of rmm.h, also those the hooks do not look at
mod codes {
    include!(concat!(env!("OUT_DIR"), "/rmm_error_codes.rs"));
}
pub use codes::{RMM_ERROR_INVALID_ARGUMENT, RMM_ERROR_OUT_OF_MEMORY, RMM_SUCCESS};

type AllocFn = unsafe extern "C" fn(*mut *mut c_void, usize, *mut c_void, *const c_char, c_uint) -> c_int;
type FreeFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *const c_char, c_uint) -> c_int;
type ConfigureFn = unsafe extern "C" fn(*const c_char) -> c_int;
type MessageFn = unsafe extern "C" fn() -> *const c_char;
type CurrentResourceFn = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type PoolFreeFn = unsafe extern "C" fn(*mut c_void, *mut usize) -> c_int;
type DestroyFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type StreamFn = unsafe extern "C" fn(*mut c_void) -> c_int;
type CudaMallocFn = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type CudaFreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;

/// The librmm entry points the hooks use.
pub struct Rmm {
    pub alloc: AllocFn,
    pub free: FreeFn,
    /// `cudaMalloc`'s and `cudaFree`'s contract (no stream; the free waits for the device unless
    /// the configuration says `async_free`).
    pub cuda_malloc: CudaMallocFn,
    pub cuda_free: CudaFreeFn,
    last_error: MessageFn,
    current_resource: CurrentResourceFn,
    pool_free: PoolFreeFn,
    destroy: DestroyFn,
    register_stream: StreamFn,
    unregister_stream: StreamFn,
}

// SAFETY: plain function pointers into a library that stays loaded.
unsafe impl Send for Rmm {}
// SAFETY: as above.
unsafe impl Sync for Rmm {}

impl Rmm {
    /// Announces a stream the program just made (a failure only costs its allocations a
    /// driver call each: said on stderr once).
    pub fn register_stream(&self, stream: *mut c_void) {
        // SAFETY: a live stream the real creation function just returned.
        self.report_stream_failure("rmmStreamRegister", unsafe { (self.register_stream)(stream) });
    }

    /// Announces that the program is about to destroy `stream`.
    pub fn unregister_stream(&self, stream: *mut c_void) {
        // SAFETY: the program's stream, still alive (the real destroy runs after this).
        self.report_stream_failure("rmmStreamUnregister", unsafe { (self.unregister_stream)(stream) });
    }

    fn report_stream_failure(&self, call: &str, result: c_int) {
        static SAID: std::sync::Once = std::sync::Once::new();
        if result != RMM_SUCCESS {
            SAID.call_once(|| eprintln!("rmm preload: {call} failed: {}", self.last_error()));
        }
    }

    pub fn last_error(&self) -> String {
        // SAFETY: rmmGetLastErrorMessage returns a NUL-terminated string owned by librmm.
        unsafe { CStr::from_ptr((self.last_error)()) }.to_string_lossy().into_owned()
    }

    /// Bytes the current device's resource holds free in its pool (0 if it keeps none).
    pub fn pool_free(&self) -> usize {
        let mut resource = std::ptr::null_mut();
        let mut free = 0usize;
        // SAFETY: out-pointers to locals; the handle is destroyed after use.
        unsafe {
            if (self.current_resource)(&mut resource) == RMM_SUCCESS {
                if (self.pool_free)(resource, &mut free) != RMM_SUCCESS {
                    free = 0;
                }
                (self.destroy)(resource);
            }
        }
        free
    }
}

/// The folder holding this library.
fn own_folder() -> Option<String> {
    // SAFETY: Dl_info is plain C data (pointers and integers) for which all zeros is valid.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info` for an address inside this library.
    if unsafe { libc::dladdr(own_folder as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated path owned by the loader.
    let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    path.rsplit_once('/').map(|(folder, _)| folder.to_string())
}

fn open() -> Result<*mut c_void, String> {
    let mut tried = Vec::new();
    let candidates = own_folder().map(|folder| format!("{folder}/librmm.so")).into_iter().chain(["librmm.so".to_string()]);
    for candidate in candidates {
        let name = std::ffi::CString::new(candidate.clone()).map_err(|e| e.to_string())?;
        // SAFETY: dlopen of a NUL-terminated path.
        let handle = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if !handle.is_null() {
            return Ok(handle);
        }
        // SAFETY: dlerror returns the last loader error or NULL.
        let error = unsafe { libc::dlerror() };
        let reason = match error.is_null() {
            true => "not found".into(),
            // SAFETY: dlerror returned a NUL-terminated message owned by the loader.
            false => unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned(),
        };
        tried.push(format!("{candidate}: {reason}"));
    }
    Err(tried.join("; "))
}

fn symbol<F: Copy>(handle: *mut c_void, name: &CStr) -> Result<F, String> {
    let dlsym = real::dlsym().ok_or("glibc's dlsym was not found")?;
    // SAFETY: the real dlsym on a live handle with a NUL-terminated name.
    let found = unsafe { dlsym(handle, name.as_ptr()) };
    if found.is_null() {
        return Err(format!("librmm.so has no {}", name.to_string_lossy()));
    }
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    // SAFETY: F is the signature rmm.h declares for `name`.
    Ok(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) })
}

fn load() -> Result<Rmm, String> {
    let handle = open()?;
    let rmm = Rmm {
        alloc: symbol(handle, c"rmmAlloc")?,
        free: symbol(handle, c"rmmFree")?,
        cuda_malloc: symbol(handle, c"rmmCudaMalloc")?,
        cuda_free: symbol(handle, c"rmmCudaFree")?,
        last_error: symbol(handle, c"rmmGetLastErrorMessage")?,
        current_resource: symbol(handle, c"rmmGetCurrentDeviceResource")?,
        pool_free: symbol(handle, c"rmmPoolResourceGetFree")?,
        destroy: symbol(handle, c"rmmResourceDestroy")?,
        register_stream: symbol(handle, c"rmmStreamRegister")?,
        unregister_stream: symbol(handle, c"rmmStreamUnregister")?,
    };
    let configure: ConfigureFn = symbol(handle, c"rmmConfigure")?;
    // SAFETY: NULL asks rmmConfigure to read RMM_ALLOC_CONF itself (unset: the pooled default).
    if unsafe { configure(std::ptr::null()) } != RMM_SUCCESS {
        // The reason may end with a line of carets under the faulty column: the consequence
        // gets a line of its own.
        eprintln!(
            "rmm preload: RMM_ALLOC_CONF={:?} was not understood: {}\nrmm preload: running on the default stack (as if unset)",
            std::env::var("RMM_ALLOC_CONF").unwrap_or_default(),
            rmm.last_error()
        );
        // SAFETY: an empty string: the default stack.
        unsafe { configure(c"".as_ptr()) };
    }
    Ok(rmm)
}

/// librmm, or None (said once on stderr) when it cannot be loaded: the hooks then use the real
/// functions.
pub fn get() -> Option<&'static Rmm> {
    static RMM: OnceLock<Option<Rmm>> = OnceLock::new();
    RMM.get_or_init(|| match load() {
        Ok(rmm) => Some(rmm),
        Err(reason) => {
            eprintln!("rmm preload: librmm.so could not be loaded ({reason}); allocations go to CUDA directly");
            None
        }
    })
    .as_ref()
}
