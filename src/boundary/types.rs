//! Types shared by the exported functions. `cudaStream_t` and `rmmResource_t` are written
//! into the header by cbindgen.toml so that they match CUDA's own typedef exactly.

use crate::error::{Error, Result};
use crate::resources::kinds::{Value, UNLIMITED};
use std::ffi::{c_int, c_void};

/// CUDA's stream type; `cudaStream_t` in C.
#[repr(C)]
pub struct CUstream_st {
    _opaque: [u8; 0],
}

/// A stream as C passes it: CUDA's `cudaStream_t` (0 is the legacy default stream). The
/// header declares it itself (cbindgen.toml), identical to CUDA's typedef.
#[allow(non_camel_case_types)]
pub type cudaStream_t = *mut CUstream_st;

/// The platform's view of a stream the caller passed: its raw handle value, unchecked.
pub fn stream_of(stream: cudaStream_t) -> crate::platform::Stream {
    crate::platform::Stream(stream as usize)
}

/// The `void *` a caller gives with its callbacks (`arg`, `user_data`), handed back to them
/// untouched.
#[derive(Clone, Copy)]
pub struct CallbackArgument(pub *mut c_void);
// SAFETY: rmm never dereferences the pointer; the caller promises that its callbacks may run
// on any thread that allocates or frees.
unsafe impl Send for CallbackArgument {}
// SAFETY: as above.
unsafe impl Sync for CallbackArgument {}

impl CallbackArgument {
    /// The pointer the caller gave, to hand back to its callback.
    pub fn get(self) -> *mut c_void {
        self.0
    }
}

/// Legacy allocation-mode flags; combine with `|`.
#[allow(non_camel_case_types)]
pub type rmmAllocationMode_t = u32;
/// Device memory from `cudaMalloc` (the driver's `cuMemAlloc`), no pool.
#[allow(non_upper_case_globals)]
pub const CudaDefaultAllocation: rmmAllocationMode_t = 0;
/// A pool suballocator over the base allocation.
#[allow(non_upper_case_globals)]
pub const PoolAllocation: rmmAllocationMode_t = 1;
/// Managed (unified) memory as the base allocation.
#[allow(non_upper_case_globals)]
pub const CudaManagedMemory: rmmAllocationMode_t = 2;
/// The driver's stream-ordered allocator (`cudaMallocAsync`) with a pool of its own.
#[allow(non_upper_case_globals)]
pub const CudaAsyncAllocation: rmmAllocationMode_t = 4;

/// Options of `rmmExpandableResourceCreateWithOptions`. Zero-initialize it, then set what you
/// need: all zero is what `rmmExpandableResourceCreate(&r, 0)` makes.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rmmExpandableOptions_t {
    /// Bytes mapped at creation and kept for the resource's life (0: none).
    pub initial_size: usize,
    /// The most bytes mapped at once, small and large blocks' pages together (0: the
    /// device's memory).
    pub maximum_size: usize,
    /// Nonzero: whole free pages (at the ends of the resource's chunks and between blocks in
    /// use) are unmapped while more than `release_threshold` bytes are mapped, and go back to
    /// the device while more than `release_threshold` bytes are held (mapped, or kept
    /// unmapped for reuse), once the stream that freed them has passed that point (never
    /// waiting for it). 0: free pages stay held until `rmmResourceRelease` or until the
    /// device runs out of memory (a growth still maps the pages of holes before it creates
    /// new ones).
    pub release_free_pages: c_int,
    /// See `release_free_pages` (0 with it: give back every free page); it applies to the
    /// small blocks' pages and to the large blocks' pages each.
    pub release_threshold: usize,
    /// The unit of mapping and release for blocks of 256 KiB or more (smaller blocks have
    /// pages of the granularity of their own): a multiple of the device's allocation
    /// granularity (0: 1/4096 of the maximum size rounded up to the granularity, from the
    /// granularity, 2 MiB on current GPUs, up to 20 MiB on devices of 80 GiB or more).
    pub page_size: usize,
    /// Other devices given read and write access to the memory (NULL when `num_peers` is 0).
    pub peers: *const c_int,
    /// How many devices `peers` lists (0: none).
    pub num_peers: usize,
}

/// The values of the expandable kind (`resources::kinds`) that `options` gives; NULL gives
/// none, so every one is the registry's default.
pub(crate) fn expandable_values(options: *const rmmExpandableOptions_t) -> Result<Vec<(&'static str, Value)>> {
    if options.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: non-NULL, and the caller promises a readable rmmExpandableOptions_t.
    let options = unsafe { *options };
    let peers = match (options.peers.is_null(), options.num_peers) {
        (_, 0) => Vec::new(),
        (true, _) => return Err(Error::invalid("options.peers is NULL but options.num_peers is not 0")),
        // SAFETY: the caller promises `num_peers` readable ints at `peers`.
        (false, count) => unsafe { std::slice::from_raw_parts(options.peers, count) }.to_vec(),
    };
    Ok(vec![
        ("initial", Value::Size(options.initial_size)),
        ("maximum", Value::Size(options.maximum_size)),
        ("release_threshold", Value::Size(if options.release_free_pages != 0 { options.release_threshold } else { UNLIMITED })),
        ("page_size", Value::Size(options.page_size)),
        ("peers", Value::Devices(peers)),
    ])
}

/// What a resource holds and uses (`rmmResourceGetFootprint`).
#[repr(C)]
#[derive(Clone, Copy, Default)]
#[allow(non_camel_case_types)]
pub struct rmmFootprint_t {
    /// Bytes held from the device (a pool's chunks, mapped pages), now and at most.
    pub reserved_bytes: usize,
    /// The most `reserved_bytes` has been since the resource was made.
    pub peak_reserved_bytes: usize,
    /// Bytes in blocks handed out, now and at most (block sizes, rounded up as handed out).
    pub live_bytes: usize,
    /// The most `live_bytes` has been; with several streams, the sum of each stream's most,
    /// which bounds the true figure from above.
    pub peak_live_bytes: usize,
    /// Bytes of the largest block one allocation could get without the resource growing.
    pub largest_free_block: usize,
    /// 1 - live / reserved: the share of what is held that is not in use; NaN while nothing is
    /// in use (no figure).
    pub fragmentation: f64,
}

impl From<crate::resources::Footprint> for rmmFootprint_t {
    fn from(f: crate::resources::Footprint) -> Self {
        rmmFootprint_t {
            reserved_bytes: f.reserved,
            peak_reserved_bytes: f.peak_reserved,
            live_bytes: f.live,
            peak_live_bytes: f.peak_live,
            largest_free_block: f.largest_free_block,
            fragmentation: f.fragmentation().unwrap_or(f64::NAN),
        }
    }
}

/// The kinds of shareable handle `rmmAsyncResourceCreateExportable` can export pool memory as
/// (CUDA's `cudaMemAllocationHandleType` values); this one and the three below. This one:
/// `cudaMemHandleTypePosixFileDescriptor`, a file descriptor (what Linux drivers offer).
pub const RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: u32 = 1;
/// `cudaMemHandleTypeWin32`: a Windows NT handle (not offered on Linux).
pub const RMM_HANDLE_TYPE_WIN32: u32 = 2;
/// `cudaMemHandleTypeWin32Kmt`: a Windows D3DKMT handle (not offered on Linux).
pub const RMM_HANDLE_TYPE_WIN32_KMT: u32 = 4;
/// `cudaMemHandleTypeFabric`: a fabric handle, which crosses nodes through IMEX, where the
/// driver offers it.
pub const RMM_HANDLE_TYPE_FABRIC: u32 = 8;
// cbindgen writes only literal values into rmm.h: the values live in the resource that
// exports memory (`handle_type`), and these must stay equal to them.
const _: () = {
    use crate::resources::handle_type;
    assert!(RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR == handle_type::POSIX_FILE_DESCRIPTOR);
    assert!(RMM_HANDLE_TYPE_WIN32 == handle_type::WIN32);
    assert!(RMM_HANDLE_TYPE_WIN32_KMT == handle_type::WIN32_KMT);
    assert!(RMM_HANDLE_TYPE_FABRIC == handle_type::FABRIC);
};

/// A flag of `rmmAsyncResourceCreateWithFlags`: the pool's memory may serve hardware
/// decompression (`cudaMemPoolCreateUsageHwDecompress`, a CUDA 12.8 driver; RAPIDS'
/// `enable_hw_decompress`).
pub const RMM_ASYNC_HW_DECOMPRESS: u32 = 1;

/// What `rmmDeviceSupports` can be asked; this one and the three below. This one: the device
/// reaches pageable host memory, as from `malloc` (HMM or ATS), which `rmmSystemResourceCreate`
/// and `rmmSamHeadroomResourceCreate` need.
pub const RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS: u32 = 1;
/// Driver memory pools of managed memory (a CUDA 13 driver, and a device with concurrent
/// managed access), which `rmmAsyncManagedResourceCreate` needs.
pub const RMM_CAPABILITY_MANAGED_MEMORY_POOLS: u32 = 2;
/// Driver memory pools of page-locked host memory (a CUDA 12.6 driver or later, where the
/// device offers them), which `rmmAsyncPinnedHostResourceCreate` needs.
pub const RMM_CAPABILITY_HOST_MEMORY_POOLS: u32 = 3;
/// Pools whose memory serves hardware decompression (a CUDA 12.8 driver), which
/// `RMM_ASYNC_HW_DECOMPRESS` needs.
pub const RMM_CAPABILITY_HW_DECOMPRESS: u32 = 4;

/// Most devices `rmmOptions_t.devices` can list.
pub const RMM_MAX_DEVICES: usize = 64;

/// The devices `rmmInitialize` sets up. In C++ it also takes what legacy RMM's
/// `std::vector<int> devices` took: `options.devices = std::vector<int>{0, 1};`,
/// `options.devices = {0, 1};`, `push_back`, `size`, `empty`, `clear`, indexing and iteration.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rmmDeviceList_t {
    /// How many entries of `ids` to set up; 0 sets up the calling thread's current device.
    /// More than `RMM_MAX_DEVICES` is refused by `rmmInitialize`.
    pub count: i32,
    /// Device ordinals to set up.
    pub ids: [i32; RMM_MAX_DEVICES],
}

/// Options of `rmmInitialize`: legacy RMM's fields in legacy RMM's order, so legacy code's
/// positional initializer (`rmmOptions_t o = {PoolAllocation, 1 << 30, true};`) means what it
/// meant; fields rmm-rs added come after them, and zero means "as legacy RMM".
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rmmOptions_t {
    /// `CudaDefaultAllocation`, `PoolAllocation`, `CudaManagedMemory`, `CudaAsyncAllocation`,
    /// or `PoolAllocation | CudaManagedMemory`.
    pub allocation_mode: rmmAllocationMode_t,
    /// Bytes the pool starts with (0: half of the free device memory, as legacy RMM did).
    pub initial_pool_size: usize,
    /// Record allocation events for `rmmWriteLog`.
    pub enable_logging: bool,
    /// Devices to set up (none: the calling thread's current device).
    pub devices: rmmDeviceList_t,
    /// Bytes the pool may grow to (0: no limit, as legacy RMM's pool).
    pub maximum_pool_size: usize,
}

impl rmmOptions_t {
    /// The C form of options `initialize` was given (`rmmIsInitialized`); only the first
    /// `RMM_MAX_DEVICES` devices fit.
    pub fn from_options(options: &crate::ownership::legacy::Options) -> Self {
        let mut ids = [0; RMM_MAX_DEVICES];
        for (slot, device) in ids.iter_mut().zip(&options.devices) {
            *slot = *device;
        }
        rmmOptions_t {
            allocation_mode: options.allocation_mode,
            initial_pool_size: options.initial_pool_size,
            enable_logging: options.enable_logging,
            devices: rmmDeviceList_t { count: options.devices.len() as i32, ids },
            maximum_pool_size: options.maximum_pool_size,
        }
    }

    /// The Rust form of options a caller passed; `InvalidArgument` when `devices.count` is
    /// negative or more than `RMM_MAX_DEVICES`.
    pub fn to_options(&self) -> crate::error::Result<crate::ownership::legacy::Options> {
        let count = self.devices.count;
        if count < 0 || count as usize > RMM_MAX_DEVICES {
            return Err(crate::error::Error::invalid(format!("devices.count is {count}; it must be 0 to {RMM_MAX_DEVICES}")));
        }
        Ok(crate::ownership::legacy::Options {
            allocation_mode: self.allocation_mode,
            initial_pool_size: self.initial_pool_size,
            maximum_pool_size: self.maximum_pool_size,
            enable_logging: self.enable_logging,
            devices: self.devices.ids[..count as usize].to_vec(),
        })
    }
}

/// How `rmmResourceSleep` treats the contents of live blocks: dropped (KV caches, activations,
/// scratch; at wake the blocks hold whatever the new memory holds).
pub const RMM_SLEEP_DISCARD: u32 = 0;
/// Copied to pinned host memory at sleep and back at wake (weights).
pub const RMM_SLEEP_KEEP: u32 = 1;

#[cfg(test)]
mod tests {
    use crate::ownership::legacy::mode;

    #[test]
    fn allocation_mode_flags_match_the_legacy_values() {
        assert_eq!(super::CudaDefaultAllocation, mode::CUDA_DEFAULT);
        assert_eq!(super::PoolAllocation, mode::POOL);
        assert_eq!(super::CudaManagedMemory, mode::CUDA_MANAGED);
        assert_eq!(super::CudaAsyncAllocation, mode::CUDA_ASYNC);
    }
}
