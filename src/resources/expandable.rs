//! The expandable resource: the pool's stream-ordered suballocation over chunks of physical
//! memory mapped on demand into an address range reserved for it (the CUDA virtual-memory
//! API, as PyTorch's expandable segments), twice: once for small blocks, once for the rest.
//! Memory is mapped in pages (the device's granularity, or a multiple of it), each its own
//! physical allocation, so that any page can go back on its own. A chunk grows in place, at its end, by just what a request
//! needs beyond the chunk's free end; a stream's first chunk goes where the most address space
//! is left after it, so each stream's chunk has room to grow.
//!
//! Whole free pages anywhere in a chunk (the middle cuts it in two) come back here once the
//! streams that freed them have passed that point (see `Core`): they are unmapped and their
//! physical memory kept, unmapped, for reuse. Mapping takes kept pages first and creates new
//! ones only when none is left, so a request that no mapped range fits is served by the pages
//! of holes mapped where it needs them (stitching, as GMLake does): the physical memory held
//! is bounded by what is live plus what is free inside partly used pages. Kept pages go back
//! to the device above the release threshold, on `release`, and when the device runs out.
//! See docs/src/expandable.md.

use super::sleep::{HostCopy, SleepFigures, SleepMode};
use super::stream_ordered::{Core, Growth, MappedGrowth, PageMapper};
use super::{MemoryResource, PoolResource, ALIGNMENT};
use crate::error::{Error, Result};
use crate::platform::ipc::Ticket;
use crate::platform::{backend, streams, PhysicalMemory, Stream};
use parking_lot::Mutex;
use rmm_suballoc::tlsf::Tlsf;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How address space is reserved beyond the maximum size: room between the chunks of
/// different streams, each of which grows at its end.
const ADDRESS_SPACE_FACTOR: usize = 4;

/// The default page is 1/`PAGES_PER_MAXIMUM` of the most the resource maps, and at most
/// `LARGEST_DEFAULT_PAGE`: every page moved by stitching costs a map and an unmap, so on a
/// large device pages of the granularity (2 MiB) make a workload that stitches every step
/// slow. PyTorch's expandable segments map large blocks 20 MiB at a time; on an H100, GPT
/// training stitched 1,572 pages of 2 MiB a step (2.4 times PyTorch's step time) and 100 of
/// 20 MiB (PyTorch's step time), holding 2% more (docs/src/expandable.md).
const PAGES_PER_MAXIMUM: usize = 4096;
const LARGEST_DEFAULT_PAGE: usize = 20 << 20;

/// The page a resource that maps at most `maximum` bytes uses by default: a multiple of the
/// device's `granularity`.
fn default_page(maximum: usize, granularity: usize) -> usize {
    let largest = LARGEST_DEFAULT_PAGE.next_multiple_of(granularity);
    (maximum / PAGES_PER_MAXIMUM).next_multiple_of(granularity).clamp(granularity, largest)
}

/// What an expandable resource is made with (0 in a size: its default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpandableOptions {
    /// Mapped at creation (for large blocks) and kept for the resource's life.
    pub initial_size: usize,
    /// The most both parts map at once; 0: the device's memory.
    pub maximum_size: usize,
    /// Free pages of each part go back to the device while it maps more than this;
    /// `usize::MAX` (the default) keeps everything until `release` or the device runs out of
    /// memory.
    pub release_threshold: usize,
    /// The unit of mapping and release for large blocks, a multiple of the device's
    /// granularity; 0: 1/4096 of the maximum size, rounded up to the granularity, at least the
    /// granularity (2 MiB on current GPUs) and at most 20 MiB (on devices of 80 GiB or more).
    /// Small blocks' pages are of the granularity.
    pub page_size: usize,
    /// Other devices given read and write access to what is mapped.
    pub peers: Vec<i32>,
}

impl Default for ExpandableOptions {
    fn default() -> Self {
        ExpandableOptions { initial_size: 0, maximum_size: 0, release_threshold: usize::MAX, page_size: 0, peers: Vec::new() }
    }
}

/// Blocks smaller than this come from a part of their own, mapped in pages of the device's
/// granularity (as PyTorch keeps small blocks in 2 MiB segments of their own): among large
/// blocks, small ones pin partly used pages wherever they land. On the benchmark's churn
/// (`examples/churn_footprint`, simulated) the split lowered the peak held over peak live from
/// 1.169 to 1.111 with 16 MiB pages for the large part and from 1.111 to 1.068 with 2 MiB
/// pages; splits at 128 KiB, 512 KiB and 1 MiB did no better over both.
const SMALL_BLOCKS_BELOW: usize = 256 << 10;

/// The pages that hold a block (`ExpandableResource::pages`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedPages {
    /// The first page's address (at or below the block's).
    pub first: usize,
    /// Bytes of each page.
    pub page: usize,
    /// Each page's POSIX file descriptor in this process, in address order.
    pub fds: Vec<RawFd>,
}

/// The expandable resource: a stream-ordered core over pages mapped on demand for blocks of
/// `SMALL_BLOCKS_BELOW` and more, and another for smaller blocks, each part in an address
/// range reserved for it. Both take their pages from the device within one maximum.
pub struct ExpandableResource {
    small: Part,
    large: Part,
    /// The small part's reservation: a free goes to the part whose range holds its address.
    small_range: std::ops::Range<usize>,
    held: Arc<HeldPages>,
    /// Blocks exported to other processes (docs/src/ipc.md), and those freed while another
    /// process still had them open, kept out of the pool until it closes them.
    exports: Exports,
    /// How it sleeps (None: awake); held by `sleep` and `wake` throughout, so that they take
    /// turns (docs/src/sleep.md).
    sleep: Mutex<Option<SleepMode>>,
    /// Set from the start of a sleep to the end of the wake that undoes it, read without the
    /// lock by every allocation while some resource sleeps (`sleep::refuses_allocations`).
    refusing: std::sync::atomic::AtomicBool,
}

/// The exporting side of IPC: a ticket per exported block, by its address.
#[derive(Default)]
struct Exports {
    /// Exported blocks and deferred frees, not counted: the free path checks this first and
    /// touches nothing else while it is 0.
    count: AtomicUsize,
    state: Mutex<ExportState>,
}

#[derive(Default)]
struct ExportState {
    live: BTreeMap<usize, Arc<Ticket>>,
    /// Blocks freed while another process had them open: (block, bytes, event recorded on
    /// the freeing stream at the free, ticket). They go back to the pool once no process has
    /// them open, in the order of that free.
    deferred: Vec<(usize, usize, crate::platform::Event, Arc<Ticket>)>,
}

/// A pool over pages mapped on demand.
struct Part {
    pool: PoolResource,
    /// The pool's core, called directly (see `adaptors::upstream`).
    core: Arc<Core<Tlsf>>,
    pages: Arc<MappedRanges>,
}

/// Physical memory both parts hold together (mapped and kept), and its peak.
#[derive(Default)]
struct HeldPages {
    bytes: AtomicUsize,
    peak: AtomicUsize,
}

impl HeldPages {
    /// Counts `page` more bytes if that stays within `maximum`.
    fn take(&self, page: usize, maximum: usize) -> std::result::Result<(), usize> {
        let held = self.bytes.fetch_add(page, Ordering::Relaxed);
        if held.saturating_add(page) > maximum {
            self.bytes.fetch_sub(page, Ordering::Relaxed);
            return Err(held);
        }
        self.peak.fetch_max(held + page, Ordering::Relaxed);
        Ok(())
    }

    fn give(&self, page: usize) {
        self.bytes.fetch_sub(page, Ordering::Relaxed);
    }
}

/// The expandable resource on `device`. Its pages are created exportable as POSIX file
/// descriptors where the device offers that (no cost measured in mapping time on an H200:
/// `scripts/gpu-ipc.sh`), so that a block can be opened in another process once the program
/// asks for its handle (`export`); nothing is exported before that, and the choice cannot be
/// made later (the driver fixes a page's handle types in `cuMemCreate`).
pub fn expandable_resource(device: i32, options: &ExpandableOptions) -> Result<ExpandableResource> {
    let exportable = backend()?.vmm_exportable_types(device)? & crate::platform::exportable_as::POSIX_FILE_DESCRIPTOR;
    make(device, options, exportable)
}

/// The expandable resource on `device` whose pages are created exportable as `handle_types`.
fn make(device: i32, options: &ExpandableOptions, handle_types: u32) -> Result<ExpandableResource> {
    let granularity = backend()?.vmm_granularity(device)?;
    let held = Arc::new(HeldPages::default());
    let part = |options: &ExpandableOptions| -> Result<Part> {
        let pages = Arc::new(MappedRanges::new(device, options, held.clone(), handle_types)?);
        let growth = Growth::Mapped(MappedGrowth::new(pages.clone(), pages.page, options.release_threshold));
        let pool = PoolResource::with_growth("expandable", pages.clone(), growth, options.initial_size, options.maximum_size)?;
        Ok(Part { core: pool.shared_core(), pool, pages })
    };
    let large = part(options)?;
    let small = part(&ExpandableOptions { initial_size: 0, page_size: granularity, ..options.clone() })?;
    Ok(ExpandableResource {
        small_range: small.pages.usable_range(),
        small,
        large,
        held,
        exports: Exports::default(),
        sleep: Mutex::new(None),
        refusing: std::sync::atomic::AtomicBool::new(false),
    })
}

impl ExpandableResource {
    /// `expandable_resource` whose pages are also exportable as fabric handles where the
    /// device offers them (for UCX and multi-node NVLink); a device that exports no POSIX file
    /// descriptors is `NotSupported` here (where `expandable_resource` makes private pages).
    pub fn shareable(device: i32, options: &ExpandableOptions) -> Result<ExpandableResource> {
        let handle_types = backend()?.vmm_exportable_types(device)?;
        if handle_types & crate::platform::exportable_as::POSIX_FILE_DESCRIPTOR == 0 {
            return Err(Error::NotSupported(format!("device {device} cannot export virtual memory as POSIX file descriptors")));
        }
        make(device, options, handle_types)
    }

    fn parts(&self) -> [&PoolResource; 2] {
        [&self.small.pool, &self.large.pool]
    }

    /// The part that serves a block that may take up to `most` bytes.
    #[inline(always)]
    fn part_for(&self, most: usize) -> &Part {
        if most < SMALL_BLOCKS_BELOW {
            &self.small
        } else {
            &self.large
        }
    }

    fn part_of(&self, ptr: usize) -> &Part {
        if self.small_range.contains(&ptr) {
            &self.small
        } else {
            &self.large
        }
    }

    /// Grants `peer` read and write access to everything mapped now and mapped from now on
    /// (`cuMemSetAccess` on each mapped range): for a peer the resource did not give access to
    /// at creation. Granting it again does nothing. A peer that cannot reach the device is
    /// refused, as by the driver.
    pub fn grant_peer_access(&self, peer: i32) -> Result<()> {
        let platform = backend()?;
        if !platform.can_access_peer(peer, self.device())? {
            return Err(Error::invalid(format!("device {peer} cannot reach memory of device {} (cuDeviceCanAccessPeer)", self.device())));
        }
        self.small.pages.grant(peer)?;
        self.large.pages.grant(peer)
    }

    /// Whether its pages are created exportable (`ExpandableResource::shareable`).
    pub fn is_shareable(&self) -> bool {
        self.large.pages.handle_types != 0
    }

    /// Exports the block at `ptr` (`bytes` long, as handed out) to other processes: the
    /// ticket that names its pages, the same for every call until the block is freed. The
    /// block stays out of the pool while another process has it open, even once freed here
    /// (see `free_exported`).
    pub fn export(&self, ptr: usize, bytes: usize) -> Result<Arc<Ticket>> {
        if !self.is_shareable() {
            return Err(Error::NotSupported(
                "the expandable resource was created without IPC (rmmIpcExpandableResourceCreate makes one whose memory can be shared)"
                    .into(),
            ));
        }
        if let Some(mode) = self.sleep_mode() {
            return Err(Error::invalid(format!("{ptr:#x}: the expandable resource is asleep ({}): wake it to export", mode.name())));
        }
        let mut state = self.exports.state.lock();
        if let Some(ticket) = state.live.get(&ptr) {
            return Ok(ticket.clone());
        }
        let platform = backend()?;
        let pages = &self.part_of(ptr).pages;
        let first = ptr / pages.page * pages.page;
        let end = (ptr + bytes.max(1)).next_multiple_of(pages.page);
        let physical: Vec<PhysicalMemory> = {
            let ranges = pages.state.lock();
            let physical: Vec<PhysicalMemory> = ranges.mapped.range(first..end).map(|(_, &physical)| physical).collect();
            if physical.len() != (end - first) / pages.page {
                return Err(Error::invalid(format!("{ptr:#x} (+{bytes} bytes) is not wholly mapped: not a block of this resource")));
            }
            physical
        };
        let fds = physical.into_iter().map(|page| platform.vmm_export(page)).collect::<Result<Vec<_>>>()?;
        let uuid = platform.device_uuid(self.device())?;
        let ticket = Arc::new(Ticket::new(uuid, pages.page, ptr - first, bytes, fds)?);
        state.live.insert(ptr, ticket.clone());
        self.exports.count.fetch_add(1, Ordering::Release);
        Ok(ticket)
    }

    /// The pages that hold the block at `ptr` (`bytes` long, as handed out), for another
    /// process to map them as they are mapped here: the first page's address, the page size
    /// and each page's POSIX file descriptor. The descriptors stay this resource's, open while
    /// their pages are mapped here (the same numbers at every call meanwhile); unlike
    /// `export`, nothing keeps the block out of the pool once it is freed here, so the program
    /// keeps it allocated while other processes may still open or use it.
    pub fn pages(&self, ptr: usize, bytes: usize) -> Result<SharedPages> {
        let pages = &self.part_of(ptr).pages;
        if pages.handle_types & crate::platform::exportable_as::POSIX_FILE_DESCRIPTOR == 0 {
            return Err(Error::NotSupported(format!(
                "the expandable resource's pages are private: device {} cannot export virtual memory as POSIX file descriptors",
                self.device()
            )));
        }
        let (first, fds) = pages.descriptors(ptr, bytes)?;
        Ok(SharedPages { first, page: pages.page, fds })
    }

    /// The exporting side of a free: an exported block is revoked (no process can open it
    /// from now on); one that another process still has open is kept out of the pool until
    /// it is closed there (answers true: nothing more to do). Deferred frees whose blocks
    /// are closed by now go back to the pool.
    #[cold]
    #[inline(never)]
    fn free_exported(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<bool> {
        self.settle_exports()?;
        let mut state = self.exports.state.lock();
        let Some(ticket) = state.live.remove(&ptr) else { return Ok(false) };
        self.exports.count.fetch_sub(1, Ordering::Release);
        ticket.revoke();
        if ticket.opened() == 0 {
            return Ok(false);
        }
        let platform = backend()?;
        let event = platform.event_create(self.device())?;
        if let Err(e) = platform.event_record(self.device(), event, stream) {
            let _ = platform.event_destroy(event);
            return Err(e);
        }
        log::info!("expandable resource: {ptr:#x} freed while another process has it open: it stays out of the pool until closed there");
        state.deferred.push((ptr, bytes, event, ticket));
        self.exports.count.fetch_add(1, Ordering::Release);
        Ok(true)
    }

    /// Gives the pool back the deferred frees of blocks no other process has open any more,
    /// on the device's default stream made to wait for the stream each was freed on.
    pub fn settle_exports(&self) -> Result<()> {
        let settled: Vec<_> = {
            let mut state = self.exports.state.lock();
            let (closed, open) = std::mem::take(&mut state.deferred).into_iter().partition(|(_, _, _, ticket)| ticket.opened() == 0);
            state.deferred = open;
            closed
        };
        let platform = backend()?;
        let mut result = Ok(());
        for (ptr, bytes, event, _ticket) in settled {
            self.exports.count.fetch_sub(1, Ordering::Release);
            let freed = platform
                .stream_wait_event(self.device(), Stream::DEFAULT, event)
                .and_then(|()| self.part_of(ptr).core.deallocate(ptr, Some(bytes), Stream::DEFAULT));
            let destroyed = platform.event_destroy(event);
            result = result.and(freed).and(destroyed);
        }
        result
    }

    /// How it sleeps, or None while awake.
    pub fn sleep_mode(&self) -> Option<SleepMode> {
        *self.sleep.lock()
    }

    /// Whether it sleeps or is going to sleep (no wait for a sleep or wake in progress).
    pub(super) fn refuses_allocations(&self) -> bool {
        self.refusing.load(Ordering::Acquire)
    }

    /// Why it cannot go to sleep now, if it cannot.
    pub(super) fn can_sleep(&self) -> Result<()> {
        self.why_not_sleep(*self.sleep.lock())
    }

    /// `can_sleep` while it sleeps in mode `asleep` (None: awake).
    fn why_not_sleep(&self, asleep: Option<SleepMode>) -> Result<()> {
        if let Some(mode) = asleep {
            return Err(Error::invalid(format!(
                "the expandable resource on device {} is already asleep (mode {}): wake it first",
                self.device(),
                mode.name()
            )));
        }
        if self.exports.count.load(Ordering::Acquire) != 0 {
            return Err(Error::NotSupported(format!(
                "the expandable resource on device {} has blocks exported to other processes: they cannot sleep under them \
                 (free them, and let the other processes close them, first)",
                self.device()
            )));
        }
        Ok(())
    }

    /// The address ranges every block lies in.
    fn ranges(&self) -> [std::ops::Range<usize>; 2] {
        [self.small_range.clone(), self.large.pages.usable_range()]
    }

    /// Gives the device back all the physical memory it holds, live blocks' included, keeping
    /// every address: once the device is idle (every stream synchronized) and free memory is
    /// released, each mapped page's contents go to pinned host memory (`Keep`, copied on
    /// `stream`) or are dropped (`Discard`), and the page is unmapped and released. Until
    /// `wake`, allocations from it fail (whatever stack they come through), frees are taken as
    /// usual, and it holds no device memory.
    pub fn sleep(&self, mode: SleepMode, stream: Stream) -> Result<SleepFigures> {
        let mut asleep = self.sleep.lock();
        self.why_not_sleep(*asleep)?;
        let platform = backend()?;
        // The contents travel in the order of `stream` (`platform::streams`).
        streams::check_usable(stream)?;
        let stream = platform.stream_on_device(self.device(), stream, || true)?;
        let ranges = self.ranges();
        self.refusing.store(true, Ordering::Release);
        super::sleep::note_asleep(&ranges);
        let slept = platform.device_synchronize(self.device()).and_then(|()| self.release()).and_then(|_| {
            let small = self.small.pages.sleep(mode, stream)?;
            match self.large.pages.sleep(mode, stream) {
                Ok(large) => Ok(small.plus(large)),
                Err(e) => {
                    let woken = self.small.pages.take_physical().and_then(|pages| self.small.pages.map_again(pages, stream));
                    if let Err(again) = woken {
                        log::error!("expandable resource: its small blocks slept but its large blocks could not ({e}), and waking the small ones failed: {again}");
                    }
                    Err(e)
                }
            }
        });
        match slept {
            Ok(figures) => {
                *asleep = Some(mode);
                log::info!(
                    "expandable resource on device {}: asleep ({}), {} bytes of device memory released, {} bytes kept on the host",
                    self.device(),
                    mode.name(),
                    figures.released,
                    figures.kept_on_host
                );
                Ok(figures)
            }
            Err(e) => {
                super::sleep::note_awake(&ranges);
                self.refusing.store(false, Ordering::Release);
                Err(e)
            }
        }
    }

    /// Takes physical memory for every page that slept, maps it at the same addresses and
    /// copies kept contents back (on `stream`, synchronized before it returns). When the device
    /// cannot give the memory (another process took it), nothing changes: it stays asleep, its
    /// host copy intact, and a later `wake` tries again.
    pub fn wake(&self, stream: Stream) -> Result<()> {
        let mut asleep = self.sleep.lock();
        if asleep.is_none() {
            return Err(Error::invalid(format!("the expandable resource on device {} is awake: nothing to wake", self.device())));
        }
        streams::check_usable(stream)?;
        let stream = backend()?.stream_on_device(self.device(), stream, || true)?;
        let small = self.small.pages.take_physical()?;
        let large = match self.large.pages.take_physical() {
            Ok(large) => large,
            Err(e) => {
                self.small.pages.give_physical(small);
                return Err(e);
            }
        };
        if let Err(e) = self.small.pages.map_again(small, stream) {
            self.large.pages.give_physical(large);
            return Err(e);
        }
        if let Err(e) = self.large.pages.map_again(large, stream) {
            // The small part is awake again: back to sleep, so that the whole resource stays
            // asleep and retryable.
            let mode = asleep.expect("checked above");
            if let Err(again) = self.small.pages.sleep(mode, stream) {
                log::error!("expandable resource: waking its large blocks failed ({e}) and its small ones could not sleep again: {again}");
            }
            return Err(e);
        }
        *asleep = None;
        super::sleep::note_awake(&self.ranges());
        self.refusing.store(false, Ordering::Release);
        log::info!("expandable resource on device {}: awake", self.device());
        Ok(())
    }

    /// `allocate`, at a multiple of `alignment` (see `Core::allocate_aligned`); the part is
    /// chosen by the most the block may take with its alignment.
    #[inline(always)]
    pub fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        self.part_for(bytes.saturating_add(alignment)).core.allocate_aligned(bytes, alignment, stream)
    }
}

impl MemoryResource for ExpandableResource {
    #[inline(always)]
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.part_for(bytes).core.allocate(bytes, stream)
    }

    #[inline(always)]
    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        if self.exports.count.load(Ordering::Acquire) != 0 && self.free_exported(ptr, bytes, stream)? {
            return Ok(());
        }
        self.part_of(ptr).core.deallocate(ptr, Some(bytes), stream)
    }

    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        if alignment <= ALIGNMENT {
            return self.allocate(bytes, stream);
        }
        ExpandableResource::allocate_aligned(self, bytes, alignment, stream)
    }

    fn device(&self) -> i32 {
        self.large.pool.device()
    }

    fn name(&self) -> &'static str {
        "expandable"
    }

    fn set_release_threshold(&self, bytes: usize) -> Result<()> {
        self.large.pool.set_release_threshold(bytes)
    }

    fn release(&self) -> Result<usize> {
        self.settle_exports()?;
        Ok(self.small.pool.release()? + self.large.pool.release()?)
    }

    fn pool_size(&self) -> Option<usize> {
        Some(self.held.bytes.load(Ordering::Relaxed))
    }

    fn pool_free(&self) -> Option<usize> {
        Some(self.parts().iter().filter_map(|part| part.pool_free()).sum())
    }

    /// Both parts' figures; the peak held is of both together.
    fn footprint(&self) -> Option<super::Footprint> {
        let mut sum = super::Footprint::sum(self.parts().iter().filter_map(|part| part.footprint()))?;
        sum.peak_reserved = self.held.peak.load(Ordering::Relaxed);
        Some(sum)
    }

    fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        for part in self.parts() {
            visit(part);
        }
    }

    /// Both parts' figures and page activity together, then each part as a pool shows it.
    fn snapshot(&self) -> serde_json::Value {
        let asleep = self.sleep_mode();
        let footprint = self.footprint().unwrap_or_default();
        let activity = self.small.pages.activity().plus(self.large.pages.activity());
        let mut figures = super::snapshot::figures(&footprint);
        figures["resource"] = self.name().into();
        figures["device"] = self.device().into();
        figures["small_blocks_below"] = SMALL_BLOCKS_BELOW.into();
        figures["asleep"] = asleep.map_or(serde_json::Value::Null, |mode| mode.name().into());
        figures["asleep_bytes"] = (self.small.pages.asleep_bytes() + self.large.pages.asleep_bytes()).into();
        figures["kept_on_host_bytes"] = (self.small.pages.kept_on_host_bytes() + self.large.pages.kept_on_host_bytes()).into();
        figures["activity"] = activity.json();
        figures["small"] = self.small.pool.snapshot();
        figures["large"] = self.large.pool.snapshot();
        figures
    }
}

impl Drop for ExpandableResource {
    fn drop(&mut self) {
        if self.sleep.get_mut().is_some() {
            super::sleep::note_awake(&self.ranges());
        }
    }
}

/// The chunks' source: pages mapped into one reservation, and physical pages kept unmapped.
struct MappedRanges {
    device: i32,
    page: usize,
    /// Kept pages go back to the device while more than this is held (mapped and kept).
    keep_at_most: usize,
    /// The most physical memory it creates with the other part (mapped and kept together).
    maximum: usize,
    held: Arc<HeldPages>,
    /// `exportable_as` bits pages are created exportable as (0: not exportable).
    handle_types: u32,
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
    /// Physical pages unmapped from holes and chunk ends, mapped again before any is created.
    kept: Vec<PhysicalMemory>,
    /// Mapped pages whose physical memory is lent (see `lend`): still mapped where they are
    /// until the core gives their range back.
    lent_from: BTreeSet<usize>,
    /// Lent physical pages not mapped again yet: (the stream they are lent to, the page, where
    /// it is still mapped). Only that stream's growth maps them.
    lent: Vec<(Stream, PhysicalMemory, usize)>,
    /// The most pages held (mapped and kept) at once.
    peak_pages: usize,
    activity: Activity,
    /// Devices given access to what is mapped: the owner first, then the peers (those asked
    /// for, every device that can reach the owner, and those granted later).
    access: Vec<i32>,
    /// POSIX file descriptors of mapped pages that `descriptors` exported, one per physical
    /// page, open until the page is mapped nowhere any more (other processes take them with
    /// `pidfd_getfd` while the block they hold is allocated).
    descriptors: HashMap<PhysicalMemory, OwnedFd>,
    /// While the part sleeps: `mapped` and `lent` keep their addresses, but their physical
    /// pages were released and the values only tell which addresses shared one page.
    asleep: Option<Asleep>,
}

/// A sleeping part's contents.
struct Asleep {
    /// Where each kept page's contents lie in `host`, by the page's address.
    copies: BTreeMap<usize, usize>,
    host: Option<HostCopy>,
}

/// `[start, length)` runs of consecutive pages of `page` bytes among sorted `addresses`.
fn runs(addresses: impl IntoIterator<Item = usize>, page: usize) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for at in addresses {
        match runs.last_mut() {
            Some((begin, length)) if *begin + *length == at => *length += page,
            _ => runs.push((at, page)),
        }
    }
    runs
}

/// What the page source has asked of the device so far, and the time those calls took: the
/// cost of mapping on demand and stitching, shown in the snapshot.
#[derive(Default, Clone, Copy)]
struct Activity {
    /// `map` calls that mapped pages (one `cuMemSetAccess` each, and one more for a peer
    /// granted while the map ran).
    maps: u64,
    /// `cuMemSetAccess` calls (maps, and each mapped range when a peer is granted later) and
    /// the nanoseconds they took (also counted in `device_call_ns`): the cost of access for
    /// each device, which grows with the number of devices given access.
    set_access_calls: u64,
    set_access_ns: u64,
    pages_created: u64,
    pages_mapped: u64,
    /// Pages mapped that were lent (still mapped at their old address): stitched at once.
    pages_mapped_lent: u64,
    pages_unmapped: u64,
    pages_released: u64,
    /// Nanoseconds in the device calls that create, map, grant access, unmap and release.
    device_call_ns: u64,
}

impl Activity {
    /// What two page sources asked together.
    fn plus(self, other: Activity) -> Activity {
        Activity {
            maps: self.maps + other.maps,
            set_access_calls: self.set_access_calls + other.set_access_calls,
            set_access_ns: self.set_access_ns + other.set_access_ns,
            pages_created: self.pages_created + other.pages_created,
            pages_mapped: self.pages_mapped + other.pages_mapped,
            pages_mapped_lent: self.pages_mapped_lent + other.pages_mapped_lent,
            pages_unmapped: self.pages_unmapped + other.pages_unmapped,
            pages_released: self.pages_released + other.pages_released,
            device_call_ns: self.device_call_ns + other.device_call_ns,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "maps": self.maps,
            "set_access_calls": self.set_access_calls,
            "set_access_ms": self.set_access_ns as f64 / 1e6,
            "pages_created": self.pages_created,
            "pages_mapped": self.pages_mapped,
            "pages_mapped_lent": self.pages_mapped_lent,
            "pages_unmapped": self.pages_unmapped,
            "pages_released": self.pages_released,
            "device_call_ms": self.device_call_ns as f64 / 1e6,
        })
    }
}

/// Runs a device call and adds its time to `ns`.
fn timed<T>(ns: &mut u64, call: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let result = call();
    *ns += start.elapsed().as_nanos() as u64;
    result
}

impl Ranges {
    /// What a range coming back while the part sleeps leaves: nothing to unmap or keep (its
    /// physical pages were released at sleep), only the record of it.
    fn forget_sleeping(&mut self, start: usize, size: usize, page: usize) {
        for at in (start..start + size).step_by(page) {
            if self.lent_from.remove(&at) {
                self.lent.retain(|&(_, _, mapped_at)| mapped_at != at);
            }
            if let Some(asleep) = &mut self.asleep {
                asleep.copies.remove(&at);
            }
        }
        self.give_back(start, size);
    }

    /// Physical pages held: a lent page is mapped at its old address and maybe at a new one,
    /// and counts once.
    fn held_pages(&self) -> usize {
        if self.asleep.is_some() {
            return self.kept.len();
        }
        (self.mapped.len() + self.lent.len() + self.kept.len()).saturating_sub(self.lent_from.len())
    }
}

/// Where a page `map` maps came from, so that a failed map puts it back.
#[derive(Clone, Copy)]
enum Source {
    Created,
    Kept,
    Lent { stream: Stream, mapped_at: usize },
}

impl Ranges {
    /// Returns a page `map` took but did not map to where it came from.
    fn put_back(&mut self, physical: PhysicalMemory, source: Source) {
        match source {
            Source::Lent { stream, mapped_at } => self.lent.push((stream, physical, mapped_at)),
            Source::Kept | Source::Created => self.kept.push(physical),
        }
    }

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
    fn new(device: i32, options: &ExpandableOptions, held: Arc<HeldPages>, handle_types: u32) -> Result<Self> {
        let platform = backend()?;
        platform.check_device(device)?;
        for &peer in &options.peers {
            platform.check_device(peer)?;
        }
        let granularity = platform.vmm_granularity(device)?;
        let wanted = match options.maximum_size {
            0 => platform.mem_get_info(device)?.1,
            size => size,
        };
        let page = match options.page_size {
            0 => default_page(wanted, granularity),
            size if size.is_multiple_of(granularity) => size,
            size => {
                return Err(Error::invalid(format!(
                    "a page size of {size} bytes is not a multiple of the device's granularity, {granularity}"
                )))
            }
        };
        let too_large = || Error::invalid(format!("a maximum of {wanted} bytes"));
        let usable = wanted.checked_next_multiple_of(page).and_then(|size| size.checked_mul(ADDRESS_SPACE_FACTOR)).ok_or_else(too_large)?;
        let size = usable.checked_add(page).ok_or_else(too_large)?;
        let start = platform.vmm_reserve(size)?;
        let aligned = start.next_multiple_of(page);
        // Every device that can reach this one gets access to every mapping, as cudaMalloc
        // memory is reachable from every peer once it enables peer access: without it, a
        // copy or kernel on a peer fails with "invalid argument" (cudaDeviceEnablePeerAccess
        // does not cover virtual memory). Peers asked for explicitly must be reachable.
        let mut access = vec![device];
        for peer in options.peers.iter().copied().chain(platform.peers_of(device)?) {
            if !access.contains(&peer) {
                access.push(peer);
            }
        }
        let state = Ranges { unused: BTreeMap::from([(aligned, usable)]), access, ..Default::default() };
        // The initial size stays mapped in the core's chunks whatever the threshold.
        let keep_at_most = options.release_threshold.max(options.initial_size);
        let maximum = match options.maximum_size {
            0 => usize::MAX,
            size => size.next_multiple_of(page),
        };
        Ok(MappedRanges { device, page, keep_at_most, maximum, held, handle_types, reservation: (start, size), state: Mutex::new(state) })
    }

    fn usable_start(&self) -> usize {
        self.reservation.0.next_multiple_of(self.page)
    }

    fn activity(&self) -> Activity {
        self.state.lock().activity
    }

    /// Where pages go: every block this part hands out lies in it.
    fn usable_range(&self) -> std::ops::Range<usize> {
        self.usable_start()..self.reservation.0 + self.reservation.1
    }

    /// Maps pages over `[start, start + size)`, taken from the reservation by the caller: kept
    /// pages first (those lent to `stream` before any other), then new ones.
    fn map(&self, start: usize, size: usize, stream: Stream) -> Result<()> {
        let platform = backend()?;
        let count = size / self.page;
        let access;
        let mut reused: Vec<(PhysicalMemory, Source)> = {
            let mut state = self.state.lock();
            if state.asleep.is_some() {
                state.give_back(start, size);
                return Err(super::sleep::refused_while_asleep(size));
            }
            access = state.access.clone();
            let mut reused = Vec::with_capacity(count);
            let mut at = 0;
            while at < state.lent.len() && reused.len() < count {
                if state.lent[at].0 == stream {
                    let (stream, physical, mapped_at) = state.lent.swap_remove(at);
                    reused.push((physical, Source::Lent { stream, mapped_at }));
                } else {
                    at += 1;
                }
            }
            let from = state.kept.len().saturating_sub(count - reused.len());
            let kept = state.kept.split_off(from);
            reused.extend(kept.into_iter().map(|physical| (physical, Source::Kept)));
            reused.reverse();
            reused
        };
        let mut pages: Vec<(usize, PhysicalMemory, Source)> = Vec::with_capacity(count);
        let mut result = Ok(());
        let mut ns = 0;
        for at in (start..start + size).step_by(self.page) {
            let (physical, source) = match reused.pop() {
                Some((physical, source)) => (Ok(physical), source),
                None => (timed(&mut ns, || self.create_page()), Source::Created),
            };
            let mapped = physical.and_then(|physical| match timed(&mut ns, || platform.vmm_map(at, self.page, physical)) {
                Ok(()) => Ok(physical),
                Err(e) => {
                    self.discard(physical, source);
                    Err(e)
                }
            });
            match mapped {
                Ok(physical) => pages.push((at, physical, source)),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let mut access_calls = 0;
        let mut access_ns = 0;
        if result.is_ok() {
            access_calls += 1;
            result = timed(&mut access_ns, || platform.vmm_set_access(start, size, &access));
        }
        let mut state = self.state.lock();
        if result.is_ok() && state.access.len() > access.len() {
            // A peer granted while this map ran: `grant` did not see these pages yet.
            access_calls += 1;
            let added = state.access[access.len()..].to_vec();
            result = timed(&mut access_ns, || platform.vmm_set_access(start, size, &added));
        }
        state.activity.device_call_ns += ns + access_ns;
        state.activity.set_access_calls += access_calls;
        state.activity.set_access_ns += access_ns;
        for (physical, source) in reused {
            state.put_back(physical, source);
        }
        match result {
            Ok(()) => {
                let activity = &mut state.activity;
                activity.maps += 1;
                activity.pages_mapped += pages.len() as u64;
                for (_, _, source) in &pages {
                    match source {
                        Source::Created => activity.pages_created += 1,
                        Source::Lent { .. } => activity.pages_mapped_lent += 1,
                        Source::Kept => {}
                    }
                }
                state.mapped.extend(pages.into_iter().map(|(at, physical, _)| (at, physical)));
                state.peak_pages = state.peak_pages.max(state.held_pages());
                Ok(())
            }
            Err(e) => {
                drop(state);
                for (at, physical, source) in pages {
                    let _ = platform.vmm_unmap(at, self.page);
                    self.discard(physical, source);
                }
                self.state.lock().give_back(start, size);
                Err(e)
            }
        }
    }

    /// New physical memory for one page, within the maximum; when the device refuses, after
    /// every resource of the device released what it keeps.
    fn create_page(&self) -> Result<PhysicalMemory> {
        if let Err(held) = self.held.take(self.page, self.maximum) {
            return Err(Error::out_of_memory(self.page, format!("the expandable resource holds its maximum, {held} bytes")));
        }
        let created = backend().and_then(|platform| {
            super::caches::retry_after_releasing(self.device, || platform.vmm_create(self.device, self.page, self.handle_types))
        });
        if created.is_err() {
            self.held.give(self.page);
        }
        created
    }

    /// A page a failed map leaves: released if it was new, else back where it came from.
    fn discard(&self, physical: PhysicalMemory, source: Source) {
        match source {
            Source::Created => {
                if backend().and_then(|platform| platform.vmm_release(physical)).is_ok() {
                    self.held.give(self.page);
                }
            }
            source => self.state.lock().put_back(physical, source),
        }
    }

    /// Releases kept pages while more than `keep_at_most` bytes are held; the bytes released.
    fn release_kept(&self, keep_at_most: usize) -> Result<usize> {
        let platform = backend()?;
        let mut released = 0;
        loop {
            let physical = {
                let mut state = self.state.lock();
                if state.held_pages() * self.page <= keep_at_most {
                    break;
                }
                let Some(physical) = state.kept.pop() else { break };
                physical
            };
            let mut ns = 0;
            let outcome = timed(&mut ns, || platform.vmm_release(physical));
            let mut state = self.state.lock();
            state.activity.device_call_ns += ns;
            if let Err(e) = outcome {
                state.kept.push(physical);
                return Err(e);
            }
            state.activity.pages_released += 1;
            state.descriptors.remove(&physical);
            self.held.give(self.page);
            released += self.page;
        }
        Ok(released)
    }

    /// Gives `peer` access to every mapped range and to every later map. Under the lock, so
    /// that no range is unmapped while its access is set (unmaps take pages out of `mapped`
    /// under it first) and a map running now sees the new peer when it records its pages.
    fn grant(&self, peer: i32) -> Result<()> {
        let platform = backend()?;
        let mut state = self.state.lock();
        if state.access.contains(&peer) {
            return Ok(());
        }
        if state.asleep.is_some() {
            // Nothing is mapped: `map_again` gives the peer access at wake.
            state.access.push(peer);
            return Ok(());
        }
        let ranges = runs(state.mapped.keys().copied(), self.page);
        let mut ns = 0;
        let mut result = Ok(());
        for &(at, size) in &ranges {
            result = timed(&mut ns, || platform.vmm_set_access(at, size, &[peer]));
            if result.is_err() {
                break;
            }
        }
        state.activity.set_access_calls += ranges.len() as u64;
        state.activity.set_access_ns += ns;
        state.activity.device_call_ns += ns;
        result?;
        state.access.push(peer);
        Ok(())
    }

    fn pages_for(&self, bytes: usize) -> Result<usize> {
        bytes.checked_next_multiple_of(self.page).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))
    }

    /// The pages that hold `[ptr, ptr + bytes)`: the first one's address and each one's POSIX
    /// file descriptor, exported at the first call for a page and the same number at every
    /// later call while the page stays mapped.
    fn descriptors(&self, ptr: usize, bytes: usize) -> Result<(usize, Vec<RawFd>)> {
        let platform = backend()?;
        let first = ptr / self.page * self.page;
        let end = ptr.checked_add(bytes.max(1)).and_then(|end| end.checked_next_multiple_of(self.page)).unwrap_or(usize::MAX);
        let mut state = self.state.lock();
        if state.asleep.is_some() {
            return Err(Error::invalid(format!("{ptr:#x}: the expandable resource is asleep, its pages have no physical memory")));
        }
        let physical: Vec<PhysicalMemory> = state.mapped.range(first..end).map(|(_, &physical)| physical).collect();
        if physical.len() != (end - first) / self.page {
            return Err(Error::invalid(format!("{ptr:#x} (+{bytes} bytes) is not wholly mapped: not a block of this resource")));
        }
        let mut fds = Vec::with_capacity(physical.len());
        for page in physical {
            let fd = match state.descriptors.get(&page) {
                Some(fd) => fd.as_raw_fd(),
                None => {
                    let fd = platform.vmm_export(page)?;
                    let raw = fd.as_raw_fd();
                    state.descriptors.insert(page, fd);
                    raw
                }
            };
            fds.push(fd);
        }
        Ok((first, fds))
    }
}

/// Sleep and wake of one part (see `ExpandableResource::sleep`).
impl MappedRanges {
    /// Releases every page: kept ones, then mapped ones after copying the contents of those
    /// that hold blocks to the host (`Keep`). A lent page's old place is a free block: its
    /// contents are not copied.
    fn sleep(&self, mode: SleepMode, stream: Stream) -> Result<SleepFigures> {
        let platform = backend()?;
        self.release_kept(0)?;
        let mut state = self.state.lock();
        let mut copies = BTreeMap::new();
        let live: Vec<usize> = state.mapped.keys().copied().filter(|at| !state.lent_from.contains(at)).collect();
        let host = match mode {
            SleepMode::Keep if !live.is_empty() => {
                let host = HostCopy::new(self.device, live.len() * self.page)?;
                let mut offset = 0;
                for (at, size) in runs(live, self.page) {
                    platform.copy_async(self.device, host.ptr + offset, at, size, stream)?;
                    for page_at in (at..at + size).step_by(self.page) {
                        copies.insert(page_at, offset + page_at - at);
                    }
                    offset += size;
                }
                platform.stream_synchronize(stream)?;
                Some(host)
            }
            SleepMode::Keep | SleepMode::Discard => None,
        };
        // Frees taken since the sleep began (from other threads) are ordered on their streams:
        // wait for those too before their memory goes.
        platform.device_synchronize(self.device)?;
        let mut ns = 0;
        let addresses: Vec<usize> = state.mapped.keys().copied().collect();
        for (done, &at) in addresses.iter().enumerate() {
            if let Err(e) = timed(&mut ns, || platform.vmm_unmap(at, self.page)) {
                // Nothing is released yet: map back what was unmapped.
                for &back in &addresses[..done] {
                    let _ = platform.vmm_map(back, self.page, state.mapped[&back]);
                }
                for (back, size) in runs(addresses[..done].iter().copied(), self.page) {
                    let _ = platform.vmm_set_access(back, size, &state.access);
                }
                state.activity.device_call_ns += ns;
                return Err(e);
            }
        }
        let physical: HashSet<PhysicalMemory> = state.mapped.values().copied().collect();
        for &page in &physical {
            match timed(&mut ns, || platform.vmm_release(page)) {
                Ok(()) => self.held.give(self.page),
                // Unmapped everywhere and so unreachable: the driver keeps it until the process ends.
                Err(e) => log::error!("expandable resource: releasing a sleeping page: {e}"),
            }
        }
        state.descriptors.clear();
        let activity = &mut state.activity;
        activity.device_call_ns += ns;
        activity.pages_unmapped += addresses.len() as u64;
        activity.pages_released += physical.len() as u64;
        let kept_on_host = copies.len() * self.page;
        state.asleep = Some(Asleep { copies, host });
        Ok(SleepFigures { released: physical.len() * self.page, kept_on_host })
    }

    /// New physical memory for each page that slept (one per page the sleeping addresses
    /// shared), by the value that stood for it; none (and nothing held) when the device cannot
    /// give them all.
    fn take_physical(&self) -> Result<Vec<(PhysicalMemory, PhysicalMemory)>> {
        let slept: HashSet<PhysicalMemory> = self.state.lock().mapped.values().copied().collect();
        let mut taken = Vec::with_capacity(slept.len());
        for old in slept {
            match self.create_page() {
                Ok(page) => taken.push((old, page)),
                Err(e) => {
                    self.give_physical(taken);
                    return Err(e);
                }
            }
        }
        Ok(taken)
    }

    /// Releases what `take_physical` took.
    fn give_physical(&self, taken: Vec<(PhysicalMemory, PhysicalMemory)>) {
        let Ok(platform) = backend() else { return };
        for (_, page) in taken {
            match platform.vmm_release(page) {
                Ok(()) => self.held.give(self.page),
                Err(e) => log::error!("expandable resource: releasing a page a failed wake took: {e}"),
            }
        }
    }

    /// Maps `taken` where the sleeping pages were, gives access, copies the kept contents back
    /// on `stream` and waits for them; on failure, undoes it all and releases `taken`.
    fn map_again(&self, taken: Vec<(PhysicalMemory, PhysicalMemory)>, stream: Stream) -> Result<()> {
        let platform = backend()?;
        let mut state = self.state.lock();
        let new_of: HashMap<PhysicalMemory, PhysicalMemory> = taken.iter().copied().collect();
        let addresses: Vec<(usize, PhysicalMemory)> = state.mapped.iter().map(|(&at, old)| (at, new_of[old])).collect();
        let mut ns = 0;
        let mut mapped = 0;
        let mut result = Ok(());
        for &(at, page) in &addresses {
            result = timed(&mut ns, || platform.vmm_map(at, self.page, page));
            if result.is_err() {
                break;
            }
            mapped += 1;
        }
        let runs_mapped = runs(addresses.iter().map(|&(at, _)| at), self.page);
        if result.is_ok() {
            for &(at, size) in &runs_mapped {
                result = timed(&mut ns, || platform.vmm_set_access(at, size, &state.access));
                if result.is_err() {
                    break;
                }
            }
        }
        if let (Ok(()), Some(Asleep { copies, host: Some(host) })) = (&result, &state.asleep) {
            let mut run: Option<(usize, usize, usize)> = None;
            let mut copied = Ok(());
            for (&at, &offset) in copies.iter().chain(std::iter::once((&usize::MAX, &usize::MAX))) {
                run = match run {
                    Some((start, from, size)) if start + size == at && from + size == offset => Some((start, from, size + self.page)),
                    Some((start, from, size)) => {
                        copied = copied.and_then(|()| platform.copy_async(self.device, start, host.ptr + from, size, stream));
                        Some((at, offset, self.page))
                    }
                    None => Some((at, offset, self.page)),
                };
            }
            result = copied.and_then(|()| platform.stream_synchronize(stream));
        }
        state.activity.device_call_ns += ns;
        if let Err(e) = result {
            // Blocks freed while asleep are ordered on their streams, which the device must pass
            // before their pages go again (a copy that failed may have run in part, too).
            let _ = platform.device_synchronize(self.device);
            for &(at, _) in &addresses[..mapped] {
                let _ = platform.vmm_unmap(at, self.page);
            }
            drop(state);
            self.give_physical(taken);
            return Err(e);
        }
        let mut unused: HashSet<PhysicalMemory> = taken.iter().map(|&(_, page)| page).collect();
        for (at, page) in addresses {
            state.mapped.insert(at, page);
            unused.remove(&page);
        }
        for lent in &mut state.lent {
            lent.1 = new_of[&lent.1];
        }
        // Pages whose every address was freed while `take_physical` ran.
        state.kept.extend(unused);
        state.activity.maps += runs_mapped.len() as u64;
        state.activity.pages_mapped += mapped as u64;
        state.activity.pages_created += taken.len() as u64;
        if let Some(host) = state.asleep.take().and_then(|asleep| asleep.host) {
            host.keep_spare();
        }
        state.peak_pages = state.peak_pages.max(state.held_pages());
        Ok(())
    }

    /// Bytes of address space whose pages sleep.
    fn asleep_bytes(&self) -> usize {
        let state = self.state.lock();
        state.asleep.as_ref().map_or(0, |_| state.mapped.len() * self.page)
    }

    /// Bytes of sleeping pages' contents kept in host memory.
    fn kept_on_host_bytes(&self) -> usize {
        self.state.lock().asleep.as_ref().map_or(0, |asleep| asleep.copies.len() * self.page)
    }
}

impl PageMapper for MappedRanges {
    fn extend(&self, end: usize, bytes: usize, stream: Stream) -> Result<bool> {
        let size = self.pages_for(bytes)?;
        if !end.is_multiple_of(self.page) || !self.state.lock().take_at(end, size) {
            return Ok(false);
        }
        self.map(end, size, stream)?;
        Ok(true)
    }

    /// Lends the pages of `[start, start + size)` to `stream`'s next maps at once: the core
    /// cut them from `stream`'s own free blocks, so every use of them so far is ordered before
    /// `stream`'s later work, and a new mapping of their physical memory is used only by that
    /// work. They stay mapped where they are until the core gives the range back (once the
    /// streams that used them have passed), which unmaps them there.
    fn lend(&self, start: usize, size: usize, stream: Stream) -> Result<()> {
        let mut state = self.state.lock();
        let pages: Vec<(usize, PhysicalMemory)> = state
            .mapped
            .range(start..start + size)
            .filter(|(at, _)| !state.lent_from.contains(at))
            .map(|(&at, &physical)| (at, physical))
            .collect();
        for (at, physical) in pages {
            state.lent_from.insert(at);
            state.lent.push((stream, physical, at));
        }
        Ok(())
    }
}

impl MemoryResource for MappedRanges {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        let size = self.pages_for(bytes)?;
        let start = self.state.lock().place(size, self.page, self.usable_start()).ok_or_else(|| {
            Error::out_of_memory(bytes, format!("the expandable resource's {} bytes of address space are in use", self.reservation.1))
        })?;
        self.map(start, size, stream)?;
        Ok(start)
    }

    /// Ranges come back only once nothing on the device still uses them (the core waits for
    /// the freeing streams before it gives them back): each page is unmapped and its physical
    /// memory kept for the next map, or released while more than the threshold is held.
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
            if state.asleep.is_some() {
                state.forget_sleeping(ptr, bytes, self.page);
                return Ok(());
            }
            pages
        };
        let mut result = Ok(());
        for (at, physical) in pages {
            let mut ns = 0;
            let unmapped = timed(&mut ns, || platform.vmm_unmap(at, self.page));
            let mut state = self.state.lock();
            state.activity.device_call_ns += ns;
            if let Err(e) = unmapped {
                // Still mapped: the page stays out of the free range.
                result = Err(e);
                state.mapped.insert(at, physical);
                continue;
            }
            state.activity.pages_unmapped += 1;
            // A lent page may be mapped at another address too: its descriptor stays open
            // until it is mapped nowhere.
            if state.descriptors.contains_key(&physical) && !state.mapped.values().any(|&other| other == physical) {
                state.descriptors.remove(&physical);
            }
            if state.lent_from.remove(&at) {
                // Lent: kept once no stream's map took it, else mapped elsewhere already.
                if let Some(unused) = state.lent.iter().position(|&(_, _, mapped_at)| mapped_at == at) {
                    let (_, physical, _) = state.lent.swap_remove(unused);
                    state.kept.push(physical);
                }
            } else {
                state.kept.push(physical);
            }
            state.give_back(at, self.page);
        }
        result.and(self.release_kept(self.keep_at_most).map(drop))
    }

    /// Releases every kept page to the device.
    fn release(&self) -> Result<usize> {
        self.release_kept(0)
    }

    /// Physical memory held: mapped and kept.
    fn pool_size(&self) -> Option<usize> {
        Some(self.state.lock().held_pages() * self.page)
    }

    /// Physical memory kept unmapped or lent, which the next maps take before creating any.
    fn pool_free(&self) -> Option<usize> {
        let state = self.state.lock();
        Some((state.kept.len() + state.lent.len()) * self.page)
    }

    fn footprint(&self) -> Option<crate::resources::Footprint> {
        let state = self.state.lock();
        let (held, peak) = (state.held_pages() * self.page, state.peak_pages * self.page);
        Some(crate::resources::Footprint { reserved: held, peak_reserved: peak, ..Default::default() })
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
        let ranges = match state.asleep {
            Some(_) => Vec::new(),
            None => runs(state.mapped.keys().copied(), self.page),
        };
        let mapped: Vec<_> = ranges.iter().map(|&(at, size)| serde_json::json!({ "base": address(at), "size": size })).collect();
        serde_json::json!({
            "resource": self.name(),
            "device": self.device,
            "page_size": self.page,
            "reservation": { "base": address(start), "size": size },
            "mapped_bytes": ranges.iter().map(|(_, size)| size).sum::<usize>(),
            "mapped": mapped,
            "kept_unmapped_pages": state.kept.len(),
            "kept_unmapped_bytes": state.kept.len() * self.page,
            "access": state.access,
            "activity": state.activity.json(),
        })
    }
}

impl Drop for MappedRanges {
    fn drop(&mut self) {
        if crate::platform::process_exiting() {
            return;
        }
        let Ok(platform) = backend() else { return };
        for physical in std::mem::take(&mut self.state.get_mut().kept) {
            if let Err(e) = platform.vmm_release(physical) {
                log::warn!("expandable resource: releasing a kept page: {e}");
            }
        }
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
