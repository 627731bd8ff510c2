//! Sleep and wake: a resource over virtual memory gives back the physical memory behind every
//! block, live ones included, and takes it again later at the same addresses (docs/src/sleep.md).
//!
//! Only the expandable resource maps its memory itself, so only it can sleep; a stack over one
//! or more expandable resources (pools, arenas, bins, adaptors) sleeps through them. While a
//! resource sleeps, its address ranges are listed here, and an allocation that lands in one
//! (from a free block of a sleeping chunk, through whatever stack) is undone by the ownership
//! records and refused: nothing hands out memory that is not there.

use super::{ExpandableResource, MemoryResource};
use crate::error::{Error, ErrorKind, Result};
use crate::platform::{backend, MemoryKind, Stream};
use parking_lot::{Mutex, RwLock};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What happens to the contents of live blocks while their resource sleeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepMode {
    /// Dropped: at wake, blocks hold whatever the new physical memory holds (KV caches,
    /// activations, scratch).
    Discard,
    /// Copied to pinned host memory at sleep and back at wake (weights).
    Keep,
}

impl SleepMode {
    /// As the configuration and the snapshot spell it.
    pub fn name(self) -> &'static str {
        match self {
            SleepMode::Discard => "discard",
            SleepMode::Keep => "keep",
        }
    }
}

/// Address ranges of sleeping resources; `SLEEPING_RANGES` counts them so that the allocation
/// path looks at the list only while one exists.
static SLEEPING: RwLock<Vec<Range<usize>>> = RwLock::new(Vec::new());
static SLEEPING_RANGES: AtomicUsize = AtomicUsize::new(0);

/// Whether any resource sleeps (one relaxed load on every allocation's path).
#[inline(always)]
pub fn any_asleep() -> bool {
    SLEEPING_RANGES.load(Ordering::Relaxed) != 0
}

/// Whether `ptr` lies in the address range of a sleeping resource.
pub fn asleep_at(ptr: usize) -> bool {
    SLEEPING.read().iter().any(|range| range.contains(&ptr))
}

/// Lists `ranges` as asleep: from now on an allocation that lands in them is refused.
pub(super) fn note_asleep(ranges: &[Range<usize>]) {
    let mut sleeping = SLEEPING.write();
    sleeping.extend(ranges.iter().cloned());
    SLEEPING_RANGES.store(sleeping.len(), Ordering::SeqCst);
}

/// Takes `ranges` off the list.
pub(super) fn note_awake(ranges: &[Range<usize>]) {
    let mut sleeping = SLEEPING.write();
    sleeping.retain(|range| !ranges.contains(range));
    SLEEPING_RANGES.store(sleeping.len(), Ordering::SeqCst);
}

/// The error for an allocation from a sleeping resource.
pub fn refused_while_asleep(bytes: usize) -> Error {
    ErrorKind::Asleep(format!("cannot allocate {bytes} bytes: the resource sleeps (rmmResourceSleep); rmmResourceWake wakes it")).into()
}

/// Page-locked host memory holding the contents of sleeping pages (mode `Keep`).
pub(super) struct HostCopy {
    device: i32,
    pub(super) ptr: usize,
    /// Its size, which may exceed what the sleep that took it from the spares needs.
    pub(super) bytes: usize,
}

/// Host copies whose sleep ended, kept for the next keep-mode sleep of their device. Pinning
/// is what a keep sleep costs: on an H100 host, `cudaMallocHost` of 10 GiB took 5.7 s, and
/// copying them to the device and back 0.39 s; programs that sleep tend to sleep again (an RL
/// trainer every iteration). PyTorch's pinned-memory cache keeps blocks the same way.
/// `rmmDeviceRelease` gives them back (`release_spare_host_copies`).
static SPARE_HOST_COPIES: Mutex<Vec<HostCopy>> = Mutex::new(Vec::new());

impl HostCopy {
    /// At least `bytes` of pinned host memory for `device`: the smallest spare that holds them,
    /// else a new one (the device's spares, all too small, given back first).
    pub(super) fn new(device: i32, bytes: usize) -> Result<HostCopy> {
        {
            let mut spares = SPARE_HOST_COPIES.lock();
            let fitting = spares
                .iter()
                .enumerate()
                .filter(|(_, spare)| spare.device == device && spare.bytes >= bytes)
                .min_by_key(|(_, spare)| spare.bytes);
            if let Some((at, _)) = fitting {
                return Ok(spares.swap_remove(at));
            }
            let too_small: Vec<HostCopy> = spares.extract_if(.., |spare| spare.device == device).collect();
            drop(spares);
            drop(too_small);
        }
        let ptr = backend()?
            .allocate(device, MemoryKind::PinnedHost, bytes)
            .map_err(|e| Error::out_of_memory(bytes, format!("pinned host memory to keep the contents of a sleeping resource: {e}")))?;
        Ok(HostCopy { device, ptr, bytes })
    }

    /// Keeps this copy, whose contents are back on the device, for the next keep-mode sleep.
    pub(super) fn keep_spare(self) {
        SPARE_HOST_COPIES.lock().push(self);
    }
}

/// Gives back the host copies kept for `device`'s next sleeps (freed outside the lock).
pub fn release_spare_host_copies(device: i32) {
    let gone: Vec<HostCopy> = SPARE_HOST_COPIES.lock().extract_if(.., |spare| spare.device == device).collect();
    drop(gone);
}

/// Bytes of host copies kept for `device`'s next sleeps (the report shows them).
pub fn spare_host_copy_bytes(device: i32) -> usize {
    SPARE_HOST_COPIES.lock().iter().filter(|spare| spare.device == device).map(|spare| spare.bytes).sum()
}

impl Drop for HostCopy {
    fn drop(&mut self) {
        if crate::platform::process_exiting() {
            return;
        }
        if let Err(e) = backend().and_then(|platform| platform.free(self.device, MemoryKind::PinnedHost, self.ptr)) {
            log::warn!("freeing the host copy of a sleeping resource ({} bytes): {e}", self.bytes);
        }
    }
}

/// Calls `visit` once with each expandable resource `resource` takes its memory from (itself,
/// if it is one), in stack order: a stack that reaches one twice (a binning resource with it
/// as a bin and as the upstream of another) visits it once.
fn for_each_expandable(resource: &dyn MemoryResource, visit: &mut dyn FnMut(&ExpandableResource)) {
    fn walk(resource: &dyn MemoryResource, seen: &mut Vec<usize>, visit: &mut dyn FnMut(&ExpandableResource)) {
        let any: &dyn std::any::Any = resource;
        match any.downcast_ref::<ExpandableResource>() {
            Some(expandable) => {
                let at = expandable as *const ExpandableResource as usize;
                if !seen.contains(&at) {
                    seen.push(at);
                    visit(expandable);
                }
            }
            None => resource.for_each_upstream(&mut |upstream| walk(upstream, seen, visit)),
        }
    }
    walk(resource, &mut Vec::new(), visit)
}

/// Whether an expandable resource under `resource` sleeps or is going to sleep, without
/// waiting for a sleep or wake in progress: an allocation from such a stack is refused before
/// it reaches any layer (an adaptor above would count it otherwise).
pub fn refuses_allocations(resource: &dyn MemoryResource) -> bool {
    let mut refuses = false;
    for_each_expandable(resource, &mut |expandable| refuses |= expandable.refuses_allocations());
    refuses
}

/// The expandable resources under `resource`, or why it cannot sleep.
fn sleepers(resource: &dyn MemoryResource, doing: &str) -> Result<usize> {
    let mut count = 0;
    for_each_expandable(resource, &mut |_| count += 1);
    if count == 0 {
        return Err(Error::NotSupported(format!(
            "cannot {doing} a {} resource: only memory the expandable resource maps (and pools, arenas and bins over it) \
             can sleep",
            resource.name()
        )));
    }
    Ok(count)
}

/// Puts every expandable resource under `resource` to sleep (see `ExpandableResource::sleep`),
/// after `resource` gave back what it keeps free. All or nothing: when one cannot sleep, those
/// already asleep wake again and the error is the first one's.
pub fn sleep(resource: &dyn MemoryResource, mode: SleepMode, stream: Stream) -> Result<SleepFigures> {
    sleepers(resource, "put to sleep")?;
    let mut refusal = None;
    for_each_expandable(resource, &mut |expandable| {
        if refusal.is_none() {
            refusal = expandable.can_sleep().err();
        }
    });
    if let Some(e) = refusal {
        return Err(e);
    }
    resource.release()?;
    let mut done = 0;
    let mut failed = None;
    let mut figures = SleepFigures::default();
    for_each_expandable(resource, &mut |expandable| {
        if failed.is_some() {
            return;
        }
        match expandable.sleep(mode, stream) {
            Ok(slept) => {
                figures = figures.plus(slept);
                done += 1;
            }
            Err(e) => failed = Some(e),
        }
    });
    let Some(e) = failed else { return Ok(figures) };
    let mut undone = 0;
    for_each_expandable(resource, &mut |expandable| {
        if undone < done {
            undone += 1;
            if let Err(wake) = expandable.wake(stream) {
                log::warn!("waking an expandable resource after another under the same stack could not sleep: {wake}");
            }
        }
    });
    Err(e)
}

/// Wakes every expandable resource under `resource`. One that cannot get its memory back
/// stays asleep (retryable, its host copy intact) and its error is returned; the others wake.
pub fn wake(resource: &dyn MemoryResource, stream: Stream) -> Result<()> {
    sleepers(resource, "wake")?;
    let mut asleep = 0;
    for_each_expandable(resource, &mut |expandable| asleep += usize::from(expandable.sleep_mode().is_some()));
    if asleep == 0 {
        return Err(Error::invalid(format!("the {} resource is awake: nothing to wake", resource.name())));
    }
    let mut first = Ok(());
    for_each_expandable(resource, &mut |expandable| {
        if expandable.sleep_mode().is_some() {
            if let (Err(e), true) = (expandable.wake(stream), first.is_ok()) {
                first = Err(e);
            }
        }
    });
    first
}

/// Whether some expandable resource under `resource` sleeps; `NotSupported` for a resource
/// that cannot sleep.
pub fn is_asleep(resource: &dyn MemoryResource) -> Result<bool> {
    sleepers(resource, "ask whether it sleeps:")?;
    let mut asleep = false;
    for_each_expandable(resource, &mut |expandable| asleep |= expandable.sleep_mode().is_some());
    Ok(asleep)
}

/// What a sleep did, in bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SleepFigures {
    /// Physical memory given back to the device.
    pub released: usize,
    /// Contents copied to host memory (mode `Keep`).
    pub kept_on_host: usize,
}

impl SleepFigures {
    /// Both sleeps' figures together.
    pub(super) fn plus(self, other: SleepFigures) -> SleepFigures {
        SleepFigures { released: self.released + other.released, kept_on_host: self.kept_on_host + other.kept_on_host }
    }
}
