//! The expandable resource: the pool's stream-ordered suballocation over chunks of physical
//! memory mapped on demand into one address range reserved per resource (the CUDA
//! virtual-memory API, as PyTorch's expandable segments). Memory is mapped in pages (the
//! device's granularity, or a multiple of it), each its own physical allocation, so that any
//! page can go back on its own. A chunk grows in place, at its end, by just what a request
//! needs beyond the chunk's free end; a stream's first chunk goes where the most address space
//! is left after it, so each stream's chunk has room to grow. Free pages at the end of a chunk
//! go back to the device, above a release threshold, once the stream that freed them has
//! passed that point (see `Core`).

use super::stream_ordered::Growth;
use super::{MemoryResource, PoolResource};
use crate::error::{Error, Result};
use crate::platform::{backend, PhysicalMemory, Stream};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;

/// How address space is reserved beyond the maximum size: room between the chunks of
/// different streams, each of which grows at its end.
const ADDRESS_SPACE_FACTOR: usize = 4;

/// What an expandable resource is made with (0 in a size: its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandableOptions {
    /// Mapped at creation and kept for the resource's life.
    pub initial_size: usize,
    /// The most it maps at once; 0: the device's memory.
    pub maximum_size: usize,
    /// Free pages go back to the device while more than this is mapped; `usize::MAX` (the
    /// default) keeps everything until `release` or the device runs out of memory.
    pub release_threshold: usize,
    /// The unit of mapping and release, a multiple of the device's granularity; 0: the
    /// granularity (2 MiB on current GPUs).
    pub page_size: usize,
    /// Other devices given read and write access to what is mapped.
    pub peers: Vec<i32>,
}

impl Default for ExpandableOptions {
    fn default() -> Self {
        ExpandableOptions { initial_size: 0, maximum_size: 0, release_threshold: usize::MAX, page_size: 0, peers: Vec::new() }
    }
}

/// The expandable resource on `device`.
pub fn expandable_resource(device: i32, options: &ExpandableOptions) -> Result<PoolResource> {
    let ranges = Arc::new(MappedRanges::new(device, options)?);
    let growth = Growth::Expandable { page: ranges.page, release_threshold: options.release_threshold };
    PoolResource::with_growth("expandable", ranges, growth, options.initial_size, options.maximum_size)
}

/// The chunks' source: pages mapped into one reservation.
struct MappedRanges {
    device: i32,
    page: usize,
    /// Devices given access to what is mapped: `device` first, then its peers.
    access: Vec<i32>,
    /// The reservation as made, and its part aligned to `page` that pages go into.
    reservation: (usize, usize),
    state: Mutex<Ranges>,
}

#[derive(Default)]
struct Ranges {
    /// Unused parts of the usable reservation: start -> size, neighbours merged.
    unused: BTreeMap<usize, usize>,
    /// Mapped pages: start -> physical memory of one page.
    mapped: BTreeMap<usize, PhysicalMemory>,
}

impl Ranges {
    /// Takes `[start, start + size)` if it is unused.
    fn take_at(&mut self, start: usize, size: usize) -> bool {
        let Some((&at, &length)) = self.unused.range(..=start).next_back() else { return false };
        if at + length < start + size {
            return false;
        }
        self.unused.remove(&at);
        if start > at {
            self.unused.insert(at, start - at);
        }
        if at + length > start + size {
            self.unused.insert(start + size, at + length - start - size);
        }
        true
    }

    /// Where a new chunk of `size` goes: in the largest unused range, at its start when
    /// nothing is mapped before it, else halfway, leaving the chunk before it room to grow.
    fn place(&mut self, size: usize, page: usize, reservation_start: usize) -> Option<usize> {
        let (&at, &length) = self.unused.iter().filter(|(_, &length)| length >= size).max_by_key(|(_, &length)| length)?;
        let start = if at == reservation_start || length < 2 * size { at } else { at + ((length - size) / 2 / page) * page };
        self.take_at(start, size).then_some(start)
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
    fn new(device: i32, options: &ExpandableOptions) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        for &peer in &options.peers {
            platform.check_device(peer)?;
        }
        let granularity = platform.vmm_granularity(device)?;
        let page = match options.page_size {
            0 => granularity,
            size if size.is_multiple_of(granularity) => size,
            size => {
                return Err(Error::invalid(format!(
                    "a page size of {size} bytes is not a multiple of the device's granularity, {granularity}"
                )))
            }
        };
        let wanted = match options.maximum_size {
            0 => platform.mem_get_info(device)?.1,
            size => size,
        };
        let too_large = || Error::invalid(format!("a maximum of {wanted} bytes"));
        let usable = wanted.checked_next_multiple_of(page).and_then(|size| size.checked_mul(ADDRESS_SPACE_FACTOR)).ok_or_else(too_large)?;
        let size = usable.checked_add(page).ok_or_else(too_large)?;
        let start = platform.vmm_reserve(size)?;
        let aligned = start.next_multiple_of(page);
        let mut access = vec![device];
        access.extend(options.peers.iter().filter(|&&peer| peer != device));
        let state = Ranges { unused: BTreeMap::from([(aligned, usable)]), mapped: BTreeMap::new() };
        Ok(MappedRanges { device, page, access, reservation: (start, size), state: Mutex::new(state) })
    }

    fn usable_start(&self) -> usize {
        self.reservation.0.next_multiple_of(self.page)
    }

    /// Maps fresh pages over `[start, start + size)`, taken from the reservation by the caller.
    fn map(&self, start: usize, size: usize) -> Result<()> {
        let platform = backend()?;
        let mut pages = Vec::with_capacity(size / self.page);
        let mut result = Ok(());
        for at in (start..start + size).step_by(self.page) {
            let created = super::caches::retry_after_releasing(self.device, || platform.vmm_create(self.device, self.page));
            let mapped = created.and_then(|physical| match platform.vmm_map(at, self.page, physical) {
                Ok(()) => Ok(physical),
                Err(e) => {
                    let _ = platform.vmm_release(physical);
                    Err(e)
                }
            });
            match mapped {
                Ok(physical) => pages.push((at, physical)),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_ok() {
            result = platform.vmm_set_access(start, size, &self.access);
        }
        match result {
            Ok(()) => {
                self.state.lock().mapped.extend(pages);
                Ok(())
            }
            Err(e) => {
                for (at, physical) in pages {
                    let _ = platform.vmm_unmap(at, self.page);
                    let _ = platform.vmm_release(physical);
                }
                self.state.lock().give_back(start, size);
                Err(e)
            }
        }
    }

    fn pages_for(&self, bytes: usize) -> Result<usize> {
        bytes.checked_next_multiple_of(self.page).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))
    }
}

impl MemoryResource for MappedRanges {
    fn allocate(&self, bytes: usize, _stream: Stream) -> Result<usize> {
        let size = self.pages_for(bytes)?;
        let start = self.state.lock().place(size, self.page, self.usable_start()).ok_or_else(|| {
            Error::out_of_memory(bytes, format!("the expandable resource's {} bytes of address space are in use", self.reservation.1))
        })?;
        self.map(start, size)?;
        Ok(start)
    }

    fn extend(&self, end: usize, bytes: usize, _stream: Stream) -> Result<bool> {
        let size = self.pages_for(bytes)?;
        if !end.is_multiple_of(self.page) || !self.state.lock().take_at(end, size) {
            return Ok(false);
        }
        self.map(end, size)?;
        Ok(true)
    }

    /// Ranges come back only once nothing on the device still uses them (the core waits for
    /// the freeing streams before it gives them back): each page is unmapped and released.
    fn deallocate(&self, ptr: usize, bytes: usize, _stream: Stream) -> Result<()> {
        let platform = backend()?;
        if !ptr.is_multiple_of(self.page) || !bytes.is_multiple_of(self.page) {
            return Err(Error::invalid(format!("{ptr:#x} (+{bytes} bytes) is not made of whole pages")));
        }
        let pages: Vec<(usize, PhysicalMemory)> = {
            let mut state = self.state.lock();
            let pages: Vec<_> = state.mapped.range(ptr..ptr + bytes).map(|(&at, &physical)| (at, physical)).collect();
            if pages.len() != bytes / self.page {
                return Err(Error::invalid(format!("{ptr:#x} (+{bytes} bytes) is not wholly mapped")));
            }
            for (at, _) in &pages {
                state.mapped.remove(at);
            }
            pages
        };
        let mut result = Ok(());
        for (at, physical) in pages {
            let unmapped = platform.vmm_unmap(at, self.page).and_then(|()| platform.vmm_release(physical));
            if let Err(e) = unmapped {
                // Still mapped (or its memory still held): the page stays out of the free range.
                result = Err(e);
                self.state.lock().mapped.insert(at, physical);
                continue;
            }
            self.state.lock().give_back(at, self.page);
        }
        result
    }

    fn device(&self) -> i32 {
        self.device
    }

    fn name(&self) -> &'static str {
        "mapped ranges"
    }

    /// The reserved range and what is mapped in it, contiguous pages shown as one range.
    fn snapshot(&self) -> serde_json::Value {
        use crate::resources::snapshot::address;
        let (start, size) = self.reservation;
        let state = self.state.lock();
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for &at in state.mapped.keys() {
            match ranges.last_mut() {
                Some((begin, length)) if *begin + *length == at => *length += self.page,
                _ => ranges.push((at, self.page)),
            }
        }
        let mapped: Vec<_> = ranges.iter().map(|&(at, size)| serde_json::json!({ "base": address(at), "size": size })).collect();
        serde_json::json!({
            "resource": self.name(),
            "device": self.device,
            "page_size": self.page,
            "reservation": { "base": address(start), "size": size },
            "mapped_bytes": state.mapped.len() * self.page,
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
        let mapped = self.state.get_mut().mapped.len() * self.page;
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
