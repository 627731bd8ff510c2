//! System-allocated memory (RMM's `system_memory_resource` and `sam_headroom_memory_resource`):
//! pageable host memory from the system allocator, which a device with pageable memory access
//! (HMM, or ATS on Grace Hopper) reaches directly. Only such a device takes it. The headroom
//! variant tells the driver to prefer the device for as much of each allocation as leaves
//! `headroom` bytes of the device free, and the host for the rest.

use super::{require_nonzero, Footprint, LiveBytes, MemoryResource, ALIGNMENT};
use crate::error::{Error, Result};
use crate::platform::{backend, streams, system_allocate, system_free, Capability, Stream};
use crate::units::spec_size;

/// System memory for `device` (see the module comment); it keeps nothing.
pub struct SystemResource {
    device: i32,
    /// The headroom variant: bytes of the device left free by what it prefers there.
    headroom: Option<usize>,
    live: LiveBytes,
}

impl SystemResource {
    /// System memory for `device`: `NotSupported` unless the device reaches pageable memory.
    pub fn new(device: i32) -> Result<Self> {
        require_pageable_access(device)?;
        Ok(SystemResource { device, headroom: None, live: LiveBytes::default() })
    }

    /// The headroom variant: `InvalidArgument` for a headroom above the device's memory.
    pub fn with_headroom(device: i32, headroom: usize) -> Result<Self> {
        require_pageable_access(device)?;
        let (_, total) = backend()?.mem_get_info(device)?;
        if headroom > total {
            return Err(Error::invalid(format!(
                "sam_headroom: a headroom of {} is more than device {device} has ({})",
                spec_size(headroom),
                spec_size(total)
            )));
        }
        Ok(SystemResource { device, headroom: Some(headroom), live: LiveBytes::default() })
    }

    /// The headroom, for the headroom variant.
    pub fn headroom(&self) -> Option<usize> {
        self.headroom
    }

    /// Prefers the device for the first part of `[ptr, ptr + bytes)` that leaves `headroom`
    /// bytes of it free (whole 256-byte units), the host for the rest.
    fn place(&self, ptr: usize, bytes: usize, headroom: usize) -> Result<()> {
        let platform = backend()?;
        let (free, _) = platform.mem_get_info(self.device)?;
        let on_device = free.saturating_sub(headroom).min(bytes) / ALIGNMENT * ALIGNMENT;
        if on_device > 0 {
            platform.advise_preferred_location(ptr, on_device, Some(self.device))?;
        }
        if bytes > on_device {
            platform.advise_preferred_location(ptr + on_device, bytes - on_device, None)?;
        }
        Ok(())
    }
}

fn require_pageable_access(device: i32) -> Result<()> {
    if !backend()?.supports(device, Capability::PageableMemoryAccess)? {
        return Err(Error::NotSupported(format!(
            "device {device} cannot reach pageable host memory (no HMM or ATS: CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0), \
             so system memory resources are not offered there"
        )));
    }
    Ok(())
}

impl MemoryResource for SystemResource {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        require_nonzero(bytes, self.name())?;
        // The memory is usable at once whatever the stream, which is not looked at
        // (`platform::streams`).
        let _ = stream;
        let ptr = system_allocate(bytes)?;
        if let Some(headroom) = self.headroom {
            if let Err(e) = self.place(ptr, bytes, headroom) {
                system_free(ptr, bytes)?;
                return Err(e);
            }
        }
        self.live.add(bytes);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        // The system frees at once: work the device still has on `stream` must finish first.
        // A handle rmm-rs does not know is never handed to the driver (it may name no stream:
        // `platform::streams`), and a stream that is gone cannot be waited for: the whole
        // device is waited for instead.
        let waited = streams::is_known(stream) && backend()?.stream_synchronize(stream).is_ok();
        if !waited {
            backend()?.device_synchronize(self.device)?;
        }
        system_free(ptr, bytes)?;
        self.live.remove(bytes);
        Ok(())
    }

    fn footprint(&self) -> Option<Footprint> {
        Some(self.live.footprint())
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn orders_by_stream(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        match self.headroom {
            Some(_) => "sam_headroom",
            None => "system",
        }
    }

    fn snapshot(&self) -> serde_json::Value {
        let mut value = serde_json::json!({ "resource": self.name(), "device": self.device });
        if let Some(headroom) = self.headroom {
            value["headroom"] = headroom.into();
        }
        value
    }
}
