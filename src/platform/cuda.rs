//! Real devices through the CUDA driver API, loaded at run time by cudarc. Every driver call
//! goes through `call`, which turns a `CUresult` into an `Error` with the driver's text.

use super::{Capability, Event, MemPool, MemoryKind, PoolProps, Stream};
use crate::error::{Error, ErrorKind, Result};
use cudarc::driver::sys::{self, CUresult};
use once_cell::sync::OnceCell;
use std::cell::Cell;
use std::ffi::{c_void, CStr};

/// The oldest driver whose API we call (stream ids and the v2 entry points).
const MINIMUM_DRIVER_VERSION: i32 = 12000;

/// Driver entry points that must exist before we call into cudarc: cudarc panics on a missing
/// symbol, so we look each one up first and report a clear error instead.
const REQUIRED_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemGetInfo_v2",
    "cuMemGetAddressRange_v2",
    "cuMemcpyAsync",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventQuery",
    "cuGetErrorString",
    "cuCtxSynchronize",
    "cuStreamGetId",
    "cuStreamGetCtx",
    "cuDeviceCanAccessPeer",
    "cuDeviceGetUuid",
    "cuIpcGetMemHandle",
    "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle",
];

/// Needed only by the cuda_async resource; their absence makes it `NotSupported`.
const MEMORY_POOL_SYMBOLS: &[&str] = &[
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolSetAttribute",
    "cuMemPoolGetAttribute",
    "cuMemPoolTrimTo",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
];

/// The driver versions from which memory pools are located on the host (12.6), serve hardware
/// decompression (12.8) and hand out managed memory (13.0).
const HOST_MEMORY_POOLS_VERSION: i32 = 12060;
const HW_DECOMPRESS_VERSION: i32 = 12080;
const MANAGED_MEMORY_POOLS_VERSION: i32 = 13000;
/// `CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED`, past what the cudarc level we build
/// against names.
const HOST_MEMORY_POOLS_SUPPORTED: i32 = 144;
/// `CUmemLocationType` and `CUmemAllocationType` values, some past the cudarc level we build against.
const CU_MEM_LOCATION_TYPE_DEVICE: i32 = 1;
const CU_MEM_LOCATION_TYPE_HOST: i32 = 2;
const CU_MEM_ALLOCATION_TYPE_PINNED: i32 = 1;
const CU_MEM_ALLOCATION_TYPE_MANAGED: i32 = 2;
const CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS: u16 = 2;
/// `CU_DEVICE_CPU`: the host, where a device ordinal is expected.
const CU_DEVICE_CPU: sys::CUdevice = -1;

/// `CUmemPoolProps` as CUDA 12.2 and later lay it out (`maxSize` and `usage` in what CUDA 12.0
/// reserved; the same size): cudarc's level-12.0 struct has no `usage`, and its enums cannot
/// hold the host location or the managed allocation type.
#[repr(C)]
struct RawPoolProps {
    alloc_type: i32,
    handle_types: u32,
    location_type: i32,
    location_id: i32,
    win32_security_attributes: *mut c_void,
    max_size: usize,
    usage: u16,
    reserved: [u8; 54],
}

const _: () = assert!(std::mem::size_of::<RawPoolProps>() == std::mem::size_of::<sys::CUmemPoolProps>());

/// Needed only by the virtual-memory API; their absence makes it `NotSupported`.
const VIRTUAL_MEMORY_SYMBOLS: &[&str] = &[
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
];

const CU_MEMHOSTALLOC_PORTABLE: u32 = 0x01;
const CU_MEM_ATTACH_GLOBAL: u32 = 0x01;
const CU_EVENT_DISABLE_TIMING: u32 = 0x02;

pub struct CudaDriver {
    device_count: i32,
    /// Primary contexts, retained on first use of each device (retaining costs device memory,
    /// so devices the program never touches get none).
    primary_contexts: Vec<OnceCell<usize>>,
    memory_pools_available: bool,
    virtual_memory_available: bool,
    /// `cuDriverGetVersion`, e.g. 12080.
    version: i32,
}

thread_local! {
    /// The last (context, device) pair looked up on this thread: saves a driver call per
    /// allocation when the context does not change.
    static LAST_CONTEXT_DEVICE: Cell<(usize, i32)> = const { Cell::new((0, -1)) };
}

fn driver_symbol_present(name: &str) -> bool {
    // SAFETY: only called after `is_culib_present` succeeded, so `culib` does not panic; we read
    // the symbol's address and never call through it here.
    unsafe { sys::culib().get::<*const c_void>(name.as_bytes()).is_ok() }
}

fn error_text(code: CUresult) -> String {
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static string or leaves it NULL.
    let status = unsafe { sys::cuGetErrorString(code, &mut text) };
    if status != CUresult::CUDA_SUCCESS || text.is_null() {
        return format!("{code:?}");
    }
    // SAFETY: the driver returned a NUL-terminated static string.
    unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
}

fn check(call: &'static str, code: CUresult) -> Result<()> {
    if code == CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    if code == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Err(Error::out_of_memory(0, format!("{call}: {}", error_text(code))));
    }
    Err(Error::cuda(call, code as i32, error_text(code)))
}

impl CudaDriver {
    pub fn load() -> Result<Self> {
        // SAFETY: probes dlopen candidates and closes them; never panics.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::DriverUnavailable(
                "libcuda.so.1 could not be loaded: no NVIDIA driver on this machine \
                 (set RMM_SIM_DEVICES=1 to run on a simulated device)"
                    .into(),
            ));
        }
        if let Some(missing) = REQUIRED_SYMBOLS.iter().find(|s| !driver_symbol_present(s)) {
            return Err(Error::DriverUnavailable(format!("the CUDA driver lacks {missing}; rmm-rs needs a driver for CUDA 12.0 or newer")));
        }
        // SAFETY: symbol presence checked above; cuInit takes flags 0.
        check("cuInit", unsafe { sys::cuInit(0) })?;
        let mut version = 0;
        // SAFETY: out-pointer to a local.
        check("cuDriverGetVersion", unsafe { sys::cuDriverGetVersion(&mut version) })?;
        if version < MINIMUM_DRIVER_VERSION {
            return Err(Error::DriverUnavailable(format!(
                "the driver supports CUDA {}.{}; rmm-rs needs 12.0 or newer",
                version / 1000,
                (version % 1000) / 10
            )));
        }
        let mut count = 0;
        // SAFETY: out-pointer to a local.
        check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut count) })?;
        log::info!("CUDA driver {version} with {count} device(s)");
        Ok(CudaDriver {
            device_count: count,
            primary_contexts: (0..count).map(|_| OnceCell::new()).collect(),
            memory_pools_available: MEMORY_POOL_SYMBOLS.iter().all(|s| driver_symbol_present(s)),
            virtual_memory_available: VIRTUAL_MEMORY_SYMBOLS.iter().all(|s| driver_symbol_present(s)),
            version,
        })
    }

    fn primary_context(&self, device: i32) -> Result<sys::CUcontext> {
        let cell = self.primary_contexts.get(device as usize).ok_or_else(|| Error::invalid(format!("device {device} does not exist")))?;
        let ctx = cell.get_or_try_init(|| -> Result<usize> {
            let mut dev: sys::CUdevice = 0;
            // SAFETY: out-pointer to a local; device ordinal validated by the lookup above.
            check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, device) })?;
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; the retained context lives for the process.
            check("cuDevicePrimaryCtxRetain", unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
            Ok(ctx as usize)
        })?;
        Ok(*ctx as sys::CUcontext)
    }

    fn current_context(&self) -> Result<sys::CUcontext> {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        check("cuCtxGetCurrent", unsafe { sys::cuCtxGetCurrent(&mut ctx) })?;
        Ok(ctx)
    }

    fn device_of_context(&self, ctx: sys::CUcontext) -> Result<i32> {
        let (cached_ctx, cached_dev) = LAST_CONTEXT_DEVICE.with(Cell::get);
        if cached_ctx == ctx as usize {
            return Ok(cached_dev);
        }
        let mut dev: sys::CUdevice = 0;
        // SAFETY: `ctx` is the current context; out-pointer to a local.
        check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut dev) })?;
        LAST_CONTEXT_DEVICE.with(|c| c.set((ctx as usize, dev)));
        Ok(dev)
    }

    /// Runs `f` with a context of `device` current on this thread: the current one if it
    /// belongs to `device`, otherwise the device's primary context, pushed and popped.
    pub(super) fn with_device<T>(&self, device: i32, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let current = self.current_context()?;
        if !current.is_null() && self.device_of_context(current)? == device {
            return f();
        }
        let primary = self.primary_context(device)?;
        // SAFETY: `primary` is a retained context of an existing device.
        check("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(primary) })?;
        let result = f();
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context pushed above; out-pointer to a local.
        let pop = check("cuCtxPopCurrent", unsafe { sys::cuCtxPopCurrent_v2(&mut popped) });
        result.and_then(|v| pop.map(|_| v))
    }

    pub fn device_count(&self) -> Result<i32> {
        Ok(self.device_count)
    }

    pub fn current_device(&self) -> Result<i32> {
        let current = self.current_context()?;
        if current.is_null() {
            if self.device_count == 0 {
                return Err(Error::cuda("cuDeviceGet", 100, "no CUDA-capable device".into()));
            }
            self.set_device(0)?;
            return Ok(0);
        }
        self.device_of_context(current)
    }

    pub fn set_device(&self, device: i32) -> Result<()> {
        let primary = self.primary_context(device)?;
        // SAFETY: `primary` is a retained context of an existing device.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(primary) })
    }

    pub fn allocate(&self, device: i32, kind: MemoryKind, bytes: usize) -> Result<usize> {
        self.with_device(device, || {
            let result = match kind {
                MemoryKind::Device => {
                    let mut ptr: sys::CUdeviceptr = 0;
                    // SAFETY: out-pointer to a local; a context of `device` is current.
                    check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }).map(|_| ptr as usize)
                }
                MemoryKind::Managed => {
                    let mut ptr: sys::CUdeviceptr = 0;
                    // SAFETY: out-pointer to a local; a context of `device` is current.
                    check("cuMemAllocManaged", unsafe { sys::cuMemAllocManaged(&mut ptr, bytes, CU_MEM_ATTACH_GLOBAL) })
                        .map(|_| ptr as usize)
                }
                MemoryKind::PinnedHost => {
                    let mut ptr: *mut c_void = std::ptr::null_mut();
                    // SAFETY: out-pointer to a local; a context of `device` is current.
                    check("cuMemHostAlloc", unsafe { sys::cuMemHostAlloc(&mut ptr, bytes, CU_MEMHOSTALLOC_PORTABLE) }).map(|_| ptr as usize)
                }
            };
            result.map_err(|e| with_requested(e, bytes))
        })
    }

    pub fn free(&self, device: i32, kind: MemoryKind, ptr: usize) -> Result<()> {
        self.with_device(device, || match kind {
            // SAFETY: `ptr` came from cuMemAlloc/cuMemAllocManaged (callers keep the records).
            MemoryKind::Device | MemoryKind::Managed => check("cuMemFree", unsafe { sys::cuMemFree_v2(ptr as sys::CUdeviceptr) }),
            // SAFETY: `ptr` came from cuMemHostAlloc (callers keep the records).
            MemoryKind::PinnedHost => check("cuMemFreeHost", unsafe { sys::cuMemFreeHost(ptr as *mut c_void) }),
        })
    }

    fn require_virtual_memory(&self) -> Result<()> {
        match self.virtual_memory_available {
            true => Ok(()),
            false => Err(Error::NotSupported("this CUDA driver has no virtual memory management API".into())),
        }
    }

    /// Pinned device memory of `device`, exportable as `handle_types` (0: not exportable).
    fn physical_properties(device: i32, handle_types: u32) -> sys::CUmemAllocationProp {
        sys::CUmemAllocationProp {
            type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            requestedHandleTypes: sys::CUmemAllocationHandleType(handle_types),
            location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device },
            win32HandleMetaData: std::ptr::null_mut(),
            allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
                compressionType: 0,
                gpuDirectRDMACapable: 0,
                usage: 0,
                reserved: [0; 4],
            },
        }
    }

    pub fn vmm_granularity(&self, device: i32) -> Result<usize> {
        self.require_virtual_memory()?;
        let properties = Self::physical_properties(device, 0);
        let mut granularity = 0;
        // SAFETY: out-pointer to a local; the properties live across the call.
        check("cuMemGetAllocationGranularity", unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &properties,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
            )
        })?;
        Ok(granularity)
    }

    pub fn vmm_reserve(&self, size: usize) -> Result<usize> {
        self.require_virtual_memory()?;
        let mut at: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer to a local; alignment 0 (the granularity), no fixed address.
        check("cuMemAddressReserve", unsafe { sys::cuMemAddressReserve(&mut at, size, 0, 0, 0) }).map_err(|e| with_requested(e, size))?;
        Ok(at as usize)
    }

    pub fn vmm_free_reservation(&self, at: usize, size: usize) -> Result<()> {
        // SAFETY: the range came from cuMemAddressReserve (callers keep it).
        check("cuMemAddressFree", unsafe { sys::cuMemAddressFree(at as sys::CUdeviceptr, size) })
    }

    pub fn vmm_create(&self, device: i32, size: usize, handle_types: u32) -> Result<super::PhysicalMemory> {
        self.require_virtual_memory()?;
        let properties = Self::physical_properties(device, handle_types);
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: out-pointer to a local; the properties live across the call.
        check("cuMemCreate", unsafe { sys::cuMemCreate(&mut handle, size, &properties, 0) }).map_err(|e| with_requested(e, size))?;
        Ok(super::PhysicalMemory(handle))
    }

    /// POSIX file descriptors where the device says it exports them; fabric handles too where
    /// it says so and a trial `cuMemCreate` asking for both succeeds (without an IMEX channel
    /// the driver refuses fabric memory although the attribute is set): memory is then created
    /// exportable as a file descriptor only, rather than not at all.
    pub fn vmm_exportable_types(&self, device: i32) -> Result<u32> {
        self.require_virtual_memory()?;
        if !driver_symbol_present("cuMemExportToShareableHandle") || !driver_symbol_present("cuMemImportFromShareableHandle") {
            return Ok(0);
        }
        let posix = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED;
        if Self::device_attribute(device, posix)? == 0 {
            return Ok(0);
        }
        // CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED (CUDA 12.3): a driver that does not
        // know it answers CUDA_ERROR_INVALID_VALUE, which means no.
        const FABRIC_SUPPORTED: i32 = 128;
        if raw_device_attribute(device, FABRIC_SUPPORTED).unwrap_or(0) == 0 {
            return Ok(super::exportable_as::POSIX_FILE_DESCRIPTOR);
        }
        let both = super::exportable_as::POSIX_FILE_DESCRIPTOR | super::exportable_as::FABRIC;
        let granularity = self.vmm_granularity(device)?;
        match self.vmm_create(device, granularity, both) {
            Ok(trial) => {
                self.vmm_release(trial)?;
                Ok(both)
            }
            Err(e) => {
                log::info!("device {device} offers fabric handles but refused fabric memory ({e}): exporting file descriptors only");
                Ok(super::exportable_as::POSIX_FILE_DESCRIPTOR)
            }
        }
    }

    pub fn vmm_export(&self, handle: super::PhysicalMemory) -> Result<std::os::fd::OwnedFd> {
        use std::os::fd::FromRawFd;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: `handle` is live (callers keep it); for POSIX file descriptors the driver
        // writes an int to the pointer.
        check("cuMemExportToShareableHandle", unsafe {
            sys::cuMemExportToShareableHandle(
                &mut fd as *mut std::ffi::c_int as *mut c_void,
                handle.0,
                sys::CUmemAllocationHandleType(super::exportable_as::POSIX_FILE_DESCRIPTOR),
                0,
            )
        })?;
        // SAFETY: the driver just opened `fd` for us; nothing else owns it.
        let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // Kept open while the block is exported: a program that forks and executes another
        // must not hand its device memory on to it.
        // SAFETY: F_SETFD on a descriptor we own changes only its close-on-exec flag.
        unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(&fd), libc::F_SETFD, libc::FD_CLOEXEC) };
        Ok(fd)
    }

    pub fn vmm_import(&self, fd: std::os::fd::BorrowedFd<'_>, _device: i32) -> Result<super::PhysicalMemory> {
        use std::os::fd::AsRawFd;
        self.require_virtual_memory()?;
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: out-pointer to a local; for POSIX file descriptors the driver takes the
        // descriptor's value cast to a pointer, and only reads it during the call.
        check("cuMemImportFromShareableHandle", unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                fd.as_raw_fd() as usize as *mut c_void,
                sys::CUmemAllocationHandleType(super::exportable_as::POSIX_FILE_DESCRIPTOR),
            )
        })?;
        Ok(super::PhysicalMemory(handle))
    }

    fn cu_device(device: i32) -> Result<sys::CUdevice> {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: out-pointer to a local; the driver validates the ordinal.
        check("cuDeviceGet", unsafe { sys::cuDeviceGet(&mut dev, device) })?;
        Ok(dev)
    }

    pub fn can_access_peer(&self, device: i32, owner: i32) -> Result<bool> {
        let (dev, peer) = (Self::cu_device(device)?, Self::cu_device(owner)?);
        let mut can = 0;
        // SAFETY: out-pointer to a local; both devices exist.
        check("cuDeviceCanAccessPeer", unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) })?;
        Ok(can != 0)
    }

    pub fn device_uuid(&self, device: i32) -> Result<[u8; 16]> {
        let dev = Self::cu_device(device)?;
        let mut uuid = sys::CUuuid_st { bytes: [0; 16] };
        // SAFETY: out-pointer to a local; the device exists.
        check("cuDeviceGetUuid", unsafe { sys::cuDeviceGetUuid(&mut uuid, dev) })?;
        Ok(uuid.bytes.map(|byte| byte as u8))
    }

    pub fn ipc_get_mem_handle(&self, device: i32, base: usize) -> Result<[u8; 64]> {
        self.with_device(device, || {
            let mut handle = sys::CUipcMemHandle_st { reserved: [0; 64] };
            // SAFETY: out-pointer to a local; the driver validates `base`.
            check("cuIpcGetMemHandle", unsafe { sys::cuIpcGetMemHandle(&mut handle, base as sys::CUdeviceptr) })?;
            Ok(handle.reserved.map(|byte| byte as u8))
        })
    }

    pub fn ipc_open_mem_handle(&self, device: i32, handle: &[u8; 64]) -> Result<usize> {
        /// CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: memory of another device is opened with peer
        /// access, as cudaIpcOpenMemHandle does.
        const LAZY_ENABLE_PEER_ACCESS: u32 = 1;
        self.with_device(device, || {
            let handle = sys::CUipcMemHandle_st { reserved: handle.map(|byte| byte as std::ffi::c_char) };
            let mut at: sys::CUdeviceptr = 0;
            // SAFETY: out-pointer to a local; the driver validates the handle.
            check("cuIpcOpenMemHandle", unsafe { sys::cuIpcOpenMemHandle_v2(&mut at, handle, LAZY_ENABLE_PEER_ACCESS) })?;
            Ok(at as usize)
        })
    }

    pub fn ipc_close_mem_handle(&self, device: i32, base: usize) -> Result<()> {
        // SAFETY: `base` came from cuIpcOpenMemHandle (callers keep it).
        self.with_device(device, || check("cuIpcCloseMemHandle", unsafe { sys::cuIpcCloseMemHandle(base as sys::CUdeviceptr) }))
    }

    pub fn vmm_release(&self, handle: super::PhysicalMemory) -> Result<()> {
        // SAFETY: the handle came from cuMemCreate (callers keep it).
        check("cuMemRelease", unsafe { sys::cuMemRelease(handle.0) })
    }

    pub fn vmm_map(&self, at: usize, size: usize, handle: super::PhysicalMemory) -> Result<()> {
        // SAFETY: a reserved range and a live handle (callers keep both); offset 0, flags 0.
        check("cuMemMap", unsafe { sys::cuMemMap(at as sys::CUdeviceptr, size, 0, handle.0, 0) })
    }

    pub fn vmm_unmap(&self, at: usize, size: usize) -> Result<()> {
        // SAFETY: a mapped range (callers keep it).
        check("cuMemUnmap", unsafe { sys::cuMemUnmap(at as sys::CUdeviceptr, size) })
    }

    pub fn vmm_set_access(&self, at: usize, size: usize, devices: &[i32]) -> Result<()> {
        let access: Vec<sys::CUmemAccessDesc> = devices
            .iter()
            .map(|&device| sys::CUmemAccessDesc {
                location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device },
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        // SAFETY: a mapped range (callers keep it); `access` holds `access.len()` descriptors.
        check("cuMemSetAccess", unsafe { sys::cuMemSetAccess(at as sys::CUdeviceptr, size, access.as_ptr(), access.len()) })
    }

    fn device_attribute(device: i32, attribute: sys::CUdevice_attribute) -> Result<i32> {
        let mut value = 0;
        // SAFETY: out-pointer to a local; attribute query on an existing device.
        check("cuDeviceGetAttribute", unsafe { sys::cuDeviceGetAttribute(&mut value, attribute, device) })?;
        Ok(value)
    }

    /// Memory pools on `device` whose memory can be exported as `handle_types`.
    fn require_memory_pools(&self, device: i32, handle_types: u32) -> Result<()> {
        if !self.memory_pools_available {
            return Err(Error::NotSupported("this CUDA driver has no stream-ordered memory pools".into()));
        }
        if Self::device_attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? == 0 {
            return Err(Error::NotSupported(format!("device {device} does not support memory pools")));
        }
        if handle_types != 0 {
            let exportable =
                Self::device_attribute(device, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES)? as u32;
            if handle_types & !exportable != 0 {
                return Err(Error::NotSupported(format!(
                    "device {device} exports pool memory as handle types {exportable:#x}, not {handle_types:#x}"
                )));
            }
        }
        Ok(())
    }

    pub fn mem_pool_create(&self, device: i32, props: &PoolProps) -> Result<MemPool> {
        self.require_memory_pools(device, props.handle_types)?;
        let (capability, location_type, alloc_type) = match props.kind {
            MemoryKind::Device => (None, CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_ALLOCATION_TYPE_PINNED),
            MemoryKind::Managed => (Some(Capability::ManagedMemoryPools), CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_ALLOCATION_TYPE_MANAGED),
            MemoryKind::PinnedHost => (Some(Capability::HostMemoryPools), CU_MEM_LOCATION_TYPE_HOST, CU_MEM_ALLOCATION_TYPE_PINNED),
        };
        let decompress = props.hw_decompress.then_some(Capability::HwDecompress);
        if let Some(missing) = capability.into_iter().chain(decompress).find(|c| !self.supports(device, *c).unwrap_or(false)) {
            return Err(Error::NotSupported(format!("device {device} with driver {}: no {}", self.version, describe(missing))));
        }
        let props_raw = RawPoolProps {
            alloc_type,
            handle_types: props.handle_types,
            location_type,
            // A host pool's location id is ignored by the driver; 0 as the documentation has it.
            location_id: if props.kind == MemoryKind::PinnedHost { 0 } else { device },
            win32_security_attributes: std::ptr::null_mut(),
            max_size: 0,
            usage: if props.hw_decompress { CU_MEM_POOL_CREATE_USAGE_HW_DECOMPRESS } else { 0 },
            reserved: [0; 54],
        };
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `props_raw` has CUmemPoolProps' layout (checked size; fields as cuda.h of 12.2
        // and later, which older drivers read as reserved zeros); out-pointer to a local.
        check("cuMemPoolCreate", unsafe {
            sys::cuMemPoolCreate(&mut pool, &props_raw as *const RawPoolProps as *const sys::CUmemPoolProps)
        })?;
        let mut threshold = props.release_threshold as u64;
        // SAFETY: `pool` was just created; the attribute takes a cuuint64_t.
        let set = check("cuMemPoolSetAttribute", unsafe {
            sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut c_void,
            )
        });
        // A host pool's memory is reachable from no device until the pool grants access; pinned
        // host memory is every device's, so every device gets it.
        let set = set.and_then(|()| match props.kind {
            MemoryKind::PinnedHost => self.pool_grant_all_devices(pool),
            _ => Ok(()),
        });
        if let Err(e) = set {
            // SAFETY: destroys the pool created above, which holds no allocations.
            unsafe { sys::cuMemPoolDestroy(pool) };
            return Err(e);
        }
        Ok(MemPool(pool as usize))
    }

    fn pool_grant_all_devices(&self, pool: sys::CUmemoryPool) -> Result<()> {
        let access: Vec<sys::CUmemAccessDesc> = (0..self.device_count()?)
            .map(|device| sys::CUmemAccessDesc {
                location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: device },
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        // SAFETY: a pool this process created; `access` holds `access.len()` descriptors.
        check("cuMemPoolSetAccess", unsafe { sys::cuMemPoolSetAccess(pool, access.as_ptr(), access.len()) })
    }

    pub fn supports(&self, device: i32, capability: Capability) -> Result<bool> {
        let attribute = |attribute| Self::device_attribute(device, attribute).map(|value| value != 0);
        let pools = || -> Result<bool> {
            Ok(self.memory_pools_available && attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)?)
        };
        Ok(match capability {
            Capability::PageableMemoryAccess => attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)?,
            Capability::ManagedMemoryPools => {
                self.version >= MANAGED_MEMORY_POOLS_VERSION
                    && driver_symbol_present("cuMemGetDefaultMemPool")
                    && pools()?
                    && attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)?
            }
            Capability::HostMemoryPools => {
                // A driver older than the attribute refuses to answer: it has no host pools.
                self.version >= HOST_MEMORY_POOLS_VERSION
                    && pools()?
                    && raw_device_attribute(device, HOST_MEMORY_POOLS_SUPPORTED).unwrap_or(0) != 0
            }
            Capability::HwDecompress => self.version >= HW_DECOMPRESS_VERSION && pools()?,
        })
    }

    pub fn default_managed_pool(&self, device: i32) -> Result<MemPool> {
        type GetDefault = unsafe extern "C" fn(*mut sys::CUmemoryPool, *mut [i32; 2], i32) -> CUresult;
        // SAFETY: `supports` (asked by the caller) found the symbol; CUDA 13's
        // cuMemGetDefaultMemPool(CUmemoryPool*, CUmemLocation*, CUmemAllocationType).
        let get = unsafe { sys::culib().get::<GetDefault>(b"cuMemGetDefaultMemPool") }
            .map_err(|e| Error::NotSupported(format!("cuMemGetDefaultMemPool: {e}")))?;
        let mut location = [CU_MEM_LOCATION_TYPE_DEVICE, device];
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `location` is a CUmemLocation (two ints).
        check("cuMemGetDefaultMemPool", unsafe { get(&mut pool, &mut location, CU_MEM_ALLOCATION_TYPE_MANAGED) })?;
        Ok(MemPool(pool as usize))
    }

    pub fn mem_pool_check(&self, device: i32, pool: MemPool) -> Result<()> {
        self.require_memory_pools(device, 0)?;
        let mut reserved = 0u64;
        // SAFETY: a read-only query into a local; the driver validates the handle (the caller
        // vouches that it is a pool handle of this process, as for every cudaMemPool_t call).
        let status = unsafe {
            sys::cuMemPoolGetAttribute(
                pool.0 as sys::CUmemoryPool,
                sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
                &mut reserved as *mut u64 as *mut c_void,
            )
        };
        check("cuMemPoolGetAttribute", status)
            .map_err(|e| Error::invalid(format!("{:#x} is not a memory pool the driver knows: {e}", pool.0)))
    }

    pub fn advise_preferred_location(&self, ptr: usize, bytes: usize, device: Option<i32>) -> Result<()> {
        if !driver_symbol_present("cuMemAdvise") {
            return Err(Error::NotSupported("this driver has no cuMemAdvise".into()));
        }
        let target = match device {
            Some(device) => Self::cu_device(device)?,
            None => CU_DEVICE_CPU,
        };
        // SAFETY: the driver validates the range and the device; advice moves no data.
        check("cuMemAdvise", unsafe {
            sys::cuMemAdvise(ptr as sys::CUdeviceptr, bytes, sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, target)
        })
    }

    pub fn mem_pool_destroy(&self, _device: i32, pool: MemPool) -> Result<()> {
        // SAFETY: `pool` came from mem_pool_create and is destroyed once by its owner.
        check("cuMemPoolDestroy", unsafe { sys::cuMemPoolDestroy(pool.0 as sys::CUmemoryPool) })
    }

    pub fn mem_pool_trim(&self, _device: i32, pool: MemPool, keep: usize) -> Result<()> {
        // SAFETY: `pool` is a live pool of its owner.
        check("cuMemPoolTrimTo", unsafe { sys::cuMemPoolTrimTo(pool.0 as sys::CUmemoryPool, keep) })
    }

    pub fn allocate_from_pool(&self, device: i32, pool: MemPool, bytes: usize, stream: Stream) -> Result<usize> {
        self.with_device(device, || {
            let mut ptr: sys::CUdeviceptr = 0;
            // SAFETY: `pool` is live; out-pointer to a local; the stream is the caller's.
            check("cuMemAllocFromPoolAsync", unsafe {
                sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, pool.0 as sys::CUmemoryPool, stream.0 as sys::CUstream)
            })
            .map(|_| ptr as usize)
            .map_err(|e| with_requested(e, bytes))
        })
    }

    pub fn free_to_pool(&self, device: i32, _pool: MemPool, ptr: usize, stream: Stream) -> Result<()> {
        self.with_device(device, || {
            // SAFETY: `ptr` came from cuMemAllocFromPoolAsync (callers keep the records).
            check("cuMemFreeAsync", unsafe { sys::cuMemFreeAsync(ptr as sys::CUdeviceptr, stream.0 as sys::CUstream) })
        })
    }

    pub fn mem_get_info(&self, device: i32) -> Result<(usize, usize)> {
        self.with_device(device, || {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: out-pointers to locals; a context of `device` is current.
            check("cuMemGetInfo", unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
            Ok((free, total))
        })
    }

    pub fn address_range(&self, device: i32, ptr: usize) -> Result<(usize, usize)> {
        self.with_device(device, || {
            let (mut base, mut size): (sys::CUdeviceptr, usize) = (0, 0);
            // SAFETY: out-pointers to locals; the driver validates `ptr`.
            check("cuMemGetAddressRange", unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr as sys::CUdeviceptr) })?;
            Ok((base as usize, size))
        })
    }

    pub fn copy_async(&self, device: i32, dst: usize, src: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.with_device(device, || {
            // SAFETY: both ranges are live allocations of at least `bytes` (checked by callers).
            check("cuMemcpyAsync", unsafe {
                sys::cuMemcpyAsync(dst as sys::CUdeviceptr, src as sys::CUdeviceptr, bytes, stream.0 as sys::CUstream)
            })
        })
    }

    pub fn prefetch(&self, device: i32, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        // CUDA 13 headers name the v2 entry point cuMemPrefetchAsync; the driver still exports
        // the original one, which is what this loads.
        if !driver_symbol_present("cuMemPrefetchAsync") {
            return Err(Error::NotSupported("this driver has no cuMemPrefetchAsync".into()));
        }
        self.with_device(device, || {
            // SAFETY: the driver validates the range (not managed: CUDA_ERROR_INVALID_VALUE) and
            // the stream; `device` is an ordinal checked by with_device.
            let status = unsafe { sys::cuMemPrefetchAsync(ptr as sys::CUdeviceptr, bytes, device, stream.0 as sys::CUstream) };
            match status {
                CUresult::CUDA_ERROR_INVALID_VALUE => Err(Error::invalid(format!("{ptr:#x} is not managed memory"))),
                status => check("cuMemPrefetchAsync", status),
            }
        })
    }

    pub fn stream_identity(&self, stream: Stream) -> Result<u64> {
        let mut id: std::ffi::c_ulonglong = 0;
        // SAFETY: out-pointer to a local; the driver validates the stream handle.
        check("cuStreamGetId", unsafe { sys::cuStreamGetId(stream.0 as sys::CUstream, &mut id) })?;
        // Driver ids start at small numbers; keep 0 for the legacy default stream.
        Ok(id + 1)
    }

    /// The device whose context `stream` belongs to (a created stream; the default streams
    /// belong to the current context).
    pub fn stream_device(&self, stream: Stream) -> Result<i32> {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the driver validates the stream handle.
        check("cuStreamGetCtx", unsafe { sys::cuStreamGetCtx(stream.0 as sys::CUstream, &mut ctx) })?;
        if ctx == self.current_context()? {
            return self.device_of_context(ctx);
        }
        // SAFETY: `ctx` is the live context of a live stream; popped below.
        check("cuCtxPushCurrent", unsafe { sys::cuCtxPushCurrent_v2(ctx) })?;
        let mut device: sys::CUdevice = 0;
        // SAFETY: out-pointer to a local; `ctx` is current.
        let asked = check("cuCtxGetDevice", unsafe { sys::cuCtxGetDevice(&mut device) });
        let mut popped: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: pops the context pushed above; out-pointer to a local.
        let pop = check("cuCtxPopCurrent", unsafe { sys::cuCtxPopCurrent_v2(&mut popped) });
        asked.and(pop).map(|_| device)
    }

    pub fn stream_create_with_flags(&self, device: i32, non_blocking: bool) -> Result<Stream> {
        self.with_device(device, || {
            let mut stream: sys::CUstream = std::ptr::null_mut();
            // CU_STREAM_NON_BLOCKING; 0 makes a stream that syncs with the legacy default stream.
            let flags = u32::from(non_blocking);
            // SAFETY: out-pointer to a local; the flags are CU_STREAM_DEFAULT or _NON_BLOCKING.
            check("cuStreamCreate", unsafe { sys::cuStreamCreate(&mut stream, flags) })?;
            Ok(Stream(stream as usize))
        })
    }

    pub fn stream_destroy(&self, stream: Stream) -> Result<()> {
        // SAFETY: the caller owns `stream`; the driver rejects handles it does not know.
        check("cuStreamDestroy", unsafe { sys::cuStreamDestroy_v2(stream.0 as sys::CUstream) })
    }

    pub fn stream_synchronize(&self, stream: Stream) -> Result<()> {
        // The default streams belong to the current context, so make sure there is one.
        self.current_device()?;
        // SAFETY: the driver validates the stream handle.
        check("cuStreamSynchronize", unsafe { sys::cuStreamSynchronize(stream.0 as sys::CUstream) })
    }

    pub fn device_synchronize(&self, device: i32) -> Result<()> {
        // SAFETY: a context of `device` is current inside `with_device`.
        self.with_device(device, || check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() }))
    }

    pub fn event_create(&self, device: i32) -> Result<Event> {
        self.with_device(device, || {
            let mut event: sys::CUevent = std::ptr::null_mut();
            // SAFETY: out-pointer to a local; timing is off because we only order with it.
            check("cuEventCreate", unsafe { sys::cuEventCreate(&mut event, CU_EVENT_DISABLE_TIMING) })?;
            Ok(Event(event as usize))
        })
    }

    pub fn event_destroy(&self, event: Event) -> Result<()> {
        // SAFETY: the caller owns `event`.
        check("cuEventDestroy", unsafe { sys::cuEventDestroy_v2(event.0 as sys::CUevent) })
    }

    pub fn event_record(&self, device: i32, event: Event, stream: Stream) -> Result<()> {
        self.with_device(device, || {
            // SAFETY: the caller owns `event` and passes a live stream.
            check("cuEventRecord", unsafe { sys::cuEventRecord(event.0 as sys::CUevent, stream.0 as sys::CUstream) })
        })
    }

    /// Whether the work before `event`'s last record is done, without waiting for it.
    pub fn event_query(&self, event: Event) -> Result<bool> {
        // SAFETY: the caller owns `event`.
        match unsafe { sys::cuEventQuery(event.0 as sys::CUevent) } {
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            code => check("cuEventQuery", code).map(|()| true),
        }
    }

    pub fn event_synchronize(&self, event: Event) -> Result<()> {
        // SAFETY: the caller owns `event`.
        check("cuEventSynchronize", unsafe { sys::cuEventSynchronize(event.0 as sys::CUevent) })
    }

    pub fn stream_wait_event(&self, device: i32, stream: Stream, event: Event) -> Result<()> {
        self.with_device(device, || {
            // SAFETY: the caller owns `event` and passes a live stream.
            check("cuStreamWaitEvent", unsafe { sys::cuStreamWaitEvent(stream.0 as sys::CUstream, event.0 as sys::CUevent, 0) })
        })
    }
}

/// `cuDeviceGetAttribute` with an attribute number the cudarc level we build against may not
/// name (a Rust enum must not hold a value it has no variant for).
fn raw_device_attribute(device: i32, attribute: i32) -> Result<i32> {
    type GetAttribute = unsafe extern "C" fn(*mut std::ffi::c_int, std::ffi::c_int, sys::CUdevice) -> CUresult;
    // SAFETY: the driver is loaded (only called on a loaded CudaDriver) and exports
    // cuDeviceGetAttribute (a required symbol) with this signature.
    let get = unsafe { sys::culib().get::<GetAttribute>(b"cuDeviceGetAttribute") }
        .map_err(|e| Error::DriverUnavailable(format!("cuDeviceGetAttribute: {e}")))?;
    let mut value = 0;
    // SAFETY: out-pointer to a local; the driver validates the attribute and the device.
    check("cuDeviceGetAttribute", unsafe { get(&mut value, attribute, CudaDriver::cu_device(device)?) })?;
    Ok(value)
}

fn describe(capability: Capability) -> &'static str {
    match capability {
        Capability::PageableMemoryAccess => "pageable memory access (HMM or ATS)",
        Capability::ManagedMemoryPools => "managed memory pools (CUDA 13 driver and concurrent managed access)",
        Capability::HostMemoryPools => "host memory pools (CUDA 12.6 driver and CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED)",
        Capability::HwDecompress => "hardware decompression pools (CUDA 12.8 driver)",
    }
}

fn with_requested(error: Error, bytes: usize) -> Error {
    match error.into_kind() {
        ErrorKind::OutOfMemory { detail, .. } => Error::out_of_memory(bytes, detail),
        other => other.into(),
    }
}
