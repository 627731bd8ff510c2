//! Creating, using and destroying resource handles.

use super::handles::{self, rmmResource_t};
use super::types::{
    cudaStream_t, expandable_values, rmmExpandableOptions_t, stream_of, CallbackArgument, RMM_ASYNC_HW_DECOMPRESS,
    RMM_CAPABILITY_HOST_MEMORY_POOLS, RMM_CAPABILITY_HW_DECOMPRESS, RMM_CAPABILITY_MANAGED_MEMORY_POOLS,
    RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS,
};
use super::{boundary, non_null, optional_str, write_out};
use crate::error::{rmmError_t, Error, Result};
use crate::ownership::spec::Spec;
use crate::ownership::{records, Expected, Holder};
use crate::platform::{backend, Capability, MemPool, Stream};
use crate::resources::kinds::{self, Place, Value};
use crate::resources::{handle_type, AllocateFn, AsyncResource, CallbackResource, DeallocateFn, MemoryResource, ReleaseFn};
use parking_lot::Mutex;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

/// The NUL-terminated copy of a resource name, made once per name and kept for the process.
fn c_name(name: &'static str) -> &'static CStr {
    static NAMES: Mutex<Vec<(&'static str, &'static CStr)>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock();
    if let Some((_, c)) = names.iter().find(|(n, _)| *n == name) {
        return c;
    }
    let c: &'static CStr = Box::leak(CString::new(name).unwrap_or_default().into_boxed_c_str());
    names.push((name, c));
    c
}

/// Makes a resource on the current device and writes its new handle to `out`.
fn create(function: &'static str, out: *mut rmmResource_t, make: impl FnOnce(i32) -> Result<Arc<dyn MemoryResource>>) -> rmmError_t {
    boundary(function, || {
        non_null(out, "resource")?;
        let resource = make(backend()?.current_device()?)?;
        write_out(out, "resource", handles::create(resource)?)
    })
}

/// Creates a resource that allocates device memory of the current device with `cudaMalloc`
/// semantics (RMM's `cuda_memory_resource`) and writes its handle to `*resource`, which must
/// not be NULL. The caller owns the handle and releases it with `rmmResourceDestroy`.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmCudaResourceCreate(resource: *mut rmmResource_t) -> rmmError_t {
    create("rmmCudaResourceCreate", resource, |device| kinds::build("cuda", [], &Place::on(device)))
}

/// Creates a managed-memory resource (`cudaMallocManaged`) on the current device. Ownership as
/// `rmmCudaResourceCreate`.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmManagedResourceCreate(resource: *mut rmmResource_t) -> rmmError_t {
    create("rmmManagedResourceCreate", resource, |device| kinds::build("managed", [], &Place::on(device)))
}

/// Allocates `bytes` for use on `stream` and returns the address, or NULL when it cannot (out
/// of memory); `user_data` is what `rmmCallbackResourceCreate` was given.
#[allow(non_camel_case_types)]
pub type rmmAllocateCallback_t = Option<extern "C" fn(bytes: usize, stream: cudaStream_t, user_data: *mut c_void) -> *mut c_void>;

/// Gives back `ptr`, which the allocate callback returned for `bytes`, in the order of `stream`.
#[allow(non_camel_case_types)]
pub type rmmDeallocateCallback_t = Option<extern "C" fn(ptr: *mut c_void, bytes: usize, stream: cudaStream_t, user_data: *mut c_void)>;

/// Called once with `user_data` when the resource holding it goes (`rmmCallbackResourceCreateWithRelease`,
/// `rmmLoggingAdaptorCreateWithSink`).
#[allow(non_camel_case_types)]
pub type rmmReleaseCallback_t = Option<extern "C" fn(user_data: *mut c_void)>;

/// Creates a resource of `device` whose memory comes from the caller's functions (RAPIDS'
/// `callback_memory_resource`): `allocate_fn(bytes, stream, user_data)` returns memory of at
/// least `bytes`, aligned to 256 bytes, or NULL when out of memory (RMM_ERROR_OUT_OF_MEMORY,
/// after the device's suballocators have released what they keep free, and a retry);
/// `deallocate_fn(ptr, bytes, stream, user_data)` gives it back. It serves as the upstream of
/// any suballocator and under any adaptor. Neither function may be NULL. They run on the thread
/// that allocates or frees, possibly on several threads at once. They may call CUDA or any
/// other allocator, or take memory from another rmm-rs resource below this one with
/// `rmmResourceAllocate` and give it back with `rmmResourceDeallocate` (same resource and size,
/// also from the deallocate function): memory taken inside a callback is this resource's, not
/// handed to a caller, so `rmmFree` does not know it. They must not allocate from a resource
/// stacked over this one. A callback that unwinds (a C++ exception, a Rust panic) or longjmps out is undefined
/// behaviour. `user_data` may be NULL and must stay valid while the resource lives. The handle
/// goes to `*resource`; ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmCallbackResourceCreate(
    allocate_fn: rmmAllocateCallback_t,
    deallocate_fn: rmmDeallocateCallback_t,
    user_data: *mut c_void,
    device: c_int,
    resource: *mut rmmResource_t,
) -> rmmError_t {
    boundary("rmmCallbackResourceCreate", || {
        create_unaligned_callback_resource(allocate_fn, deallocate_fn, None, user_data, device, resource)
    })
}

/// `rmmCallbackResourceCreate`, and `release_fn(user_data)` is called once when the resource
/// itself goes: after its last handle, the adaptors and suballocators over it, the per-device
/// registry's reference and its last allocation are gone (so `user_data` may be freed there).
/// It is not called when creation fails: `user_data` stays the caller's then. NULL
/// `release_fn` is `rmmCallbackResourceCreate`. At process exit resources are not torn down,
/// and `release_fn` may not run.
/// `allocate_fn` or `deallocate_fn` NULL: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmCallbackResourceCreateWithRelease(
    allocate_fn: rmmAllocateCallback_t,
    deallocate_fn: rmmDeallocateCallback_t,
    release_fn: rmmReleaseCallback_t,
    user_data: *mut c_void,
    device: c_int,
    resource: *mut rmmResource_t,
) -> rmmError_t {
    boundary("rmmCallbackResourceCreateWithRelease", || {
        create_unaligned_callback_resource(allocate_fn, deallocate_fn, release_fn, user_data, device, resource)
    })
}

/// As `rmmAllocateCallback_t`, at a multiple of `alignment` (a power of two, at least 256).
#[allow(non_camel_case_types)]
pub type rmmAlignedAllocateCallback_t =
    Option<extern "C" fn(bytes: usize, alignment: usize, stream: cudaStream_t, user_data: *mut c_void) -> *mut c_void>;

/// As `rmmDeallocateCallback_t`, with the alignment the memory was allocated with.
#[allow(non_camel_case_types)]
pub type rmmAlignedDeallocateCallback_t =
    Option<extern "C" fn(ptr: *mut c_void, bytes: usize, alignment: usize, stream: cudaStream_t, user_data: *mut c_void)>;

/// `rmmCallbackResourceCreateWithRelease` with functions that take the alignment asked of
/// `rmmResourceAllocateAligned` (256 for every other allocation), as RAPIDS' resources do:
/// adaptors over the resource pass a caller's alignment through to them. What they return is
/// handed out as it is (their promise, as in RAPIDS RMM); a suballocator over the resource
/// refuses a chunk that is not 256-byte aligned.
#[no_mangle]
pub extern "C" fn rmmCallbackResourceCreateAligned(
    allocate_fn: rmmAlignedAllocateCallback_t,
    deallocate_fn: rmmAlignedDeallocateCallback_t,
    release_fn: rmmReleaseCallback_t,
    user_data: *mut c_void,
    device: c_int,
    resource: *mut rmmResource_t,
) -> rmmError_t {
    boundary("rmmCallbackResourceCreateAligned", || {
        non_null(resource, "resource")?;
        let allocate = allocate_fn.ok_or_else(|| Error::invalid("allocate_fn is NULL"))?;
        let deallocate = deallocate_fn.ok_or_else(|| Error::invalid("deallocate_fn is NULL"))?;
        let user = CallbackArgument(user_data);
        let functions: (AllocateFn, DeallocateFn) = (
            Box::new(move |bytes, alignment, stream: Stream| {
                let ptr = allocate(bytes, alignment, stream.0 as cudaStream_t, user.get());
                (!ptr.is_null()).then_some(ptr as usize)
            }),
            Box::new(move |ptr, bytes, alignment, stream: Stream| {
                deallocate(ptr as *mut c_void, bytes, alignment, stream.0 as cudaStream_t, user.get())
            }),
        );
        create_callback_resource(true, functions, release_fn, user_data, device, resource)
    })
}

fn create_unaligned_callback_resource(
    allocate_fn: rmmAllocateCallback_t,
    deallocate_fn: rmmDeallocateCallback_t,
    release_fn: rmmReleaseCallback_t,
    user_data: *mut c_void,
    device: c_int,
    resource: *mut rmmResource_t,
) -> crate::error::Result<()> {
    non_null(resource, "resource")?;
    let allocate = allocate_fn.ok_or_else(|| Error::invalid("allocate_fn is NULL"))?;
    let deallocate = deallocate_fn.ok_or_else(|| Error::invalid("deallocate_fn is NULL"))?;
    let user = CallbackArgument(user_data);
    let functions: (AllocateFn, DeallocateFn) = (
        Box::new(move |bytes, _alignment, stream: Stream| {
            let ptr = allocate(bytes, stream.0 as cudaStream_t, user.get());
            (!ptr.is_null()).then_some(ptr as usize)
        }),
        Box::new(move |ptr, bytes, _alignment, stream: Stream| deallocate(ptr as *mut c_void, bytes, stream.0 as cudaStream_t, user.get())),
    );
    create_callback_resource(false, functions, release_fn, user_data, device, resource)
}

fn create_callback_resource(
    takes_alignment: bool,
    (allocate, deallocate): (AllocateFn, DeallocateFn),
    release_fn: rmmReleaseCallback_t,
    user_data: *mut c_void,
    device: c_int,
    resource: *mut rmmResource_t,
) -> crate::error::Result<()> {
    let user_data = CallbackArgument(user_data);
    let release = release_fn.map(|release| -> ReleaseFn { Box::new(move || release(user_data.get())) });
    let made = CallbackResource::new(device, takes_alignment, allocate, deallocate, release)?;
    let made = Arc::new(made);
    match handles::create(made.clone()) {
        Ok(handle) => write_out(resource, "resource", handle),
        Err(error) => {
            // Creation failed: the caller keeps `user_data`, so the release must not run.
            if let Ok(mut made) = Arc::try_unwrap(made) {
                made.forget_release();
            }
            Err(error)
        }
    }
}

/// Creates a stream-ordered resource over a driver memory pool of its own on the current
/// device (`cudaMallocAsync`): the pool starts with `initial_pool_size` bytes and keeps up to
/// `release_threshold` bytes reserved across synchronizations (SIZE_MAX: keep everything).
/// RMM_ERROR_NOT_SUPPORTED where the driver or device has no memory pools. Ownership as
/// `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmAsyncResourceCreate(resource: *mut rmmResource_t, initial_pool_size: usize, release_threshold: usize) -> rmmError_t {
    create("rmmAsyncResourceCreate", resource, |device| {
        let values = [("initial", Value::Size(initial_pool_size)), ("release_threshold", Value::Size(release_threshold))];
        kinds::build("cuda_async", values, &Place::on(device))
    })
}

/// `rmmAsyncResourceCreate` for memory other processes can map: the driver pool's memory can be
/// exported as `handle_types` (an `RMM_HANDLE_TYPE_*` value, or several with `|`; 0 is
/// `rmmAsyncResourceCreate`), for `cudaMemPoolExportToShareableHandle` on the pool of
/// `rmmAsyncResourceGetPool` (RAPIDS' `export_handle_type`). Unknown bits:
/// RMM_ERROR_INVALID_ARGUMENT; a kind the driver or device cannot export (fabric handles
/// without a fabric manager, Windows handles on Linux): RMM_ERROR_NOT_SUPPORTED.
#[no_mangle]
pub extern "C" fn rmmAsyncResourceCreateExportable(
    resource: *mut rmmResource_t,
    initial_pool_size: usize,
    release_threshold: usize,
    handle_types: u32,
) -> rmmError_t {
    create("rmmAsyncResourceCreateExportable", resource, |device| {
        check_handle_types(handle_types)?;
        let values = [
            ("initial", Value::Size(initial_pool_size)),
            ("release_threshold", Value::Size(release_threshold)),
            ("handle_types", Value::HandleTypes(handle_types)),
        ];
        kinds::build("cuda_async", values, &Place::on(device))
    })
}

fn check_handle_types(handle_types: u32) -> Result<()> {
    match handle_types & !handle_type::ALL {
        0 => Ok(()),
        _ => Err(Error::invalid(format!(
            "handle types {handle_types:#x}: only RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (1), _WIN32 (2), _WIN32_KMT (4) and _FABRIC (8) exist"
        ))),
    }
}

/// `rmmAsyncResourceCreateExportable` with `flags`: 0 or `RMM_ASYNC_HW_DECOMPRESS` (the pool's
/// memory may serve hardware decompression, RAPIDS' `enable_hw_decompress`). Unknown flags:
/// RMM_ERROR_INVALID_ARGUMENT; hardware decompression where the driver has none (older than
/// CUDA 12.8, see `rmmDeviceSupports`): RMM_ERROR_NOT_SUPPORTED, nothing made. Ownership as
/// `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmAsyncResourceCreateWithFlags(
    resource: *mut rmmResource_t,
    initial_pool_size: usize,
    release_threshold: usize,
    handle_types: u32,
    flags: u32,
) -> rmmError_t {
    create("rmmAsyncResourceCreateWithFlags", resource, |device| {
        check_handle_types(handle_types)?;
        if flags & !RMM_ASYNC_HW_DECOMPRESS != 0 {
            return Err(Error::invalid(format!("flags {flags:#x}: only RMM_ASYNC_HW_DECOMPRESS (1) exists")));
        }
        let values = [
            ("initial", Value::Size(initial_pool_size)),
            ("release_threshold", Value::Size(release_threshold)),
            ("handle_types", Value::HandleTypes(handle_types)),
            ("hw_decompress", Value::Flag(flags & RMM_ASYNC_HW_DECOMPRESS != 0)),
        ];
        kinds::build("cuda_async", values, &Place::on(device))
    })
}

/// Creates a stream-ordered resource on the current device over `pool`, a driver memory pool
/// (`cudaMemPool_t`) the caller made and keeps: `cudaMemPoolCreate`'s, the device's default
/// pool, another resource's (`rmmAsyncResourceGetPool`). RAPIDS'
/// `cuda_async_view_memory_resource`. The resource never destroys the pool, which must outlive
/// it and its allocations. NULL, an `rmmResource_t` given in its place, or (on simulated
/// devices) a value that names no pool or a destroyed pool: RMM_ERROR_INVALID_ARGUMENT. On a
/// real GPU any other value goes to the driver, which does not check it: a value that is no
/// live pool of this process is undefined behaviour there, as in every `cudaMemPool_t` call. A pool imported from another process (`cudaMemPoolImportFromShareableHandle`),
/// from which the driver allocates nothing (its allocations are mapped with
/// `cudaMemPoolImportPointer`): RMM_ERROR_NOT_SUPPORTED on simulated devices, the driver's
/// refusal at the first allocation on a GPU. Ownership of the handle as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmAsyncViewResourceCreate(resource: *mut rmmResource_t, pool: *mut c_void) -> rmmError_t {
    create("rmmAsyncViewResourceCreate", resource, |device| {
        if handles::get(pool as rmmResource_t).is_ok() {
            return Err(Error::invalid(format!(
                "{pool:p} is an rmmResource_t, not a cudaMemPool_t (rmmAsyncResourceGetPool gives an async resource's pool)"
            )));
        }
        let made: Arc<dyn MemoryResource> = Arc::new(AsyncResource::view(device, MemPool(pool as usize))?);
        Ok(made)
    })
}

/// Creates a stream-ordered resource of managed memory on the current device, over the
/// device's default managed memory pool (`cudaMemGetDefaultMemPool` with
/// `cudaMemAllocationTypeManaged`, CUDA 13; RAPIDS' `cuda_async_managed_memory_resource`): the
/// memory is reachable from the host and every device. All such resources of a device share
/// the driver's pool, which none destroys. RMM_ERROR_NOT_SUPPORTED where the driver is older
/// than CUDA 13 or the device lacks concurrent managed access (`rmmDeviceSupports` with
/// `RMM_CAPABILITY_MANAGED_MEMORY_POOLS`). Ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmAsyncManagedResourceCreate(resource: *mut rmmResource_t) -> rmmError_t {
    create("rmmAsyncManagedResourceCreate", resource, |device| kinds::build("cuda_async_managed", [], &Place::on(device)))
}

/// Creates a stream-ordered resource of page-locked host memory: a driver memory pool of its
/// own located on the host (`cudaMemLocationTypeHost`), reached through the current device,
/// usable from the host and every device. The pool starts with `initial_pool_size` bytes and
/// keeps up to `release_threshold` bytes reserved across synchronizations (SIZE_MAX: keep
/// everything); cross-stream reuse is ordered by the driver, as for `rmmAsyncResourceCreate`.
/// Its memory does not count against a device's memory. RMM_ERROR_NOT_SUPPORTED where the
/// driver or device has no host memory pools (`rmmDeviceSupports` with
/// `RMM_CAPABILITY_HOST_MEMORY_POOLS`). Ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmAsyncPinnedHostResourceCreate(
    resource: *mut rmmResource_t,
    initial_pool_size: usize,
    release_threshold: usize,
) -> rmmError_t {
    create("rmmAsyncPinnedHostResourceCreate", resource, |device| {
        let values = [("initial", Value::Size(initial_pool_size)), ("release_threshold", Value::Size(release_threshold))];
        kinds::build("cuda_async_pinned_host", values, &Place::on(device))
    })
}

/// Creates a resource of system memory for the current device (RAPIDS'
/// `system_memory_resource`): pageable host memory from the system allocator, 256-byte
/// aligned, which the device reaches directly on systems with HMM or ATS. A free waits for the
/// work on its stream first (the system frees at once). RMM_ERROR_NOT_SUPPORTED where the device
/// cannot reach pageable memory (`rmmDeviceSupports` with
/// `RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS`). Ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmSystemResourceCreate(resource: *mut rmmResource_t) -> rmmError_t {
    create("rmmSystemResourceCreate", resource, |device| kinds::build("system", [], &Place::on(device)))
}

/// `rmmSystemResourceCreate` that keeps `headroom` bytes of the current device free (RAPIDS'
/// `sam_headroom_memory_resource`): of each allocation, the driver is told to prefer the device
/// for as much as leaves `headroom` bytes of it free (whole 256-byte units), and the host for
/// the rest (`cudaMemAdvise` with `cudaMemAdviseSetPreferredLocation`). A headroom above the
/// device's memory: RMM_ERROR_INVALID_ARGUMENT; a device without pageable memory access:
/// RMM_ERROR_NOT_SUPPORTED. Ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmSamHeadroomResourceCreate(resource: *mut rmmResource_t, headroom: usize) -> rmmError_t {
    create("rmmSamHeadroomResourceCreate", resource, |device| {
        kinds::build("sam_headroom", [("headroom", Value::Size(headroom))], &Place::on(device))
    })
}

/// Writes 1 to `*supported` when `device` (and the driver) offers `capability` (an
/// `RMM_CAPABILITY_*` value), 0 when not: what the resources that need it answer
/// RMM_ERROR_NOT_SUPPORTED to. An unknown capability, a device that does not exist or a NULL
/// `supported`: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmDeviceSupports(supported: *mut c_int, capability: u32, device: c_int) -> rmmError_t {
    boundary("rmmDeviceSupports", || {
        non_null(supported, "supported")?;
        let capability = match capability {
            RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS => Capability::PageableMemoryAccess,
            RMM_CAPABILITY_MANAGED_MEMORY_POOLS => Capability::ManagedMemoryPools,
            RMM_CAPABILITY_HOST_MEMORY_POOLS => Capability::HostMemoryPools,
            RMM_CAPABILITY_HW_DECOMPRESS => Capability::HwDecompress,
            other => return Err(Error::invalid(format!("capability {other}: RMM_CAPABILITY_* are 1 to 4"))),
        };
        let answer = backend()?.supports(device, capability)?;
        write_out(supported, "supported", c_int::from(answer))
    })
}

/// Writes the driver memory pool of a cuda_async resource (a `cudaMemPool_t`) to `*pool`, for
/// `cudaMemPoolSetAttribute` and the like (RAPIDS' `pool_handle()`); also of the resources over
/// a driver pool: cuda_async_view (the caller's pool), cuda_async_managed (the device's default
/// managed pool) and cuda_async_pinned_host. The resource keeps owning its own pool (the
/// others stay their owners'): do not destroy it. Other resources (adaptors over one included):
/// RMM_ERROR_NOT_SUPPORTED. On simulated devices the value is opaque.
#[no_mangle]
pub extern "C" fn rmmAsyncResourceGetPool(resource: rmmResource_t, pool: *mut *mut c_void) -> rmmError_t {
    boundary("rmmAsyncResourceGetPool", || {
        non_null(pool, "pool")?;
        let resource = handles::get(resource)?;
        let any: &dyn std::any::Any = &*resource;
        let asynchronous = any
            .downcast_ref::<AsyncResource>()
            .ok_or_else(|| Error::NotSupported(format!("a {} resource has no driver memory pool", resource.name())))?;
        write_out(pool, "pool", asynchronous.pool_handle() as *mut c_void)
    })
}

/// Creates a stream-ordered resource on the current device over the CUDA virtual-memory API
/// (as PyTorch's expandable segments): it reserves address space for `maximum_size` bytes (0:
/// the device's memory) and maps physical memory into it as it needs it, in pages of 1/4096
/// of that maximum, from the device's granularity (2 MiB) up to 20 MiB (the page size of
/// `rmmExpandableResourceCreateWithOptions`); blocks below 256 KiB come from pages of the
/// granularity of their own, apart from larger blocks, within the same maximum. A chunk grows
/// in place at its end, by just what a request needs beyond the chunk's free end. Whole free pages anywhere in a chunk, also between
/// blocks in use, are unmapped once the streams that freed them have passed that point
/// (never waiting for them on the allocation path) and their physical memory is kept: a
/// request that no mapped range fits is served by mapping those pages where it needs them
/// (stitching) before any new physical memory is created. Kept and free pages go back to the
/// device on `rmmResourceRelease`, or when the device runs out of memory. Cross-stream reuse
/// as `rmmPoolResourceCreate`. RMM_ERROR_NOT_SUPPORTED where the driver has no virtual-memory
/// API. Ownership as `rmmCudaResourceCreate`.
#[no_mangle]
pub extern "C" fn rmmExpandableResourceCreate(resource: *mut rmmResource_t, maximum_size: usize) -> rmmError_t {
    create("rmmExpandableResourceCreate", resource, |device| {
        kinds::build("expandable", [("maximum", Value::Size(maximum_size))], &Place::on(device))
    })
}

/// `rmmExpandableResourceCreate` with every option (see `rmmExpandableOptions_t`): an initial
/// size, a release threshold, the page size and peer devices. NULL `options` or a page size
/// that is not a multiple of the device's granularity: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmExpandableResourceCreateWithOptions(
    resource: *mut rmmResource_t,
    options: *const rmmExpandableOptions_t,
) -> rmmError_t {
    create("rmmExpandableResourceCreateWithOptions", resource, |device| {
        non_null(options.cast_mut(), "options")?;
        kinds::build("expandable", expandable_values(options)?, &Place::on(device))
    })
}

/// Creates the resource stack the spec `spec` names on `device` and writes the handle of its
/// outermost layer to `*resource`, e.g. `statistics/pool:initial=1GiB/cuda`: layers from the
/// outermost to the device, each `name` or `name:key=value,...`; every resource and adaptor
/// of this header that needs no function pointer, with the defaults of its create function.
/// The grammar: docs/src/configuration.md (`report` applies to default stacks only). The
/// handle is like one from the create functions: the caller owns it and releases it with
/// `rmmResourceDestroy`, and the adaptor functions work on it when its outermost layer is
/// that adaptor. `spec` and `resource` must not be NULL. A NULL argument, a spec that does
/// not parse (the message quotes the offending text and gives its column) or a device that
/// does not exist is RMM_ERROR_INVALID_ARGUMENT; a layer that cannot be built answers as its
/// create function would.
#[no_mangle]
pub extern "C" fn rmmResourceCreateFromSpec(spec: *const c_char, device: c_int, resource: *mut rmmResource_t) -> rmmError_t {
    boundary("rmmResourceCreateFromSpec", || {
        non_null(resource, "resource")?;
        let text = optional_str(spec, "spec")?.ok_or_else(|| Error::invalid("spec is NULL"))?;
        let spec = Spec::parse(text)?;
        let options = spec.options();
        let keywords = [(options.report, "report"), (options.async_free, "async_free"), (options.registered_streams, "registered_streams")];
        if let Some(keyword) = keywords.iter().find(|(set, _)| *set) {
            return Err(Error::invalid(format!(
                "{text:?}: {} applies to the devices' default stacks (rmmConfigure, RMM_ALLOC_CONF), not to one resource",
                keyword.1
            )));
        }
        write_out(resource, "resource", handles::create(spec.build_on(device)?)?)
    })
}

/// Creates a resource of page-locked host memory (`cudaMallocHost`), usable from every device.
/// Ownership as `rmmCudaResourceCreate`.
/// RMM_ERROR_CUDA_ERROR without a CUDA driver (and without `RMM_SIM_DEVICES`) or when the
/// driver fails.
#[no_mangle]
pub extern "C" fn rmmPinnedHostResourceCreate(resource: *mut rmmResource_t) -> rmmError_t {
    create("rmmPinnedHostResourceCreate", resource, |device| kinds::build("pinned_host", [], &Place::on(device)))
}

/// Releases the caller's handle. The resource itself lives on while anything still uses it:
/// other handles, adaptors, the per-device registry, or allocations not yet freed (they stay
/// valid and `rmmFree` returns them). NULL is a no-op; a destroyed handle is
/// RMM_ERROR_INVALID_HANDLE.
#[no_mangle]
pub extern "C" fn rmmResourceDestroy(resource: rmmResource_t) -> rmmError_t {
    boundary("rmmResourceDestroy", || handles::destroy(resource))
}

/// Allocates `bytes` for use on `stream` from `resource` and writes the address to `*ptr`
/// (NULL for 0 bytes). The caller owns the memory and returns it with `rmmResourceDeallocate`
/// on the same resource, or with `rmmFree`.
/// `stream`: a resource that frees at once (cuda, managed, pinned_host, system, callback, and
/// adaptors over them) does not look at it, so any handle goes, even one that names no live
/// stream; a stream-ordered resource (pool, arena, binning, fixed_size, expandable,
/// cuda_async) orders the memory on it, so it must be live, and a handle rmm-rs does not know
/// is asked about (see `rmmStreamRegister` for what each stream costs, and
/// `registered_streams`, which refuses such handles without asking the driver).
/// RMM_ERROR_OUT_OF_MEMORY when the resource cannot give `bytes` (the message says what it
/// holds and why); RMM_ERROR_INVALID_ARGUMENT for a stream that a stream-ordered resource
/// cannot take (one that names no live stream on simulated devices; one rmm-rs does not know
/// with `registered_streams`) or, for a pool or expandable resource, a stream of another
/// device.
#[no_mangle]
pub extern "C" fn rmmResourceAllocate(resource: rmmResource_t, ptr: *mut *mut c_void, bytes: usize, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmResourceAllocate", || {
        non_null(ptr, "ptr")?;
        let address = handles::with(resource, |stack| records::allocate(stack.stack(), bytes, stream_of(stream), Holder::Caller))?;
        write_out(ptr, "ptr", address as *mut c_void)
    })
}

/// Returns `ptr`, allocated from `resource` with size `bytes`, in the order of `stream`. NULL
/// is a no-op. A pointer from another resource, of another size, already freed or never
/// allocated is RMM_ERROR_INVALID_ARGUMENT, and nothing is freed. `stream`: as `rmmFree`'s.
#[no_mangle]
pub extern "C" fn rmmResourceDeallocate(resource: rmmResource_t, ptr: *mut c_void, bytes: usize, stream: cudaStream_t) -> rmmError_t {
    boundary("rmmResourceDeallocate", || {
        handles::with(resource, |stack| {
            let expected = Expected { stack: Some(stack), size: Some(bytes), holder: Holder::Caller };
            records::free(ptr as usize, stream_of(stream), expected)
        })
    })
}

/// `rmmResourceAllocate` at a multiple of `alignment`, a power of two (RAPIDS'
/// `allocate(stream, bytes, alignment)`). Up to 256 every resource gives it. Larger: pools,
/// expandable resources and aligned adaptors place such blocks, adaptors pass the alignment to
/// their upstream, a callback resource made with `rmmCallbackResourceCreateAligned` passes it
/// to its function, and any other resource refuses it with RMM_ERROR_NOT_SUPPORTED. An
/// alignment that is not a power of two: RMM_ERROR_INVALID_ARGUMENT. Free the memory with
/// `rmmResourceDeallocateAligned` and the same alignment (or `rmmFree`).
#[no_mangle]
pub extern "C" fn rmmResourceAllocateAligned(
    resource: rmmResource_t,
    ptr: *mut *mut c_void,
    bytes: usize,
    alignment: usize,
    stream: cudaStream_t,
) -> rmmError_t {
    boundary("rmmResourceAllocateAligned", || {
        non_null(ptr, "ptr")?;
        let alignment = valid_alignment(alignment)?;
        let address =
            handles::with(resource, |stack| records::allocate_aligned(stack.stack(), bytes, alignment, stream_of(stream), Holder::Caller))?;
        write_out(ptr, "ptr", address as *mut c_void)
    })
}

/// `rmmResourceDeallocate` of memory from `rmmResourceAllocateAligned`, with its alignment,
/// which goes on to the resources as the allocation's did.
#[no_mangle]
pub extern "C" fn rmmResourceDeallocateAligned(
    resource: rmmResource_t,
    ptr: *mut c_void,
    bytes: usize,
    alignment: usize,
    stream: cudaStream_t,
) -> rmmError_t {
    boundary("rmmResourceDeallocateAligned", || {
        let alignment = valid_alignment(alignment)?;
        handles::with(resource, |stack| {
            let expected = Expected { stack: Some(stack), size: Some(bytes), holder: Holder::Caller };
            records::free_aligned(ptr as usize, alignment, stream_of(stream), expected)
        })
    })
}

fn valid_alignment(alignment: usize) -> crate::error::Result<usize> {
    if !alignment.is_power_of_two() {
        return Err(Error::invalid(format!("alignment {alignment} is not a power of two")));
    }
    Ok(alignment)
}

/// Writes the device whose memory `resource` hands out to `*device`.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `resource`,
/// RMM_ERROR_INVALID_ARGUMENT when `device` is NULL).
#[no_mangle]
pub extern "C" fn rmmResourceGetDevice(resource: rmmResource_t, device: *mut c_int) -> rmmError_t {
    boundary("rmmResourceGetDevice", || {
        non_null(device, "device")?;
        write_out(device, "device", handles::get(resource)?.device())
    })
}

/// Writes the kind of `resource` ("cuda", "managed", "cuda_async", "pinned_host", "pool",
/// "arena", "binning", "fixed_size", or an adaptor's: "statistics", "logging", "limiting",
/// "tracking", "failure_callback", "aligned", "prefetch") to `*name`: a static string, never
/// to be freed.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `resource`,
/// RMM_ERROR_INVALID_ARGUMENT when `name` is NULL).
#[no_mangle]
pub extern "C" fn rmmResourceGetName(resource: rmmResource_t, name: *mut *const c_char) -> rmmError_t {
    boundary("rmmResourceGetName", || {
        non_null(name, "name")?;
        write_out(name, "name", c_name(handles::get(resource)?.name()).as_ptr())
    })
}
