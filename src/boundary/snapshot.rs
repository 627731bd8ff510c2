//! JSON snapshots of a resource stack, for diagnosing out-of-memory and fragmentation.

use super::handles::{self, rmmResource_t};
use super::types::rmmFootprint_t;
use super::{boundary, copy_text, non_null, optional_str, write_out};
use crate::error::{rmmError_t, Error};
use std::ffi::c_char;

/// The snapshot of `resource` and everything beneath it as JSON text.
fn snapshot_text(resource: rmmResource_t) -> crate::error::Result<String> {
    let value = handles::get(resource)?.snapshot();
    serde_json::to_string_pretty(&value).map_err(|e| Error::Internal(format!("snapshot: {e}")))
}

/// Describes `resource` and its upstream resources as JSON: one object per resource, its
/// upstream nested under "upstream". Pools, arenas and fixed-size resources list their
/// upstream chunks with owning stream and every free and used block, and give the figures for
/// out-of-memory diagnosis: "reserved_bytes" and "used_bytes" with their peaks
/// ("peak_reserved_bytes", "peak_used_bytes"), "free_bytes", "largest_free_block",
/// "fragmentation" (1 - used / reserved) and "free_space_fragmentation" (1 - largest free
/// block / free bytes); the expandable resource also shows its reservation, mapped ranges and the pages it keeps unmapped. Adaptors
/// add their own figures (statistics counts, limit, outstanding allocations). The text and a
/// NUL are copied into `buffer` of `size` bytes; its length goes to `*length` unless NULL. A
/// NULL `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmResourceGetSnapshot(resource: rmmResource_t, buffer: *mut c_char, size: usize, length: *mut usize) -> rmmError_t {
    boundary("rmmResourceGetSnapshot", || copy_text(&snapshot_text(resource)?, buffer, size, length))
}

/// Writes the snapshot of `resource` (see `rmmResourceGetSnapshot`) to the file `path`.
/// RMM_ERROR_IO when it cannot be written.
#[no_mangle]
pub extern "C" fn rmmResourceWriteSnapshot(resource: rmmResource_t, path: *const c_char) -> rmmError_t {
    boundary("rmmResourceWriteSnapshot", || {
        let path = optional_str(path, "path")?.ok_or_else(|| Error::invalid("path is NULL"))?;
        let text = snapshot_text(resource)?;
        std::fs::write(path, text + "\n").map_err(|e| Error::Io(format!("cannot write {path}: {e}")))
    })
}

/// Writes what `resource` (or the resource beneath an adaptor stack) holds from the device and
/// hands out, with their peaks since it was made, its largest free block and its
/// fragmentation, to `*footprint`. Peaks of bytes in use are exact for a resource used on one
/// stream; with several streams they are the sum of each stream's peak (an upper bound).
/// RMM_ERROR_NOT_SUPPORTED for resources that do not know (cuda_async: the driver's pool).
#[no_mangle]
pub extern "C" fn rmmResourceGetFootprint(resource: rmmResource_t, footprint: *mut rmmFootprint_t) -> rmmError_t {
    boundary("rmmResourceGetFootprint", || {
        non_null(footprint, "footprint")?;
        let resource = handles::get(resource)?;
        let figures = resource
            .footprint()
            .ok_or_else(|| Error::NotSupported(format!("the {} resource does not report its footprint", resource.name())))?;
        write_out(footprint, "footprint", rmmFootprint_t::from(figures))
    })
}
