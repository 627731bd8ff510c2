//! The simulated devices' addresses: one inaccessible reservation of the host's address space,
//! made at the first use, carved first fit in address order. Memory allocations (`cuMemAlloc`,
//! managed and pinned memory) and virtual-memory reservations (`cuMemAddressReserve`) both come
//! from it, so a run's addresses, relative to the reservation's start, depend only on its calls:
//! the host's allocator and the kernel place blocks wherever other threads' allocations left
//! room, and a fuzzer seed whose choices see addresses (which blocks sit side by side, their
//! order) would not replay.
//!
//! When the host refuses the reservation (a limit on address space, a tool such as Valgrind) or
//! it is full, callers fall back to the host's own placement.

use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// The host's page: allocations are whole pages, so that a free can drop its pages.
pub(crate) const PAGE: usize = 4096;

/// The reservation's size, first asked for; halved until the host grants one, down to `SMALLEST`.
const LARGEST: usize = 1 << 42;
const SMALLEST: usize = 1 << 34;

#[derive(Default)]
pub(crate) struct AddressSpace {
    /// The reservation, once made (`None` while untried, `Some(None)` when the host refused it).
    reservation: Option<Option<(usize, usize)>>,
    /// Free ranges: start -> length, coalesced.
    free: BTreeMap<usize, usize>,
}

/// Puts an inaccessible anonymous mapping over `[at, at + size)` (which must lie in memory the
/// simulator reserved), dropping whatever was mapped there: its pages go back to the host.
pub(crate) fn make_inaccessible(at: usize, size: usize) -> Result<()> {
    // SAFETY: the range lies inside a reservation the simulator made with mmap and owns;
    // replacing its pages with fresh inaccessible ones touches no memory anything else owns.
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

pub(crate) fn os_error(call: &str) -> Error {
    Error::Internal(format!("simulated memory: {call}: {}", std::io::Error::last_os_error()))
}

/// An inaccessible reservation of `size` bytes at an address the kernel picks, its start a
/// multiple of `alignment`; None when the host refuses.
pub(crate) fn reserve_anywhere(size: usize, alignment: usize) -> Option<usize> {
    let padded = size.checked_add(alignment)?;
    // SAFETY: a fresh inaccessible anonymous mapping at an address the kernel picks.
    let base = unsafe {
        libc::mmap(std::ptr::null_mut(), padded, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0)
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base = base as usize;
    let start = base.next_multiple_of(alignment);
    // SAFETY: both pieces lie in the mapping just made and nothing refers to them.
    unsafe {
        if start > base {
            libc::munmap(base as *mut libc::c_void, start - base);
        }
        if base + padded > start + size {
            libc::munmap((start + size) as *mut libc::c_void, base + padded - (start + size));
        }
    }
    Some(start)
}

impl AddressSpace {
    fn reservation(&mut self) -> Option<(usize, usize)> {
        *self.reservation.get_or_insert_with(|| {
            let mut size = LARGEST;
            while size >= SMALLEST {
                if let Some(start) = reserve_anywhere(size, super::sim_vmm::GRANULARITY) {
                    return Some((start, size));
                }
                size /= 2;
            }
            log::warn!("simulated memory: the host refused a reservation of address space; its own placement is used");
            None
        })
    }

    /// Whether `[at, at + size)` lies in the reservation (then `give` takes it back).
    fn holds(&self, at: usize, size: usize) -> bool {
        matches!(self.reservation, Some(Some((start, length))) if at >= start && at + size <= start + length)
    }

    /// The lowest free range of `size` bytes whose start is a multiple of `alignment` (a power
    /// of two), inaccessible until the caller maps or protects it; None when none is left.
    pub(crate) fn take(&mut self, size: usize, alignment: usize) -> Option<usize> {
        if size == 0 {
            return None;
        }
        if self.free.is_empty() && self.reservation.is_none() {
            let (start, length) = self.reservation()?;
            self.free.insert(start, length);
        }
        let (start, length, at) = self.free.iter().find_map(|(&start, &length)| {
            let at = start.next_multiple_of(alignment);
            (at.checked_add(size)? <= start + length).then_some((start, length, at))
        })?;
        self.free.remove(&start);
        if at > start {
            self.free.insert(start, at - start);
        }
        if at + size < start + length {
            self.free.insert(at + size, start + length - (at + size));
        }
        Some(at)
    }

    /// Takes back `[at, at + size)` if `take` gave it, its pages made inaccessible (dropped);
    /// false when it lies outside the reservation (the host's placement, which the caller
    /// frees its own way).
    pub(crate) fn give_back(&mut self, at: usize, size: usize) -> Result<bool> {
        if !self.holds(at, size) {
            return Ok(false);
        }
        make_inaccessible(at, size)?;
        self.give(at, size);
        Ok(true)
    }

    /// Takes back `[at, at + size)`, which `take` gave (and the caller made inaccessible again).
    pub(crate) fn give(&mut self, at: usize, size: usize) {
        let (mut start, mut end) = (at, at + size);
        if let Some((&before, &length)) = self.free.range(..at).next_back() {
            debug_assert!(before + length <= at, "a range given back twice");
            if before + length == at {
                self.free.remove(&before);
                start = before;
            }
        }
        if let Some(length) = self.free.remove(&end) {
            end += length;
        }
        self.free.insert(start, end - start);
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        if let Some(Some((start, size))) = self.reservation {
            // SAFETY: the reservation was made by `reserve_anywhere` and is dropped with the
            // simulated devices that own every block in it.
            unsafe { libc::munmap(start as *mut libc::c_void, size) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_come_lowest_first_aligned_and_coalesce_when_given_back() {
        let mut space = AddressSpace::default();
        let Some(a) = space.take(3 * PAGE, PAGE) else { return }; // the host refused: nothing to test
        let b = space.take(PAGE, PAGE).unwrap();
        assert_eq!(b, a + 3 * PAGE, "first fit in address order");
        let c = space.take(PAGE, 1 << 21).unwrap();
        assert!(c.is_multiple_of(1 << 21) && c > b);
        space.give(a, 3 * PAGE);
        assert_eq!(space.take(2 * PAGE, PAGE), Some(a), "the lowest hole first");
        space.give(a, 2 * PAGE);
        space.give(b, PAGE);
        space.give(c, PAGE);
        let (start, length) = space.reservation().unwrap();
        assert_eq!(space.free.iter().map(|(&s, &l)| (s, l)).collect::<Vec<_>>(), vec![(start, length)], "all coalesced");
        assert!(space.holds(a, PAGE) && !space.holds(start + length, PAGE));
    }
}
