//! The CUDA virtual-memory API on simulated devices (cuMemAddressReserve, cuMemCreate,
//! cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree), modelled with the
//! host's own: a reservation is an inaccessible anonymous mapping, physical memory is a
//! memory file counted against the device's capacity, mapping it maps the file into the
//! reservation (so one physical allocation mapped at two addresses shows the same bytes at
//! both, as on a GPU), and access is granted per range. Misuse a driver refuses is refused
//! here with the driver's rules: maps outside a reservation or over another map, unmaps and
//! access of ranges that are not wholly mapped, freeing a reservation that still has maps.
//! Released physical memory goes back to the device once its last map is gone.

use super::sim_address_space::{make_inaccessible, reserve_anywhere, AddressSpace};
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
    /// `exportable_as` bits it was created exportable as.
    handle_types: u32,
    /// Imported from a descriptor another process (or this one) exported: its bytes count
    /// against the device in the process that created them, not here.
    imported: bool,
}

struct Mapping {
    size: usize,
    handle: u64,
    /// Bit `d`: device `d` may read and write it (`cuMemSetAccess`).
    access: u64,
}

#[derive(Default)]
pub struct VirtualMemory {
    /// Reservation start -> size.
    reservations: BTreeMap<usize, usize>,
    /// Mapping start -> mapping (every mapping lies in one reservation).
    mappings: BTreeMap<usize, Mapping>,
    physical: BTreeMap<u64, Physical>,
    next_handle: u64,
    /// Where reservations and, through `SimDevices`, memory allocations are placed.
    pub(crate) space: AddressSpace,
}

fn os_error(call: &str) -> Error {
    Error::Internal(format!("simulated virtual memory: {call}: {}", std::io::Error::last_os_error()))
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
        let start = match self.space.take(size, GRANULARITY) {
            Some(start) => start,
            None => reserve_anywhere(size, GRANULARITY).ok_or_else(|| {
                Error::out_of_memory(size, format!("no {size} bytes of address space left ({})", std::io::Error::last_os_error()))
            })?,
        };
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
        if self.space.give_back(at, size)? {
            return Ok(());
        }
        // SAFETY: the reservation was made by `reserve` and nothing is mapped in it.
        if unsafe { libc::munmap(at as *mut libc::c_void, size) } != 0 {
            return Err(os_error("munmap"));
        }
        Ok(())
    }

    /// Physical memory of `size` bytes on `device`; the caller has counted it against the
    /// device (and uncounts it when `release`/`unmap` answer its size).
    pub fn create(&mut self, device: i32, size: usize, handle_types: u32) -> Result<PhysicalMemory> {
        if handle_types & !super::exportable_as::POSIX_FILE_DESCRIPTOR != 0 {
            return Err(Error::NotSupported(format!(
                "simulated devices export physical memory as POSIX file descriptors only (handle types {handle_types:#x} asked)"
            )));
        }
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
        self.physical.insert(self.next_handle, Physical { fd, size, device, maps: 0, released: false, handle_types, imported: false });
        Ok(PhysicalMemory(self.next_handle))
    }

    /// A new descriptor of `handle`'s memory file, as `cuMemExportToShareableHandle` gives
    /// one; refused for memory created without `crate::platform::exportable_as::POSIX_FILE_DESCRIPTOR`, as by the driver.
    pub fn export(&self, handle: PhysicalMemory) -> Result<std::os::fd::OwnedFd> {
        use std::os::fd::BorrowedFd;
        let physical = self.physical.get(&handle.0).filter(|p| !p.released).ok_or_else(|| not_physical(handle))?;
        if physical.handle_types & super::exportable_as::POSIX_FILE_DESCRIPTOR == 0 {
            return Err(Error::invalid(format!(
                "physical allocation {} was created without requestedHandleTypes POSIX file descriptor: it cannot be exported",
                handle.0
            )));
        }
        // SAFETY: `physical.fd` is open while the allocation lives, and we only duplicate it.
        let copy = unsafe { BorrowedFd::borrow_raw(physical.fd) }.try_clone_to_owned().map_err(|e| Error::Internal(format!("dup: {e}")))?;
        Ok(copy)
    }

    /// Physical memory of `device` from a descriptor `export` gave (in this process or
    /// another): a handle of its own, over the same memory file.
    pub fn import(&mut self, fd: std::os::fd::BorrowedFd<'_>, device: i32) -> Result<PhysicalMemory> {
        use std::os::fd::{AsRawFd, IntoRawFd};
        let link = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map(|path| path.to_string_lossy().into_owned());
        if !link.as_deref().is_ok_and(|name| name.starts_with("/memfd:rmm-sim-physical")) {
            return Err(Error::invalid(format!(
                "descriptor {} is not simulated physical memory ({})",
                fd.as_raw_fd(),
                link.unwrap_or_else(|e| e.to_string())
            )));
        }
        // SAFETY: all-zero is a valid `stat` (plain integers).
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes only into the stat we own; the descriptor is open.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(os_error("fstat"));
        }
        let size = stat.st_size as usize;
        if size == 0 || !aligned(size) {
            return Err(Error::invalid(format!("descriptor {} holds {size} bytes: not physical memory", fd.as_raw_fd())));
        }
        let own = fd.try_clone_to_owned().map_err(|e| Error::Internal(format!("dup: {e}")))?.into_raw_fd();
        self.next_handle += 1;
        let physical = Physical {
            fd: own,
            size,
            device,
            maps: 0,
            released: false,
            handle_types: super::exportable_as::POSIX_FILE_DESCRIPTOR,
            imported: true,
        };
        self.physical.insert(self.next_handle, physical);
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
        (!physical.imported).then_some((physical.device, physical.size))
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
        self.mappings.insert(at, Mapping { size, handle: handle.0, access: 0 });
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

    /// Makes `[at, at + size)`, which must be wholly mapped, readable and writable from
    /// `devices` (added to those that had access). `reaches(device, owner)` says whether a
    /// device can reach another's memory: access for one that cannot is refused, as by the
    /// driver.
    pub fn set_access(&mut self, at: usize, size: usize, devices: &[i32], reaches: impl Fn(i32, i32) -> bool) -> Result<()> {
        let (starts, exact) = self.maps_covering(at, size);
        if !exact {
            return Err(Error::invalid(format!("access to {at:#x} (+{size} bytes): not all of it is mapped")));
        }
        let mut mask = 0u64;
        for &device in devices {
            for start in &starts {
                let owner = self.physical.get(&self.mappings[start].handle).map_or(device, |p| p.device);
                if !reaches(device, owner) {
                    return Err(Error::invalid(format!(
                        "access to {at:#x} (+{size} bytes) for device {device}: it cannot reach memory of device {owner} (no peer access)"
                    )));
                }
            }
            mask |= 1u64 << device;
        }
        // SAFETY: the range is wholly mapped from memory files this module owns.
        if unsafe { libc::mprotect(at as *mut libc::c_void, size, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            return Err(os_error("mprotect"));
        }
        for start in starts {
            self.mappings.get_mut(&start).expect("found above").access |= mask;
        }
        Ok(())
    }

    /// Whether `[at, at + size)` is mapped and accessible from some device (for tests).
    pub fn is_accessible(&self, at: usize, size: usize) -> bool {
        let (starts, exact) = self.maps_covering(at, size);
        exact && starts.iter().all(|start| self.mappings[start].access != 0)
    }

    /// Whether `device` can use `[at, at + size)`: None when the range lies in no
    /// reservation (not virtual memory), else whether it is wholly mapped with access for
    /// `device`.
    pub fn accessible_from(&self, at: usize, size: usize, device: i32) -> Option<bool> {
        self.reservation_holding(at, size.max(1))?;
        let granted = |start: &usize| self.mappings[start].access & (1u64 << device) != 0;
        Some(self.covers(at, size) && self.maps_in(at, size).iter().all(granted))
    }

    /// The starts of the maps that overlap `[at, at + size)`.
    fn maps_in(&self, at: usize, size: usize) -> Vec<usize> {
        let first = self.mappings.range(..=at).next_back().filter(|(&start, m)| start + m.size > at).map(|(&start, _)| start);
        first.into_iter().chain(self.mappings.range(at + 1..at + size.max(1)).map(|(&start, _)| start)).collect()
    }

    /// Whether maps cover `[at, at + size)` with no gap.
    fn covers(&self, at: usize, size: usize) -> bool {
        let mut next = at;
        for start in self.maps_in(at, size) {
            if start > next {
                return false;
            }
            next = next.max(start + self.mappings[&start].size);
        }
        next >= at + size
    }
}

fn not_physical(handle: PhysicalMemory) -> Error {
    Error::invalid(format!("{} is not a live physical allocation", handle.0))
}
