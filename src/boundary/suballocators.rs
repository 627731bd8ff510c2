//! Suballocating resources over an upstream handle: pool, arena, binning, fixed-size.

use super::handles::{self, rmmResource_t};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error, Result};
use crate::resources::kinds::{self, Place, Value};
use crate::resources::{BinningResource, MemoryResource};
use std::any::Any;
use std::sync::Arc;

/// Makes a resource over `upstream` (which it keeps its own reference to) and writes its new
/// handle to `out`.
pub(crate) fn create_over(
    function: &'static str,
    out: *mut rmmResource_t,
    upstream: rmmResource_t,
    make: impl FnOnce(Arc<dyn MemoryResource>) -> Result<Arc<dyn MemoryResource>>,
) -> rmmError_t {
    boundary(function, || {
        non_null(out, "resource")?;
        let resource = make(handles::get(upstream)?)?;
        write_out(out, "resource", handles::create(resource)?)
    })
}

/// Creates a pool over `upstream` that reserves `initial_size` bytes up front and grows
/// (geometrically, backing off when upstream refuses) up to `maximum_size` bytes (0: no
/// limit). Allocations are stream-ordered: a block freed on one stream is reused on another
/// only after an event orders the two, without host synchronization. The pool keeps its own
/// reference to `upstream`; the caller owns the new handle (`rmmResourceDestroy`).
/// `initial_size` above a `maximum_size` that is not 0: RMM_ERROR_INVALID_ARGUMENT; the initial
/// size cannot be had from `upstream` (or lies past the address space):
/// RMM_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn rmmPoolResourceCreate(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    initial_size: usize,
    maximum_size: usize,
) -> rmmError_t {
    create_over("rmmPoolResourceCreate", resource, upstream, |upstream| {
        let values = [("initial", Value::Size(initial_size)), ("maximum", Value::Size(maximum_size))];
        kinds::build("pool", values, &Place::over(upstream))
    })
}

/// Writes the bytes a pool-like resource (pool, arena, fixed-size) holds from its upstream to
/// `*size`. Other resources: RMM_ERROR_NOT_SUPPORTED.
#[no_mangle]
pub extern "C" fn rmmPoolResourceGetSize(resource: rmmResource_t, size: *mut usize) -> rmmError_t {
    boundary("rmmPoolResourceGetSize", || {
        non_null(size, "size")?;
        let resource = handles::get(resource)?;
        let reserved = resource.pool_size().ok_or_else(|| Error::NotSupported(format!("a {} resource keeps no pool", resource.name())))?;
        write_out(size, "size", reserved)
    })
}

/// Writes the bytes a pool-like resource (or a stack over one) holds from its upstream but has
/// free to `*size`: what it can hand out without asking the device. Other resources:
/// RMM_ERROR_NOT_SUPPORTED.
#[no_mangle]
pub extern "C" fn rmmPoolResourceGetFree(resource: rmmResource_t, size: *mut usize) -> rmmError_t {
    boundary("rmmPoolResourceGetFree", || {
        non_null(size, "size")?;
        let resource = handles::get(resource)?;
        let free = resource.pool_free().ok_or_else(|| Error::NotSupported(format!("a {} resource keeps no pool", resource.name())))?;
        write_out(size, "size", free)
    })
}

/// Gives memory that `resource` holds but does not use back to its upstream (a pool's wholly
/// free chunks, after synchronizing the device), and writes the bytes released to
/// `*released` unless it is NULL. Resources that hold nothing release 0 bytes.
/// A failure while the device is synchronized or memory given back: RMM_ERROR_CUDA_ERROR.
#[no_mangle]
pub extern "C" fn rmmResourceRelease(resource: rmmResource_t, released: *mut usize) -> rmmError_t {
    boundary("rmmResourceRelease", || {
        let bytes = handles::get(resource)?.release()?;
        if !released.is_null() {
            write_out(released, "released", bytes)?;
        }
        Ok(())
    })
}

/// From now on, while `resource` holds more than `threshold` bytes from its upstream, a free
/// that leaves one of its chunks wholly free gives that chunk back upstream, once the stream of
/// the free has passed it (never waiting for it), as CUDA's memory pools do above their release
/// threshold; the initial size stays. `SIZE_MAX` (the default) keeps everything until
/// `rmmResourceRelease`, `rmmDeviceRelease` or out of memory; 0 gives back every chunk as it
/// empties. For a pool, arena, fixed-size resource and each pool bin of a binning resource, and
/// through the adaptors over them. Over `cuda` each chunk given back is a `cudaFree`, which
/// waits for the device: a threshold trades that for memory. The expandable resource's
/// threshold is set when it is made (`rmmExpandableResourceCreateWithOptions`):
/// RMM_ERROR_NOT_SUPPORTED, as for resources that keep no pool.
#[no_mangle]
pub extern "C" fn rmmResourceSetReleaseThreshold(resource: rmmResource_t, threshold: usize) -> rmmError_t {
    boundary("rmmResourceSetReleaseThreshold", || handles::get(resource)?.set_release_threshold(threshold))
}

/// Creates an arena over `upstream`: a global arena that starts with `arena_size` bytes (0:
/// grows on demand) and per-thread and per-stream arenas that take 4 MiB superblocks from it,
/// so threads allocating small blocks do not contend. Requests over 256 KiB use the global
/// arena. Ownership as `rmmPoolResourceCreate`.
/// The arena's size cannot be had from `upstream` (or lies past the address space):
/// RMM_ERROR_OUT_OF_MEMORY.
#[no_mangle]
pub extern "C" fn rmmArenaResourceCreate(resource: *mut rmmResource_t, upstream: rmmResource_t, arena_size: usize) -> rmmError_t {
    create_over("rmmArenaResourceCreate", resource, upstream, |upstream| {
        kinds::build("arena", [("size", Value::Size(arena_size))], &Place::over(upstream))
    })
}

/// Creates a binning resource over `upstream` with fixed-size bins of 2^min_size_exponent ..
/// 2^max_size_exponent bytes (exponents 0 to 40; min > max makes no bins). A request goes to
/// the smallest bin that holds it, larger ones to `upstream`. Ownership as
/// `rmmPoolResourceCreate`.
/// Exponents outside 0 to 40: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmBinningResourceCreate(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    min_size_exponent: i8,
    max_size_exponent: i8,
) -> rmmError_t {
    create_over("rmmBinningResourceCreate", resource, upstream, |upstream| {
        let values = [("min", Value::Exponent(min_size_exponent)), ("max", Value::Exponent(max_size_exponent))];
        kinds::build("binning", values, &Place::over(upstream))
    })
}

/// Adds (or replaces) the bin for requests up to `allocation_size` bytes in a binning
/// resource: `bin` (the binning resource keeps its own reference) or, when `bin` is NULL, a
/// new fixed-size resource of that size over the binning resource's upstream.
/// RMM_ERROR_INVALID_ARGUMENT when `bin` is of another device, or takes its memory from the
/// binning resource itself (directly or through other resources and bins).
#[no_mangle]
pub extern "C" fn rmmBinningResourceAddBin(resource: rmmResource_t, allocation_size: usize, bin: rmmResource_t) -> rmmError_t {
    boundary("rmmBinningResourceAddBin", || {
        let resource = handles::get(resource)?;
        let binning = (&*resource as &dyn Any)
            .downcast_ref::<BinningResource>()
            .ok_or_else(|| Error::invalid(format!("resource is a {} resource, not a binning resource", resource.name())))?;
        let bin = if bin.is_null() { None } else { Some(handles::get(bin)?) };
        binning.add_bin(allocation_size, bin)
    })
}

/// Creates a resource of fixed-size blocks over `upstream`: every request up to `block_size`
/// bytes (rounded up to 256) takes one block; larger ones are RMM_ERROR_INVALID_ARGUMENT.
/// `blocks_to_preallocate` blocks are reserved up front and in each later chunk (0: none up
/// front, 128 per chunk). Ownership as `rmmPoolResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmFixedSizeResourceCreate(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    block_size: usize,
    blocks_to_preallocate: usize,
) -> rmmError_t {
    create_over("rmmFixedSizeResourceCreate", resource, upstream, |upstream| {
        let values = [("block", Value::Size(block_size)), ("prealloc", Value::Count(blocks_to_preallocate))];
        kinds::build("fixed_size", values, &Place::over(upstream))
    })
}
