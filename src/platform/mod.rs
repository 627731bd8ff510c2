//! The only code that talks to a device: the CUDA driver (`cuda.rs`) or simulated devices
//! (`sim.rs`), chosen once per process. The simulator runs only when `RMM_SIM_DEVICES` asks
//! for it; a machine without a driver gets an error, never a silent simulation.
//! `nvtx.rs` talks to a memory checker attached through NVTX (compute-sanitizer), when one is.

mod cuda;
pub mod ipc;
pub mod nvtx;
pub mod sim;
mod sim_address_space;
mod sim_vmm;
pub mod streams;
mod vector_clock;

use crate::error::{Error, Result};
use once_cell::sync::OnceCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

/// A raw `cudaStream_t` / `CUstream` value. 0 is the legacy default stream, 1 `cudaStreamLegacy`,
/// 2 `cudaStreamPerThread`, as in CUDA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Stream(pub usize);

impl Stream {
    /// The legacy default stream of the current device (`0`, CUDA's default `cudaStream_t`).
    pub const DEFAULT: Stream = Stream(0);
    /// `cudaStreamLegacy` (`CU_STREAM_LEGACY`): the legacy default stream by name, whatever a
    /// handle of 0 means to code compiled with per-thread default streams.
    pub const LEGACY: Stream = Stream(1);
    /// `cudaStreamPerThread`: the calling thread's own default stream on the current device.
    pub const PER_THREAD: Stream = Stream(2);
}

/// A raw `CUevent` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event(pub usize);

/// A raw `CUmemoryPool` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemPool(pub usize);

/// Physical device memory of the virtual-memory API (`CUmemGenericAllocationHandle`), mapped
/// into reserved address ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PhysicalMemory(pub u64);

/// The kinds of shareable handle physical memory is created exportable as
/// (`CUmemAllocationHandleType` bits; the same values as `resources::handle_type`).
pub mod exportable_as {
    /// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`.
    pub const POSIX_FILE_DESCRIPTOR: u32 = 0x1;
    /// `CU_MEM_HANDLE_TYPE_FABRIC`: across nodes, through IMEX.
    pub const FABRIC: u32 = 0x8;
}

/// What a driver memory pool (`cuMemPoolCreate`) hands out and keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolProps {
    /// Device memory of the pool's device (`CU_MEM_ALLOCATION_TYPE_PINNED` located on the
    /// device), managed memory (`CU_MEM_ALLOCATION_TYPE_MANAGED`, CUDA 13) or page-locked host
    /// memory (`CU_MEM_LOCATION_TYPE_HOST`, CUDA 12.6 and later, where the device offers it).
    pub kind: MemoryKind,
    /// Bytes kept reserved across synchronizations (`CU_MEMPOOL_ATTR_RELEASE_THRESHOLD`).
    pub release_threshold: usize,
    /// The kinds of shareable handle the pool's memory can be exported as
    /// (CUmemAllocationHandleType bits; 0: not exportable).
    pub handle_types: u32,
    /// The memory may serve hardware decompression (`CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS`,
    /// CUDA 12.8 and later).
    pub hw_decompress: bool,
}

impl PoolProps {
    /// A pool of device memory that keeps `release_threshold` bytes and exports as `handle_types`.
    pub fn device(release_threshold: usize, handle_types: u32) -> Self {
        PoolProps { kind: MemoryKind::Device, release_threshold, handle_types, hw_decompress: false }
    }
}

/// What a device or its driver offers, for the resources that need more than memory pools
/// (`Backend::supports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// The device reaches pageable host memory, as from `malloc` (HMM or ATS;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`).
    PageableMemoryAccess,
    /// Memory pools of managed memory (CUDA 13 driver, and concurrent managed access).
    ManagedMemoryPools,
    /// Memory pools located on the host (`CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED`).
    HostMemoryPools,
    /// Pools whose memory serves hardware decompression (CUDA 12.8 driver).
    HwDecompress,
}

/// The kind of memory a platform allocation returns; frees must name the same kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// `cuMemAlloc` memory: usable by the device only.
    Device,
    /// `cuMemAllocManaged` memory: reachable from the host and every device, migrated on demand
    /// (`prefetch` moves it ahead of use).
    Managed,
    /// `cuMemHostAlloc` memory: page-locked host memory the device reaches directly. It does not
    /// count against a device's capacity.
    PinnedHost,
}

/// The device backend of the process, chosen once on first use (see `backend`): every call
/// to a device goes through its methods, which check their arguments and forward to the
/// backend.
pub enum Backend {
    /// The CUDA driver API, loaded at run time from `libcuda.so.1`.
    Cuda(cuda::CudaDriver),
    /// Simulated devices, because `RMM_SIM_DEVICES` asked for them.
    Sim(Box<sim::SimDevices>),
}

static BACKEND: OnceCell<std::result::Result<Backend, Error>> = OnceCell::new();
/// The initialized backend, once there is one: every allocation asks for it.
static READY: AtomicPtr<Backend> = AtomicPtr::new(std::ptr::null_mut());

/// The process's backend, chosen and initialized on first use. A failed initialization is
/// remembered: every later call reports the same error.
#[inline]
pub fn backend() -> Result<&'static Backend> {
    let ready = READY.load(Ordering::Acquire);
    if !ready.is_null() {
        // SAFETY: READY only ever holds a pointer into BACKEND, which is never dropped or moved.
        return Ok(unsafe { &*ready });
    }
    initialize_backend()
}

/// The first call's work, kept out of line so that `backend()` stays small enough to inline.
#[cold]
#[inline(never)]
fn initialize_backend() -> Result<&'static Backend> {
    let chosen = BACKEND.get_or_init(|| match std::env::var("RMM_SIM_DEVICES") {
        Ok(spec) => sim::SimDevices::from_spec(&spec).map(|s| Backend::Sim(Box::new(s))),
        Err(_) => cuda::CudaDriver::load().map(Backend::Cuda),
    });
    let backend = chosen.as_ref().map_err(Clone::clone)?;
    READY.store(backend as *const Backend as *mut Backend, Ordering::Release);
    Ok(backend)
}

/// Whether the CUDA driver loads and initializes here (without choosing the backend), for
/// tools that can fall back to a simulated device.
pub fn driver_loads() -> bool {
    cuda::CudaDriver::load().is_ok()
}

/// The simulated devices, when the process runs on them.
pub fn simulator() -> Option<&'static sim::SimDevices> {
    match backend() {
        Ok(Backend::Sim(s)) => Some(s),
        _ => None,
    }
}

macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        match $self {
            Backend::Cuda(b) => b.$method($($arg),*),
            Backend::Sim(b) => b.$method($($arg),*),
        }
    };
}

impl Backend {
    /// Whether the process runs on simulated devices (`RMM_SIM_DEVICES`) rather than the driver.
    pub fn is_simulated(&self) -> bool {
        matches!(self, Backend::Sim(_))
    }
    /// How many devices the process sees (after `CUDA_VISIBLE_DEVICES`); the valid ordinals are
    /// 0 to that less one.
    pub fn device_count(&self) -> Result<i32> {
        dispatch!(self.device_count())
    }
    /// The calling thread's current device: the device of the current context, or device 0
    /// (made current) when no context is current, as the CUDA runtime does.
    pub fn current_device(&self) -> Result<i32> {
        dispatch!(self.current_device())
    }
    /// Makes `device` current for the calling thread (its primary context, as `cudaSetDevice`);
    /// a nonexistent device is `InvalidArgument` with nothing changed.
    pub fn set_device(&self, device: i32) -> Result<()> {
        self.check_device(device)?;
        dispatch!(self.set_device(device))
    }
    /// `InvalidArgument`, with a message that names the devices that do exist, when `device` is
    /// not one of them.
    pub fn check_device(&self, device: i32) -> Result<()> {
        let count = self.device_count()?;
        if device < 0 || device >= count {
            let present = match count {
                0 => "there is no device".to_string(),
                1 => "the one device is 0".to_string(),
                _ => format!("devices are 0 to {}", count - 1),
            };
            return Err(Error::invalid(format!("device {device} does not exist ({present})")));
        }
        Ok(())
    }
    /// Runs `f` with a context of `device` current on this thread (pushed and popped if another
    /// or none is). A memory checker looks the memory of an NVTX heap up in the current
    /// context: compute-sanitizer answers "not ready" where none is current.
    pub fn in_context_of<T>(&self, device: i32, f: impl FnOnce() -> T) -> Result<T> {
        match self {
            Backend::Cuda(b) => b.with_device(device, || Ok(f())),
            Backend::Sim(_) => Ok(f()),
        }
    }
    /// `bytes` of memory of `kind` on `device` (`cuMemAlloc`, `cuMemAllocManaged` or
    /// `cuMemHostAlloc`), synchronously and with no stream; out of memory is `OutOfMemory`. Freed
    /// with `free` and the same kind.
    pub fn allocate(&self, device: i32, kind: MemoryKind, bytes: usize) -> Result<usize> {
        dispatch!(self.allocate(device, kind, bytes))
    }
    /// The virtual-memory API (`cuMemCreate` and friends): the size and alignment unit of
    /// reservations, physical memory and maps on `device`.
    pub fn vmm_granularity(&self, device: i32) -> Result<usize> {
        dispatch!(self.vmm_granularity(device))
    }
    /// Reserves `size` bytes of device address space, aligned to the granularity.
    pub fn vmm_reserve(&self, size: usize) -> Result<usize> {
        dispatch!(self.vmm_reserve(size))
    }
    /// Frees a reservation that has nothing mapped in it.
    pub fn vmm_free_reservation(&self, at: usize, size: usize) -> Result<()> {
        dispatch!(self.vmm_free_reservation(at, size))
    }
    /// Creates `size` bytes of physical memory on `device` (out of memory when it has no room),
    /// exportable as `handle_types` (`exportable_as` bits; 0: not exportable). The handle
    /// types are fixed here: memory created without one can never be shared.
    pub fn vmm_create(&self, device: i32, size: usize, handle_types: u32) -> Result<PhysicalMemory> {
        dispatch!(self.vmm_create(device, size, handle_types))
    }
    /// The handle types (`exportable_as` bits) physical memory of `device` can be created
    /// exportable as: POSIX file descriptors, and fabric handles where the driver offers them.
    /// 0 where the device exports none.
    pub fn vmm_exportable_types(&self, device: i32) -> Result<u32> {
        dispatch!(self.vmm_exportable_types(device))
    }
    /// A new POSIX file descriptor for `handle` (created exportable as a POSIX file descriptor), which
    /// another process imports with `vmm_import`; the caller owns it.
    pub fn vmm_export(&self, handle: PhysicalMemory) -> Result<std::os::fd::OwnedFd> {
        dispatch!(self.vmm_export(handle))
    }
    /// Physical memory of `device` that another process (or this one) exported as `fd`: a
    /// handle of this process's own, released with `vmm_release`, the memory staying alive
    /// while any process holds a handle or a map of it.
    pub fn vmm_import(&self, fd: std::os::fd::BorrowedFd<'_>, device: i32) -> Result<PhysicalMemory> {
        dispatch!(self.vmm_import(fd, device))
    }
    /// Whether kernels and copies on `device` can reach memory of `owner`
    /// (`cuDeviceCanAccessPeer`; a device always reaches its own).
    pub fn can_access_peer(&self, device: i32, owner: i32) -> Result<bool> {
        if device == owner {
            return self.check_device(device).map(|()| true);
        }
        self.check_device(device)?;
        self.check_device(owner)?;
        dispatch!(self.can_access_peer(device, owner))
    }
    /// The devices, other than `owner`, that can reach memory of `owner`.
    pub fn peers_of(&self, owner: i32) -> Result<Vec<i32>> {
        let mut peers = Vec::new();
        for device in (0..self.device_count()?).filter(|&device| device != owner) {
            if self.can_access_peer(device, owner)? {
                peers.push(device);
            }
        }
        Ok(peers)
    }
    /// The device's UUID (`cuDeviceGetUuid`), which names it the same in every process,
    /// whatever `CUDA_VISIBLE_DEVICES` numbers it there.
    pub fn device_uuid(&self, device: i32) -> Result<[u8; 16]> {
        self.check_device(device)?;
        dispatch!(self.device_uuid(device))
    }
    /// The driver's IPC handle (`cuIpcGetMemHandle`) of the `cuMemAlloc` allocation that
    /// starts at `base`, on `device`.
    pub fn ipc_get_mem_handle(&self, device: i32, base: usize) -> Result<[u8; 64]> {
        dispatch!(self.ipc_get_mem_handle(device, base))
    }
    /// Maps another process's `cuMemAlloc` allocation (`cuIpcOpenMemHandle`, with peer access
    /// where the memory is another device's) into `device`'s context; its base here.
    pub fn ipc_open_mem_handle(&self, device: i32, handle: &[u8; 64]) -> Result<usize> {
        dispatch!(self.ipc_open_mem_handle(device, handle))
    }
    /// Unmaps what `ipc_open_mem_handle` mapped at `base`.
    pub fn ipc_close_mem_handle(&self, device: i32, base: usize) -> Result<()> {
        dispatch!(self.ipc_close_mem_handle(device, base))
    }
    /// Releases physical memory: it goes back to the device once no range maps it.
    pub fn vmm_release(&self, handle: PhysicalMemory) -> Result<()> {
        dispatch!(self.vmm_release(handle))
    }
    /// Maps all of `handle` at `at`, inside a reservation, over nothing else mapped.
    pub fn vmm_map(&self, at: usize, size: usize, handle: PhysicalMemory) -> Result<()> {
        dispatch!(self.vmm_map(at, size, handle))
    }
    /// Unmaps `[at, at + size)`, which must be made of whole maps.
    pub fn vmm_unmap(&self, at: usize, size: usize) -> Result<()> {
        dispatch!(self.vmm_unmap(at, size))
    }
    /// Lets `devices` read and write `[at, at + size)`, which must be wholly mapped.
    pub fn vmm_set_access(&self, at: usize, size: usize, devices: &[i32]) -> Result<()> {
        dispatch!(self.vmm_set_access(at, size, devices))
    }
    /// Frees what `allocate` returned, naming the same `device` and `kind` (`cuMemFree`, which
    /// implicitly synchronizes the device, or `cuMemFreeHost`). The caller's records must vouch
    /// for `ptr` and its kind: the driver does not check the kind.
    pub fn free(&self, device: i32, kind: MemoryKind, ptr: usize) -> Result<()> {
        dispatch!(self.free(device, kind, ptr))
    }
    /// Creates a driver memory pool on `device` (for host memory: reached through `device`)
    /// as `props` says. What the driver or device does not offer is `NotSupported`.
    pub fn mem_pool_create(&self, device: i32, props: &PoolProps) -> Result<MemPool> {
        dispatch!(self.mem_pool_create(device, props))
    }
    /// Whether `device` (and the driver) offers `capability`.
    pub fn supports(&self, device: i32, capability: Capability) -> Result<bool> {
        self.check_device(device)?;
        dispatch!(self.supports(device, capability))
    }
    /// The device's default pool of managed memory (`cuMemGetDefaultMemPool` with
    /// `CU_MEM_ALLOCATION_TYPE_MANAGED`, CUDA 13): the driver's, never destroyed.
    pub fn default_managed_pool(&self, device: i32) -> Result<MemPool> {
        if !self.supports(device, Capability::ManagedMemoryPools)? {
            return Err(Error::NotSupported(format!(
                "device {device} has no managed memory pools: they need a CUDA 13 driver and a device with concurrent managed access"
            )));
        }
        dispatch!(self.default_managed_pool(device))
    }
    /// Checks that `pool`, a handle the caller made (`cudaMemPoolCreate`,
    /// `cudaDeviceGetDefaultMemPool`, another resource's pool), names a memory pool that can
    /// allocate: NULL, a made-up value or a destroyed pool is `InvalidArgument`, a pool
    /// imported from another process (which the driver never allocates from) `NotSupported`.
    pub fn mem_pool_check(&self, device: i32, pool: MemPool) -> Result<()> {
        if pool.0 == 0 {
            return Err(Error::invalid("the memory pool handle is NULL"));
        }
        dispatch!(self.mem_pool_check(device, pool))
    }
    /// Gives the driver the preferred location of `[ptr, ptr + bytes)`, system memory of a
    /// device with pageable memory access: `device` (Some) or the host (None)
    /// (`cuMemAdvise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION)`).
    pub fn advise_preferred_location(&self, ptr: usize, bytes: usize, device: Option<i32>) -> Result<()> {
        dispatch!(self.advise_preferred_location(ptr, bytes, device))
    }
    /// Destroys a pool `mem_pool_create` made. Memory still allocated from it stays valid: the
    /// driver lets the pool go once all of it is freed.
    pub fn mem_pool_destroy(&self, device: i32, pool: MemPool) -> Result<()> {
        dispatch!(self.mem_pool_destroy(device, pool))
    }
    /// Releases what `pool` keeps reserved beyond `keep` bytes back to the device
    /// (`cuMemPoolTrimTo`); memory in use is never released.
    pub fn mem_pool_trim(&self, device: i32, pool: MemPool, keep: usize) -> Result<()> {
        dispatch!(self.mem_pool_trim(device, pool, keep))
    }
    /// `bytes` of device memory from `pool` in the order of `stream` (`cuMemAllocFromPoolAsync`):
    /// usable by work on `stream` at once, by other streams only after they are ordered after it.
    pub fn allocate_from_pool(&self, device: i32, pool: MemPool, bytes: usize, stream: Stream) -> Result<usize> {
        dispatch!(self.allocate_from_pool(device, pool, bytes, stream))
    }
    /// Frees `ptr` to `pool` in the order of `stream` (`cuMemFreeAsync`): the pool may hand it out
    /// again to work ordered after that point.
    pub fn free_to_pool(&self, device: i32, pool: MemPool, ptr: usize, stream: Stream) -> Result<()> {
        dispatch!(self.free_to_pool(device, pool, ptr, stream))
    }
    /// (free, total) bytes of `device`.
    pub fn mem_get_info(&self, device: i32) -> Result<(usize, usize)> {
        dispatch!(self.mem_get_info(device))
    }
    /// (base, size) of the platform allocation that contains `ptr`.
    pub fn address_range(&self, device: i32, ptr: usize) -> Result<(usize, usize)> {
        dispatch!(self.address_range(device, ptr))
    }
    /// Copies `bytes` from `src` to `dst` in the order of `stream`; either may be host memory
    /// (unified addressing).
    pub fn copy_async(&self, device: i32, dst: usize, src: usize, bytes: usize, stream: Stream) -> Result<()> {
        dispatch!(self.copy_async(device, dst, src, bytes, stream))
    }
    /// Migrates managed memory `[ptr, ptr+bytes)` to `device` in the order of `stream`. Memory
    /// that is not managed is `Error::InvalidArgument` (as the driver's CUDA_ERROR_INVALID_VALUE).
    pub fn prefetch(&self, device: i32, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        dispatch!(self.prefetch(device, ptr, bytes, stream))
    }
    /// An identity of `stream` that no other stream ever shares, even after the handle is
    /// destroyed and its value reused (RMM #2251). The legacy default stream is 0. Asked of the
    /// driver for any other handle: only through `streams`, which asks only about handles it
    /// may (see its module comment).
    pub(in crate::platform) fn stream_identity(&self, stream: Stream) -> Result<u64> {
        if matches!(stream, Stream::DEFAULT | Stream::LEGACY) {
            return Ok(0);
        }
        dispatch!(self.stream_identity(stream))
    }
    /// The device `stream` belongs to (the default streams: the current device's). Asked of
    /// the driver for any other handle: only through `streams`, as `stream_identity`.
    pub(in crate::platform) fn stream_device(&self, stream: Stream) -> Result<i32> {
        match stream {
            Stream::DEFAULT | Stream::LEGACY | Stream::PER_THREAD => self.current_device(),
            stream => dispatch!(self.stream_device(stream)),
        }
    }

    /// The stream on which to free memory of `device` that the caller frees in the order of
    /// `stream`: `stream` itself when it is a stream of `device` or a default stream (which,
    /// for memory of `device`, is `device`'s own, as for its allocations, whichever device is
    /// current); otherwise `device`'s legacy default stream, made to wait for the work already
    /// on `stream` (a stream of another device). `ordered`: whether the memory's resource
    /// orders it by stream (asked only with several devices); memory that is not (cuda,
    /// managed, pinned_host, system, callback resources) is freed with `stream` as it is when
    /// rmm-rs does not know the handle, which then reaches no driver call (`streams`).
    #[inline(always)]
    pub fn stream_on_device(&self, device: i32, stream: Stream, ordered: impl FnOnce() -> bool) -> Result<Stream> {
        match self.single_device() {
            true => Ok(stream),
            false => self.stream_on_other_device(device, stream, ordered()),
        }
    }

    /// Whether there is exactly one device: then it is always the current one (with no
    /// context current, the runtime makes device 0's current too), and frees and allocations
    /// need not ask the driver which device is current.
    #[inline(always)]
    pub fn single_device(&self) -> bool {
        match self {
            Backend::Cuda(driver) => driver.device_count() == Ok(1),
            Backend::Sim(simulated) => simulated.device_count() == Ok(1),
        }
    }

    #[inline(never)]
    fn stream_on_other_device(&self, device: i32, stream: Stream, ordered: bool) -> Result<Stream> {
        if streams::is_default(stream) {
            return Ok(stream);
        }
        // A created stream is its own device's, whichever device is current; rmm-rs knows the
        // device of the streams whose life it sees without asking the driver. Any other
        // handle is asked about only for memory ordered by stream (`streams::device_of`).
        let stream_device = match streams::known_device(stream) {
            Some(known) => known,
            None if !ordered => return Ok(stream),
            None => streams::device_of(stream)?,
        };
        if stream_device == device {
            return Ok(stream);
        }
        let event = self.event_create(stream_device)?;
        let ordered = self.event_record(stream_device, event, stream).and_then(|()| self.stream_wait_event(device, Stream::DEFAULT, event));
        // Destroying a recorded event is deferred by the driver until it completes.
        let destroyed = self.event_destroy(event);
        ordered.and(destroyed).map(|()| Stream::DEFAULT)
    }

    /// A new stream of `device` that synchronizes with the legacy default stream, as
    /// `cudaStreamCreate` makes (`cuStreamCreate` with no flags).
    pub fn stream_create(&self, device: i32) -> Result<Stream> {
        self.stream_create_with_flags(device, false)
    }
    /// A new stream of `device`; `non_blocking`: one that does not synchronize with the legacy
    /// default stream (`CU_STREAM_NON_BLOCKING`, `cudaStreamNonBlocking`).
    pub fn stream_create_with_flags(&self, device: i32, non_blocking: bool) -> Result<Stream> {
        dispatch!(self.stream_create_with_flags(device, non_blocking))
    }
    /// Destroys a stream `stream_create` made. Work already enqueued on it still runs; the driver
    /// may hand the same handle to a later stream (`stream_identity` tells them apart).
    pub fn stream_destroy(&self, stream: Stream) -> Result<()> {
        dispatch!(self.stream_destroy(stream))
    }
    /// Blocks the calling thread until all work enqueued on `stream` so far is done.
    pub fn stream_synchronize(&self, stream: Stream) -> Result<()> {
        dispatch!(self.stream_synchronize(stream))
    }
    /// Waits for all work on every stream of `device`.
    pub fn device_synchronize(&self, device: i32) -> Result<()> {
        dispatch!(self.device_synchronize(device))
    }
    /// A new event of `device`, with timing off (used only to order streams and the host).
    pub fn event_create(&self, device: i32) -> Result<Event> {
        dispatch!(self.event_create(device))
    }
    /// Destroys `event`; when it is recorded and not yet complete, the driver defers the
    /// destruction until it completes.
    pub fn event_destroy(&self, event: Event) -> Result<()> {
        dispatch!(self.event_destroy(event))
    }
    /// Records `event` on `stream`, a stream of `device` (the default streams are resolved in
    /// `device`'s context).
    pub fn event_record(&self, device: i32, event: Event, stream: Stream) -> Result<()> {
        dispatch!(self.event_record(device, event, stream))
    }
    /// Blocks the calling thread until the work before `event`'s last record is done.
    pub fn event_synchronize(&self, event: Event) -> Result<()> {
        dispatch!(self.event_synchronize(event))
    }
    /// Whether `event`'s last record has completed, without waiting.
    pub fn event_query(&self, event: Event) -> Result<bool> {
        dispatch!(self.event_query(event))
    }
    /// Makes later work on `stream` (of `device`) wait for `event`'s last record.
    pub fn stream_wait_event(&self, device: i32, stream: Stream, event: Event) -> Result<()> {
        dispatch!(self.stream_wait_event(device, stream, event))
    }
}

/// Tells the race checker that a suballocator handed `[ptr, ptr+bytes)` out for use on
/// `stream`; reports a race when an earlier release on another stream is not ordered before
/// it. No-op on real devices (inline always: every allocation path calls it, and a call for
/// nothing there is a measurable part of an adaptor's cost).
#[inline(always)]
pub fn note_acquired(device: i32, ptr: usize, bytes: usize, stream: Stream) {
    if let Ok(Backend::Sim(s)) = backend() {
        s.note_acquired(device, ptr, bytes, stream)
    }
}

/// Tells the race checker that a suballocator freed `[ptr, ptr+bytes)` in the order of
/// `stream`. No-op on real devices.
#[inline(always)]
pub fn note_released(device: i32, ptr: usize, bytes: usize, stream: Stream) {
    if let Ok(Backend::Sim(s)) = backend() {
        s.note_released(device, ptr, bytes, stream)
    }
}

/// `bytes` (not 0) of pageable host memory from the system allocator, aligned to 256 bytes, for
/// devices that reach it (`Capability::PageableMemoryAccess`); freed with `system_free`.
pub fn system_allocate(bytes: usize) -> Result<usize> {
    let layout = system_layout(bytes)?;
    // SAFETY: `layout` has a non-zero size (checked by `system_layout`).
    let ptr = unsafe { std::alloc::alloc(layout) } as usize;
    if ptr == 0 {
        return Err(Error::out_of_memory(bytes, "the system allocator has no memory left"));
    }
    Ok(ptr)
}

/// Frees what `system_allocate(bytes)` returned at `ptr`; the simulator forgets what it was
/// told of the range (`advise_preferred_location`).
pub fn system_free(ptr: usize, bytes: usize) -> Result<()> {
    let layout = system_layout(bytes)?;
    if let Ok(Backend::Sim(s)) = backend() {
        s.forget_advice(ptr, bytes);
    }
    // SAFETY: the caller's records vouch that `ptr` came from `system_allocate(bytes)`, with
    // this layout, and is freed once.
    unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
    Ok(())
}

fn system_layout(bytes: usize) -> Result<std::alloc::Layout> {
    if bytes == 0 {
        return Err(Error::invalid("zero-byte system allocation"));
    }
    std::alloc::Layout::from_size_align(bytes, 256).map_err(|_| Error::out_of_memory(bytes, "larger than the address space"))
}

static EXITING: AtomicBool = AtomicBool::new(false);

/// Whether the process has started to exit: the CUDA driver may already be torn down, so
/// resources dropped from then on skip their driver calls.
#[inline]
pub fn process_exiting() -> bool {
    EXITING.load(Ordering::Relaxed)
}

/// Runs `hook` when the process exits (`atexit`), after marking the process as exiting. A
/// panic in `hook` is stopped here: it must not unwind into the C runtime's exit.
pub(crate) fn at_exit(hook: fn()) {
    static HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
    extern "C" fn run_hook() {
        EXITING.store(true, Ordering::SeqCst);
        if let Some(hook) = HOOK.get() {
            if std::panic::catch_unwind(*hook).is_err() {
                eprintln!("rmm: the exit hook panicked; exiting without it");
            }
        }
    }
    if HOOK.set(hook).is_err() {
        log::warn!("the exit hook is registered once");
        return;
    }
    // SAFETY: `run_hook` is a plain function with no captured state, valid for the process.
    if unsafe { libc::atexit(run_hook) } != 0 {
        log::warn!("could not register the exit hook");
    }
}

/// The process something was made in. A child it forks inherits that thing's memory but
/// not the threads that serve it, nor the allocations it records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process(u32);

impl Process {
    /// The calling process, as its operating-system process id.
    pub fn current() -> Self {
        Process(std::process::id())
    }

    /// Whether the calling process is a child forked from this one (a system call: not for
    /// every allocation).
    pub fn forked_since(self) -> bool {
        self != Process::current()
    }

    /// The operating-system id of the process (`getpid`).
    pub fn id(self) -> u32 {
        self.0
    }
}

/// Runs `hook` in every child the process forks from now on, on the child's one thread (the
/// one that called fork) before fork returns there. A hook may only touch that thread's
/// thread-locals and atomics: any other thread of the parent may have held a lock at the
/// fork, which no one in the child will let go. `otherwise` says what goes wrong without it.
pub(crate) fn in_forked_children(hook: extern "C" fn(), otherwise: &str) {
    // SAFETY: `hook` is a plain function valid for the life of the process, and keeps to what
    // is safe in a forked child (above).
    if unsafe { libc::pthread_atfork(None, None, Some(hook)) } != 0 {
        log::warn!("could not register a fork handler: {otherwise}");
    }
}

thread_local! {
    /// The calling thread's id, once asked (0: not asked yet).
    static OS_THREAD_ID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Runs in a forked child, whose one thread is the one that called fork: the id it cached is
/// its parent's thread's.
extern "C" fn forget_thread_id_in_child() {
    OS_THREAD_ID.set(0);
}

/// The kernel's id of the calling thread, as RMM's logs show it. `gettid` is a system call
/// (asking it per allocation cost the tracking adaptor about 90 ns on the build machine and
/// 130-150 ns on the GPU hosts), so each thread asks once, and once more in a forked child.
#[inline]
pub fn os_thread_id() -> u64 {
    match OS_THREAD_ID.get() {
        0 => ask_os_thread_id(),
        id => id,
    }
}

#[cold]
#[inline(never)]
fn ask_os_thread_id() -> u64 {
    // Before the first id is cached, so no cached id can outlive a fork unnoticed.
    static WATCH_FORKS: std::sync::Once = std::sync::Once::new();
    WATCH_FORKS.call_once(|| in_forked_children(forget_thread_id_in_child, "thread ids in forked children may be the parent's"));
    // SAFETY: gettid has no preconditions and cannot fail.
    let id = unsafe { libc::gettid() } as u64;
    OS_THREAD_ID.set(id);
    id
}

/// Seconds east of UTC of the local time zone, now.
pub fn local_utc_offset_seconds() -> i64 {
    // SAFETY: `time` accepts NULL; `localtime_r` writes only into the `tm` we own.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return 0;
        }
        tm.tm_gmtoff
    }
}

#[cfg(test)]
mod tests {
    use super::os_thread_id;

    #[test]
    fn each_thread_has_its_own_id_and_keeps_it() {
        let main = os_thread_id();
        assert_eq!(main, os_thread_id());
        // SAFETY: gettid has no preconditions.
        assert_eq!(main, unsafe { libc::gettid() } as u64);
        let other = std::thread::spawn(os_thread_id).join().unwrap();
        assert_ne!(main, other);
    }

    /// A cached id must not follow the process into a forked child, whose thread is another.
    #[test]
    fn a_forked_child_gets_its_own_thread_id() {
        let parent = os_thread_id();
        // SAFETY: the child calls only os_thread_id (a thread-local, an atomic and gettid, all
        // safe after fork) and gettid, then leaves with _exit.
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: as above.
                let own = unsafe { libc::gettid() } as u64;
                let ok = os_thread_id() == own && own != parent;
                // SAFETY: _exit ends the child without running the parent's exit handlers.
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            child => {
                assert!(child > 0, "fork failed");
                let mut status = 0;
                // SAFETY: waits for the child just made; `status` is ours to write.
                assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
                assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child saw the parent's thread id");
            }
        }
    }
}
