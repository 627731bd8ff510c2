//! Memory shared between processes and devices: IPC handles of allocations, the expandable
//! resource whose memory can be shared, and peer access to an expandable resource's mappings
//! (docs/src/ipc.md).

use super::handles::{self, rmmResource_t};
use super::types::{expandable_values, rmmExpandableOptions_t};
use super::{boundary, non_null, write_out};
use crate::error::{rmmError_t, Error};
use crate::ownership::records;
use crate::platform::{backend, ipc};
use crate::resources::kinds::{self, Kind};
use crate::resources::{ExpandableResource, MemoryResource};
use std::any::Any;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

/// Bytes of an `rmmIpcMemHandle_t`.
pub const RMM_IPC_HANDLE_SIZE: usize = 128;
const _: () = assert!(RMM_IPC_HANDLE_SIZE == ipc::HANDLE_SIZE);

/// A handle that names an allocation for another process (`rmmIpcGetMemHandle`), as
/// `cudaIpcMemHandle_t` does: plain bytes, copied by value and sent to the other process any
/// way the program likes (a pipe, a socket, a file, a queue). Its contents are private.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rmmIpcMemHandle_t {
    /// The handle's bytes; what they mean is private to rmm-rs.
    pub reserved: [c_char; RMM_IPC_HANDLE_SIZE],
}

/// The pages of virtual memory that hold an allocation (`rmmIpcGetMemPages`): what another
/// process needs, with each page's file descriptor, to map them as they are mapped here.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types)]
pub struct rmmIpcMemPages_t {
    /// The first page's address, at or below the allocation's: the allocation starts
    /// `ptr - first_page` bytes into the pages.
    pub first_page: *mut c_void,
    /// Bytes of each page (a multiple of the device's mapping granularity).
    pub page_size: usize,
    /// How many pages hold the allocation: from the one that holds its first byte to the one
    /// that holds its last.
    pub page_count: usize,
}

/// Runs `f` on the first expandable resource in `resource`'s stack (it or an upstream of it).
fn with_expandable<T>(resource: &dyn MemoryResource, f: &mut dyn FnMut(&ExpandableResource) -> T) -> Option<T> {
    if let Some(expandable) = (resource as &dyn Any).downcast_ref::<ExpandableResource>() {
        return Some(f(expandable));
    }
    let mut answer = None;
    resource.for_each_upstream(&mut |upstream| {
        if answer.is_none() {
            answer = with_expandable(upstream, f);
        }
    });
    answer
}

/// The name of the resource at the bottom of `resource`'s stack, where its memory comes from.
fn innermost(resource: &dyn MemoryResource) -> &'static str {
    let mut name = resource.name();
    resource.for_each_upstream(&mut |upstream| name = innermost(upstream));
    name
}

/// `rmmExpandableResourceCreateWithOptions` whose pages are also exportable as fabric handles
/// where the device offers them. Every expandable resource's pages are exportable as POSIX file
/// descriptors where the device offers that, so its memory can be opened in other processes
/// (`rmmIpcGetMemHandle`); this one refuses to be made where it cannot. Nothing becomes
/// shareable that is not asked for: a handle exists only for an allocation
/// `rmmIpcGetMemHandle` is called on. It costs a file descriptor per page of each allocation
/// handed out as a handle, while the handle lives. `options` may be NULL (the defaults of
/// `rmmExpandableResourceCreate(&r, 0)`). RMM_ERROR_NOT_SUPPORTED where the device or driver
/// cannot export virtual memory; other failures and ownership as
/// `rmmExpandableResourceCreateWithOptions`. The resource serves any number of threads at
/// once, as the expandable resource does.
#[no_mangle]
pub extern "C" fn rmmIpcExpandableResourceCreate(resource: *mut rmmResource_t, options: *const rmmExpandableOptions_t) -> rmmError_t {
    boundary("rmmIpcExpandableResourceCreate", || {
        non_null(resource, "resource")?;
        // The expandable kind's values, so that NULL options mean what they mean elsewhere.
        let kind = Kind::named("expandable").ok_or_else(|| Error::Internal("no kind expandable".into()))?;
        let options = kinds::expandable_options(&kind.params(expandable_values(options)?)?)?;
        let device = backend()?.current_device()?;
        let made: Arc<dyn MemoryResource> = Arc::new(ExpandableResource::shareable(device, &options)?);
        write_out(resource, "resource", handles::create(made)?)
    })
}

/// Gives device `peer` read and write access to everything the expandable resource in
/// `resource`'s stack (it, or the resource under its adaptors) has mapped and maps from now
/// on (`cuMemSetAccess`). An expandable resource gives access at creation to every device
/// that can reach its own (`cuDeviceCanAccessPeer`), so this is needed only for a peer it
/// could not reach then; calling it again for a peer with access does nothing.
/// `cudaDeviceEnablePeerAccess` does not cover memory of the virtual-memory API: this is its
/// counterpart. A peer that cannot reach the resource's device or does not exist, or a NULL
/// or destroyed `resource`: RMM_ERROR_INVALID_ARGUMENT; a stack without an expandable
/// resource: RMM_ERROR_NOT_SUPPORTED (`cudaMalloc` memory is reached after
/// `cudaDeviceEnablePeerAccess`, which the program calls). Other threads may allocate from
/// the resource meanwhile: what they map while the grant runs gets the peer's access too.
#[no_mangle]
pub extern "C" fn rmmExpandableResourceGrantPeerAccess(resource: rmmResource_t, peer: c_int) -> rmmError_t {
    boundary("rmmExpandableResourceGrantPeerAccess", || {
        backend()?.check_device(peer)?;
        handles::with(resource, |stack| {
            let top = stack.resource();
            with_expandable(top, &mut |expandable| expandable.grant_peer_access(peer))
                .unwrap_or_else(|| Err(Error::NotSupported(format!("a {} resource has no expandable resource under it", top.name()))))
        })
    })
}

/// Writes to `*handle` a handle that another process opens `ptr` with
/// (`rmmIpcOpenMemHandle`). `ptr` must be an allocation rmm handed out and has not taken back
/// (`rmmAlloc`, `rmmResourceAllocate`, a device buffer's data), on any device. For memory of
/// a shareable expandable resource (`rmmIpcExpandableResourceCreate`) the handle names the
/// block's pages; while another process has it open, freeing `ptr` here keeps the block out
/// of the pool until that process closes it (or exits); once freed, the handle can no longer
/// be opened. Calling this again before the free answers the same handle. For memory from
/// `cudaMalloc` (a pool's chunks, the cuda resource) it is the driver's IPC handle of the
/// chunk and `ptr`'s offset in it: as with RMM and `cudaIpcGetMemHandle`, the block goes back
/// to the pool when freed here, whoever has it open, so keep it until the other processes
/// have closed it. Nothing is owned: the handle is bytes. `handle` and `ptr` must not be NULL
/// (RMM_ERROR_INVALID_ARGUMENT), nor a pointer rmm did not hand out or already took back
/// (RMM_ERROR_INVALID_ARGUMENT); memory that cannot
/// be shared (managed, pinned host, an expandable resource on a device that cannot export
/// virtual memory, a cuda_async pool): RMM_ERROR_NOT_SUPPORTED or the driver's refusal (RMM_ERROR_CUDA_ERROR). Any
/// thread may call it, also while other threads allocate and free.
#[no_mangle]
pub extern "C" fn rmmIpcGetMemHandle(handle: *mut rmmIpcMemHandle_t, ptr: *const c_void) -> rmmError_t {
    boundary("rmmIpcGetMemHandle", || {
        non_null(handle, "handle")?;
        non_null(ptr.cast_mut(), "ptr")?;
        let ptr = ptr as usize;
        let found = records::find(ptr).ok_or_else(|| {
            Error::invalid(format!("{ptr:#x} is not an allocation rmm handed out (a foreign pointer, or one already freed)"))
        })?;
        let top = found.stack.resource();
        let bytes = match with_expandable(top, &mut |expandable| expandable.export(ptr, found.size).map(|ticket| ticket.handle())) {
            Some(exported) => exported?,
            None => {
                let device = found.stack.device();
                let source = innermost(top);
                if matches!(source, "managed" | "pinned_host" | "cuda_async") {
                    return Err(Error::NotSupported(format!(
                        "memory of a {source} resource cannot be shared with another process (device memory of a pool, the cuda \
                         resource or a shareable expandable resource can)"
                    )));
                }
                let (base, _) = backend()?.address_range(device, ptr)?;
                ipc::driver_handle(device, base, ptr, found.size).map_err(|e| match e.into_kind() {
                    crate::error::ErrorKind::Cuda { call, code, message } => {
                        Error::cuda(call, code, format!("{message} (memory of a {} resource)", top.name()))
                    }
                    other => other.into(),
                })?
            }
        };
        write_out(handle, "handle", rmmIpcMemHandle_t { reserved: bytes.map(|byte| byte as c_char) })
    })
}

/// Opens in this process the allocation another process's `rmmIpcGetMemHandle` named, for
/// the current device, and writes its address here to `*ptr`, which the caller uses as
/// device memory of the exporting process's device (also from peers that reach it) until
/// `rmmIpcCloseMemHandle(*ptr)`. The memory stays the exporter's: rmm never frees it here and
/// `rmmFree` refuses it. An allocation of expandable memory can be opened by a process that
/// may take file descriptors from the exporter (`pidfd_getfd`: Linux 5.6, the same user,
/// and under Yama's ptrace scope 1 a descendant of the exporter, or any process once the
/// exporter called `rmmIpcAllowOpeners`); it can also be opened in the process that exported
/// it. `ptr` and `handle` must not be NULL (RMM_ERROR_INVALID_ARGUMENT); bytes that are no
/// handle, an allocation freed by the exporter or of an exporter that has exited, memory on a
/// device this process does not see or that the current device cannot reach:
/// RMM_ERROR_INVALID_ARGUMENT with the reason. Any number of threads may open
/// and close handles at once.
#[no_mangle]
pub extern "C" fn rmmIpcOpenMemHandle(ptr: *mut *mut c_void, handle: *const rmmIpcMemHandle_t) -> rmmError_t {
    boundary("rmmIpcOpenMemHandle", || {
        non_null(ptr, "ptr")?;
        non_null(handle.cast_mut(), "handle")?;
        // SAFETY: non-NULL, and the caller promises a readable rmmIpcMemHandle_t.
        let bytes = unsafe { (*handle).reserved }.map(|byte| byte as u8);
        let device = backend()?.current_device()?;
        let opened = ipc::open(&bytes, device)?;
        write_out(ptr, "ptr", opened as *mut c_void)
    })
}

/// Closes what `rmmIpcOpenMemHandle` opened at `ptr`: it is unmapped here once the work that
/// used it is done (synchronize the streams that used it first, as for
/// `cudaIpcCloseMemHandle`), and the exporter may reuse the block once no process has it
/// open. NULL or an address not opened (or closed already): RMM_ERROR_INVALID_ARGUMENT.
/// Any number of threads may open and close handles at once; each address is closed once.
#[no_mangle]
pub extern "C" fn rmmIpcCloseMemHandle(ptr: *mut c_void) -> rmmError_t {
    boundary("rmmIpcCloseMemHandle", || {
        non_null(ptr, "ptr")?;
        ipc::close(ptr as usize)
    })
}

/// Lets every process of this user open this process's handles of expandable memory, where
/// the kernel's Yama ptrace scope is 1 (Ubuntu's default), which otherwise lets only the
/// exporter's ancestors take its file descriptors: `prctl(PR_SET_PTRACER,
/// PR_SET_PTRACER_ANY)`. It widens who may ptrace this process to every process of its user,
/// which is why rmm does not do it unasked. Without Yama it does nothing. A refusal by the
/// kernel: RMM_ERROR_UNKNOWN with its reason. It applies to the whole process, whichever
/// thread calls it.
#[no_mangle]
pub extern "C" fn rmmIpcAllowOpeners() -> rmmError_t {
    boundary("rmmIpcAllowOpeners", ipc::allow_openers)
}

/// Writes to `*pages` where the pages of virtual memory that hold `ptr` start, their size and
/// how many there are, and to `fds[0..page_count]` each page's POSIX file descriptor in this
/// process, in address order: what another process needs to map the same memory
/// (`pidfd_getfd` on each, then `rmmIpcOpenMemPages`), as PyTorch's expandable segments share
/// theirs (docs/src/ipc.md). `ptr` must be an allocation rmm handed out and has not taken
/// back, of an expandable resource (under any adaptors) whose pages are exportable (every
/// expandable resource's are where the device offers POSIX file descriptors). The
/// descriptors stay rmm's: do not close them. Each stays open, with the same number at every
/// call, while its page is mapped in this process, and is closed when the page is unmapped
/// (once no block on it is allocated) or released, so no descriptor is made per call.
/// Nothing else keeps the memory: unlike `rmmIpcGetMemHandle`, a block freed here goes back to
/// the pool whoever has it open, so keep it allocated while other processes may open or use
/// it. `fds` may be NULL when `capacity` is 0: then only `*pages` is written (to learn the
/// count); otherwise `capacity` must be at least the count. `pages` or `ptr` NULL, `fds` NULL
/// with a `capacity`, a `capacity` below the count, a pointer rmm did not hand out or took
/// back: RMM_ERROR_INVALID_ARGUMENT. Memory that is not virtual memory of an expandable
/// resource (a pool's or the cuda resource's `cudaMalloc` memory, which
/// `cudaIpcGetMemHandle` shares, managed, pinned host) or whose pages are private:
/// RMM_ERROR_NOT_SUPPORTED. Nothing is written on failure. Any thread may call it, also
/// while other threads allocate and free.
#[no_mangle]
pub extern "C" fn rmmIpcGetMemPages(pages: *mut rmmIpcMemPages_t, fds: *mut c_int, capacity: usize, ptr: *const c_void) -> rmmError_t {
    boundary("rmmIpcGetMemPages", || {
        non_null(pages, "pages")?;
        non_null(ptr.cast_mut(), "ptr")?;
        if fds.is_null() && capacity > 0 {
            return Err(Error::invalid(format!("fds is NULL with a capacity of {capacity}")));
        }
        let ptr = ptr as usize;
        let found = records::find(ptr).ok_or_else(|| {
            Error::invalid(format!("{ptr:#x} is not an allocation rmm handed out (a foreign pointer, or one already freed)"))
        })?;
        let top = found.stack.resource();
        let shared = with_expandable(top, &mut |expandable| expandable.pages(ptr, found.size)).unwrap_or_else(|| {
            Err(Error::NotSupported(format!(
                "memory of a {} resource is not virtual memory of an expandable resource (cudaMalloc memory of a pool or the \
                 cuda resource is shared with rmmIpcGetMemHandle or cudaIpcGetMemHandle)",
                innermost(top)
            )))
        })?;
        let count = shared.fds.len();
        if !fds.is_null() {
            if capacity < count {
                return Err(Error::invalid(format!("{ptr:#x} is held by {count} pages: fds has room for {capacity} descriptors")));
            }
            // SAFETY: non-NULL, and the caller promises room for `capacity` ints, which is at
            // least `count`.
            unsafe { std::ptr::copy_nonoverlapping(shared.fds.as_ptr(), fds, count) };
        }
        write_out(pages, "pages", rmmIpcMemPages_t { first_page: shared.first as *mut c_void, page_size: shared.page, page_count: count })
    })
}

/// Maps in this process, for the current device, the `count` pages of virtual memory that
/// process `pid` holds as the file descriptors `fds[0..count]` (numbers in that process, as
/// `rmmIpcGetMemPages` gives them, or as PyTorch's expandable segments share them), each
/// `page_size` bytes, one after the other, and writes the first page's address here to
/// `*ptr`; the memory is usable from the current device (it must be the memory's device or
/// reach it) until `rmmIpcCloseMemHandle(*ptr)`. Each descriptor is taken with `pidfd_getfd`
/// (Linux 5.6), which the kernel allows to a process that may ptrace `pid`: the same user,
/// and under Yama's ptrace scope 1 a descendant of it or any process once it called
/// `rmmIpcAllowOpeners` (PyTorch's processes do not: run the opener as their child, or set
/// the scope to 0); the kernel's refusal is RMM_ERROR_INVALID_ARGUMENT with that reason. The
/// mapping holds its own reference to the memory, which stays valid when `pid` unmaps it or
/// exits; what the memory holds then is the exporter's business, as with CUDA IPC. `ptr` or
/// `fds` NULL, `count` 0, a page size that is not a multiple of the device's granularity, a
/// process that has exited or a descriptor it does not have (closed: its block was freed):
/// RMM_ERROR_INVALID_ARGUMENT; the driver's refusal: RMM_ERROR_CUDA_ERROR. Nothing is
/// written on failure. Any number of threads may open and close at once.
#[no_mangle]
pub extern "C" fn rmmIpcOpenMemPages(ptr: *mut *mut c_void, pid: c_int, page_size: usize, fds: *const c_int, count: usize) -> rmmError_t {
    boundary("rmmIpcOpenMemPages", || {
        non_null(ptr, "ptr")?;
        non_null(fds.cast_mut(), "fds")?;
        if count == 0 {
            return Err(Error::invalid("count is 0: no pages to open"));
        }
        let pid = u32::try_from(pid).ok().filter(|&pid| pid > 0).ok_or_else(|| Error::invalid(format!("{pid} is not a process id")))?;
        // SAFETY: non-NULL, and the caller promises `count` readable ints.
        let fds = unsafe { std::slice::from_raw_parts(fds, count) };
        let device = backend()?.current_device()?;
        let opened = ipc::open_descriptors(pid, page_size, fds, device)?;
        write_out(ptr, "ptr", opened as *mut c_void)
    })
}
