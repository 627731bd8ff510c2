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
