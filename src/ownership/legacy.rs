//! Legacy RMM semantics (`rmmInitialize`, `rmmAlloc`, `rmmFree`, ...): a process-wide
//! initialized state that installs one resource per listed device, and pointer-based frees.
//!
//! States, as RMM 0.14's contract: before `rmmInitialize` and after `rmmFinalize` the legacy
//! calls are refused with RMM_ERROR_NOT_INITIALIZED, except frees of live pointers, so that
//! nothing allocated is lost. A program that chose rmm's resources another way before calling
//! `rmmInitialize` (`RMM_ALLOC_CONF` in its environment, `rmmConfigure`, or a per-device
//! resource it set) gets that: the legacy calls then use the current device's resource.

use crate::error::{Error, ErrorKind, Result};
use crate::ownership::{config, per_device, records, Expected, Holder, StackRef};
use crate::platform::{backend, streams, Backend, Stream};
use crate::resources::{AsyncResource, DirectResource, MemoryResource, PoolResource};
use crate::units;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Allocation-mode flags, as legacy RMM's `rmmAllocationMode_t`.
pub mod mode {
    /// `CudaDefaultAllocation`: plain `cuMemAlloc`, no pool.
    pub const CUDA_DEFAULT: u32 = 0;
    /// `PoolAllocation`: a pool over device memory (over managed memory with `CUDA_MANAGED`).
    pub const POOL: u32 = 1;
    /// `CudaManagedMemory`: managed memory (`cuMemAllocManaged`), alone or under a pool.
    pub const CUDA_MANAGED: u32 = 2;
    /// `CudaAsyncAllocation`: the driver's stream-ordered pool (`cuMemAllocAsync`); combines
    /// with no other flag.
    pub const CUDA_ASYNC: u32 = 4;
    /// Every flag defined; any other bit is refused.
    pub const ALL: u32 = POOL | CUDA_MANAGED | CUDA_ASYNC;
}

/// Legacy RMM's `rmmOptions_t`: what `rmmInitialize` installs on each device.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    /// `mode` flags, ORed.
    pub allocation_mode: u32,
    /// Bytes a pool starts with; 0 takes half the device's free memory, as legacy RMM. For
    /// `CUDA_ASYNC`, bytes the driver's pool is primed with (allocated and freed once).
    pub initial_pool_size: usize,
    /// The most bytes a pool grows to (0: no limit). For `CUDA_ASYNC`, the release threshold
    /// (0: keep everything).
    pub maximum_pool_size: usize,
    /// Record every legacy call for `rmmWriteLog` and `rmmGetLog` (see `legacy_log`).
    pub enable_logging: bool,
    /// Devices to set up; empty means the calling thread's current device.
    pub devices: Vec<i32>,
}

enum State {
    /// No `rmmInitialize` yet: allocations use the per-device resources.
    Implicit,
    Initialized {
        options: Options,
        /// Each listed device's resource before, None where it had none yet.
        replaced: Vec<(i32, Option<StackRef>)>,
    },
    Finalized,
}

static STATE: Mutex<State> = Mutex::new(State::Implicit);

/// Set while the legacy calls may allocate (initialized, or configured while no `rmmInitialize`
/// came), for the check every allocation makes without taking the lock; when clear, the slow
/// path decides from `STATE`.
static READY: AtomicBool = AtomicBool::new(false);

/// What `initialize` makes for one device, settled before anything is made.
struct Plan {
    device: i32,
    /// The pool's initial size (an explicit `initial_pool_size`, or half the device's free
    /// memory now); unused by the modes without a pool.
    initial: usize,
}

/// Checks every option and every listed device, changing nothing: an invalid argument anywhere
/// in `options` is found before any device gets memory.
fn validate(options: &Options) -> Result<Vec<Plan>> {
    let mode_flags = options.allocation_mode;
    if mode_flags & !mode::ALL != 0 {
        return Err(Error::invalid(format!("allocation_mode {mode_flags:#x} has unknown flags")));
    }
    if mode_flags & mode::CUDA_ASYNC != 0 && mode_flags & (mode::POOL | mode::CUDA_MANAGED) != 0 {
        return Err(Error::invalid("CudaAsyncAllocation cannot be combined with PoolAllocation or CudaManagedMemory"));
    }
    let pool = mode_flags & mode::POOL != 0;
    let maximum = options.maximum_pool_size;
    if pool && maximum != 0 && options.initial_pool_size > maximum {
        return Err(Error::invalid(format!(
            "initial_pool_size {} exceeds maximum_pool_size {}",
            units::exact(options.initial_pool_size),
            units::exact(maximum)
        )));
    }
    let platform = backend()?;
    let mut plans: Vec<Plan> = Vec::with_capacity(options.devices.len());
    for &device in &options.devices {
        platform.check_device(device)?;
        per_device::check(device)?;
        if plans.iter().any(|plan| plan.device == device) {
            return Err(Error::invalid(format!("device {device} is listed twice")));
        }
        let initial = match (pool, options.initial_pool_size) {
            // As legacy RMM: half of the device's free memory.
            (true, 0) => platform.mem_get_info(device)?.0 / 2 / (2 << 20) * (2 << 20),
            (_, size) => size,
        };
        if pool && maximum != 0 && initial > maximum {
            return Err(Error::invalid(format!(
                "initial_pool_size 0 stands for half of device {device}'s free memory, {} now, which exceeds \
                 maximum_pool_size {}: give an initial_pool_size",
                units::exact(initial),
                units::exact(maximum)
            )));
        }
        plans.push(Plan { device, initial });
    }
    Ok(plans)
}

/// The resource `options` asks for on `plan`'s device (options validated).
fn resource_for(options: &Options, plan: &Plan) -> Result<Arc<dyn MemoryResource>> {
    let (mode_flags, device) = (options.allocation_mode, plan.device);
    if mode_flags & mode::POOL != 0 {
        let base: Arc<dyn MemoryResource> = match mode_flags & mode::CUDA_MANAGED != 0 {
            true => Arc::new(DirectResource::managed(device)?),
            false => Arc::new(DirectResource::cuda(device)?),
        };
        return Ok(Arc::new(PoolResource::new(base, plan.initial, options.maximum_pool_size)?));
    }
    if mode_flags & mode::CUDA_ASYNC != 0 {
        let release_threshold = match options.maximum_pool_size {
            0 => usize::MAX,
            limit => limit,
        };
        return Ok(Arc::new(AsyncResource::new(device, plan.initial, release_threshold, 0)?));
    }
    if mode_flags & mode::CUDA_MANAGED != 0 {
        return Ok(Arc::new(DirectResource::managed(device)?));
    }
    Ok(Arc::new(DirectResource::cuda(device)?))
}

/// `error` of making `device`'s resource, its message naming the device.
fn on_device(device: i32, error: Error) -> Error {
    let context = |message: String| format!("device {device}: {message}");
    match error.into_kind() {
        ErrorKind::InvalidArgument(m) => Error::InvalidArgument(context(m)),
        ErrorKind::NotSupported(m) => Error::NotSupported(context(m)),
        ErrorKind::OutOfMemory { requested, detail } => Error::out_of_memory(requested, context(detail)),
        other => other.into(),
    }
}

/// `rmmInitialize`: installs a resource made from `options` (None: the defaults, plain
/// `cuMemAlloc` on the current device) as each listed device's current resource, remembering
/// the ones replaced. `AlreadyInitialized` when initialized. The call succeeds or changes
/// nothing: every option and device is checked before anything is made, every device's
/// resource is made before any is installed, and on a failure what was made is dropped (its
/// memory given back) and what was installed is put back.
pub fn initialize(options: Option<Options>) -> Result<()> {
    let mut state = STATE.lock();
    if matches!(*state, State::Initialized { .. }) {
        return Err(Error::already_initialized());
    }
    let mut options = options.unwrap_or_default();
    if options.devices.is_empty() {
        options.devices.push(backend()?.current_device()?);
    }
    let plans = validate(&options)?;
    // Dropped on a failure below: a resource made for an earlier device gives its memory back.
    let mut stacks = Vec::with_capacity(plans.len());
    for plan in &plans {
        let resource = resource_for(&options, plan).map_err(|e| on_device(plan.device, e))?;
        stacks.push((plan.device, StackRef::new(resource)));
    }
    let mut replaced = Vec::with_capacity(stacks.len());
    for (device, stack) in stacks {
        match per_device::swap(device, Some(stack)) {
            Ok(previous) => replaced.push((device, previous)),
            Err(e) => {
                restore(replaced);
                return Err(e);
            }
        }
    }
    crate::ownership::legacy_log::enable(options.enable_logging);
    *state = State::Initialized { options, replaced };
    READY.store(true, Ordering::Release);
    Ok(())
}

/// Puts back what `initialize` replaced, the last device first; the resources it installed
/// go as their last users let go of them.
fn restore(replaced: Vec<(i32, Option<StackRef>)>) {
    for (device, previous) in replaced.into_iter().rev() {
        if let Err(e) = per_device::swap(device, previous) {
            log::warn!("restoring the resource of device {device}: {e}");
        }
    }
}

/// `rmmFinalize`: puts back the resources `initialize` replaced and stops the event log.
/// Memory still live stays valid (a warning counts it) and can be freed later.
/// `NotInitialized` without a matching `initialize`.
pub fn finalize() -> Result<()> {
    let mut state = STATE.lock();
    if !matches!(*state, State::Initialized { .. }) {
        return Err(Error::NotInitialized("rmmFinalize without a matching rmmInitialize".into()));
    }
    let State::Initialized { replaced, .. } = std::mem::replace(&mut *state, State::Finalized) else { unreachable!("checked above") };
    READY.store(false, Ordering::Release);
    restore(replaced);
    crate::ownership::legacy_log::enable(false);
    crate::resources::adaptors::report_all_leaks("at rmmFinalize");
    let (count, bytes) = records::totals();
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

/// Ok when the legacy calls may allocate: see the module's states.
#[inline]
pub fn require_ready() -> Result<()> {
    match READY.load(Ordering::Acquire) {
        true => Ok(()),
        false => decide_readiness(),
    }
}

#[cold]
#[inline(never)]
fn decide_readiness() -> Result<()> {
    let state = STATE.lock();
    match *state {
        State::Initialized { .. } => return Ok(()),
        State::Finalized => return Err(Error::NotInitialized("rmmFinalize was called; call rmmInitialize before allocating again".into())),
        State::Implicit => {}
    }
    config::apply_environment()?;
    if config::configured() || per_device::resource_chosen() {
        READY.store(true, Ordering::Release);
        return Ok(());
    }
    Err(Error::NotInitialized(
        "call rmmInitialize first (or configure rmm with RMM_ALLOC_CONF, rmmConfigure or a per-device resource)".into(),
    ))
}

/// `rmmAlloc`: `bytes` from the current device's resource; 0 bytes give NULL.
#[inline]
pub fn alloc(bytes: usize, stream: Stream) -> Result<usize> {
    require_ready()?;
    if bytes == 0 {
        return Ok(0);
    }
    per_device::with_current(|stack| records::allocate(stack, bytes, stream, Holder::Caller))
}

/// `rmmFree`: returns any live pointer rmm handed to a caller to the stack it came from, in
/// any state. Freeing NULL is a no-op that, as in RMM 0.14, needs the legacy API ready.
#[inline]
pub fn free(ptr: usize, stream: Stream) -> Result<()> {
    if ptr == 0 {
        return require_ready();
    }
    records::free(ptr, stream, Expected::ANY_OF_CALLERS)
}

/// `rmmRealloc`: a new allocation from the stack the old one came from, the contents up to the
/// smaller size copied in stream order, and the old one freed in the same order. On failure
/// the old allocation is untouched.
pub fn realloc(ptr: usize, new_bytes: usize, stream: Stream) -> Result<usize> {
    if ptr == 0 {
        return alloc(new_bytes, stream);
    }
    let old = records::find(ptr)
        .filter(|found| found.holder == Holder::Caller)
        .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not a live rmm allocation of the caller's")))?;
    let expected = Expected { stack: Some(&old.stack), size: Some(old.size), holder: Holder::Caller };
    if new_bytes == 0 {
        records::free(ptr, stream, expected)?;
        return Ok(0);
    }
    require_ready()?;
    let new_ptr = records::allocate(&old.stack, new_bytes, stream, Holder::Caller)?;
    let moved = backend()
        .and_then(|platform| {
            copy_in_order(platform, old.stack.orders_by_stream(), old.stack.device(), new_ptr, ptr, old.size.min(new_bytes), stream)
        })
        .and_then(|()| records::free(ptr, stream, expected));
    if let Err(e) = moved {
        let new_block = Expected { size: Some(new_bytes), ..expected };
        if let Err(undo) = records::free(new_ptr, stream, new_block) {
            log::warn!("rmmRealloc: freeing the new block {new_ptr:#x} after a failure: {undo}");
        }
        return Err(e);
    }
    Ok(new_ptr)
}

/// `rmmRealloc`'s copy of `bytes` from `from` to `to` (memory of `device`) in the order of
/// `stream`. A handle rmm-rs does not know, of a stack that does not order memory by stream
/// (`cuda`, RMM's legacy default), is never handed to the driver (`platform::streams`): the
/// device is synchronized instead (covering the work on that stream), and the copy runs on the
/// legacy default stream, synchronized before the call returns.
fn copy_in_order(platform: &Backend, ordered: bool, device: i32, to: usize, from: usize, bytes: usize, stream: Stream) -> Result<()> {
    if ordered || streams::is_known(stream) {
        streams::check_usable(stream)?;
        return platform.copy_async(device, to, from, bytes, stream);
    }
    platform.device_synchronize(device)?;
    platform.copy_async(device, to, from, bytes, Stream::DEFAULT)?;
    platform.device_synchronize(device)
}

/// `rmmGetInfo`: (free, total) bytes of the current device.
pub fn memory_info() -> Result<(usize, usize)> {
    require_ready()?;
    let platform = backend()?;
    platform.mem_get_info(platform.current_device()?)
}

/// `rmmGetAllocationOffset`: the distance of `ptr` from the start of the device allocation
/// that holds it.
pub fn allocation_offset(ptr: usize) -> Result<isize> {
    let device = match records::find(ptr) {
        Some(found) => found.stack.device(),
        None => backend()?.current_device()?,
    };
    let (base, _) = backend()?.address_range(device, ptr)?;
    Ok((ptr - base) as isize)
}
