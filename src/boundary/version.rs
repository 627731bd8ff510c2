//! The library's version, for programs that check at build time (`RMM_VERSION_*` in rmm.h) and
//! at run time (`rmmGetVersion`, which answers the library actually loaded).

use super::{boundary, non_null, write_out};
use crate::error::rmmError_t;
use std::ffi::c_int;

/// The major version of rmm-rs that rmm.h belongs to.
pub const RMM_VERSION_MAJOR: u32 = 0;
/// The minor version of rmm-rs that rmm.h belongs to.
pub const RMM_VERSION_MINOR: u32 = 1;
/// The patch version of rmm-rs that rmm.h belongs to.
pub const RMM_VERSION_PATCH: u32 = 0;
/// The version as one number, major * 10000 + minor * 100 + patch, for `#if RMM_VERSION >= ...`
/// (a literal, so that every binding generator reads it).
pub const RMM_VERSION: u32 = 100;

/// Writes the version of the loaded library to `*major`, `*minor` and `*patch` (compare with
/// `RMM_VERSION_MAJOR` ... to find a header and library that do not match). None may be NULL.
/// Needs no initialization and is safe from any thread.
/// A NULL pointer: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmGetVersion(major: *mut c_int, minor: *mut c_int, patch: *mut c_int) -> rmmError_t {
    boundary("rmmGetVersion", || {
        non_null(major, "major")?;
        non_null(minor, "minor")?;
        non_null(patch, "patch")?;
        write_out(major, "major", RMM_VERSION_MAJOR as c_int)?;
        write_out(minor, "minor", RMM_VERSION_MINOR as c_int)?;
        write_out(patch, "patch", RMM_VERSION_PATCH as c_int)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_version_is_the_crate_version() {
        let crate_version = [env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"), env!("CARGO_PKG_VERSION_PATCH")]
            .map(|part| part.parse::<u32>().expect("a numeric version"));
        assert_eq!(
            [RMM_VERSION_MAJOR, RMM_VERSION_MINOR, RMM_VERSION_PATCH],
            crate_version,
            "update src/boundary/version.rs with Cargo.toml"
        );
        assert_eq!(RMM_VERSION, crate_version[0] * 10000 + crate_version[1] * 100 + crate_version[2]);
    }
}
