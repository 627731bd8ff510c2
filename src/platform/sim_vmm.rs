//! The CUDA virtual-memory API on simulated devices (cuMemAddressReserve, cuMemCreate,
//! cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree), modelled with the
//! host's own: a reservation is an inaccessible anonymous mapping, physical memory is a
//! memory file counted against the device's capacity, mapping it maps the file into the
//! reservation (so one physical allocation mapped at two addresses shows the same bytes at
//! both, as on a GPU), and access is granted per range. Misuse a driver refuses is refused
//! here with the driver's rules: maps outside a reservation or over another map, unmaps and
//! access of ranges that are not wholly mapped, freeing a reservation that still has maps.
//! Released physical memory goes back to the device once its last map is gone.

use super::PhysicalMemory;
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The allocation granularity of simulated devices, as on current NVIDIA GPUs.
pub(crate) const GRANULARITY: usize = 2 << 20;

struct Physical {
    fd: i32,
    size: usize,
    device: i32,
    maps: usize,
    released: bool,
}

struct Mapping {
    size: usize,
    handle: u64,
    accessible: bool,
}

#[derive(Default)]
pub struct VirtualMemory {
    /// Reservation start -> size.
    reservations: BTreeMap<usize, usize>,
    /// Mapping start -> mapping (every mapping lies in one reservation).
    mappings: BTreeMap<usize, Mapping>,
    physical: BTreeMap<u64, Physical>,
    next_handle: u64,
}

fn os_error(call: &str) -> Error {
    Error::Internal(format!("simulated virtual memory: {call}: {}", std::io::Error::last_os_error()))
}

/// Puts an inaccessible anonymous mapping over `[at, at + size)` (which must lie in memory
/// this module reserved), dropping whatever was mapped there.
fn make_inaccessible(at: usize, size: usize) -> Result<()> {
    // SAFETY: the range lies inside a reservation this module made with mmap; replacing its
    // pages with fresh inaccessible ones touches no memory anything else owns.
    let mapped = unsafe {
        libc::mmap(
            at as *mut libc::c_void,
            size,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if mapped == libc::MAP_FAILED {
        return Err(os_error("mmap"));
    }
    Ok(())
}

fn aligned(value: usize) -> bool {
    value.is_multiple_of(GRANULARITY)
}

impl VirtualMemory {
    fn reservation_holding(&self, at: usize, size: usize) -> Option<(usize, usize)> {
        let (&start, &length) = self.reservations.range(..=at).next_back()?;
        (at.checked_add(size)? <= start + length).then_some((start, length))
    }

    /// The maps that lie wholly inside `[at, at + size)`, and whether they cover it exactly.
    fn maps_covering(&self, at: usize, size: usize) -> (Vec<usize>, bool) {
        let mut next = at;
        let mut starts = Vec::new();
        for (&start, mapping) in self.mappings.range(at..at + size) {
            if start != next || start + mapping.size > at + size {
                return (starts, false);
            }
            starts.push(start);
            next = start + mapping.size;
        }
        (starts, next == at + size)
    }

    pub fn reserve(&mut self, size: usize) -> Result<usize> {
        if size == 0 || !aligned(size) {
            return Err(Error::invalid(format!("a reservation of {size} bytes: not a multiple of the granularity {GRANULARITY}")));
        }
        let padded = size.checked_add(GRANULARITY).ok_or_else(|| Error::out_of_memory(size, "larger than the address space"))?;
        // SAFETY: a fresh inaccessible anonymous mapping at an address the kernel picks.
        let base = unsafe {
            libc::mmap(std::ptr::null_mut(), padded, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0)
        };
        if base == libc::MAP_FAILED {
            return Err(Error::out_of_memory(size, format!("no {size} bytes of address space left ({})", std::io::Error::last_os_error())));
        }
        let base = base as usize;
        let start = base.next_multiple_of(GRANULARITY);
        // SAFETY: both pieces lie in the mapping just made and nothing refers to them.
        unsafe {
            if start > base {
                libc::munmap(base as *mut libc::c_void, start - base);
            }
            let end = start + size;
            if base + padded > end {
                libc::munmap(end as *mut libc::c_void, base + padded - end);
            }
        }
        self.reservations.insert(start, size);
        Ok(start)
    }

    pub fn free_reservation(&mut self, at: usize, size: usize) -> Result<()> {
        if self.reservations.get(&at) != Some(&size) {
            return Err(Error::invalid(format!("{at:#x} (+{size} bytes) is not a reservation")));
        }
        if self.mappings.range(at..at + size).next().is_some() {
            return Err(Error::invalid(format!("the reservation at {at:#x} still has memory mapped")));
        }
        self.reservations.remove(&at);
        // SAFETY: the reservation was made by `reserve` and nothing is mapped in it.
        if unsafe { libc::munmap(at as *mut libc::c_void, size) } != 0 {
            return Err(os_error("munmap"));
        }
        Ok(())
    }

    /// Physical memory of `size` bytes on `device`; the caller has counted it against the
    /// device (and uncounts it when `release`/`unmap` answer its size).
    pub fn create(&mut self, device: i32, size: usize) -> Result<PhysicalMemory> {
        if size == 0 || !aligned(size) {
            return Err(Error::invalid(format!("physical memory of {size} bytes: not a multiple of the granularity {GRANULARITY}")));
        }
        // SAFETY: the name is a NUL-terminated literal.
        let fd = unsafe { libc::memfd_create(c"rmm-sim-physical".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("memfd_create"));
        }
        // SAFETY: `fd` is the memory file just created.
        if unsafe { libc::ftruncate(fd, size as libc::off_t) } != 0 {
            let error = os_error("ftruncate");
            // SAFETY: closes the file just created.
            unsafe { libc::close(fd) };
            return Err(error);
        }
        self.next_handle += 1;
        self.physical.insert(self.next_handle, Physical { fd, size, device, maps: 0, released: false });
        Ok(PhysicalMemory(self.next_handle))
    }

    /// Marks `handle` released; answers (device, bytes) when its memory goes back to the
    /// device now (it has no maps left), else None.
    pub fn release(&mut self, handle: PhysicalMemory) -> Result<Option<(i32, usize)>> {
        let physical = self.physical.get_mut(&handle.0).filter(|p| !p.released).ok_or_else(|| not_physical(handle))?;
        physical.released = true;
        Ok(self.drop_if_unused(handle.0))
    }

    fn drop_if_unused(&mut self, handle: u64) -> Option<(i32, usize)> {
        let physical = self.physical.get(&handle)?;
        if !physical.released || physical.maps > 0 {
            return None;
        }
        let physical = self.physical.remove(&handle)?;
        // SAFETY: the file is no longer mapped anywhere and nothing else holds its descriptor.
        unsafe { libc::close(physical.fd) };
        Some((physical.device, physical.size))
    }

    pub fn map(&mut self, at: usize, size: usize, handle: PhysicalMemory) -> Result<()> {
        let physical = self.physical.get(&handle.0).filter(|p| !p.released).ok_or_else(|| not_physical(handle))?;
        if physical.size != size || !aligned(at) {
            return Err(Error::invalid(format!(
                "mapping {size} bytes at {at:#x}: the physical memory has {} bytes and maps start on a {GRANULARITY}-byte boundary",
                physical.size
            )));
        }
        if self.reservation_holding(at, size).is_none() {
            return Err(Error::invalid(format!("{at:#x} (+{size} bytes) does not lie in one reservation")));
        }
        let overlaps = self.mappings.range(..at + size).next_back().is_some_and(|(&start, m)| start + m.size > at);
        if overlaps {
            return Err(Error::invalid(format!("{at:#x} (+{size} bytes) overlaps memory already mapped")));
        }
        // SAFETY: the range lies in a reservation with nothing mapped in it; the file has `size`
        // bytes. Mapped inaccessible, as the driver maps: access comes with `set_access`.
        let mapped =
            unsafe { libc::mmap(at as *mut libc::c_void, size, libc::PROT_NONE, libc::MAP_SHARED | libc::MAP_FIXED, physical.fd, 0) };
        if mapped == libc::MAP_FAILED {
            return Err(os_error("mmap"));
        }
        self.physical.get_mut(&handle.0).expect("looked up above").maps += 1;
        self.mappings.insert(at, Mapping { size, handle: handle.0, accessible: false });
        Ok(())
    }

    /// Unmaps the maps that make up exactly `[at, at + size)`; answers the (device, bytes) of
    /// released physical memory whose last map this was.
    pub fn unmap(&mut self, at: usize, size: usize) -> Result<Vec<(i32, usize)>> {
        let (starts, exact) = self.maps_covering(at, size);
        if !exact {
            return Err(Error::invalid(format!("{at:#x} (+{size} bytes) is not made of whole mapped ranges")));
        }
        make_inaccessible(at, size)?;
        let mut freed = Vec::new();
        for start in starts {
            let mapping = self.mappings.remove(&start).expect("found above");
            if let Some(physical) = self.physical.get_mut(&mapping.handle) {
                physical.maps -= 1;
            }
            freed.extend(self.drop_if_unused(mapping.handle));
        }
        Ok(freed)
    }

    /// Makes `[at, at + size)`, which must be wholly mapped, readable and writable.
    pub fn set_access(&mut self, at: usize, size: usize) -> Result<()> {
        let (starts, exact) = self.maps_covering(at, size);
        if !exact {
            return Err(Error::invalid(format!("access to {at:#x} (+{size} bytes): not all of it is mapped")));
        }
        // SAFETY: the range is wholly mapped from memory files this module owns.
        if unsafe { libc::mprotect(at as *mut libc::c_void, size, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            return Err(os_error("mprotect"));
        }
        for start in starts {
            self.mappings.get_mut(&start).expect("found above").accessible = true;
        }
        Ok(())
    }

    /// Whether `[at, at + size)` is mapped and accessible (for tests and the race checker's
    /// callers).
    pub fn is_accessible(&self, at: usize, size: usize) -> bool {
        let (starts, exact) = self.maps_covering(at, size);
        exact && starts.iter().all(|start| self.mappings[start].accessible)
    }
}

fn not_physical(handle: PhysicalMemory) -> Error {
    Error::invalid(format!("{} is not a live physical allocation", handle.0))
}
