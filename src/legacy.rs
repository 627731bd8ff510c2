//! Legacy RMM semantics (`rmmInitialize`, `rmmAlloc`, `rmmFree`, ...): a process-wide
//! initialized state that installs one resource per listed device, and pointer-based frees.
//!
//! States: before any `rmmInitialize`, allocations use the current device's resource (as
//! modern RMM does); after `rmmFinalize`, new allocations are refused until `rmmInitialize` is
//! called again, while frees of live pointers keep working so nothing allocated is lost.

use crate::allocations::{self, registry};
use crate::error::{Error, Result};
use crate::mr::{AsyncResource, DirectResource, MemoryResource, PoolResource};
use crate::per_device;
use crate::platform::{backend, Stream};
use parking_lot::Mutex;
use std::sync::Arc;

/// Allocation-mode flags, as legacy RMM's `rmmAllocationMode_t`.
pub mod mode {
    pub const CUDA_DEFAULT: u32 = 0;
    pub const POOL: u32 = 1;
    pub const CUDA_MANAGED: u32 = 2;
    pub const CUDA_ASYNC: u32 = 4;
    pub const ALL: u32 = POOL | CUDA_MANAGED | CUDA_ASYNC;
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    pub allocation_mode: u32,
    pub initial_pool_size: usize,
    pub maximum_pool_size: usize,
    pub enable_logging: bool,
    /// Devices to set up; empty means the calling thread's current device.
    pub devices: Vec<i32>,
}

enum State {
    /// No `rmmInitialize` yet: allocations use the per-device resources.
    Implicit,
    Initialized {
        options: Options,
        replaced: Vec<(i32, Arc<dyn MemoryResource>)>,
    },
    Finalized,
}

static STATE: Mutex<State> = Mutex::new(State::Implicit);

fn resource_for(options: &Options, device: i32) -> Result<Arc<dyn MemoryResource>> {
    let mode_flags = options.allocation_mode;
    if mode_flags & !mode::ALL != 0 {
        return Err(Error::invalid(format!("allocation_mode {mode_flags:#x} has unknown flags")));
    }
    if mode_flags & mode::CUDA_ASYNC != 0 && mode_flags & (mode::POOL | mode::CUDA_MANAGED) != 0 {
        return Err(Error::invalid("CudaAsyncAllocation cannot be combined with PoolAllocation or CudaManagedMemory"));
    }
    if mode_flags & mode::POOL != 0 {
        let base: Arc<dyn MemoryResource> = match mode_flags & mode::CUDA_MANAGED != 0 {
            true => Arc::new(DirectResource::managed(device)?),
            false => Arc::new(DirectResource::cuda(device)?),
        };
        let initial = match options.initial_pool_size {
            // As legacy RMM: half of the device's free memory.
            0 => backend()?.mem_get_info(device)?.0 / 2 / (2 << 20) * (2 << 20),
            size => size,
        };
        return Ok(Arc::new(PoolResource::new(base, initial, options.maximum_pool_size)?));
    }
    if mode_flags & mode::CUDA_ASYNC != 0 {
        let release_threshold = match options.maximum_pool_size {
            0 => usize::MAX,
            limit => limit,
        };
        return Ok(Arc::new(AsyncResource::new(device, options.initial_pool_size, release_threshold)?));
    }
    if mode_flags & mode::CUDA_MANAGED != 0 {
        return Ok(Arc::new(DirectResource::managed(device)?));
    }
    Ok(Arc::new(DirectResource::cuda(device)?))
}

pub fn initialize(options: Option<Options>) -> Result<()> {
    let mut state = STATE.lock();
    if matches!(*state, State::Initialized { .. }) {
        return Err(Error::already_initialized());
    }
    let mut options = options.unwrap_or_default();
    let platform = backend()?;
    if options.devices.is_empty() {
        options.devices.push(platform.current_device()?);
    }
    let mut resources = Vec::with_capacity(options.devices.len());
    for (i, &device) in options.devices.iter().enumerate() {
        platform.check_device(device)?;
        if options.devices[..i].contains(&device) {
            return Err(Error::invalid(format!("device {device} is listed twice")));
        }
        resources.push((device, resource_for(&options, device)?));
    }
    let mut replaced = Vec::with_capacity(resources.len());
    for (device, resource) in resources {
        match per_device::set(device, resource) {
            Ok(previous) => replaced.push((device, previous)),
            Err(e) => {
                restore(replaced);
                return Err(e);
            }
        }
    }
    crate::legacy_log::enable(options.enable_logging);
    *state = State::Initialized { options, replaced };
    Ok(())
}

fn restore(replaced: Vec<(i32, Arc<dyn MemoryResource>)>) {
    for (device, previous) in replaced.into_iter().rev() {
        if let Err(e) = per_device::set(device, previous) {
            log::warn!("restoring the resource of device {device}: {e}");
        }
    }
}

pub fn finalize() -> Result<()> {
    let mut state = STATE.lock();
    if !matches!(*state, State::Initialized { .. }) {
        return Err(Error::NotInitialized("rmmFinalize without a matching rmmInitialize".into()));
    }
    let State::Initialized { replaced, .. } = std::mem::replace(&mut *state, State::Finalized) else { unreachable!("checked above") };
    restore(replaced);
    crate::mr::via::collect();
    crate::legacy_log::enable(false);
    crate::mr::adaptors::at_finalize();
    let (count, bytes) = registry().totals();
    if count > 0 {
        log::warn!("rmmFinalize: {count} allocation(s) of {bytes} bytes are still live; they stay valid until freed");
    }
    Ok(())
}

/// The options in force, if initialized.
pub fn initialized_options() -> Option<Options> {
    match &*STATE.lock() {
        State::Initialized { options, .. } => Some(options.clone()),
        _ => None,
    }
}

fn require_not_finalized() -> Result<()> {
    if matches!(*STATE.lock(), State::Finalized) {
        return Err(Error::NotInitialized("rmmFinalize was called; call rmmInitialize before allocating again".into()));
    }
    Ok(())
}

/// `rmmAlloc`: `bytes` from the current device's resource; 0 bytes give NULL.
pub fn alloc(bytes: usize, stream: Stream) -> Result<usize> {
    require_not_finalized()?;
    if bytes == 0 {
        return Ok(0);
    }
    allocations::allocate(&per_device::current()?, bytes, stream)
}

/// `rmmFree`: returns any live pointer rmm handed out to its own resource.
pub fn free(ptr: usize, stream: Stream) -> Result<()> {
    allocations::free_any(ptr, stream)
}

/// `rmmRealloc`: a new allocation, the contents up to the smaller size copied in stream
/// order, and the old one freed in the same order. The new block comes from the resource that
/// made the old one when rmm recorded it, otherwise from the current device's resource. On
/// failure the old allocation is untouched.
pub fn realloc(ptr: usize, new_bytes: usize, stream: Stream) -> Result<usize> {
    if ptr == 0 {
        return alloc(new_bytes, stream);
    }
    let (old_size, resource) =
        allocations::describe(ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not a live rmm allocation")))?;
    if new_bytes == 0 {
        free(ptr, stream)?;
        return Ok(0);
    }
    require_not_finalized()?;
    let resource = match resource {
        Some(resource) => resource,
        None => per_device::current()?,
    };
    let new_ptr = allocations::allocate(&resource, new_bytes, stream)?;
    if let Err(e) = backend()?.copy_async(resource.device(), new_ptr, ptr, old_size.min(new_bytes), stream) {
        let _ = free(new_ptr, stream);
        return Err(e);
    }
    free(ptr, stream)?;
    Ok(new_ptr)
}

/// `rmmGetInfo`: (free, total) bytes of the current device.
pub fn memory_info() -> Result<(usize, usize)> {
    require_not_finalized()?;
    let platform = backend()?;
    platform.mem_get_info(platform.current_device()?)
}

/// `rmmGetAllocationOffset`: the distance of `ptr` from the start of the device allocation
/// that holds it.
pub fn allocation_offset(ptr: usize) -> Result<isize> {
    let device = match allocations::describe(ptr) {
        Some((_, Some(resource))) => resource.device(),
        _ => backend()?.current_device()?,
    };
    let (base, _) = backend()?.address_range(device, ptr)?;
    Ok((ptr - base) as isize)
}
