//! Giving a device's free memory back on demand (`rmmDeviceRelease`, PyTorch's
//! `torch.cuda.empty_cache()` through the backend, `rmm_rs.release_device_memory`): the frees
//! `cudaFree` deferred (`cuda_free`) whose work is done go back to their stacks first, then every
//! resource of the device gives back everything it keeps free (`resources::caches`): pools'
//! wholly free chunks in every stream and lane, the free pages of expandable memory, chunks of
//! streams that are gone.

use super::cuda_free;
use crate::error::Result;
use crate::resources::caches;

/// Everything rmm-rs holds on `device` without using it, given back; the bytes released.
pub fn release_device(device: i32) -> Result<usize> {
    cuda_free::settle(false)?;
    caches::release_device(device)
}
