//! The real functions behind the hooks: the next definitions after this library (the CUDA
//! runtime's), and the driver's own entry points in `libcuda.so.1`.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

pub type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// glibc's `dlsym`. This library defines `dlsym` itself, so the real one is found by version:
/// GLIBC_2.34 since libdl moved into libc, GLIBC_2.2.5 (x86_64) or GLIBC_2.17 (aarch64) before.
pub fn dlsym() -> Option<DlsymFn> {
    static REAL: OnceLock<Option<DlsymFn>> = OnceLock::new();
    *REAL.get_or_init(|| {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17"] {
            // SAFETY: dlvsym with RTLD_NEXT and NUL-terminated names; a non-NULL result is glibc's
            // dlsym, whose signature DlsymFn matches.
            let found = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
            if !found.is_null() {
                // SAFETY: see above.
                return Some(unsafe { std::mem::transmute::<*mut c_void, DlsymFn>(found) });
            }
        }
        None
    })
}

/// The definition of `name` after this library (for the runtime hooks: libcudart's).
pub fn next(name: &CStr) -> *mut c_void {
    match dlsym() {
        // SAFETY: the real dlsym with RTLD_NEXT and a NUL-terminated name.
        Some(dlsym) => unsafe { dlsym(libc::RTLD_NEXT, name.as_ptr()) },
        None => std::ptr::null_mut(),
    }
}

/// An address inside the driver (`libcuda.so.1`), noted by the `dlsym` hook when it sees the
/// driver's `cuGetProcAddress`: the driver's other functions are then found through the
/// library already loaded, without a `dlopen`.
static DRIVER_ADDRESS: AtomicUsize = AtomicUsize::new(0);

/// Notes `address`, a function of the loaded driver (see `DRIVER_ADDRESS`). Takes no lock and
/// calls nothing: it runs inside `dlsym`, which tools call from their own `dlopen`.
pub fn note_driver_address(address: *mut c_void) {
    DRIVER_ADDRESS.store(address as usize, Ordering::Relaxed);
}

/// glibc's RTLD_DL_LINKMAP: `dladdr1` also returns the object's `struct link_map *`, which glibc
/// accepts as a `dlsym` handle.
const RTLD_DL_LINKMAP: c_int = 2;

/// `libcuda.so.1`, found once (NULL without a driver): the loaded library that holds the noted
/// driver address, else `dlopen`. A tool's `dlopen` (compute-sanitizer interposes it) may not
/// be entered from a lookup it made itself, so nothing reached from the `dlsym` hook gets here.
pub fn libcuda() -> *mut c_void {
    struct Handle(*mut c_void);
    // SAFETY: a dlopen handle (or link_map) is valid process-wide and on every thread.
    unsafe impl Send for Handle {}
    // SAFETY: as above.
    unsafe impl Sync for Handle {}
    static HANDLE: OnceLock<Handle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let address = DRIVER_ADDRESS.load(Ordering::Relaxed);
            if address != 0 {
                // SAFETY: Dl_info is plain C data for which all zeros is valid.
                let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
                let mut link_map: *mut c_void = std::ptr::null_mut();
                // SAFETY: dladdr1 fills `info` and `link_map` for an address of a loaded object.
                let found = unsafe { libc::dladdr1(address as *const c_void, &mut info, &mut link_map, RTLD_DL_LINKMAP) };
                if found != 0 && !link_map.is_null() {
                    return Handle(link_map);
                }
            }
            // SAFETY: dlopen of a library name; NULL when there is no driver.
            Handle(unsafe { libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) })
        })
        .0
}

/// The driver's own `name` (NULL without a driver or without that symbol): the next definition
/// after this library (the driver, when the program links it), else the driver's.
pub fn driver(name: &CStr) -> *mut c_void {
    let next = next(name);
    if !next.is_null() {
        return next;
    }
    let handle = libcuda();
    match (handle.is_null(), dlsym()) {
        // SAFETY: the real dlsym on a loaded library's handle with a NUL-terminated name.
        (false, Some(dlsym)) => unsafe { dlsym(handle, name.as_ptr()) },
        _ => std::ptr::null_mut(),
    }
}

/// Caches a real function pointer of type `F` found by `find`.
pub struct Real<F: Copy> {
    cell: OnceLock<Option<F>>,
}

impl<F: Copy> Real<F> {
    pub const fn new() -> Self {
        Real { cell: OnceLock::new() }
    }

    /// The function, if `find` finds it.
    pub fn get(&self, find: impl FnOnce() -> *mut c_void) -> Option<F> {
        *self.cell.get_or_init(|| {
            let found = find();
            assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
            // SAFETY: F is the function-pointer type of the symbol found, as each caller
            // declares it from the CUDA headers; NULL stays None.
            (!found.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&found) })
        })
    }
}
