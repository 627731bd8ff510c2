//! Errors of the Rust core. The C boundary (`boundary/`) maps each to an `rmmError_t` code and
//! keeps the message for `rmmGetLastErrorMessage`.

use std::fmt;

/// Error codes of the C API. The first seven keep legacy RMM's values; new ones are appended.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum rmmError_t {
    /// The call succeeded.
    RMM_SUCCESS = 0,
    /// The CUDA driver reported an error, or no usable driver was found.
    RMM_ERROR_CUDA_ERROR = 1,
    /// An argument was invalid: NULL where a value is needed, a pointer rmm-rs did not hand out,
    /// a double free, a size that does not match the allocation.
    RMM_ERROR_INVALID_ARGUMENT = 2,
    /// The call needs `rmmInitialize` (it came before it, or after `rmmFinalize`).
    RMM_ERROR_NOT_INITIALIZED = 3,
    /// The resource could not satisfy the allocation.
    RMM_ERROR_OUT_OF_MEMORY = 4,
    /// An unexpected internal failure (a bug: please report it).
    RMM_ERROR_UNKNOWN = 5,
    /// Reading or writing a file failed.
    RMM_ERROR_IO = 6,
    /// The operation is not supported by this resource, device or driver.
    RMM_ERROR_NOT_SUPPORTED = 7,
    /// The handle was destroyed, or never was a handle.
    RMM_ERROR_INVALID_HANDLE = 8,
    /// `rmmInitialize` was called again without `rmmFinalize` in between.
    RMM_ERROR_ALREADY_INITIALIZED = 9,
}

/// What went wrong, with the message for `rmmGetLastErrorMessage`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A CUDA driver call failed: the call's name and the driver's own description.
    Cuda {
        /// The driver function that failed, as CUDA spells it (`cuMemAlloc`).
        call: &'static str,
        /// The driver's `CUresult` value.
        code: i32,
        /// The driver's description of the code (`cuGetErrorString`).
        message: String,
    },
    /// No usable CUDA driver (missing `libcuda.so.1`, too old, missing symbols).
    DriverUnavailable(String),
    /// An argument was refused with nothing changed: NULL where a value is needed, a pointer
    /// rmm-rs did not hand out, a double free, a size or device that does not fit. The text says
    /// which and why.
    InvalidArgument(String),
    /// An allocation from a sleeping resource (`rmmResourceSleep`), which C sees as
    /// RMM_ERROR_INVALID_ARGUMENT: no layer above retries it as out of memory.
    Asleep(String),
    /// The call needs `rmmInitialize` first (it came before it, or after `rmmFinalize`).
    NotInitialized(String),
    /// The memory could not be had: the device, an upstream or a limit had too little for the
    /// request.
    OutOfMemory {
        /// Bytes the caller asked for.
        requested: usize,
        /// Why not, in words: what the device or the limit had left, or the upstream's own error.
        detail: String,
    },
    /// Valid, but this resource, device, driver or build cannot do it.
    NotSupported(String),
    /// A handle that was destroyed, is of another kind, or never was a handle.
    InvalidHandle(String),
    /// `rmmInitialize` again without `rmmFinalize` in between.
    AlreadyInitialized,
    /// Reading or writing a file (a log, a report, a snapshot) failed; the text names the file.
    Io(String),
    /// A panic caught at the C boundary, or a broken invariant.
    Internal(String),
}

/// An error of the Rust core: one pointer, so that a `Result<usize>` travels in two registers
/// through every layer of the allocation path (a message-carrying enum would be copied
/// through memory at each of them), and errors are built out of line.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorKind>);

/// The result of every fallible call of the Rust core.
pub type Result<T> = std::result::Result<T, Error>;

/// Constructors named as the kinds they make, so `Error::InvalidArgument(message)` reads as
/// the variant it builds.
#[allow(non_snake_case)]
impl Error {
    /// No usable driver: it could not be loaded or lacks what rmm-rs calls; `message` says which.
    #[cold]
    pub fn DriverUnavailable(message: String) -> Self {
        ErrorKind::DriverUnavailable(message).into()
    }
    /// An argument refused with nothing changed; `message` says which and why.
    #[cold]
    pub fn InvalidArgument(message: String) -> Self {
        ErrorKind::InvalidArgument(message).into()
    }
    /// A legacy call outside `rmmInitialize`...`rmmFinalize`; `message` names the call.
    #[cold]
    pub fn NotInitialized(message: String) -> Self {
        ErrorKind::NotInitialized(message).into()
    }
    /// A valid request that this resource, device, driver or build cannot serve.
    #[cold]
    pub fn NotSupported(message: String) -> Self {
        ErrorKind::NotSupported(message).into()
    }
    /// A handle that was destroyed, is of another kind, or was never made.
    #[cold]
    pub fn InvalidHandle(message: String) -> Self {
        ErrorKind::InvalidHandle(message).into()
    }
    /// A file that could not be read or written; `message` names it and the system's reason.
    #[cold]
    pub fn Io(message: String) -> Self {
        ErrorKind::Io(message).into()
    }
    /// A broken invariant or a caught panic: a bug, which C sees as RMM_ERROR_UNKNOWN.
    #[cold]
    pub fn Internal(message: String) -> Self {
        ErrorKind::Internal(message).into()
    }
}

impl From<ErrorKind> for Error {
    #[cold]
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(kind))
    }
}

impl Error {
    /// What went wrong, to match on.
    pub fn kind(&self) -> &ErrorKind {
        &self.0
    }

    /// What went wrong, taken out of the box (to move the message out).
    pub fn into_kind(self) -> ErrorKind {
        *self.0
    }

    /// The C API code for this error (e.g. a driver error and a missing driver are both
    /// `RMM_ERROR_CUDA_ERROR`); the message goes to `rmmGetLastErrorMessage`.
    pub fn code(&self) -> rmmError_t {
        use rmmError_t::*;
        match self.kind() {
            ErrorKind::Cuda { .. } | ErrorKind::DriverUnavailable(_) => RMM_ERROR_CUDA_ERROR,
            ErrorKind::InvalidArgument(_) | ErrorKind::Asleep(_) => RMM_ERROR_INVALID_ARGUMENT,
            ErrorKind::NotInitialized(_) => RMM_ERROR_NOT_INITIALIZED,
            ErrorKind::OutOfMemory { .. } => RMM_ERROR_OUT_OF_MEMORY,
            ErrorKind::NotSupported(_) => RMM_ERROR_NOT_SUPPORTED,
            ErrorKind::InvalidHandle(_) => RMM_ERROR_INVALID_HANDLE,
            ErrorKind::AlreadyInitialized => RMM_ERROR_ALREADY_INITIALIZED,
            ErrorKind::Io(_) => RMM_ERROR_IO,
            ErrorKind::Internal(_) => RMM_ERROR_UNKNOWN,
        }
    }

    /// Whether this is the refusal of a sleeping resource.
    pub fn is_asleep(&self) -> bool {
        matches!(self.kind(), ErrorKind::Asleep(_))
    }

    /// Whether this is out of memory, the one error a resource may answer by reclaiming or
    /// growing and trying again.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self.kind(), ErrorKind::OutOfMemory { .. })
    }

    /// The text without the kind it starts with, for a message that names the kind already
    /// ("could not allocate 2.00 KiB (2048 bytes) (why)" for out of memory); other kinds whole.
    pub fn reason(&self) -> String {
        match self.kind() {
            ErrorKind::OutOfMemory { requested, detail } => format!("could not allocate {} ({detail})", crate::units::exact(*requested)),
            _ => self.to_string(),
        }
    }

    /// Why, without what was asked for: an out-of-memory error's detail (the request is named
    /// once, by the message that quotes this), other kinds whole.
    pub fn cause(&self) -> String {
        match self.kind() {
            ErrorKind::OutOfMemory { detail, .. } => detail.clone(),
            _ => self.to_string(),
        }
    }

    /// `ErrorKind::InvalidArgument` from anything that converts into a message.
    #[cold]
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::InvalidArgument(msg.into())
    }

    /// `ErrorKind::OutOfMemory` for a request of `requested` bytes, with why.
    #[cold]
    pub fn out_of_memory(requested: usize, detail: impl Into<String>) -> Self {
        ErrorKind::OutOfMemory { requested, detail: detail.into() }.into()
    }

    /// `ErrorKind::Cuda`: driver function `call` returned `code`, described as `message`.
    #[cold]
    pub fn cuda(call: &'static str, code: i32, message: String) -> Self {
        ErrorKind::Cuda { call, code, message }.into()
    }

    /// `rmmInitialize` called again without `rmmFinalize` in between.
    #[cold]
    pub fn already_initialized() -> Self {
        ErrorKind::AlreadyInitialized.into()
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind().fmt(f)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            ErrorKind::Cuda { call, code, message } => write!(f, "{call} failed: CUDA error {code} ({message})"),
            ErrorKind::DriverUnavailable(m) => write!(f, "CUDA driver unavailable: {m}"),
            ErrorKind::InvalidArgument(m) => write!(f, "invalid argument: {m}"),
            ErrorKind::Asleep(m) => write!(f, "resource asleep: {m}"),
            ErrorKind::NotInitialized(m) => write!(f, "not initialized: {m}"),
            ErrorKind::OutOfMemory { .. } => write!(f, "out of memory: {}", self.reason()),
            ErrorKind::NotSupported(m) => write!(f, "not supported: {m}"),
            ErrorKind::InvalidHandle(m) => write!(f, "invalid handle: {m}"),
            ErrorKind::AlreadyInitialized => {
                write!(f, "already initialized: call rmmFinalize before initializing again")
            }
            ErrorKind::Io(m) => write!(f, "I/O error: {m}"),
            ErrorKind::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Every code's name and description, in one place: `rmmGetErrorName` and `rmmGetErrorString`
/// answer from it, and the C++, Fortran and Python layers ask those functions.
const CODES: [(&std::ffi::CStr, &std::ffi::CStr); 10] = [
    (c"RMM_SUCCESS", c"RMM_SUCCESS: no error"),
    (c"RMM_ERROR_CUDA_ERROR", c"RMM_ERROR_CUDA_ERROR: the CUDA driver reported an error or is unavailable"),
    (c"RMM_ERROR_INVALID_ARGUMENT", c"RMM_ERROR_INVALID_ARGUMENT: an argument was invalid"),
    (c"RMM_ERROR_NOT_INITIALIZED", c"RMM_ERROR_NOT_INITIALIZED: rmm is not initialized"),
    (c"RMM_ERROR_OUT_OF_MEMORY", c"RMM_ERROR_OUT_OF_MEMORY: out of memory"),
    (c"RMM_ERROR_UNKNOWN", c"RMM_ERROR_UNKNOWN: unexpected internal error"),
    (c"RMM_ERROR_IO", c"RMM_ERROR_IO: file I/O failed"),
    (c"RMM_ERROR_NOT_SUPPORTED", c"RMM_ERROR_NOT_SUPPORTED: operation not supported"),
    (c"RMM_ERROR_INVALID_HANDLE", c"RMM_ERROR_INVALID_HANDLE: the handle was destroyed or is not a handle"),
    (c"RMM_ERROR_ALREADY_INITIALIZED", c"RMM_ERROR_ALREADY_INITIALIZED: rmm is already initialized"),
];

fn code_entry(code: i32) -> Option<&'static (&'static std::ffi::CStr, &'static std::ffi::CStr)> {
    usize::try_from(code).ok().and_then(|at| CODES.get(at))
}

/// The name of a code, as the enumerator is spelled ("RMM_ERROR_OUT_OF_MEMORY"), for
/// `rmmGetErrorName`.
pub fn code_name(code: i32) -> &'static std::ffi::CStr {
    code_entry(code).map_or(c"RMM_ERROR_UNRECOGNIZED", |(name, _)| name)
}

/// The static description of each code, for `rmmGetErrorString`.
pub fn code_description(code: i32) -> &'static std::ffi::CStr {
    code_entry(code).map_or(c"unknown rmmError_t value", |(_, described)| described)
}

#[cfg(test)]
mod tests {
    use super::{code_description, code_name, rmmError_t, CODES};

    /// The table's order is the codes' values, and each description begins with its name.
    #[test]
    fn every_code_has_its_own_name_and_description() {
        use rmmError_t::*;
        let all = [
            RMM_SUCCESS,
            RMM_ERROR_CUDA_ERROR,
            RMM_ERROR_INVALID_ARGUMENT,
            RMM_ERROR_NOT_INITIALIZED,
            RMM_ERROR_OUT_OF_MEMORY,
            RMM_ERROR_UNKNOWN,
            RMM_ERROR_IO,
            RMM_ERROR_NOT_SUPPORTED,
            RMM_ERROR_INVALID_HANDLE,
            RMM_ERROR_ALREADY_INITIALIZED,
        ];
        assert_eq!(all.len(), CODES.len());
        for code in all {
            let name = code_name(code as i32).to_str().unwrap();
            assert_eq!(name, format!("{code:?}"));
            assert!(code_description(code as i32).to_str().unwrap().starts_with(&format!("{name}: ")));
        }
        assert_eq!(code_name(-1).to_str().unwrap(), "RMM_ERROR_UNRECOGNIZED");
        assert_eq!(code_name(10).to_str().unwrap(), "RMM_ERROR_UNRECOGNIZED");
        assert_eq!(code_description(99).to_str().unwrap(), "unknown rmmError_t value");
    }
}
