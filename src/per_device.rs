//! The per-device current resource. Reads are lock-free on the common path: each thread
//! caches the resource it last saw for a device, tagged with the device's generation, and
//! only takes the lock when a `set` has bumped that generation since.

use crate::error::{Error, Result};
use crate::mr::{DirectResource, MemoryResource};
use crate::platform::backend;
use parking_lot::RwLock;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Devices the registry can hold (device ordinals 0..MAX_DEVICES).
pub const MAX_DEVICES: usize = 64;

struct DeviceSlot {
    generation: AtomicU64,
    resource: RwLock<Option<Arc<dyn MemoryResource>>>,
}

static SLOTS: once_cell::sync::Lazy<Vec<DeviceSlot>> = once_cell::sync::Lazy::new(|| {
    (0..MAX_DEVICES)
        .map(|_| DeviceSlot { generation: AtomicU64::new(1), resource: RwLock::new(None) })
        .collect()
});

type CachedResource = Option<(u64, Arc<dyn MemoryResource>)>;

thread_local! {
    static CACHE: RefCell<Vec<CachedResource>> = RefCell::new(vec![None; MAX_DEVICES]);
}

fn slot(device: i32) -> Result<&'static DeviceSlot> {
    backend()?.check_device(device)?;
    SLOTS
        .get(device as usize)
        .ok_or_else(|| Error::NotSupported(format!("device {device}: rmm-rs handles devices 0 to {}", MAX_DEVICES - 1)))
}

/// The resource of `device`; the first use without a `set` installs a cuda resource, as RMM's
/// default is `cuda_memory_resource`.
pub fn get(device: i32) -> Result<Arc<dyn MemoryResource>> {
    let slot = slot(device)?;
    let generation = slot.generation.load(Ordering::Acquire);
    let cached = CACHE.with(|cache| match &cache.borrow()[device as usize] {
        Some((g, resource)) if *g == generation => Some(resource.clone()),
        _ => None,
    });
    if let Some(resource) = cached {
        return Ok(resource);
    }
    let installed = slot.resource.read().clone();
    let resource = match installed {
        Some(resource) => resource,
        None => {
            let mut installed = slot.resource.write();
            match installed.as_ref() {
                Some(resource) => resource.clone(),
                None => {
                    let default: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(device)?);
                    *installed = Some(default.clone());
                    default
                }
            }
        }
    };
    // Tagged with the generation read before the lookup: a `set` racing with us bumps it, so
    // a stale entry is refreshed on the next call rather than kept.
    CACHE.with(|cache| cache.borrow_mut()[device as usize] = Some((generation, resource.clone())));
    Ok(resource)
}

/// Makes `resource` the resource of `device` and returns the one it replaces. The resource
/// must hand out memory of `device`.
pub fn set(device: i32, resource: Arc<dyn MemoryResource>) -> Result<Arc<dyn MemoryResource>> {
    if resource.device() != device {
        return Err(Error::invalid(format!(
            "a {} resource of device {} cannot serve device {device}",
            resource.name(),
            resource.device()
        )));
    }
    let previous = get(device)?;
    let slot = slot(device)?;
    let mut installed = slot.resource.write();
    let replaced = installed.replace(resource).unwrap_or(previous);
    slot.generation.fetch_add(1, Ordering::AcqRel);
    Ok(replaced)
}

/// The calling thread's current device's resource.
pub fn current() -> Result<Arc<dyn MemoryResource>> {
    get(backend()?.current_device()?)
}
