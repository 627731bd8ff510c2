//! Entry points that frameworks load from `librmm.so` by name, with their own signatures:
//! PyTorch's `CUDAPluggableAllocator` and CuPy's `CFunctionAllocator`. They route to a
//! device's current resource (see `rmmSetPerDeviceResource`). Their signatures carry no error
//! code: a failure returns NULL (or nothing) and leaves the message in
//! `rmmGetLastErrorMessage`.

use super::boundary_value;
use super::handles::{self, rmmResource_t};
use super::types::{cudaStream_t, stream_of};
use crate::error::Error;
use crate::ownership::legacy;
use crate::ownership::{per_device, records, Holder};
use crate::platform::Stream;
use std::ffi::c_void;

/// PyTorch's allocate function: `size` bytes on `device` for `stream`, from that device's
/// current resource. NULL on failure: PyTorch 2.11's pluggable allocator does not check
/// for it, so a refusal surfaces where the pointer is first used (an illegal memory access).
/// `torch.cuda.memory.CUDAPluggableAllocator("librmm.so", "rmmTorchAllocate", "rmmTorchDeallocate")`.
#[no_mangle]
pub extern "C" fn rmmTorchAllocate(size: isize, device: i32, stream: cudaStream_t) -> *mut c_void {
    boundary_value("rmmTorchAllocate", std::ptr::null_mut(), || {
        let size = usize::try_from(size).map_err(|_| Error::invalid(format!("size {size} is negative")))?;
        let ptr = per_device::with_stack(device, |stack| records::allocate(stack, size, stream_of(stream), Holder::Caller))?;
        Ok(ptr as *mut c_void)
    })
}

/// PyTorch's free function: returns `ptr` (from `rmmTorchAllocate`) in the order of `stream`.
#[no_mangle]
pub extern "C" fn rmmTorchDeallocate(ptr: *mut c_void, size: isize, device: i32, stream: cudaStream_t) {
    let _ = (size, device);
    boundary_value("rmmTorchDeallocate", (), || legacy::free(ptr as usize, stream_of(stream)));
}

/// CuPy's malloc function: `size` bytes on `device`, from the resource `param` names (an
/// `rmmResource_t`) or, when `param` is NULL, the device's current resource. CuPy passes no
/// stream: the memory is ordered on the legacy default stream, which does not order
/// non-blocking streams (use the Python module's stream-aware allocator with those). NULL on
/// failure, which CuPy does not check: keep memory from running out, or use the Python
/// allocator, which raises out of memory.
/// `cupy.cuda.memory.CFunctionAllocator(param, malloc_address, free_address, owner)`.
#[no_mangle]
pub extern "C" fn rmmCupyAllocate(param: *mut c_void, size: usize, device: i32) -> *mut c_void {
    boundary_value("rmmCupyAllocate", std::ptr::null_mut(), || {
        let allocate = |stack: &_| records::allocate(stack, size, Stream::DEFAULT, Holder::Caller);
        let ptr = match param.is_null() {
            true => per_device::with_stack(device, allocate)?,
            false => handles::with(param as rmmResource_t, |stack| allocate(stack.stack()))?,
        };
        Ok(ptr as *mut c_void)
    })
}

/// CuPy's free function: returns `ptr` (from `rmmCupyAllocate`) on the legacy default stream.
#[no_mangle]
pub extern "C" fn rmmCupyDeallocate(param: *mut c_void, ptr: *mut c_void, device: i32) {
    let _ = (param, device);
    boundary_value("rmmCupyDeallocate", (), || legacy::free(ptr as usize, Stream::DEFAULT));
}
