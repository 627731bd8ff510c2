//! The per-device current resource. Reads take no lock: each device's slot is an `ArcSwap`,
//! which `set` replaces whole.

use crate::error::{Error, Result};
use crate::mr::{DirectResource, MemoryResource};
use crate::platform::backend;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::sync::Arc;

/// Devices the registry can hold (device ordinals 0..MAX_DEVICES).
pub const MAX_DEVICES: usize = 64;

type Resource = Arc<dyn MemoryResource>;

struct DeviceSlot {
    resource: ArcSwapOption<Resource>,
    /// Serializes installing the default and `set`, not reads.
    writing: Mutex<()>,
}

static SLOTS: once_cell::sync::Lazy<Vec<DeviceSlot>> = once_cell::sync::Lazy::new(|| {
    (0..MAX_DEVICES).map(|_| DeviceSlot { resource: ArcSwapOption::empty(), writing: Mutex::new(()) }).collect()
});

fn slot(device: i32) -> Result<&'static DeviceSlot> {
    backend()?.check_device(device)?;
    SLOTS
        .get(device as usize)
        .ok_or_else(|| Error::NotSupported(format!("device {device}: rmm-rs handles devices 0 to {}", MAX_DEVICES - 1)))
}

/// The resource of `device`; the first use without a `set` installs the stack `rmmConfigure`
/// set up or, without one, a cuda resource, as RMM's default is `cuda_memory_resource`.
pub fn get(device: i32) -> Result<Resource> {
    let slot = slot(device)?;
    if let Some(resource) = &*slot.resource.load() {
        return Ok(Resource::clone(resource));
    }
    let _writing = slot.writing.lock();
    if let Some(resource) = &*slot.resource.load() {
        return Ok(Resource::clone(resource));
    }
    let default: Resource = match crate::alloc_conf::default_resource(device) {
        Some(configured) => configured?,
        None => Arc::new(DirectResource::cuda(device)?),
    };
    slot.resource.store(Some(Arc::new(default.clone())));
    Ok(default)
}

/// Makes `resource` the resource of `device` and returns the one it replaces. The resource
/// must hand out memory of `device`.
pub fn set(device: i32, resource: Resource) -> Result<Resource> {
    if resource.device() != device {
        return Err(Error::invalid(format!("a {} resource of device {} cannot serve device {device}", resource.name(), resource.device())));
    }
    let previous = get(device)?;
    let slot = slot(device)?;
    let _writing = slot.writing.lock();
    let replaced = slot.resource.swap(Some(Arc::new(resource)));
    Ok(replaced.map_or(previous, |r| Resource::clone(&r)))
}

/// The calling thread's current device's resource.
pub fn current() -> Result<Resource> {
    get(backend()?.current_device()?)
}
