//! Simulated devices: host memory stands in for device memory, so every test runs without a
//! GPU. Streams carry vector clocks that events, stream waits and synchronizations move; the
//! race checker flags a block freed on one stream and handed out on another without an
//! ordering edge, the bug real GPUs only show under timing luck.
//!
//! Work "runs" when it is enqueued, so data is always consistent here: what the simulator
//! checks is the ordering a real device would need.

use super::sim_address_space::PAGE;
use super::vector_clock::VectorClock;
use super::{Capability, Event, MemPool, MemoryKind, PoolProps, Stream};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::alloc::Layout;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

const DEFAULT_CAPACITY: usize = 8 << 30;
const ALIGNMENT: usize = 256;
/// Destroyed streams clocks may keep knowing of before they are dropped from every clock.
const DEAD_STREAMS_KEPT: usize = 64;
/// Handles of created streams and events start here, far from the special stream values 0-2
/// and from anything that looks like a small integer.
const HANDLE_BASE: usize = 0x5153_0000_0000;

/// What the simulator does when it finds a stream-ordering race, or a stream handle that names
/// no live stream handed to the driver (see `SimState::stale_handle`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum RaceAction {
    /// Print the report and abort the process, like a sanitizer (the default).
    #[default]
    Abort,
    /// Log the report and count it (`RMM_SIM_ON_RACE=count`); tests read `race_reports`.
    Record,
    /// Do not track releases at all (`RMM_SIM_ON_RACE=off`): for measuring the library's own
    /// bookkeeping on simulated devices.
    Off,
}

#[derive(Debug)]
struct SimAllocation {
    size: usize,
    device: i32,
    kind: MemoryKind,
}

/// A simulated driver memory pool.
#[derive(Debug, Clone, Copy)]
struct SimPool {
    device: i32,
    kind: MemoryKind,
    /// Imported from another process's export: the driver allocates nothing from it.
    imported: bool,
}

#[derive(Debug)]
struct StreamState {
    device: i32,
    clock: VectorClock,
    /// Legacy default stream of its device.
    legacy: bool,
    /// Synchronizes with the legacy default stream (cudaStreamCreate's default).
    blocking: bool,
}

/// A block a suballocator freed in stream order and has not handed out again.
#[derive(Debug, Clone)]
struct Release {
    end: usize,
    device: i32,
    stream_id: usize,
    stream_handle: usize,
    tick: u64,
}

#[derive(Default)]
struct SimState {
    allocations: BTreeMap<usize, SimAllocation>,
    /// Live streams by id (ids are never reused: 0..devices are the legacy default streams).
    streams: BTreeMap<usize, StreamState>,
    next_stream_id: usize,
    /// Ids of destroyed streams that clocks may still know of (`forget_dead_streams`).
    dead_streams: Vec<usize>,
    /// How many dead streams make `stream_destroy` drop them from every clock.
    forget_dead_at: usize,
    stream_handles: HashMap<usize, usize>,
    events: HashMap<usize, (i32, VectorClock)>,
    pools: HashMap<usize, SimPool>,
    /// Each device's default pool of managed memory, made on first use and never destroyed.
    default_managed_pools: HashMap<i32, usize>,
    /// System memory whose preferred location was set to a device, by start: (device, bytes),
    /// counted against the device's capacity until the memory is freed or advised elsewhere.
    advised: BTreeMap<usize, (i32, usize)>,
    host_clock: VectorClock,
    /// Per device, the clocks of its destroyed streams: their work still runs, and a device
    /// synchronization waits for it (as cuCtxSynchronize does).
    retired_clocks: HashMap<i32, VectorClock>,
    releases: BTreeMap<usize, Release>,
    /// Races found, and stale stream handles handed to the driver (`stale_handle`).
    races: Vec<String>,
    /// `SimDevices::race_action` (whose atomic copy lets the hot paths skip the lock when
    /// off), for what `report` does under the state's lock.
    race_action: RaceAction,
    next_handle: usize,
    /// Handles of destroyed streams, handed out again by the next streams made (most recent
    /// first), as the CUDA driver may: code that trusts a stale handle then meets another
    /// stream, and the race checker sees what it does with it.
    free_stream_handles: Vec<usize>,
    /// Tests turn handing out destroyed streams' handles again off (`reuse_stream_handles`):
    /// every stream made then gets a handle never seen before.
    fresh_stream_handles: bool,
    /// Bytes prefetched so far, for tests of the prefetch adaptor.
    prefetched_bytes: usize,
    /// Work that tests hold running (stream id, its tick): events after it have not completed
    /// until the test finishes it or the host waits for it.
    held_work: Vec<(usize, u64)>,
}

/// Simulated devices (`RMM_SIM_DEVICES=N[:BYTES]`): the backend that answers every driver call
/// of `Backend` with host memory and keeps the vector clocks the race checker compares. One per
/// process, behind `platform::simulator()`; tests also make their own with `new`.
pub struct SimDevices {
    capacities: Vec<usize>,
    used: Vec<Mutex<usize>>,
    state: Mutex<SimState>,
    race_action: AtomicU8,
    virtual_memory: Mutex<super::sim_vmm::VirtualMemory>,
    /// Memory allocations come from the host's allocator rather than the simulated address
    /// space (`RMM_SIM_HOST_MEMORY=malloc`): for AddressSanitizer, at the cost of replay.
    host_allocator: AtomicBool,
    calls: [AtomicU64; 4],
    /// Whether every device reaches every other's memory (`cuDeviceCanAccessPeer`), as on
    /// NVLink-connected GPUs; `RMM_SIM_PEER_ACCESS=off` makes none reach another, as GPUs
    /// on separate PCIe root complexes.
    peer_access: std::sync::atomic::AtomicBool,
    /// Nanoseconds every `vmm_set_access` takes before it applies (0: none), for tests that
    /// need another thread to act while a map grants access.
    set_access_delay: AtomicU64,
    /// The CUDA driver version the devices behave as (`RMM_SIM_DRIVER_VERSION`, default 13000):
    /// host memory pools from 12060, hardware decompression from 12080, managed memory pools
    /// from 13000.
    driver_version: std::sync::atomic::AtomicI32,
    /// Whether the devices reach pageable host memory (HMM or ATS); off unless
    /// `RMM_SIM_PAGEABLE_MEMORY_ACCESS=on`, as on most PCIe GPUs.
    pageable_memory_access: std::sync::atomic::AtomicBool,
}

/// How many of the driver calls that cost on a real GPU the simulated devices answered, for
/// tests that hold a path to none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DriverCalls {
    /// `cuStreamGetId`.
    pub stream_identity: u64,
    /// `cuEventRecord`.
    pub event_record: u64,
    /// `cuStreamWaitEvent`.
    pub stream_wait_event: u64,
    /// The host waiting for a stream, an event or the whole device.
    pub host_wait: u64,
}

#[derive(Clone, Copy)]
enum Call {
    StreamIdentity,
    EventRecord,
    StreamWaitEvent,
    HostWait,
}

thread_local! {
    static CURRENT_DEVICE: Cell<i32> = const { Cell::new(0) };
    /// Per-thread default stream ids, one per device, made on first use.
    static PER_THREAD_STREAMS: RefCell<HashMap<(usize, i32), usize>> = RefCell::new(HashMap::new());
}

fn sim_layout(bytes: usize) -> Option<Layout> {
    Layout::from_size_align(bytes, ALIGNMENT).ok()
}

impl SimDevices {
    /// `N[:BYTES]`: N devices of BYTES each (default 8 GiB).
    pub fn from_spec(spec: &str) -> Result<Self> {
        let bad = || Error::invalid(format!("RMM_SIM_DEVICES={spec:?}: expected N or N:BYTES, e.g. 2:8GiB (N from 1 to 64)"));
        let (count, capacity) = match spec.split_once(':') {
            Some((n, bytes)) => {
                let count = n.trim().parse::<usize>().map_err(|_| bad())?;
                let why = |why: crate::units::SizeError| Error::invalid(format!("RMM_SIM_DEVICES={spec:?}: {}", why.text(bytes.trim())));
                (count, crate::units::parse_size(bytes).map_err(why)?)
            }
            None => (spec.trim().parse::<usize>().map_err(|_| bad())?, DEFAULT_CAPACITY),
        };
        if !(1..=64).contains(&count) || capacity == 0 {
            return Err(bad());
        }
        let race_action = match std::env::var("RMM_SIM_ON_RACE").as_deref() {
            Ok("count") => RaceAction::Record,
            Ok("off") => RaceAction::Off,
            _ => RaceAction::Abort,
        };
        let simulated = Self::new(count, capacity, race_action);
        if matches!(std::env::var("RMM_SIM_HOST_MEMORY").as_deref(), Ok("malloc")) {
            simulated.host_allocator.store(true, Ordering::Relaxed);
        }
        if matches!(std::env::var("RMM_SIM_PEER_ACCESS").as_deref(), Ok("off" | "0" | "none")) {
            simulated.set_peer_access(false);
        }
        if matches!(std::env::var("RMM_SIM_PAGEABLE_MEMORY_ACCESS").as_deref(), Ok("on" | "1" | "yes" | "true")) {
            simulated.set_pageable_memory_access(true);
        }
        if let Ok(text) = std::env::var("RMM_SIM_DRIVER_VERSION") {
            let version = text.trim().parse::<i32>().ok().filter(|v| (12000..100000).contains(v));
            let version = version.ok_or_else(|| {
                Error::invalid(format!("RMM_SIM_DRIVER_VERSION={text:?}: expected a CUDA driver version of 12000 or more, e.g. 12080"))
            })?;
            simulated.set_driver_version(version);
        }
        Ok(simulated)
    }

    /// Makes every `vmm_set_access` from now on take `delay` before it applies, as a slow
    /// driver call would (zero: none).
    pub fn delay_set_access(&self, delay: std::time::Duration) {
        self.set_access_delay.store(delay.as_nanos() as u64, Ordering::Relaxed);
    }

    /// The CUDA driver version the devices behave as from now on (see `driver_version`).
    pub fn set_driver_version(&self, version: i32) {
        self.driver_version.store(version, Ordering::Relaxed);
    }

    /// Whether the devices reach pageable host memory from now on (see `pageable_memory_access`).
    pub fn set_pageable_memory_access(&self, on: bool) {
        self.pageable_memory_access.store(on, Ordering::Relaxed);
    }

    /// Whether `device` offers `capability`, as the driver version and the settings say;
    /// concurrent managed access is always there.
    pub fn supports(&self, device: i32, capability: Capability) -> Result<bool> {
        self.check_device(device)?;
        let version = self.driver_version.load(Ordering::Relaxed);
        Ok(match capability {
            Capability::PageableMemoryAccess => self.pageable_memory_access.load(Ordering::Relaxed),
            Capability::ManagedMemoryPools => version >= 13000,
            Capability::HostMemoryPools => version >= 12060,
            Capability::HwDecompress => version >= 12080,
        })
    }

    /// Whether devices reach each other's memory from now on (see `peer_access`).
    pub fn set_peer_access(&self, on: bool) {
        self.peer_access.store(on, Ordering::Relaxed);
    }

    /// Whether kernels on `device` reach memory of `owner`: always for its own, for another
    /// device as `set_peer_access` (or `RMM_SIM_PEER_ACCESS`) says. Nonexistent devices are errors.
    pub fn can_access_peer(&self, device: i32, owner: i32) -> Result<bool> {
        self.check_device(device)?;
        self.check_device(owner)?;
        Ok(device == owner || self.peer_access.load(Ordering::Relaxed))
    }

    /// "RMM-SIM-DEVICE" and the ordinal: the same in every process on simulated devices.
    pub fn device_uuid(&self, device: i32) -> Result<[u8; 16]> {
        self.check_device(device)?;
        let mut uuid = [0u8; 16];
        uuid[..14].copy_from_slice(b"RMM-SIM-DEVICE");
        uuid[14..].copy_from_slice(&(device as u16).to_be_bytes());
        Ok(uuid)
    }

    /// A simulated `cuIpcGetMemHandle`: the handle names the process and the allocation. It
    /// cannot be opened in another process (simulated `cuMemAlloc` memory is the exporting
    /// process's heap), which `ipc_open_mem_handle` says; memory of the virtual-memory API is
    /// a memory file and crosses processes (`vmm_export`).
    pub fn ipc_get_mem_handle(&self, device: i32, base: usize) -> Result<[u8; 64]> {
        let state = self.state.lock();
        match state.allocations.get(&base) {
            Some(a) if a.device == device && a.kind == MemoryKind::Device => {
                let mut handle = [0u8; 64];
                handle[..8].copy_from_slice(b"SIM-IPC\0");
                handle[8..12].copy_from_slice(&std::process::id().to_le_bytes());
                handle[16..24].copy_from_slice(&(base as u64).to_le_bytes());
                handle[24..32].copy_from_slice(&(a.size as u64).to_le_bytes());
                Ok(handle)
            }
            _ => Err(Error::invalid(format!("{base:#x} is not the start of a cuMemAlloc allocation of simulated device {device}"))),
        }
    }

    /// Refuses every handle, as simulated `cuMemAlloc` memory cannot cross processes: a handle
    /// made in this process is `InvalidArgument` (as the driver's CUDA_ERROR_INVALID_CONTEXT), one
    /// from another process `NotSupported`, with a message that points at virtual memory.
    pub fn ipc_open_mem_handle(&self, device: i32, handle: &[u8; 64]) -> Result<usize> {
        self.check_device(device)?;
        if &handle[..8] != b"SIM-IPC\0" {
            return Err(Error::invalid("not an IPC handle of simulated memory"));
        }
        let exporter = u32::from_le_bytes(handle[8..12].try_into().expect("4 bytes"));
        if exporter == std::process::id() {
            // The driver refuses it too (CUDA_ERROR_INVALID_CONTEXT).
            return Err(Error::invalid("an IPC handle cannot be opened in the process that made it"));
        }
        Err(Error::NotSupported(format!(
            "simulated cuMemAlloc memory lives in the heap of process {exporter}: on simulated devices only expandable (virtual-memory) memory can be opened in another process"
        )))
    }

    /// Always `InvalidArgument`: `ipc_open_mem_handle` never opens anything here, so no base
    /// can have come from it.
    pub fn ipc_close_mem_handle(&self, _device: i32, base: usize) -> Result<()> {
        Err(Error::invalid(format!("{base:#x} was not opened from an IPC handle")))
    }

    /// `count` devices of `capacity` bytes each, where a race found does what `race_action` says;
    /// devices reach each other's memory (peer access on) and `vmm_set_access` takes no time.
    /// Ignores the environment (`from_spec` reads it).
    pub fn new(count: usize, capacity: usize, race_action: RaceAction) -> Self {
        let mut state = SimState {
            next_handle: HANDLE_BASE,
            next_stream_id: count,
            forget_dead_at: DEAD_STREAMS_KEPT,
            race_action,
            ..Default::default()
        };
        for device in 0..count {
            // Stream id `device` is that device's legacy default stream.
            state
                .streams
                .insert(device, StreamState { device: device as i32, clock: VectorClock::default(), legacy: true, blocking: true });
        }
        log::info!("simulated devices: {count} of {capacity} bytes each");
        SimDevices {
            capacities: vec![capacity; count],
            used: (0..count).map(|_| Mutex::new(0)).collect(),
            state: Mutex::new(state),
            race_action: AtomicU8::new(race_action as u8),
            virtual_memory: Mutex::new(Default::default()),
            host_allocator: AtomicBool::new(false),
            calls: Default::default(),
            peer_access: std::sync::atomic::AtomicBool::new(true),
            set_access_delay: AtomicU64::new(0),
            driver_version: std::sync::atomic::AtomicI32::new(13000),
            pageable_memory_access: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn count(&self, call: Call) {
        self.calls[call as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// The costly driver calls answered so far (all threads).
    pub fn driver_calls(&self) -> DriverCalls {
        let read = |call: Call| self.calls[call as usize].load(Ordering::Relaxed);
        DriverCalls {
            stream_identity: read(Call::StreamIdentity),
            event_record: read(Call::EventRecord),
            stream_wait_event: read(Call::StreamWaitEvent),
            host_wait: read(Call::HostWait),
        }
    }

    /// The virtual-memory granularity of `device`: 2 MiB, as on current GPUs.
    pub fn vmm_granularity(&self, device: i32) -> Result<usize> {
        self.check_device(device)?;
        Ok(super::sim_vmm::GRANULARITY)
    }

    /// Reserves `size` bytes of address space (a multiple of the granularity), aligned to the
    /// granularity, with nothing mapped: touching it before a map faults, as on a GPU.
    pub fn vmm_reserve(&self, size: usize) -> Result<usize> {
        self.virtual_memory.lock().reserve(size)
    }

    /// Frees the reservation `[at, at + size)` made by `vmm_reserve`; refused while anything is
    /// mapped in it.
    pub fn vmm_free_reservation(&self, at: usize, size: usize) -> Result<()> {
        self.virtual_memory.lock().free_reservation(at, size)
    }

    /// Physical memory counts against the device from creation until it is released and
    /// unmapped everywhere.
    pub fn vmm_create(&self, device: i32, size: usize, handle_types: u32) -> Result<super::PhysicalMemory> {
        self.check_device(device)?;
        self.reserve_capacity(device, size)?;
        self.virtual_memory.lock().create(device, size, handle_types).inspect_err(|_| *self.used[device as usize].lock() -= size)
    }

    /// As a Linux driver without a fabric manager: POSIX file descriptors.
    pub fn vmm_exportable_types(&self, device: i32) -> Result<u32> {
        self.check_device(device)?;
        Ok(super::exportable_as::POSIX_FILE_DESCRIPTOR)
    }

    /// A new memory file descriptor for `handle`, which must have been created exportable as a
    /// POSIX file descriptor; the caller owns it, and another process imports it with
    /// `vmm_import`.
    pub fn vmm_export(&self, handle: super::PhysicalMemory) -> Result<std::os::fd::OwnedFd> {
        self.virtual_memory.lock().export(handle)
    }

    /// Physical memory of `device` from a descriptor `vmm_export` made, in this or another
    /// process: a handle of this process's own, released with `vmm_release`.
    pub fn vmm_import(&self, fd: std::os::fd::BorrowedFd<'_>, device: i32) -> Result<super::PhysicalMemory> {
        self.check_device(device)?;
        self.virtual_memory.lock().import(fd, device)
    }

    /// Releases `handle`; its bytes count against the device until the last map of it is gone
    /// as well.
    pub fn vmm_release(&self, handle: super::PhysicalMemory) -> Result<()> {
        let freed = self.virtual_memory.lock().release(handle)?;
        self.return_capacity(freed);
        Ok(())
    }

    /// Maps all `size` bytes of `handle` at `at`, inside a reservation and over nothing mapped.
    /// A new map is accessible from no device until `vmm_set_access`.
    pub fn vmm_map(&self, at: usize, size: usize, handle: super::PhysicalMemory) -> Result<()> {
        self.virtual_memory.lock().map(at, size, handle)
    }

    /// Unmapping memory that a stream freed before the host waited for that stream is a race:
    /// work enqueued before the free may still use it.
    pub fn vmm_unmap(&self, at: usize, size: usize) -> Result<()> {
        if self.race_action() != RaceAction::Off {
            let mut state = self.state.lock();
            let reports: Vec<String> = overlapping_releases(&state.releases, at, at + size)
                .into_iter()
                .filter(|(_, release)| state.host_clock.get(release.stream_id) < release.tick)
                .map(|(start, release)| {
                    format!(
                        "rmm-rs simulator: stream-ordering race on device {}: [{:#x}, {:#x}) was freed on stream {:#x} and \
                         unmapped before the host waited for that stream (event query, synchronization) after that free",
                        release.device,
                        start.max(at),
                        release.end.min(at + size),
                        release.stream_handle
                    )
                })
                .collect();
            forget_releases(&mut state.releases, at, at + size);
            self.report_races(&mut state, reports);
        }
        let freed = self.virtual_memory.lock().unmap(at, size)?;
        for each in freed {
            self.return_capacity(Some(each));
        }
        Ok(())
    }

    /// Grants `devices` read and write access to `[at, at + size)`, which must be wholly mapped.
    /// A device other than the memory's owner is refused when peer access is off. Takes the delay
    /// `delay_set_access` set before it applies.
    pub fn vmm_set_access(&self, at: usize, size: usize, devices: &[i32]) -> Result<()> {
        for &device in devices {
            self.check_device(device)?;
        }
        let delay = self.set_access_delay.load(Ordering::Relaxed);
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(delay));
        }
        let peers = self.peer_access.load(Ordering::Relaxed);
        self.virtual_memory.lock().set_access(at, size, devices, |device, owner| device == owner || peers)
    }

    /// Whether `device` may use `[at, at + size)` of virtual memory (mapped, with access set
    /// for it), for tests.
    pub fn vmm_accessible_from(&self, at: usize, size: usize, device: i32) -> bool {
        self.virtual_memory.lock().accessible_from(at, size, device) == Some(true)
    }

    /// Whether `[at, at + size)` is made of whole maps that each grant access to some device,
    /// for tests that check a map's access was set.
    pub fn vmm_is_accessible(&self, at: usize, size: usize) -> bool {
        self.virtual_memory.lock().is_accessible(at, size)
    }

    fn return_capacity(&self, freed: Option<(i32, usize)>) {
        if let Some((device, bytes)) = freed {
            *self.used[device as usize].lock() -= bytes;
        }
    }

    /// Changes what a race found from now on does (tests switch to `Record` to read
    /// `race_reports`).
    pub fn set_race_action(&self, action: RaceAction) {
        self.race_action.store(action as u8, Ordering::Relaxed);
        self.state.lock().race_action = action;
    }

    fn race_action(&self) -> RaceAction {
        match self.race_action.load(Ordering::Relaxed) {
            0 => RaceAction::Abort,
            1 => RaceAction::Record,
            _ => RaceAction::Off,
        }
    }

    /// The races found so far (in `Record` mode).
    pub fn race_reports(&self) -> Vec<String> {
        self.state.lock().races.clone()
    }

    /// How many devices were simulated (1 to 64); never fails.
    pub fn device_count(&self) -> Result<i32> {
        Ok(self.capacities.len() as i32)
    }

    /// The calling thread's current device (0 until `set_device`); never fails.
    pub fn current_device(&self) -> Result<i32> {
        Ok(CURRENT_DEVICE.with(Cell::get))
    }

    /// Makes `device` current for the calling thread; a nonexistent device is `InvalidArgument`.
    pub fn set_device(&self, device: i32) -> Result<()> {
        self.check_device(device)?;
        CURRENT_DEVICE.with(|c| c.set(device));
        Ok(())
    }

    fn check_device(&self, device: i32) -> Result<()> {
        if device < 0 || device as usize >= self.capacities.len() {
            return Err(Error::invalid(format!("simulated device {device} does not exist")));
        }
        Ok(())
    }

    fn reserve_capacity(&self, device: i32, bytes: usize) -> Result<()> {
        let capacity = self.capacities[device as usize];
        let mut used = self.used[device as usize].lock();
        if bytes > capacity - *used {
            return Err(Error::out_of_memory(bytes, format!("simulated device {device} has {} of {capacity} bytes in use", *used)));
        }
        *used += bytes;
        Ok(())
    }

    /// Host memory of `bytes` bytes, 256-byte aligned, standing in for memory of `kind` on
    /// `device`. Device and managed memory count against the device's capacity (out of memory
    /// beyond it); pinned host memory does not. Zero bytes is `InvalidArgument`.
    pub fn allocate(&self, device: i32, kind: MemoryKind, bytes: usize) -> Result<usize> {
        self.check_device(device)?;
        if bytes == 0 {
            return Err(Error::invalid("zero-byte platform allocation"));
        }
        let layout = sim_layout(bytes).ok_or_else(|| Error::out_of_memory(bytes, "larger than the address space"))?;
        let counts_against_device = kind != MemoryKind::PinnedHost;
        if counts_against_device {
            self.reserve_capacity(device, bytes)?;
        }
        let ptr = match self.place(bytes) {
            Some(ptr) => ptr,
            // SAFETY: `layout` has a non-zero size.
            None => (unsafe { std::alloc::alloc(layout) }) as usize,
        };
        if ptr == 0 {
            if counts_against_device {
                *self.used[device as usize].lock() -= bytes;
            }
            return Err(Error::out_of_memory(bytes, "the host could not back the simulated allocation"));
        }
        self.state.lock().allocations.insert(ptr, SimAllocation { size: bytes, device, kind });
        Ok(ptr)
    }

    /// Frees `ptr`, which must be the start of an allocation `allocate` made with the same
    /// `device` and `kind` (anything else is `InvalidArgument`, with nothing freed). Pending
    /// releases inside it are forgotten.
    pub fn free(&self, device: i32, kind: MemoryKind, ptr: usize) -> Result<()> {
        let mut state = self.state.lock();
        match state.allocations.get(&ptr) {
            Some(a) if a.kind == kind && a.device == device => {}
            Some(a) => {
                return Err(Error::invalid(format!(
                    "{ptr:#x} is {:?} memory of simulated device {}, freed as {kind:?} of device {device}",
                    a.kind, a.device
                )))
            }
            None => return Err(Error::invalid(format!("{ptr:#x} is not a simulated allocation"))),
        }
        let allocation = state.allocations.remove(&ptr).expect("looked up above");
        forget_releases(&mut state.releases, ptr, ptr + allocation.size);
        drop(state);
        if allocation.kind != MemoryKind::PinnedHost {
            *self.used[allocation.device as usize].lock() -= allocation.size;
        }
        if self.virtual_memory.lock().space.give_back(ptr, allocation.size.next_multiple_of(PAGE))? {
            return Ok(());
        }
        let layout = sim_layout(allocation.size).expect("layout was valid at allocation");
        // SAFETY: `ptr` was returned by `alloc` with this layout and is removed from the map,
        // so it is deallocated exactly once.
        unsafe { std::alloc::dealloc(ptr as *mut u8, layout) };
        Ok(())
    }

    /// Whole pages for an allocation of `bytes` from the simulated address space
    /// (`sim_address_space`: the same addresses every run), readable and writable; None when it
    /// has no room, or `RMM_SIM_HOST_MEMORY=malloc` asks for the host's allocator (whose
    /// redzones AddressSanitizer checks).
    fn place(&self, bytes: usize) -> Option<usize> {
        if self.host_allocator.load(Ordering::Relaxed) {
            return None;
        }
        let pages = bytes.next_multiple_of(PAGE);
        let mut virtual_memory = self.virtual_memory.lock();
        let at = virtual_memory.space.take(pages, PAGE)?;
        // SAFETY: the range was just taken from the simulator's own reservation, so nothing
        // else uses it; it becomes ordinary readable and writable memory.
        if unsafe { libc::mprotect(at as *mut libc::c_void, pages, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
            virtual_memory.space.give(at, pages);
            return None;
        }
        Some(at)
    }

    /// A simulated driver memory pool of `device`: only a handle, whose allocations are ordinary
    /// simulated memory of the pool's kind. `handle_types` other than POSIX file descriptors
    /// (bit 0) are `NotSupported`, as on a Linux driver without a fabric manager; so are managed
    /// or host pools and hardware decompression where the driver version has none (`supports`).
    pub fn mem_pool_create(&self, device: i32, props: &PoolProps) -> Result<MemPool> {
        self.check_device(device)?;
        // A simulated device exports as a Linux driver without a fabric manager does: POSIX
        // file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1) only.
        let handle_types = props.handle_types;
        if handle_types & !1 != 0 {
            return Err(Error::NotSupported(format!(
                "simulated device {device} exports pool memory as POSIX file descriptors only (handle types {handle_types:#x} asked)"
            )));
        }
        let version = self.driver_version.load(Ordering::Relaxed);
        let needs = match props.kind {
            MemoryKind::Managed => Some((Capability::ManagedMemoryPools, "managed memory pools need a CUDA 13 driver")),
            MemoryKind::PinnedHost => Some((Capability::HostMemoryPools, "host memory pools need a CUDA 12.6 driver")),
            MemoryKind::Device => None,
        };
        let decompress = props.hw_decompress.then_some((Capability::HwDecompress, "hardware decompression needs a CUDA 12.8 driver"));
        for (capability, why) in needs.into_iter().chain(decompress) {
            if !self.supports(device, capability)? {
                return Err(Error::NotSupported(format!("simulated device {device} behaves as driver {version}: {why}")));
            }
        }
        let mut state = self.state.lock();
        let handle = state.new_handle();
        state.pools.insert(handle, SimPool { device, kind: props.kind, imported: false });
        Ok(MemPool(handle))
    }

    /// The default managed pool of `device`, made on first use.
    pub fn default_managed_pool(&self, device: i32) -> Result<MemPool> {
        self.check_device(device)?;
        let mut state = self.state.lock();
        if let Some(&handle) = state.default_managed_pools.get(&device) {
            return Ok(MemPool(handle));
        }
        let handle = state.new_handle();
        state.pools.insert(handle, SimPool { device, kind: MemoryKind::Managed, imported: false });
        state.default_managed_pools.insert(device, handle);
        Ok(MemPool(handle))
    }

    /// `InvalidArgument` unless `pool` is a live simulated pool; `NotSupported` for an imported
    /// one, from which the driver allocates nothing.
    pub fn mem_pool_check(&self, _device: i32, pool: MemPool) -> Result<()> {
        match self.state.lock().pools.get(&pool.0) {
            None => Err(Error::invalid(format!("{:#x} is not a memory pool (or one already destroyed)", pool.0))),
            Some(p) if p.imported => Err(Error::NotSupported(format!(
                "memory pool {:#x} (of device {}) was imported from another process: the driver allocates nothing from an imported pool (cudaMemPoolImportPointer maps the exporter's allocations)",
                pool.0, p.device
            ))),
            Some(_) => Ok(()),
        }
    }

    /// A simulated `cuMemPoolExportToShareableHandle` + `cuMemPoolImportFromShareableHandle`:
    /// a new handle, in this process, of the pool `pool` stands for as another process
    /// imports it (it allocates nothing; `mem_pool_check` refuses it).
    pub fn mem_pool_import(&self, pool: MemPool) -> Result<MemPool> {
        let mut state = self.state.lock();
        let exported = *state.pools.get(&pool.0).ok_or_else(|| Error::invalid(format!("{:#x} is not a simulated memory pool", pool.0)))?;
        let handle = state.new_handle();
        state.pools.insert(handle, SimPool { imported: true, ..exported });
        Ok(MemPool(handle))
    }

    /// Destroys `pool`; a handle that is not a live simulated pool is `InvalidArgument`, and a
    /// default pool cannot be destroyed (as the driver refuses).
    pub fn mem_pool_destroy(&self, _device: i32, pool: MemPool) -> Result<()> {
        let mut state = self.state.lock();
        if state.default_managed_pools.values().any(|&handle| handle == pool.0) {
            return Err(Error::invalid(format!("{:#x} is a device's default memory pool, which is never destroyed", pool.0)));
        }
        match state.pools.remove(&pool.0) {
            Some(_) => Ok(()),
            None => Err(Error::invalid(format!("{:#x} is not a simulated memory pool", pool.0))),
        }
    }

    /// Checks `pool` is live and does nothing else: simulated pools keep no memory to trim.
    pub fn mem_pool_trim(&self, _device: i32, pool: MemPool, _keep: usize) -> Result<()> {
        match self.state.lock().pools.contains_key(&pool.0) {
            true => Ok(()),
            false => Err(Error::invalid(format!("{:#x} is not a simulated memory pool", pool.0))),
        }
    }

    /// Memory of the pool's kind from `pool` in the order of `stream` (a stream of `device`):
    /// the stream's clock ticks, then as `allocate`. An imported pool allocates nothing.
    pub fn allocate_from_pool(&self, device: i32, pool: MemPool, bytes: usize, stream: Stream) -> Result<usize> {
        let kind = {
            let mut state = self.state.lock();
            let Some(found) = state.pools.get(&pool.0).copied() else {
                return Err(Error::invalid(format!("{:#x} is not a simulated memory pool", pool.0)));
            };
            if found.imported {
                return Err(Error::invalid(format!("memory pool {:#x} was imported: nothing is allocated from an imported pool", pool.0)));
            }
            let id = state.resolve_stream_on(stream, device, "cuMemAllocFromPoolAsync")?;
            state.enqueue(id);
            found.kind
        };
        self.allocate(device, kind, bytes)
    }

    /// Frees `ptr` to its pool in the order of `stream`: the stream's clock ticks, then as
    /// `free` (with the kind the allocation has). The memory is freed at once (simulated work
    /// is done when enqueued).
    pub fn free_to_pool(&self, device: i32, _pool: MemPool, ptr: usize, stream: Stream) -> Result<()> {
        let kind = {
            let mut state = self.state.lock();
            let id = state.resolve_stream_on(stream, device, "cuMemFreeAsync")?;
            state.enqueue(id);
            state.allocations.get(&ptr).map_or(MemoryKind::Device, |a| a.kind)
        };
        self.free(device, kind, ptr)
    }

    /// Records the preferred location of system memory `[ptr, ptr + bytes)`: on a device, its
    /// bytes count against the device's capacity (as pages the driver moves there would) while
    /// there is room; on the host, nothing. Devices without pageable memory access refuse
    /// it, as the driver does.
    pub fn advise_preferred_location(&self, ptr: usize, bytes: usize, device: Option<i32>) -> Result<()> {
        let asked = device.unwrap_or(0);
        self.check_device(asked)?;
        if !self.supports(asked, Capability::PageableMemoryAccess)? {
            return Err(Error::invalid(format!("simulated device {asked} has no pageable memory access: {ptr:#x} cannot be advised")));
        }
        self.forget_advice(ptr, bytes);
        if let Some(device) = device {
            if self.reserve_capacity(device, bytes).is_ok() {
                self.state.lock().advised.insert(ptr, (device, bytes));
            }
        }
        Ok(())
    }

    /// Forgets what was advised inside `[ptr, ptr + bytes)` (freed system memory).
    pub fn forget_advice(&self, ptr: usize, bytes: usize) {
        let mut state = self.state.lock();
        let starts: Vec<usize> = state.advised.range(ptr..ptr.saturating_add(bytes)).map(|(&at, _)| at).collect();
        let released: Vec<(i32, usize)> = starts.iter().filter_map(|at| state.advised.remove(at)).collect();
        drop(state);
        for (device, size) in released {
            *self.used[device as usize].lock() -= size;
        }
    }

    /// (free, total) bytes of `device`: its capacity, less what device and managed allocations
    /// and physical memory hold.
    pub fn mem_get_info(&self, device: i32) -> Result<(usize, usize)> {
        self.check_device(device)?;
        let capacity = self.capacities[device as usize];
        Ok((capacity - *self.used[device as usize].lock(), capacity))
    }

    /// Checks that `[ptr, ptr + bytes)` lies in one managed allocation and counts the bytes for
    /// `prefetched_bytes`; anything else is `InvalidArgument`, as the driver's
    /// CUDA_ERROR_INVALID_VALUE. Nothing moves: the host holds all simulated memory.
    pub fn prefetch(&self, device: i32, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.check_device(device)?;
        let mut state = self.state.lock();
        state.resolve_stream_on(stream, device, "cuMemPrefetchAsync")?;
        match state.containing(ptr) {
            Some((base, a)) if a.kind == MemoryKind::Managed && ptr + bytes <= base + a.size => {
                state.prefetched_bytes += bytes;
                Ok(())
            }
            _ => Err(Error::invalid(format!("{ptr:#x}..+{bytes} is not managed memory"))),
        }
    }

    /// The simulated allocation that holds `ptr`: its device and kind; None outside every one
    /// (virtual memory mappings included). Read only, for rmmSimGetPointerAttributes.
    pub fn pointer_kind(&self, ptr: usize) -> Option<(i32, MemoryKind)> {
        self.state.lock().containing(ptr).map(|(_, a)| (a.device, a.kind))
    }

    /// Bytes prefetched so far on all devices.
    pub fn prefetched_bytes(&self) -> usize {
        self.state.lock().prefetched_bytes
    }

    /// (base, size) of the simulated allocation that contains `ptr`; `InvalidArgument` when none
    /// does.
    pub fn address_range(&self, _device: i32, ptr: usize) -> Result<(usize, usize)> {
        let state = self.state.lock();
        state
            .containing(ptr)
            .map(|(base, a)| (base, a.size))
            .ok_or_else(|| Error::invalid(format!("{ptr:#x} is not inside a simulated allocation")))
    }

    /// Copies at once, as the work of `stream` (whose clock ticks). A range that starts or ends
    /// inside a simulated allocation must lie wholly inside it; virtual memory must be mapped
    /// with access for the stream's device, else `InvalidArgument` as on a GPU.
    pub fn copy_async(&self, device: i32, dst: usize, src: usize, bytes: usize, stream: Stream) -> Result<()> {
        let mut state = self.state.lock();
        let id = state.resolve_stream_on(stream, device, "cuMemcpyAsync")?;
        // A range inside a simulated allocation is device memory and must lie wholly inside it;
        // a range outside every simulated allocation is host memory, as with unified addressing
        // (the caller vouches for it, as the driver's callers do).
        for (what, ptr) in [("destination", dst), ("source", src)] {
            let end = ptr.checked_add(bytes).ok_or_else(|| Error::invalid(format!("copy {what} {ptr:#x}+{bytes} wraps")))?;
            let starts_inside = state.containing(ptr);
            let ends_inside = bytes > 0 && state.containing(end - 1).is_some();
            match starts_inside {
                Some((base, a)) if end <= base + a.size => {}
                None if !ends_inside => {}
                _ => return Err(Error::invalid(format!("copy {what} {ptr:#x}+{bytes} straddles the end of simulated memory"))),
            }
        }
        // Virtual memory is usable from a device only where access was granted to it: a copy
        // on a stream of device 1 from memory that device 0 mapped without access for device
        // 1 fails on a GPU ("invalid argument"), although both see the same host bytes here.
        let stream_device = state.streams.get(&id).map_or(device, |s| s.device);
        for (what, ptr) in [("destination", dst), ("source", src)] {
            if self.virtual_memory.lock().accessible_from(ptr, bytes, stream_device) == Some(false) {
                return Err(Error::invalid(format!(
                    "copy {what} {ptr:#x}+{bytes}: virtual memory not mapped with access for device {stream_device} (cuMemSetAccess)"
                )));
            }
        }
        state.enqueue(id);
        // SAFETY: device ranges lie inside live simulated allocations (checked above, under the
        // lock that also guards their deallocation); host ranges are the caller's, promised
        // valid for `bytes`; `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
        Ok(())
    }

    /// A new stream of `device` that synchronizes with the legacy default stream, as
    /// `cudaStreamCreate`'s default.
    pub fn stream_create(&self, device: i32) -> Result<Stream> {
        self.stream_create_with_flags(device, false)
    }

    /// A new stream of `device` that synchronizes with the legacy default stream unless
    /// `non_blocking`, as `cudaStreamCreateWithFlags`. Its handle may be one a destroyed stream
    /// had, as the driver may reuse them.
    pub fn stream_create_with_flags(&self, device: i32, non_blocking: bool) -> Result<Stream> {
        self.check_device(device)?;
        let mut state = self.state.lock();
        let reused = match state.fresh_stream_handles {
            true => None,
            false => state.free_stream_handles.pop(),
        };
        let handle = reused.unwrap_or_else(|| state.new_handle());
        let id = state.add_stream(device, !non_blocking);
        state.stream_handles.insert(handle, id);
        Ok(Stream(handle))
    }

    /// Whether `stream` synchronizes with the legacy default stream (for tests).
    pub fn stream_blocking(&self, stream: Stream) -> Result<bool> {
        let mut state = self.state.lock();
        let id = state.lookup_stream(stream)?;
        Ok(state.streams[&id].blocking)
    }

    /// Whether streams made from now on get handles of destroyed streams again (the default, as
    /// the CUDA driver often does) or only handles never seen before (as it may too).
    pub fn reuse_stream_handles(&self, on: bool) {
        self.state.lock().fresh_stream_handles = !on;
    }

    /// An identity unique to this stream for the process's life, even when its handle is reused
    /// (counted as a `cuStreamGetId` call); never 0, which `Backend` keeps for the legacy default
    /// stream.
    pub fn stream_identity(&self, stream: Stream) -> Result<u64> {
        self.count(Call::StreamIdentity);
        Ok(self.state.lock().resolve_stream(stream, "cuStreamGetId")? as u64 + 1)
    }

    /// `stream_identity` for the suballocators' sweep of unannounced streams, which runs on
    /// simulated devices only and asks on purpose about handles that may name no stream any
    /// more: answered without reporting a stale handle (a GPU never gets this question).
    pub fn stream_identity_for_sweep(&self, stream: Stream) -> Result<u64> {
        self.count(Call::StreamIdentity);
        Ok(self.state.lock().lookup_stream(stream)? as u64 + 1)
    }

    /// The device whose stream `stream` is; an unknown handle is `InvalidArgument`.
    pub fn stream_device(&self, stream: Stream) -> Result<i32> {
        let mut state = self.state.lock();
        let id = state.resolve_stream(stream, "cuStreamGetCtx")?;
        Ok(state.stream(id).device)
    }

    /// Destroys a stream `stream_create` made; its enqueued work still counts for a later device
    /// synchronization. Its handle may be handed to the next stream created.
    pub fn stream_destroy(&self, stream: Stream) -> Result<()> {
        let mut state = self.state.lock();
        let Some(id) = state.stream_handles.remove(&stream.0) else {
            state.stale_handle(stream.0, "cuStreamDestroy");
            return Err(Error::invalid(format!("stream {:#x} is not a live created stream", stream.0)));
        };
        state.free_stream_handles.push(stream.0);
        if let Some(destroyed) = state.streams.remove(&id) {
            state.retired_clocks.entry(destroyed.device).or_default().join(&destroyed.clock);
            state.dead_streams.push(id);
            if state.dead_streams.len() >= state.forget_dead_at {
                state.forget_dead_streams();
            }
        }
        Ok(())
    }

    /// The host waits for all work enqueued on `stream` so far (counted as a host wait): the
    /// host's clock joins the stream's, and held work on it finishes.
    pub fn stream_synchronize(&self, stream: Stream) -> Result<()> {
        self.count(Call::HostWait);
        let mut state = self.state.lock();
        let id = state.resolve_stream(stream, "cuStreamSynchronize")?;
        let clock = state.stream(id).clock.clone();
        state.host_clock.join(&clock);
        state.finish_waited_work();
        Ok(())
    }

    /// The host waits for all work on every stream of `device`.
    pub fn device_synchronize(&self, device: i32) -> Result<()> {
        self.check_device(device)?;
        self.count(Call::HostWait);
        let mut state = self.state.lock();
        let mut clock = state.host_clock.clone();
        for stream in state.streams.values().filter(|s| s.device == device) {
            clock.join(&stream.clock);
        }
        if let Some(retired) = state.retired_clocks.get(&device) {
            clock.join(retired);
        }
        state.host_clock = clock;
        state.finish_waited_work();
        Ok(())
    }

    /// A new event of `device`, recorded nowhere yet (waiting for it waits for nothing).
    pub fn event_create(&self, device: i32) -> Result<Event> {
        self.check_device(device)?;
        let mut state = self.state.lock();
        let handle = state.new_handle();
        state.events.insert(handle, (device, VectorClock::default()));
        Ok(Event(handle))
    }

    /// Destroys `event`; a handle that is not a live simulated event is `InvalidArgument`.
    pub fn event_destroy(&self, event: Event) -> Result<()> {
        match self.state.lock().events.remove(&event.0) {
            Some(_) => Ok(()),
            None => Err(Error::invalid(format!("{:#x} is not a live simulated event", event.0))),
        }
    }

    /// Records `event` at the current end of `stream` (a stream of `device`): waiting for the
    /// event from then on waits for all work enqueued there so far.
    pub fn event_record(&self, device: i32, event: Event, stream: Stream) -> Result<()> {
        self.count(Call::EventRecord);
        let mut state = self.state.lock();
        let id = state.resolve_stream_on(stream, device, "cuEventRecord")?;
        if !state.events.contains_key(&event.0) {
            return Err(Error::invalid(format!("{:#x} is not a live simulated event", event.0)));
        }
        state.enqueue(id);
        let clock = state.stream(id).clock.clone();
        state.events.get_mut(&event.0).expect("checked above").1 = clock;
        Ok(())
    }

    /// Simulated work is done as soon as it is enqueued, unless a test holds it running
    /// (`stream_hold`): a query of an event after no held work orders the host after the
    /// event, as a synchronization does.
    pub fn event_query(&self, event: Event) -> Result<bool> {
        let mut state = self.state.lock();
        let clock = state.event_clock(event)?;
        if state.held_work.iter().any(|&(id, tick)| clock.get(id) >= tick) {
            return Ok(false);
        }
        state.host_clock.join(&clock);
        Ok(true)
    }

    /// The host waits for the event, held work before it included (which then finishes).
    pub fn event_synchronize(&self, event: Event) -> Result<()> {
        self.count(Call::HostWait);
        let mut state = self.state.lock();
        let clock = state.event_clock(event)?;
        state.host_clock.join(&clock);
        state.finish_waited_work();
        Ok(())
    }

    /// For tests: work on `stream` that keeps running (events recorded after it do not
    /// complete) until `stream_finish_held` or a host synchronization that waits for it, as a
    /// long kernel would.
    pub fn stream_hold(&self, stream: Stream) -> Result<()> {
        let mut state = self.state.lock();
        let id = state.lookup_stream(stream)?;
        let tick = state.enqueue(id);
        state.held_work.push((id, tick));
        Ok(())
    }

    /// Lets the work `stream_hold` started on `stream` finish.
    pub fn stream_finish_held(&self, stream: Stream) -> Result<()> {
        let mut state = self.state.lock();
        let id = state.lookup_stream(stream)?;
        state.held_work.retain(|&(held, _)| held != id);
        Ok(())
    }

    /// Makes later work on `stream` (of `device`) wait for `event`'s last record: the stream's
    /// clock joins the event's. This is the ordering edge the race checker looks for.
    pub fn stream_wait_event(&self, device: i32, stream: Stream, event: Event) -> Result<()> {
        self.count(Call::StreamWaitEvent);
        let mut state = self.state.lock();
        let id = state.resolve_stream_on(stream, device, "cuStreamWaitEvent")?;
        let clock = state
            .events
            .get(&event.0)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| Error::invalid(format!("{:#x} is not a live simulated event", event.0)))?;
        state.stream_mut(id).clock.join(&clock);
        state.enqueue(id);
        Ok(())
    }

    /// Records that a suballocator freed `[ptr, ptr + bytes)` in the order of `stream`, for
    /// `note_acquired` to check against; `platform::note_released` calls it. Nothing when races
    /// are off; an unknown stream is logged and ignored.
    pub fn note_released(&self, device: i32, ptr: usize, bytes: usize, stream: Stream) {
        if self.race_action() == RaceAction::Off {
            return;
        }
        let mut state = self.state.lock();
        let Ok(id) = state.lookup_stream_on(stream, device) else {
            log::warn!("simulator: release of {ptr:#x} on unknown stream {:#x}", stream.0);
            return;
        };
        let tick = state.enqueue(id);
        forget_releases(&mut state.releases, ptr, ptr + bytes);
        state.releases.insert(ptr, Release { end: ptr + bytes, device, stream_id: id, stream_handle: stream.0, tick });
    }

    /// Checks a suballocator's hand-out of `[ptr, ptr + bytes)` on `stream` against the
    /// releases recorded inside it: one on another stream that `stream` has not waited for
    /// (event wait or synchronization) is a stream-ordering race, reported as `RaceAction` says.
    pub fn note_acquired(&self, device: i32, ptr: usize, bytes: usize, stream: Stream) {
        if self.race_action() == RaceAction::Off {
            return;
        }
        let mut state = self.state.lock();
        let Ok(id) = state.lookup_stream_on(stream, device) else {
            log::warn!("simulator: acquisition of {ptr:#x} on unknown stream {:#x}", stream.0);
            return;
        };
        state.enqueue(id);
        let end = ptr + bytes;
        let overlapping: Vec<(usize, Release)> = overlapping_releases(&state.releases, ptr, end);
        let mut reports = Vec::new();
        for (start, release) in &overlapping {
            let ordered = release.stream_id == id || state.stream(id).clock.get(release.stream_id) >= release.tick;
            if !ordered {
                reports.push(format!(
                    "rmm-rs simulator: stream-ordering race on device {device}: [{:#x}, {:#x}) was freed on \
                     stream {:#x} and handed out on stream {:#x} (device {}) with no ordering edge (event \
                     wait or synchronization) after that free",
                    (*start).max(ptr),
                    release.end.min(end),
                    release.stream_handle,
                    stream.0,
                    release.device
                ));
            }
        }
        forget_releases(&mut state.releases, ptr, end);
        self.report_races(&mut state, reports);
    }

    fn report_races(&self, state: &mut SimState, reports: Vec<String>) {
        if reports.is_empty() {
            return;
        }
        for report in reports {
            state.report(report);
        }
    }
}

impl SimState {
    fn event_clock(&self, event: Event) -> Result<VectorClock> {
        self.events
            .get(&event.0)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| Error::invalid(format!("{:#x} is not a live simulated event", event.0)))
    }

    /// Held work the host has waited for is done.
    fn finish_waited_work(&mut self) {
        let host = &self.host_clock;
        self.held_work.retain(|&(id, tick)| host.get(id) < tick);
    }

    fn new_handle(&mut self) -> usize {
        let handle = self.next_handle;
        self.next_handle += 0x10;
        handle
    }

    fn add_stream(&mut self, device: i32, blocking: bool) -> usize {
        let id = self.next_stream_id;
        self.next_stream_id += 1;
        self.streams.insert(id, StreamState { device, clock: VectorClock::default(), legacy: false, blocking });
        id
    }

    fn stream(&self, id: usize) -> &StreamState {
        self.streams.get(&id).expect("resolved streams are live")
    }

    fn stream_mut(&mut self, id: usize) -> &mut StreamState {
        self.streams.get_mut(&id).expect("resolved streams are live")
    }

    /// Drops destroyed streams from every clock once nothing compares against them: no free
    /// made on them waits to be checked (`releases`) and no held work of theirs runs. What a
    /// clock knows of a stream is only ever compared with that stream's frees and held work, so
    /// the checks stay the same; without this, clocks grow with every stream ever made (a
    /// program that makes a stream per request). Amortized: runs when the dead streams kept
    /// have doubled.
    fn forget_dead_streams(&mut self) {
        let compared: HashSet<usize> =
            self.releases.values().map(|release| release.stream_id).chain(self.held_work.iter().map(|&(id, _)| id)).collect();
        let (kept, gone): (Vec<usize>, Vec<usize>) = self.dead_streams.iter().partition(|id| compared.contains(id));
        let gone: HashSet<usize> = gone.into_iter().collect();
        if !gone.is_empty() {
            let clocks = self.streams.values_mut().map(|stream| &mut stream.clock);
            let events = self.events.values_mut().map(|(_, clock)| clock);
            for clock in clocks.chain(events).chain(self.retired_clocks.values_mut()).chain([&mut self.host_clock]) {
                clock.forget(&gone);
            }
        }
        self.forget_dead_at = (2 * kept.len()).max(DEAD_STREAMS_KEPT);
        self.dead_streams = kept;
    }

    fn containing(&self, ptr: usize) -> Option<(usize, &SimAllocation)> {
        self.allocations.range(..=ptr).next_back().filter(|(base, a)| ptr < *base + a.size).map(|(base, a)| (*base, a))
    }

    /// Maps a stream handle that `call`, a driver call, is handed to its id: 0 and 1 are the
    /// current device's legacy default stream, 2 this thread's per-thread default stream,
    /// anything else a created stream. A handle that names no live stream is `InvalidArgument`,
    /// reported as a stale handle first (`stale_handle`).
    fn resolve_stream(&mut self, stream: Stream, call: &str) -> Result<usize> {
        self.resolve_stream_on(stream, CURRENT_DEVICE.with(Cell::get), call)
    }

    /// As `resolve_stream` for an operation on `device`, whose context the default streams
    /// then belong to (the CUDA backend makes that device's context current for it).
    fn resolve_stream_on(&mut self, stream: Stream, device: i32, call: &str) -> Result<usize> {
        self.lookup_stream_on(stream, device).inspect_err(|_| {
            self.stale_handle(stream.0, call);
        })
    }

    /// `resolve_stream` for the simulator's own bookkeeping and tests' helpers, which are no
    /// driver calls: an unknown handle is only `InvalidArgument`.
    fn lookup_stream(&mut self, stream: Stream) -> Result<usize> {
        self.lookup_stream_on(stream, CURRENT_DEVICE.with(Cell::get))
    }

    /// `lookup_stream` for an operation on `device`.
    fn lookup_stream_on(&mut self, stream: Stream, device: i32) -> Result<usize> {
        match stream {
            Stream::DEFAULT | Stream::LEGACY => Ok(device as usize),
            Stream::PER_THREAD => {
                let key = (self as *const SimState as usize, device);
                if let Ok(Some(id)) = PER_THREAD_STREAMS.try_with(|m| m.borrow().get(&key).copied()) {
                    return Ok(id);
                }
                let id = self.add_stream(device, true);
                let _ = PER_THREAD_STREAMS.try_with(|m| m.borrow_mut().insert(key, id));
                Ok(id)
            }
            Stream(handle) => {
                self.stream_handles.get(&handle).copied().ok_or_else(|| Error::invalid(format!("stream {handle:#x} is not a live stream")))
            }
        }
    }

    /// The driver call `call` was handed `handle`, which names no live stream (never made, or
    /// destroyed): the simulator answers with an error, but a CUDA driver may crash the
    /// process (one did, on an H200, asked about the handles of streams destroyed long ago).
    /// Reported as a race is (`RaceAction`: abort, or counted), so that every test catches
    /// rmm-rs handing the driver a handle it cannot vouch for.
    fn stale_handle(&mut self, handle: usize, call: &str) {
        let what = match (HANDLE_BASE..self.next_handle).contains(&handle) {
            true => "destroyed",
            false => "never made",
        };
        let report = format!(
            "rmm-rs simulator: stale stream handle: {call} was handed {handle:#x}, which names no live stream ({what}); a CUDA \
             driver may crash on it"
        );
        self.report(report);
    }

    /// A race or a stale handle found: aborts the process (`RaceAction::Abort`, as a sanitizer
    /// does), else logs and keeps the report (`rmmSimGetRaceCount`, `race_reports`).
    fn report(&mut self, report: String) {
        match self.race_action {
            RaceAction::Abort => {
                eprintln!("{report}\nrmm-rs simulator: aborting (set RMM_SIM_ON_RACE=count to count such reports instead)");
                std::process::abort();
            }
            RaceAction::Record | RaceAction::Off => {
                log::error!("{report}");
                self.races.push(report);
            }
        }
    }

    /// Orders a new operation on stream `id` after what the host has synchronized with and,
    /// per the legacy default stream's rules, after prior work it implicitly waits for.
    /// Returns the operation's tick on its stream.
    fn enqueue(&mut self, id: usize) -> u64 {
        let mut clock = self.stream(id).clock.clone();
        clock.join(&self.host_clock);
        let this = self.stream(id);
        let device = this.device;
        if this.legacy {
            for other in self.streams.values().filter(|s| s.blocking && s.device == device) {
                clock.join(&other.clock);
            }
        } else if this.blocking {
            clock.join(&self.stream(device as usize).clock);
        }
        let tick = clock.tick(id);
        self.stream_mut(id).clock = clock;
        tick
    }
}

fn overlapping_releases(releases: &BTreeMap<usize, Release>, start: usize, end: usize) -> Vec<(usize, Release)> {
    releases.range(..end).rev().take_while(|(_, r)| r.end > start).map(|(s, r)| (*s, r.clone())).collect()
}

/// Drops the parts of pending releases inside `[start, end)`, keeping what lies outside.
fn forget_releases(releases: &mut BTreeMap<usize, Release>, start: usize, end: usize) {
    for (s, r) in overlapping_releases(releases, start, end) {
        releases.remove(&s);
        if s < start {
            releases.insert(s, Release { end: start, ..r.clone() });
        }
        if r.end > end {
            releases.insert(end, r);
        }
    }
}
