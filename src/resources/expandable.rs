//! The expandable resource: the pool's stream-ordered suballocation over chunks that are
//! physical memory mapped on demand into one address range reserved per resource (the CUDA
//! virtual-memory API, as PyTorch's expandable segments). A chunk is exactly as large as the
//! requests that made it need, rounded to the device's granularity, and giving a chunk back
//! unmaps it and returns its physical memory to the device, so memory a program no longer uses
//! can go back without moving anything that is still in use.

use super::{MemoryResource, PoolResource};
use crate::error::{Error, Result};
use crate::platform::{backend, PhysicalMemory, Stream};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The expandable resource on `device`: a pool named "expandable" over the mapped ranges of
/// one reservation of address space for `maximum_size` bytes (0: the device's memory), whose
/// memory `peers` may read and write too.
pub fn expandable_resource(device: i32, maximum_size: usize, peers: &[i32]) -> Result<PoolResource> {
    let ranges = Arc::new(MappedRanges::new(device, maximum_size, peers)?);
    let granularity = ranges.granularity;
    PoolResource::named("expandable", ranges, granularity, 0, maximum_size)
}

/// The chunks' source: ranges of one reservation, each with physical memory of its own.
struct MappedRanges {
    device: i32,
    granularity: usize,
    /// Devices given access to what is mapped: `device` first, then its peers.
    access: Vec<i32>,
    reservation: (usize, usize),
    state: Mutex<Ranges>,
}

#[derive(Default)]
struct Ranges {
    /// Unused parts of the reservation: start -> size, neighbours merged.
    unused: BTreeMap<usize, usize>,
    /// Mapped ranges: start -> (size, physical memory).
    mapped: BTreeMap<usize, (usize, PhysicalMemory)>,
}

impl Ranges {
    /// The lowest unused range of `size` bytes.
    fn take(&mut self, size: usize) -> Option<usize> {
        let (&start, &length) = self.unused.iter().find(|(_, &length)| length >= size)?;
        self.unused.remove(&start);
        if length > size {
            self.unused.insert(start + size, length - size);
        }
        Some(start)
    }

    fn give_back(&mut self, mut start: usize, mut size: usize) {
        if let Some((&before, &length)) = self.unused.range(..start).next_back() {
            if before + length == start {
                self.unused.remove(&before);
                start = before;
                size += length;
            }
        }
        if let Some(after) = self.unused.remove(&(start + size)) {
            size += after;
        }
        self.unused.insert(start, size);
    }
}

impl MappedRanges {
    fn new(device: i32, maximum_size: usize, peers: &[i32]) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        for &peer in peers {
            platform.check_device(peer)?;
        }
        let granularity = platform.vmm_granularity(device)?;
        let wanted = match maximum_size {
            0 => platform.mem_get_info(device)?.1,
            size => size,
        };
        let size = wanted.checked_next_multiple_of(granularity).ok_or_else(|| Error::invalid(format!("a maximum of {wanted} bytes")))?;
        let start = platform.vmm_reserve(size)?;
        let mut access = vec![device];
        access.extend(peers.iter().filter(|&&peer| peer != device));
        let state = Ranges { unused: BTreeMap::from([(start, size)]), mapped: BTreeMap::new() };
        Ok(MappedRanges { device, granularity, access, reservation: (start, size), state: Mutex::new(state) })
    }

    fn map(&self, start: usize, size: usize) -> Result<PhysicalMemory> {
        let platform = backend()?;
        let physical = super::caches::retry_after_releasing(self.device, || platform.vmm_create(self.device, size))?;
        let mapped = platform.vmm_map(start, size, physical).and_then(|()| {
            platform.vmm_set_access(start, size, &self.access).inspect_err(|_| {
                let _ = platform.vmm_unmap(start, size);
            })
        });
        if let Err(e) = mapped {
            let _ = platform.vmm_release(physical);
            return Err(e);
        }
        Ok(physical)
    }
}

impl MemoryResource for MappedRanges {
    fn allocate(&self, bytes: usize, _stream: Stream) -> Result<usize> {
        let size =
            bytes.checked_next_multiple_of(self.granularity).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))?;
        let start = self.state.lock().take(size).ok_or_else(|| {
            Error::out_of_memory(bytes, format!("the expandable resource's {} bytes of address space are in use", self.reservation.1))
        })?;
        match self.map(start, size) {
            Ok(physical) => {
                self.state.lock().mapped.insert(start, (size, physical));
                Ok(start)
            }
            Err(e) => {
                self.state.lock().give_back(start, size);
                Err(e)
            }
        }
    }

    /// Chunks come back only once nothing on the device still uses them (the core synchronizes
    /// before it releases).
    fn deallocate(&self, ptr: usize, _bytes: usize, _stream: Stream) -> Result<()> {
        let platform = backend()?;
        let (size, physical) =
            self.state.lock().mapped.remove(&ptr).ok_or_else(|| Error::invalid(format!("{ptr:#x} is not a mapped range")))?;
        if let Err(e) = platform.vmm_unmap(ptr, size) {
            self.state.lock().mapped.insert(ptr, (size, physical));
            return Err(e);
        }
        platform.vmm_release(physical)?;
        self.state.lock().give_back(ptr, size);
        Ok(())
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn name(&self) -> &'static str {
        "mapped ranges"
    }

    /// The reserved range and what is mapped in it.
    fn snapshot(&self) -> serde_json::Value {
        use crate::resources::snapshot::address;
        let (start, size) = self.reservation;
        let state = self.state.lock();
        let mapped: Vec<_> =
            state.mapped.iter().map(|(&at, &(size, _))| serde_json::json!({ "base": address(at), "size": size })).collect();
        serde_json::json!({
            "resource": self.name(),
            "device": self.device,
            "granularity": self.granularity,
            "reservation": { "base": address(start), "size": size },
            "mapped": mapped,
        })
    }
}

impl Drop for MappedRanges {
    fn drop(&mut self) {
        if crate::platform::process_exiting() {
            return;
        }
        let Ok(platform) = backend() else { return };
        let mapped: usize = self.state.get_mut().mapped.values().map(|(size, _)| size).sum();
        if mapped > 0 {
            // The core gives back every free chunk first: what is left holds blocks in use,
            // and unmapping it would pull memory out from under them.
            log::warn!("expandable resource dropped with {mapped} bytes mapped for blocks in use: they stay mapped");
            return;
        }
        let (start, size) = self.reservation;
        if let Err(e) = platform.vmm_free_reservation(start, size) {
            log::warn!("expandable resource: freeing its address range: {e}");
        }
    }
}
