//! The shadow-model fuzzer of the C API (see tests/fuzz/mod.rs), one thread, two simulated
//! devices (RMM_FUZZ_DEVICES=1: one) with the current device switched between calls, the race
//! checker counting: seeds one after another until the budget is spent.
//!   RMM_FUZZ_CALLS=5000000 cargo test --release --test fuzz_api -- --nocapture
//!
//! A run replays: the same environment (first seed, budget, devices) makes the same calls and
//! gets the same answers, seed by seed (the simulated devices place memory the same way every
//! run, and the fuzzer chooses among blocks by age, not address). RMM_FUZZ_TRACE=1 prints each
//! seed's steps, calls and a digest of its answers. A seed's run depends on the seeds before it
//! in the process (legacy RMM finalized or not, stream identities): replay a failure with the
//! environment it ran in, and RMM_FUZZ_STEPS to stop early.
//!
//! Streams: allocations and frees name the NULL stream or a live stream of the memory's device
//! mostly, now and then a live stream of the other device, and now and then a handle that
//! names no live stream (made up, or destroyed), which must never reach the driver (issue 51:
//! the simulator reports any that does, with the races). A resource that does not order memory
//! by stream (cuda, managed, and adaptors over them) takes such a handle, at allocations and
//! frees, with one device or two. A stream-ordered one asks the driver about a handle rmm-rs
//! does not know, so it gets one only in the seeds run with `registered_streams` (odd seeds),
//! where it refuses it without asking. A block is freed now and then on the stream it was
//! allocated on: that must work with either device current.
//!
//! Sleep and wake (rmmResourceSleep, rmmResourceWake, rmmResourceIsAsleep, rmmDeviceSleep,
//! rmmDeviceWake) on any handle or a device's current resource, in both modes: the model knows
//! which expandable resources sleep. An allocation whose memory can only come from a sleeping
//! one is refused (RMM_ERROR_INVALID_ARGUMENT, "asleep"), one that may is refused or served;
//! frees are taken; a stack over no expandable resource answers RMM_ERROR_NOT_SUPPORTED.
//! Nothing reads a block whose memory may sleep (its pages are unmapped); once awake again, a
//! kept block holds its stamp, a discarded one is stamped anew. Each expandable resource has a
//! hidden statistics adaptor over it (a probe) to ask whether it sleeps after a wake ran out of
//! memory. At a seed's end sleeping resources are woken half the time, else their blocks are
//! freed and they are destroyed asleep.

mod fuzz;

use fuzz::*;
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::*;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};

/// The simulated devices (RMM_FUZZ_DEVICES, 1 or 2; 2 by default).
fn devices() -> i32 {
    static DEVICES: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *DEVICES.get_or_init(|| match std::env::var("RMM_FUZZ_DEVICES").as_deref() {
        Ok("1") => 1,
        Ok("2") | Err(_) => 2,
        Ok(other) => panic!("RMM_FUZZ_DEVICES={other}: 1 or 2"),
    })
}

/// A sleep in keep mode only where the expandable resources hold at most this much.
const KEEP_AT_MOST: usize = 4 << 20;

/// Sleeps (in keep mode, in discard mode) and wakes that succeeded, over all seeds.
static SLEEPS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
static WAKES: AtomicU64 = AtomicU64::new(0);

/// Handles that never name a stream (the simulator's are large numbers): made up.
const MADE_UP_STREAMS: [usize; 4] = [0x3, 0x4, 0x1234, 0xdead_beef];
/// Live bytes the fuzzer keeps at most on each device (of 1 GiB; of 2 GiB alone).
const LIVE_LIMIT: usize = 192 << 20;

/// What the stream an allocation names is to the memory's device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// NULL or a live stream of the device.
    Own,
    /// A live stream of the other device.
    OtherDevice,
    /// A handle that names no live stream: made up, or destroyed.
    NotLive,
}

enum Legacy {
    Implicit,
    /// The nodes rmmInitialize replaced, to be restored by rmmFinalize.
    Initialized(Vec<(i32, usize)>),
    Finalized,
}

/// How a sleeping expandable resource went to sleep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Keep,
    Discard,
}

/// Whether an allocation's memory comes from a sleeping resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sleeping {
    /// From no sleeping resource.
    No,
    /// Perhaps (a binning resource's bins or a pool's chunks may come from several).
    Maybe,
    /// Only from sleeping resources: it is refused.
    Yes,
}

struct Buffer {
    handle: rmmDeviceBuffer_t,
    node: usize,
    /// Data pointer (0 when empty), size and capacity.
    ptr: usize,
    size: usize,
    /// The stream the buffer is freed on.
    stream: cudaStream_t,
}

struct World {
    rng: Rng,
    model: Model,
    /// Live handles: (handle, node); several may name one node.
    handles: Vec<(rmmResource_t, usize)>,
    dead_handles: Vec<rmmResource_t>,
    buffers: Vec<Buffer>,
    dead_buffers: Vec<rmmDeviceBuffer_t>,
    /// Each device's current resource, as a node.
    current: Vec<usize>,
    /// A handle to each device's original resource, to put it back at the end.
    defaults: Vec<rmmResource_t>,
    legacy: Legacy,
    streams: Vec<Vec<cudaStream_t>>,
    dead_streams: Vec<cudaStream_t>,
    /// The stream a live block was allocated on (when not NULL; entries of blocks freed since
    /// may linger, and are used only while their stream is live).
    allocated_on: std::collections::HashMap<usize, cudaStream_t>,
    /// Recently freed addresses, for double frees.
    freed: Vec<usize>,
    host: Box<[u64; 8]>,
    step: u64,
    seed: u64,
    refusals: u64,
    /// The seed runs with `registered_streams`: stream-ordered resources refuse handles rmm-rs
    /// does not know.
    registered: bool,
    /// The expandable resources (nodes) that sleep, and how.
    asleep: BTreeMap<usize, Mode>,
    /// A statistics adaptor over each expandable resource (node), not in the model: asks
    /// whether it sleeps, whatever handles to it are left.
    probes: BTreeMap<usize, rmmResource_t>,
    /// Live blocks whose memory may have slept in discard mode: stamped anew before they are
    /// next read.
    stale: BTreeSet<usize>,
    /// For each node, the expandable resources (nodes) its memory may come from, and whether it
    /// may come from elsewhere too: `sources` for any size, kept as nodes and bins are added.
    any_sources: Vec<(BTreeSet<usize>, bool)>,
    /// Statistics adaptors (nodes) and the allocations refused as asleep through them since
    /// their totals were last read (see `refused_asleep`).
    uncounted: BTreeMap<usize, usize>,
}

impl World {
    fn context(&self, what: &str) -> String {
        format!("seed {} step {} ({what})", self.seed, self.step)
    }

    fn set_device(&mut self, device: i32) {
        assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
    }

    /// NULL or a live stream of `device`.
    fn stream_of(&mut self, device: i32) -> cudaStream_t {
        let streams = &self.streams[device as usize];
        if streams.is_empty() || self.rng.chance(50) {
            return null_mut();
        }
        streams[self.rng.below(streams.len() as u64) as usize]
    }

    /// The stream an allocation of memory of `device` from `node` names: mostly `stream_of`'s,
    /// now and then a live stream of the other device or a handle that names no live stream
    /// (to a stream-ordered node only with `registered_streams`: it would ask the driver).
    fn allocation_stream(&mut self, device: i32, node: usize) -> (cudaStream_t, Named) {
        match self.rng.below(100) {
            0..=3 if self.registered || !self.ordered(node) => (self.not_live_stream(), Named::NotLive),
            4..=6 if devices() == 2 && !self.streams[1 - device as usize].is_empty() => {
                (*self.rng.pick(&self.streams[1 - device as usize]), Named::OtherDevice)
            }
            _ => (self.stream_of(device), Named::Own),
        }
    }

    /// A handle that names no live stream: made up, or a destroyed stream's (one that no stream
    /// made since has been given).
    fn not_live_stream(&mut self) -> cudaStream_t {
        match self.dead_streams.is_empty() || self.rng.chance(50) {
            true => *self.rng.pick(&MADE_UP_STREAMS) as cudaStream_t,
            false => *self.rng.pick(&self.dead_streams),
        }
    }

    /// Whether the memory of `node` is ordered by stream (`MemoryResource::orders_by_stream`):
    /// the pool-like resources, and adaptors over them. A resource rmm installed is a device's
    /// default (cuda, in these tests) or rmmInitialize's cuda or managed one (its pool is a
    /// `Kind::Pool` node).
    fn ordered(&self, node: usize) -> bool {
        let n = &self.model.nodes[node];
        match n.kind {
            Kind::Cuda | Kind::Managed | Kind::Installed => false,
            Kind::Pool | Kind::Arena | Kind::Binning | Kind::FixedSize { .. } | Kind::Expandable { .. } => true,
            _ => n.upstream.is_some_and(|upstream| self.ordered(upstream)),
        }
    }

    fn is_live(&self, stream: cudaStream_t) -> bool {
        self.streams.iter().flatten().any(|&live| live == stream)
    }

    /// Whether a limiting adaptor lies on some path of an allocation from `node`.
    fn limited(&self, node: usize) -> bool {
        let nodes = &self.model.nodes;
        (0..nodes.len()).any(|at| matches!(nodes[at].kind, Kind::Limiting { .. }) && self.model.reaches(node, at))
    }

    fn live_bytes(&self, device: i32) -> usize {
        self.model.live.values().filter(|b| self.model.nodes[b.node].device == device).map(|b| b.size).sum()
    }

    fn size(&mut self) -> usize {
        match self.rng.below(100) {
            0..=2 => 0,
            3..=84 => self.rng.log_uniform(16),
            _ => self.rng.log_uniform(22),
        }
    }

    fn add_node(&mut self, kind: Kind, device: i32, upstream: Option<usize>, handle: rmmResource_t) -> usize {
        let exact = kind.transparent();
        let bins = match kind {
            Kind::Binning => (8..=14).map(|exponent| (1usize << exponent, None)).collect(),
            _ => Default::default(),
        };
        self.model.nodes.push(Node {
            kind,
            device,
            upstream,
            exact,
            bytes: 0,
            count: 0,
            total_count: 0,
            handle,
            bins,
            callers_bins: Vec::new(),
        });
        self.refresh_sources();
        self.model.nodes.len() - 1
    }

    /// Checks an allocation's answer: the refusal the model knows it must give, or else
    /// success or out of memory (the device may be full). True on success.
    fn expect(&self, status: rmmError_t, refusal: Option<rmmError_t>, what: &str) -> bool {
        match refusal {
            Some(refusal) => assert_eq!(status, refusal, "{}: {}", self.context(what), last_message()),
            None => assert!(
                matches!(status, RMM_SUCCESS | RMM_ERROR_OUT_OF_MEMORY),
                "{}: {status:?} ({}); expected success or out of memory",
                self.context(what),
                last_message()
            ),
        }
        status == RMM_SUCCESS
    }

    /// `expect` for an allocation of `size` bytes from `node` on a stream `named` so (see
    /// `allocation_stream`). What the adaptors refuse before the stream reaches a resource is
    /// refused as on any stream (`known_answer`); 0 bytes succeed. A stream that is not live is
    /// taken by a resource that does not order by stream, as a live one, and refused by a
    /// stream-ordered one (`registered_streams`) as invalid, unless what lies before the stream
    /// check refuses first (a limit, a fixed block size). A stream of the other device is
    /// refused by the pool-like ones.
    fn expect_on(&self, status: rmmError_t, node: usize, size: usize, named: Named, what: &str) -> bool {
        let known = known_answer(&self.model, node, size);
        let message = last_message();
        let context = || format!("{}: {status:?} ({message}) on a stream {named:?}", self.context(what));
        if named == Named::NotLive && self.ordered(node) {
            assert!(self.registered, "{}: a stream that is not live given to a stream-ordered node", context());
            let stream_refusal = status == RMM_ERROR_INVALID_ARGUMENT && message.contains("is not a live stream rmm-rs knows");
            let refused_first = known.is_some_and(|known| known == status) || (status == RMM_ERROR_OUT_OF_MEMORY && self.limited(node));
            assert!(stream_refusal || refused_first, "{}: expected a refusal (issue 51)", context());
            return status == RMM_SUCCESS;
        }
        if named != Named::OtherDevice || known.is_some() {
            return self.expect(status, known, what);
        }
        match (named, status) {
            (_, RMM_ERROR_INVALID_ARGUMENT) => assert!(message.contains("belongs to device"), "{}", context()),
            (_, status) => assert!(matches!(status, RMM_SUCCESS | RMM_ERROR_OUT_OF_MEMORY), "{}", context()),
        }
        status == RMM_SUCCESS
    }

    /// `expect_on` where sleeping resources may refuse: what is refused before the memory is
    /// reached (`known_answer`) is refused as ever; an allocation whose memory can only come
    /// from sleeping resources is refused as asleep (or out of memory by a limit that does not
    /// count exactly, or for its stream); one that may is refused as asleep or answers as
    /// ever. True on success.
    fn expect_alloc(&mut self, status: rmmError_t, node: usize, size: usize, named: Named, what: &str) -> bool {
        let sleeping = match size == 0 || self.asleep.is_empty() {
            true => Sleeping::No,
            false => self.sleeping(node, Some(size)),
        };
        let known = known_answer(&self.model, node, size);
        if sleeping == Sleeping::No || known.is_some() {
            return self.expect_on(status, node, size, named, what);
        }
        let message = last_message();
        if status == RMM_ERROR_INVALID_ARGUMENT && message.contains("asleep") {
            self.refused_asleep(node, what);
            return false;
        }
        if sleeping == Sleeping::Maybe {
            return self.expect_on(status, node, size, named, what);
        }
        let context = format!("{}: {status:?} ({message}) from memory that sleeps, on a stream {named:?}", self.context(what));
        match (named, status) {
            // A limit, or a stack that cannot grow for a reason of its own before it reaches the
            // sleeping memory (a fixed-size resource over one of smaller blocks).
            (_, RMM_ERROR_OUT_OF_MEMORY) => {}
            (Named::NotLive, RMM_ERROR_INVALID_ARGUMENT) => assert!(message.contains("is not a live stream"), "{context}"),
            (Named::OtherDevice, RMM_ERROR_INVALID_ARGUMENT) => assert!(message.contains("belongs to device"), "{context}"),
            _ => panic!("{context}: expected a refusal (asleep)"),
        }
        false
    }

    /// An allocation from `node` refused as asleep: the statistics adaptors on its way may have
    /// counted it, when a stack handed out a free block of a sleeping chunk and the refusal
    /// took it back (the adaptors saw an allocation and a free; reported to the sleep feature's
    /// owners), so their totals are read again, at most one more than the model's.
    fn refused_asleep(&mut self, node: usize, what: &str) {
        self.refusals += 1;
        for at in self.model.counting_path(node) {
            if self.model.nodes[at].kind == Kind::Statistics {
                *self.uncounted.entry(at).or_default() += 1;
                self.recount(at, what);
            }
        }
    }

    /// Reads a statistics adaptor's total again after refusals as asleep it may have counted
    /// (`refused_asleep`), once it has a handle to be read through.
    fn recount(&mut self, node: usize, what: &str) {
        let n = &self.model.nodes[node];
        if n.handle.is_null() {
            return;
        }
        let Some(refused) = self.uncounted.remove(&node) else { return };
        let mut counts = rmmStatistics_t::default();
        assert_eq!(call(rmmStatisticsAdaptorGetCounts(n.handle, &mut counts)), RMM_SUCCESS);
        let total = counts.total_count as usize;
        assert!(
            (n.total_count..=n.total_count + refused).contains(&total),
            "{}: statistics node {node} counts {total} allocations, the model {} and {refused} refused as asleep",
            self.context(what),
            n.total_count
        );
        self.model.nodes[node].total_count = total;
    }

    /// Remembers the stream a block was allocated on, to free it there later.
    fn allocated_on(&mut self, ptr: usize, stream: cudaStream_t) {
        match stream.is_null() {
            true => self.allocated_on.remove(&ptr),
            false => self.allocated_on.insert(ptr, stream),
        };
    }

    fn refused(&mut self, status: rmmError_t, expected: rmmError_t, what: &str) {
        assert_eq!(status, expected, "{}: {}", self.context(what), last_message());
        assert!(!last_message().is_empty(), "{}: a refusal without a message", self.context(what));
        self.refusals += 1;
    }

    // --- resources ------------------------------------------------------------------------

    fn create_resource(&mut self) {
        if self.model.nodes.len() > 40 {
            return;
        }
        let kind = *self.rng.pick(&FUZZED);
        let (upstream_handle, upstream, device) = match kind {
            Kind::Cuda | Kind::Managed | Kind::Expandable { .. } => (null_mut(), None, self.rng.below(devices() as u64) as i32),
            _ => {
                if self.handles.is_empty() {
                    return;
                }
                let (handle, node) = *self.rng.pick(&self.handles);
                (handle, Some(node), self.model.nodes[node].device)
            }
        };
        self.set_device(device);
        let (status, handle) = create(kind, upstream_handle);
        // Only a fixed-size resource takes memory from its upstream when it is created.
        let created = match (kind, upstream) {
            // Its blocks come from its upstream unchecked: from a free block of a sleeping chunk,
            // if the upstream keeps one (allocations from it are refused until the chunk wakes).
            (Kind::FixedSize { block }, Some(upstream)) if self.sleeping(upstream, Some(block * PREALLOCATED_BLOCKS)) != Sleeping::No => {
                let known = known_answer(&self.model, upstream, block * PREALLOCATED_BLOCKS);
                match (known, status) {
                    (Some(known), _) => self.expect(status, Some(known), &format!("creating {kind:?}")),
                    (None, RMM_ERROR_INVALID_ARGUMENT) if last_message().contains("asleep") => {
                        self.refused_asleep(upstream, "creating a fixed-size resource");
                        false
                    }
                    (None, _) => self.expect(status, None, &format!("creating {kind:?}")),
                }
            }
            (Kind::FixedSize { block }, Some(upstream)) => {
                self.expect(status, known_answer(&self.model, upstream, block * PREALLOCATED_BLOCKS), &format!("creating {kind:?}"))
            }
            _ => self.expect(status, Some(RMM_SUCCESS), &format!("creating {kind:?}")),
        };
        if !created {
            return;
        }
        let node = self.add_node(kind, device, upstream, handle);
        self.handles.push((handle, node));
        if matches!(kind, Kind::Expandable { .. }) {
            self.probes.insert(node, created_probe(handle));
        }
        if let Some(upstream) = upstream {
            if !kind.transparent() {
                self.model.used_as_upstream(upstream);
            }
        }
    }

    fn destroy_handle(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let at = self.rng.below(self.handles.len() as u64) as usize;
        let (handle, node) = self.handles.swap_remove(at);
        assert_eq!(call(rmmResourceDestroy(handle)), RMM_SUCCESS, "{}", self.context("destroy"));
        if self.model.nodes[node].handle == handle {
            // Its figures can no longer be read; its memory stays valid.
            self.model.nodes[node].handle = self.handles.iter().find(|(_, n)| *n == node).map_or(null_mut(), |(h, _)| *h);
        }
        self.dead_handles.push(handle);
    }

    fn add_bin(&mut self) {
        let binnings: Vec<(rmmResource_t, usize)> =
            self.handles.iter().copied().filter(|&(_, n)| self.model.nodes[n].kind == Kind::Binning).collect();
        if binnings.is_empty() {
            return;
        }
        let (binning, node) = *self.rng.pick(&binnings);
        let size = *self.rng.pick(&[4096usize, 1 << 14, 1 << 16, 1 << 17]);
        let bin = match self.rng.chance(50) || self.handles.is_empty() {
            true => None,
            false => Some(*self.rng.pick(&self.handles)),
        };
        let status = call(rmmBinningResourceAddBin(binning, size, bin.map_or(null_mut(), |(h, _)| h)));
        match bin {
            Some((_, bin_node)) if self.model.nodes[bin_node].device != self.model.nodes[node].device => {
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a bin of another device")
            }
            Some((_, bin_node)) if self.model.reaches(bin_node, node) => {
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a bin over the binning resource itself")
            }
            Some((_, bin_node)) => {
                assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("add bin"), last_message());
                self.model.used_as_upstream(bin_node);
                self.model.nodes[node].bins.insert(size, Some(bin_node));
                self.model.nodes[node].callers_bins.push(bin_node);
                self.refresh_sources();
            }
            None => {
                assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("add bin"), last_message());
                self.model.nodes[node].bins.insert(size, None);
            }
        }
    }

    // --- allocation -----------------------------------------------------------------------

    fn allocate_through_handle(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let (handle, node) = *self.rng.pick(&self.handles);
        let size = self.size();
        let device = self.model.nodes[node].device;
        if self.live_bytes(device) + size > LIVE_LIMIT {
            return;
        }
        let (stream, named) = self.allocation_stream(device, node);
        let (status, ptr) = allocate(handle, size, stream);
        if self.expect_alloc(status, node, size, named, "rmmResourceAllocate") && size > 0 {
            let context = self.context("rmmResourceAllocate");
            self.model.handed_out(ptr, node, size, Holder::Caller, &context);
            self.allocated_on(ptr, stream);
        } else if status == RMM_SUCCESS {
            assert_eq!(ptr, 0, "{}: 0 bytes give NULL", self.context("rmmResourceAllocate"));
        }
    }

    fn allocate_legacy(&mut self) {
        let device = self.rng.below(devices() as u64) as i32;
        self.set_device(device);
        let node = self.current[device as usize];
        let size = self.size();
        if self.live_bytes(device) + size > LIVE_LIMIT {
            return;
        }
        let (stream, named) = self.allocation_stream(device, node);
        let mut ptr: *mut c_void = null_mut();
        let status = call(rmmAlloc(&mut ptr, size, stream, c"fuzz.c".as_ptr(), 7));
        if matches!(self.legacy, Legacy::Finalized) {
            return self.refused(status, RMM_ERROR_NOT_INITIALIZED, "rmmAlloc after rmmFinalize");
        }
        if self.expect_alloc(status, node, size, named, "rmmAlloc") && size > 0 {
            let context = self.context("rmmAlloc");
            self.model.handed_out(ptr as usize, node, size, Holder::Caller, &context);
            self.allocated_on(ptr as usize, stream);
        }
    }

    fn allocate_framework(&mut self) {
        let device = self.rng.below(devices() as u64) as i32;
        let size = self.size().max(1);
        if self.live_bytes(device) + size > LIVE_LIMIT {
            return;
        }
        let mut on = (null_mut(), Named::Own);
        let (ptr, node) = match self.rng.chance(50) {
            true => {
                on = self.allocation_stream(device, self.current[device as usize]);
                (call(rmmTorchAllocate(size as isize, device, on.0)) as usize, self.current[device as usize])
            }
            false => {
                let named = (self.rng.chance(50) && !self.handles.is_empty()).then(|| *self.rng.pick(&self.handles));
                match named {
                    Some((handle, node)) => (call(rmmCupyAllocate(handle as *mut c_void, size, device)) as usize, node),
                    None => (call(rmmCupyAllocate(null_mut(), size, device)) as usize, self.current[device as usize]),
                }
            }
        };
        let refused_stream = on.1 == Named::NotLive && self.ordered(node);
        if ptr == 0 {
            // Refused: as rmmResourceAllocate would be (the message says why).
            if last_message().contains("asleep") && self.sleeping(node, Some(size)) != Sleeping::No {
                return self.refused_asleep(node, "framework");
            }
            let expected = match (known_answer(&self.model, node, size), on.1) {
                (Some(RMM_ERROR_OUT_OF_MEMORY), _) | (None, Named::Own) => "out of memory",
                (None, Named::NotLive) if !refused_stream => "out of memory",
                (None, Named::NotLive) if !last_message().contains("out of memory") || !self.limited(node) => {
                    "is not a live stream rmm-rs knows"
                }
                (None, Named::OtherDevice) if !last_message().contains("out of memory") => "belongs to device",
                _ => "",
            };
            assert!(last_message().contains(expected), "{}: {}", self.context("framework"), last_message());
            return;
        }
        assert!(!refused_stream, "{}: a stream-ordered resource allocated on a stream that is not live", self.context("framework"));
        assert!(
            self.sleeping(node, Some(size)) != Sleeping::Yes || known_answer(&self.model, node, size).is_some(),
            "{}: allocated from memory that sleeps",
            self.context("framework")
        );
        let context = self.context("framework allocation");
        self.model.handed_out(ptr, node, size, Holder::Caller, &context);
        self.allocated_on(ptr, on.0);
    }

    // --- frees ----------------------------------------------------------------------------

    fn pick_live(&mut self, holder: Holder) -> Option<(usize, Block)> {
        let candidates: Vec<(usize, Block)> = self.model.live_in_order().into_iter().filter(|(_, b)| b.holder == holder).collect();
        (!candidates.is_empty()).then(|| *self.rng.pick(&candidates))
    }

    fn free_valid(&mut self) {
        let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
        self.intact(ptr, "before a free");
        let device = self.model.nodes[block.node].device;
        // Another device current now and then: the free must still be ordered on the block's.
        let current = self.rng.below(devices() as u64) as i32;
        self.set_device(current);
        // Mostly NULL; else a live stream of the block's device, the one it was allocated on
        // (which must work with either device current, issue 39), or one of the other device.
        let stream = match self.rng.below(100) {
            0..=59 => null_mut(),
            60..=79 => self.stream_of(device),
            80..=91 => match self.allocated_on.get(&ptr).copied().filter(|&on| self.is_live(on)) {
                Some(on) => on,
                None => self.stream_of(device),
            },
            _ => match devices() == 2 && !self.streams[1 - device as usize].is_empty() {
                true => *self.rng.pick(&self.streams[1 - device as usize]),
                false => self.stream_of(device),
            },
        };
        let handle = self.handles.iter().find(|(_, n)| *n == block.node).map(|(h, _)| *h);
        let status = match (handle, self.rng.below(4)) {
            (Some(handle), 0 | 1) => call(rmmResourceDeallocate(handle, ptr as *mut c_void, block.size, stream)),
            (_, 2) => {
                rmmTorchDeallocate(ptr as *mut c_void, block.size as isize, device, stream);
                call(());
                RMM_SUCCESS
            }
            _ => call(rmmFree(ptr as *mut c_void, stream, c"fuzz.c".as_ptr(), 9)),
        };
        assert_eq!(status, RMM_SUCCESS, "{}: freeing {ptr:#x} {block:?} on {stream:?}: {}", self.context("free"), last_message());
        self.note_freed(ptr, "free");
    }

    /// Forgets a block the library freed (checking its contents survived) and keeps its address
    /// for double frees.
    fn note_freed(&mut self, ptr: usize, what: &str) {
        self.model.freed(ptr, &self.context(what));
        self.allocated_on.remove(&ptr);
        self.freed.push(ptr);
        if self.freed.len() > 32 {
            self.freed.remove(0);
        }
    }

    fn realloc(&mut self) {
        let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
        let new_size = self.size();
        let device = self.model.nodes[block.node].device;
        if self.live_bytes(device) + new_size > LIVE_LIMIT {
            return;
        }
        if self.unreadable(ptr) {
            return self.realloc_asleep(ptr, block, new_size);
        }
        self.intact(ptr, "before realloc");
        let kept = block.size.min(new_size).min(256);
        // SAFETY: the live simulated block holds at least `kept` bytes at `ptr`.
        let prefix = unsafe { std::slice::from_raw_parts(ptr as *const u8, kept) }.to_vec();
        let mut moved = ptr as *mut c_void;
        // The old block is freed on the stream only once the new one is had on it.
        let (stream, named) = match new_size {
            0 => (self.stream_of(device), Named::Own),
            _ => self.allocation_stream(device, block.node),
        };
        let status = call(rmmRealloc(&mut moved, new_size, stream, c"fuzz.c".as_ptr(), 11));
        if new_size == 0 {
            assert_eq!((status, moved as usize), (RMM_SUCCESS, 0), "{}: {}", self.context("realloc to 0"), last_message());
            self.model.freed(ptr, &self.context("realloc to 0"));
            return;
        }
        if matches!(self.legacy, Legacy::Finalized) {
            assert_eq!(moved as usize, ptr, "{}: a refused realloc keeps the pointer", self.context("realloc"));
            return self.refused(status, RMM_ERROR_NOT_INITIALIZED, "rmmRealloc after rmmFinalize");
        }
        // While the old block is live, a limit counts it too.
        if !self.expect_alloc(status, block.node, new_size, named, "rmmRealloc") {
            assert_eq!(moved as usize, ptr, "{}: a refused realloc keeps the pointer", self.context("realloc"));
            self.intact(ptr, "after a refused realloc");
            return;
        }
        self.model.freed(ptr, &self.context("realloc"));
        let moved = moved as usize;
        // SAFETY: the new simulated block holds at least `kept` bytes.
        let copied = unsafe { std::slice::from_raw_parts(moved as *const u8, kept) };
        assert_eq!(copied, &prefix[..], "{}: realloc did not keep the contents", self.context("realloc"));
        let context = self.context("realloc");
        self.model.handed_out(moved, block.node, new_size, Holder::Caller, &context);
        self.allocated_on(moved, stream);
    }

    /// rmmRealloc of a block whose memory may sleep: to 0 bytes it is a free, taken; else only
    /// where the new block can only come from sleeping memory too, refused with the pointer
    /// kept. A realloc that may find a new block in awake memory is not made: it would copy
    /// contents that are not there (rmm refuses it when the copy fails, a message of the copy's).
    fn realloc_asleep(&mut self, ptr: usize, block: Block, new_size: usize) {
        if new_size != 0
            && (matches!(self.legacy, Legacy::Finalized)
                || self.sleeping(block.node, Some(new_size)) != Sleeping::Yes
                || known_answer(&self.model, block.node, new_size).is_some())
        {
            return;
        }
        let device = self.model.nodes[block.node].device;
        let stream = self.stream_of(device);
        let mut moved = ptr as *mut c_void;
        let status = call(rmmRealloc(&mut moved, new_size, stream, c"fuzz.c".as_ptr(), 12));
        if new_size == 0 {
            assert_eq!((status, moved as usize), (RMM_SUCCESS, 0), "{}: {}", self.context("realloc to 0 asleep"), last_message());
            return self.note_freed(ptr, "realloc to 0 asleep");
        }
        assert_eq!(moved as usize, ptr, "{}: a refused realloc keeps the pointer", self.context("realloc asleep"));
        let accepted = self.expect_alloc(status, block.node, new_size, Named::Own, "rmmRealloc asleep");
        assert!(!accepted, "{}: a realloc from memory that sleeps", self.context("realloc asleep"));
    }

    /// A bad free of some kind, which must be refused with nothing changed.
    fn free_bad(&mut self) {
        let stream = null_mut();
        match self.rng.below(10) {
            0 | 1 => {
                // Interior or one past the end of a live block, unless that starts another.
                let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
                let offset = match self.rng.chance(50) {
                    true => block.size,
                    false => 256 * (1 + self.rng.below((block.size / 256).max(1) as u64) as usize),
                };
                let bad = ptr + offset;
                if self.model.live.contains_key(&bad) {
                    return;
                }
                let status = call(rmmFree(bad as *mut c_void, stream, c"fuzz.c".as_ptr(), 13));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "an interior or past-the-end free");
                self.intact(ptr, "after a bad free");
            }
            2 => {
                // A double free of an address not handed out again since.
                let Some(&old) = self.freed.last() else { return };
                if self.model.live.contains_key(&old) {
                    return;
                }
                let status = call(rmmFree(old as *mut c_void, stream, c"fuzz.c".as_ptr(), 15));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a double free");
            }
            3 => {
                let host = self.host.as_ptr() as *mut c_void;
                let status = call(rmmFree(host, stream, c"fuzz.c".as_ptr(), 17));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a host pointer");
                rmmCupyDeallocate(null_mut(), host, 0);
                call(());
            }
            4 => {
                // A wrong size through the right resource.
                let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
                let Some(&(handle, _)) = self.handles.iter().find(|(_, n)| *n == block.node) else { return };
                let wrong = *self.rng.pick(&[block.size + 1, block.size.saturating_sub(1), block.size + 256, block.size * 2]);
                if wrong == block.size {
                    return;
                }
                let status = call(rmmResourceDeallocate(handle, ptr as *mut c_void, wrong, stream));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a wrong size");
                self.model.check_counts(&self.context("after a wrong size"));
            }
            5 => {
                // Another resource's block.
                let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
                let others: Vec<rmmResource_t> = self.handles.iter().filter(|(_, n)| *n != block.node).map(|(h, _)| *h).collect();
                if others.is_empty() {
                    return;
                }
                let other = *self.rng.pick(&others);
                let status = call(rmmResourceDeallocate(other, ptr as *mut c_void, block.size, stream));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "another resource's block");
            }
            6 => {
                // A device buffer's memory.
                let Some((ptr, block)) = self.pick_live(Holder::Buffer) else { return };
                let status = call(rmmFree(ptr as *mut c_void, stream, c"fuzz.c".as_ptr(), 19));
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a device buffer's memory through rmmFree");
                if let Some(&(handle, _)) = self.handles.iter().find(|(_, n)| *n == block.node) {
                    let status = call(rmmResourceDeallocate(handle, ptr as *mut c_void, block.size, stream));
                    self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a device buffer's memory through its resource");
                }
            }
            7 => {
                // Destroyed handles, NULL out-pointers, huge sizes.
                if let Some(&dead) = self.dead_handles.last() {
                    let (status, _) = allocate(dead, 256, stream);
                    self.refused(status, RMM_ERROR_INVALID_HANDLE, "a destroyed handle");
                    let status = call(rmmResourceDestroy(dead));
                    self.refused(status, RMM_ERROR_INVALID_HANDLE, "destroying a destroyed handle");
                }
                if let Some(&(handle, node)) = self.handles.first() {
                    let status = call(rmmResourceAllocate(handle, null_mut(), 256, stream));
                    self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a NULL out-pointer");
                    let huge = *self.rng.pick(&[usize::MAX, 1 << 50, (1 << 40) + 1]);
                    let (status, _) = allocate(handle, huge, stream);
                    let expected = known_answer(&self.model, node, huge).unwrap_or(RMM_ERROR_OUT_OF_MEMORY);
                    if status == RMM_ERROR_INVALID_ARGUMENT
                        && last_message().contains("asleep")
                        && self.sleeping(node, Some(huge)) != Sleeping::No
                    {
                        // Refused as asleep before its size is looked at.
                        return self.refused_asleep(node, "a huge size");
                    }
                    self.refused(status, expected, "a huge size");
                }
            }
            8 => {
                // A live block freed on a handle that names no live stream: memory that is freed
                // at once (not in a stream's order) goes, with one device or two, the handle
                // unlooked at; a stream-ordered resource (`registered_streams` only: it would ask
                // the driver otherwise) refuses it with nothing changed, as an allocation on it.
                let Some((ptr, block)) = self.pick_live(Holder::Caller) else { return };
                let ordered = self.ordered(block.node);
                if ordered && !self.registered {
                    return;
                }
                let not_live = self.not_live_stream();
                let handle = self.handles.iter().find(|(_, n)| *n == block.node).map(|(h, _)| *h);
                let status = match handle {
                    Some(handle) if self.rng.chance(50) => call(rmmResourceDeallocate(handle, ptr as *mut c_void, block.size, not_live)),
                    _ => call(rmmFree(ptr as *mut c_void, not_live, c"fuzz.c".as_ptr(), 21)),
                };
                if !ordered {
                    assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("a free on a stream that is not live"), last_message());
                    return self.note_freed(ptr, "a free on a stream that is not live");
                }
                self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a free on a stream that is not live");
                assert!(last_message().contains("is not a live stream rmm-rs knows"), "{}: {}", self.context("not live"), last_message());
                self.intact(ptr, "after a refused free on a stream that is not live");
            }
            _ => {
                if let Some(&dead) = self.dead_buffers.last() {
                    let status = call(rmmDeviceBufferDestroy(dead));
                    self.refused(status, RMM_ERROR_INVALID_HANDLE, "a destroyed device buffer");
                }
            }
        }
    }

    // --- device buffers -------------------------------------------------------------------

    fn buffer_create(&mut self) {
        let device = self.rng.below(devices() as u64) as i32;
        self.set_device(device);
        let named = (self.rng.chance(60) && !self.handles.is_empty()).then(|| *self.rng.pick(&self.handles));
        let (resource, node) = named.unwrap_or((null_mut(), self.current[device as usize]));
        let size = self.size();
        if self.live_bytes(self.model.nodes[node].device) + size > LIVE_LIMIT {
            return;
        }
        let (stream, named) = self.allocation_stream(self.model.nodes[node].device, node);
        let mut handle: rmmDeviceBuffer_t = null_mut();
        let status = call(rmmDeviceBufferCreate(&mut handle, size, stream, resource));
        if named == Named::NotLive && self.registered {
            // A buffer's copies go in its stream's order: refused whatever the resource.
            self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a buffer on a stream that is not live");
            assert!(last_message().contains("is not a live stream rmm-rs knows"), "{}: {}", self.context("buffer"), last_message());
            return;
        }
        if !self.expect_alloc(status, node, size, named, "rmmDeviceBufferCreate") {
            return;
        }
        let ptr = self.data_of(handle);
        if size > 0 {
            let context = self.context("rmmDeviceBufferCreate");
            self.model.handed_out(ptr, node, size, Holder::Buffer, &context);
        } else {
            assert_eq!(ptr, 0);
        }
        self.buffers.push(Buffer { handle, node, ptr, size, stream });
    }

    fn data_of(&self, handle: rmmDeviceBuffer_t) -> usize {
        let mut data: *mut c_void = null_mut();
        assert_eq!(call(rmmDeviceBufferData(handle, &mut data)), RMM_SUCCESS, "{}", self.context("data"));
        data as usize
    }

    fn buffer_change(&mut self) {
        if self.buffers.is_empty() {
            return;
        }
        let at = self.rng.below(self.buffers.len() as u64) as usize;
        let Buffer { handle, node, ptr, size, stream: own_stream } = self.buffers[at];
        let capacity = self.model.live.get(&ptr).map_or(0, |b| b.size);
        // A buffer whose memory may sleep is only destroyed: a resize, shrink or copy would read it.
        let asleep = ptr != 0 && self.unreadable(ptr);
        if ptr != 0 {
            self.intact(ptr, "buffer before a change");
        }
        let device = self.model.nodes[node].device;
        let stream = self.stream_of(device);
        let kept_bytes = |ptr: usize, len: usize| -> Vec<u8> {
            // SAFETY: `len` bytes of a live simulated block.
            if len == 0 {
                Vec::new()
            } else {
                unsafe { std::slice::from_raw_parts(ptr as *const u8, len) }.to_vec()
            }
        };
        match self.rng.below(4) {
            0..=2 if asleep => {}
            0 => {
                let new_size = self.size();
                if new_size > capacity && self.live_bytes(device) + new_size > LIVE_LIMIT {
                    return;
                }
                let kept = size.min(new_size).min(256);
                let prefix = kept_bytes(ptr, kept);
                let status = call(rmmDeviceBufferResize(handle, new_size, stream));
                if new_size <= capacity {
                    assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("resize within capacity"), last_message());
                    self.buffers[at].size = new_size;
                    self.buffers[at].stream = stream;
                    return;
                }
                if !self.expect_alloc(status, node, new_size, Named::Own, "rmmDeviceBufferResize") {
                    return;
                }
                self.moved(at, ptr, new_size, &prefix, "resize");
                self.buffers[at].size = new_size;
                self.buffers[at].stream = stream;
            }
            1 => {
                let kept = size.min(256);
                let prefix = kept_bytes(ptr, kept);
                let status = call(rmmDeviceBufferShrinkToFit(handle, stream));
                if capacity == size {
                    assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("shrink"), last_message());
                } else if self.expect_alloc(status, node, size, Named::Own, "rmmDeviceBufferShrinkToFit") {
                    self.moved(at, ptr, size, &prefix, "shrink");
                } else {
                    // The smaller block could not be had: the buffer keeps its memory and stream.
                    self.intact(ptr, "a refused shrink");
                    return;
                }
                self.buffers[at].stream = stream;
            }
            2 => {
                if self.live_bytes(device) + size > LIVE_LIMIT {
                    return;
                }
                let prefix = kept_bytes(ptr, size.min(256));
                let mut copy: rmmDeviceBuffer_t = null_mut();
                let status = call(rmmDeviceBufferCopy(&mut copy, handle, stream, null_mut()));
                if !self.expect_alloc(status, node, size, Named::Own, "rmmDeviceBufferCopy") {
                    return;
                }
                let data = self.data_of(copy);
                // SAFETY: the copy holds `size` bytes.
                let copied = kept_bytes(data, prefix.len());
                assert_eq!(copied, prefix, "{}: the copy differs", self.context("copy"));
                if size > 0 {
                    let context = self.context("copy");
                    self.model.handed_out(data, node, size, Holder::Buffer, &context);
                }
                self.buffers.push(Buffer { handle: copy, node, ptr: data, size, stream });
            }
            _ => {
                if !self.registered && self.ordered(node) && !own_stream.is_null() && !self.is_live(own_stream) {
                    // Its stream was destroyed since: freeing in its order would ask the driver
                    // about a dead handle. A correct program names another stream first.
                    assert_eq!(call(rmmDeviceBufferSetStream(handle, null_mut())), RMM_SUCCESS);
                    self.buffers[at].stream = null_mut();
                }
                let status = call(rmmDeviceBufferDestroy(handle));
                if self.dead_streams.contains(&own_stream) && ptr != 0 && status != RMM_SUCCESS {
                    // A resource that frees in the order of a stream refuses one that is gone
                    // (one that frees synchronously ignores it): the buffer stays intact until
                    // it gets another stream.
                    self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "destroying a buffer whose stream was destroyed");
                    self.intact(ptr, "a buffer whose destroy was refused");
                    assert_eq!(call(rmmDeviceBufferSetStream(handle, null_mut())), RMM_SUCCESS);
                    self.buffers[at].stream = null_mut();
                    return;
                }
                assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("destroy buffer"), last_message());
                if ptr != 0 {
                    self.model.freed(ptr, &self.context("destroy buffer"));
                }
                self.buffers.swap_remove(at);
                self.dead_buffers.push(handle);
            }
        }
    }

    /// A buffer's memory moved to a new block of `capacity` bytes keeping `prefix`.
    fn moved(&mut self, at: usize, old: usize, capacity: usize, prefix: &[u8], what: &str) {
        let data = self.data_of(self.buffers[at].handle);
        if old != 0 {
            self.model.freed(old, &self.context(what));
        }
        self.buffers[at].ptr = data;
        if capacity == 0 {
            assert_eq!(data, 0);
            return;
        }
        // SAFETY: the new block holds at least `prefix.len()` bytes.
        let kept = unsafe { std::slice::from_raw_parts(data as *const u8, prefix.len()) };
        assert_eq!(kept, prefix, "{}: the contents did not move", self.context(what));
        let context = self.context(what);
        let node = self.buffers[at].node;
        self.model.handed_out(data, node, capacity, Holder::Buffer, &context);
    }

    // --- devices, lifecycle, streams -------------------------------------------------------

    fn set_current_resource(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        let (handle, node) = *self.rng.pick(&self.handles);
        let device = self.rng.below(devices() as u64) as i32;
        self.set_device(device);
        let mut previous: rmmResource_t = null_mut();
        let status = call(rmmSetCurrentDeviceResource(handle, &mut previous));
        if self.model.nodes[node].device != device {
            return self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a resource of another device");
        }
        assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("set current resource"), last_message());
        let old = std::mem::replace(&mut self.current[device as usize], node);
        self.handles.push((previous, old));
        if self.model.nodes[old].handle.is_null() {
            self.model.nodes[old].handle = previous;
            self.recount(old, "set current resource");
        }
    }

    fn lifecycle(&mut self) {
        match &self.legacy {
            Legacy::Initialized(_) if self.rng.chance(60) => {
                assert_eq!(call(rmmFinalize()), RMM_SUCCESS, "{}: {}", self.context("rmmFinalize"), last_message());
                let Legacy::Initialized(saved) = std::mem::replace(&mut self.legacy, Legacy::Finalized) else { unreachable!() };
                for (device, node) in saved.into_iter().rev() {
                    self.current[device as usize] = node;
                }
            }
            Legacy::Initialized(_) => {
                let status = call(rmmInitialize(std::ptr::null()));
                self.refused(status, RMM_ERROR_ALREADY_INITIALIZED, "a second rmmInitialize");
            }
            _ => {
                let mode = *self.rng.pick(&[CudaDefaultAllocation, PoolAllocation, CudaManagedMemory]);
                let devices: Vec<i32> = match self.rng.below(3) {
                    _ if devices() == 1 => vec![0],
                    0 => vec![0],
                    1 => vec![1],
                    _ => vec![0, 1],
                };
                let mut options: rmmOptions_t = unsafe { std::mem::zeroed() };
                options.allocation_mode = mode;
                options.initial_pool_size = 4 << 20;
                options.maximum_pool_size = 256 << 20;
                options.devices.count = devices.len() as i32;
                options.devices.ids[..devices.len()].copy_from_slice(&devices);
                let status = call(rmmInitialize(&options));
                if status == RMM_ERROR_OUT_OF_MEMORY && mode == PoolAllocation {
                    // A device that the resources made so far fill (long sequences): no pool's
                    // initial size fits, and nothing is initialized.
                    assert!(!call(rmmIsInitialized(null_mut())), "{}: initialized after a failure", self.context("rmmInitialize"));
                    return;
                }
                assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("rmmInitialize"), last_message());
                let kind = if mode == PoolAllocation { Kind::Pool } else { Kind::Installed };
                let mut saved = Vec::new();
                for device in devices {
                    let node = self.add_node(kind, device, None, null_mut());
                    saved.push((device, std::mem::replace(&mut self.current[device as usize], node)));
                }
                self.legacy = Legacy::Initialized(saved);
            }
        }
    }

    fn stream_op(&mut self) {
        let device = self.rng.below(devices() as u64) as i32;
        self.set_device(device);
        let streams = &mut self.streams[device as usize];
        if streams.len() < 3 || self.rng.chance(30) {
            let mut stream: cudaStream_t = null_mut();
            assert_eq!(call(rmmStreamCreate(&mut stream)), RMM_SUCCESS);
            // A new stream may reuse a destroyed one's handle, which is then live again.
            self.dead_streams.retain(|&dead| dead != stream);
            self.streams[device as usize].push(stream);
        } else if self.rng.chance(50) {
            let stream = self.streams[device as usize][0];
            assert_eq!(call(rmmStreamSynchronize(stream)), RMM_SUCCESS);
        } else {
            // A stream destroyed: rmm must never use it again (a later stream may reuse its handle).
            let at = self.rng.below(self.streams[device as usize].len() as u64) as usize;
            let stream = self.streams[device as usize].swap_remove(at);
            assert_eq!(call(rmmStreamSynchronize(stream)), RMM_SUCCESS);
            assert_eq!(call(rmmStreamDestroy(stream)), RMM_SUCCESS);
            self.dead_streams.push(stream);
        }
    }

    fn release(&mut self) {
        if self.rng.chance(50) {
            // Every resource of a device gives back what it keeps free, live memory staying.
            let (device, mut released) = (self.rng.below(devices() as u64) as i32, 0);
            assert_eq!(
                call(rmmDeviceRelease(device, &mut released)),
                RMM_SUCCESS,
                "{}: {}",
                self.context("device release"),
                last_message()
            );
            return;
        }
        if let Some(&(handle, _)) = self.handles.get(self.rng.below(self.handles.len().max(1) as u64) as usize) {
            let mut released = 0;
            assert_eq!(call(rmmResourceRelease(handle, &mut released)), RMM_SUCCESS, "{}: {}", self.context("release"), last_message());
        }
    }

    fn check_everything(&mut self) {
        let live: Vec<usize> = self.model.live.keys().copied().collect();
        for ptr in live {
            self.intact(ptr, "full check");
        }
        self.model.check_counts(&self.context("full check"));
    }

    // --- sleep and wake -------------------------------------------------------------------

    /// The expandable resources (nodes) an allocation of `size` bytes (None: any) from `node`
    /// may take its memory from, and whether it may take memory from elsewhere too.
    fn sources(&self, node: usize, size: Option<usize>, found: &mut BTreeSet<usize>, elsewhere: &mut bool) {
        let n = &self.model.nodes[node];
        let Some(upstream) = n.upstream else {
            match n.kind {
                Kind::Expandable { .. } => {
                    found.insert(node);
                }
                _ => *elsewhere = true, // device memory, or what rmmInitialize installed
            }
            return;
        };
        match n.kind {
            // Chunks of sizes of their own.
            Kind::Pool | Kind::Arena | Kind::FixedSize { .. } => self.sources(upstream, None, found, elsewhere),
            Kind::Aligned { alignment, threshold } => {
                let padded = size.map(|s| if s >= threshold && alignment > 256 { s.saturating_add(alignment - 256) } else { s });
                self.sources(upstream, padded, found, elsewhere)
            }
            Kind::Binning => match size.map(|s| n.bins.range(s..).next()) {
                Some(Some((_, Some(bin)))) => self.sources(*bin, size, found, elsewhere),
                Some(Some((_, None))) => self.sources(upstream, None, found, elsewhere),
                Some(None) => self.sources(upstream, size, found, elsewhere),
                None => {
                    for &bin in &n.callers_bins {
                        self.sources(bin, None, found, elsewhere);
                    }
                    self.sources(upstream, None, found, elsewhere);
                }
            },
            _ => self.sources(upstream, size, found, elsewhere),
        }
    }

    /// Whether an allocation of `size` bytes (None: any) from `node` takes memory that sleeps.
    fn sleeping(&self, node: usize, size: Option<usize>) -> Sleeping {
        if self.asleep.is_empty() || !self.any_sources[node].0.iter().any(|e| self.asleep.contains_key(e)) {
            return Sleeping::No;
        }
        if size.is_some() {
            // The library refuses every allocation through a stack that reaches a sleeping
            // expandable resource, before any layer sees it (src/resources/sleep.rs).
            return Sleeping::Yes;
        }
        let (found, elsewhere) = match size {
            None => self.any_sources[node].clone(),
            Some(_) => {
                let (mut found, mut elsewhere) = (BTreeSet::new(), false);
                self.sources(node, size, &mut found, &mut elsewhere);
                (found, elsewhere)
            }
        };
        match found.iter().filter(|e| self.asleep.contains_key(e)).count() {
            0 => Sleeping::No,
            n if n == found.len() && !elsewhere => Sleeping::Yes,
            _ => Sleeping::Maybe,
        }
    }

    /// Whether a live block's memory may sleep: then nothing may read it.
    fn unreadable(&self, ptr: usize) -> bool {
        !self.asleep.is_empty() && self.sleeping(self.model.live[&ptr].node, None) != Sleeping::No
    }

    /// Checks a live block's stamp, unless its memory may sleep; one whose memory may have
    /// slept in discard mode is stamped anew instead.
    fn intact(&mut self, ptr: usize, what: &str) {
        if self.unreadable(ptr) {
            return;
        }
        let block = self.model.live[&ptr];
        if self.stale.remove(&ptr) {
            stamp(ptr, block.size, block.tag);
        }
        self.model.intact(ptr, &self.context(what));
    }

    /// The expandable resources (nodes) a call into `node` reaches: what sleeps and wakes, and
    /// what its memory may come from.
    fn reached(&self, node: usize) -> Vec<usize> {
        self.any_sources[node].0.iter().copied().collect()
    }

    /// `any_sources` again, after a node or a bin was added.
    fn refresh_sources(&mut self) {
        self.any_sources = (0..self.model.nodes.len())
            .map(|node| {
                let (mut found, mut elsewhere) = (BTreeSet::new(), false);
                self.sources(node, None, &mut found, &mut elsewhere);
                (found, elsewhere)
            })
            .collect();
    }

    /// The ways from `from` down to `target` (through upstreams and bins, `from` itself one).
    fn routes(&self, from: usize, target: usize) -> usize {
        let n = &self.model.nodes[from];
        match from == target {
            true => 1,
            false => n.upstream.into_iter().chain(n.callers_bins.iter().copied()).map(|next| self.routes(next, target)).sum(),
        }
    }

    /// Whether the library says the expandable resource `node` sleeps (through its probe).
    fn probe_asleep(&self, node: usize) -> bool {
        let mut asleep = -1;
        assert_eq!(call(rmmResourceIsAsleep(self.probes[&node], &mut asleep)), RMM_SUCCESS, "{}", self.context("probe"));
        asleep == 1
    }

    /// Live blocks that may take their memory from `nodes` get a new stamp before they are
    /// next read (their contents may have been discarded).
    fn mark_stale(&mut self, nodes: &[usize]) {
        for (&ptr, block) in &self.model.live {
            if self.any_sources[block.node].0.iter().any(|e| nodes.contains(e)) {
                self.stale.insert(ptr);
            }
        }
    }

    /// Expandable resources woke: blocks that may have slept in discard mode get a new stamp
    /// before they are next read, and every block of the woken ones that can be read is checked
    /// (a kept block holds its stamp again).
    fn woke(&mut self, woken: &[usize]) {
        let mut discarded = Vec::new();
        for node in woken {
            if self.asleep.remove(node) == Some(Mode::Discard) {
                discarded.push(*node);
            }
        }
        self.mark_stale(&discarded);
        let live: Vec<usize> =
            self.model.live.iter().filter(|(_, b)| self.any_sources[b.node].0.iter().any(|e| woken.contains(e))).map(|(&p, _)| p).collect();
        for ptr in live {
            self.intact(ptr, "after a wake");
        }
    }

    /// The stream a sleep or wake names: mostly NULL or a live stream of `device`, now and then
    /// (with `registered_streams`) one that is not live, refused before anything changes.
    /// Without it the stream must be live, as for an allocation from a stream-ordered resource
    /// (a sleep's copies are ordered on it).
    fn sleep_stream(&mut self, device: i32) -> (cudaStream_t, Named) {
        match self.rng.below(100) {
            0..=4 if self.registered => (self.not_live_stream(), Named::NotLive),
            _ => (self.stream_of(device), Named::Own),
        }
    }

    /// A sleep or wake's answer on `node` (a handle's, or a device's current resource):
    /// what the model expects for the expandable resources it reaches, with the state updated.
    fn slept_or_woke(&mut self, node: usize, sleep: Option<u32>, stream: Named, status: rmmError_t, what: &str) {
        let reached = self.reached(node);
        let asleep: Vec<usize> = reached.iter().copied().filter(|e| self.asleep.contains_key(e)).collect();
        let message = last_message();
        let context = format!("{}: {status:?} ({message}) for expandable resources {reached:?}, asleep {asleep:?}", self.context(what));
        if matches!(sleep, Some(mode) if mode > RMM_SLEEP_KEEP) {
            assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{context}");
            return assert!(message.contains("RMM_SLEEP_KEEP"), "{context}");
        }
        let refusal = match (sleep, reached.is_empty(), asleep.is_empty()) {
            (_, true, _) => Some((RMM_ERROR_NOT_SUPPORTED, "expandable")),
            (Some(_), false, false) => Some((RMM_ERROR_INVALID_ARGUMENT, "already asleep")),
            (None, false, true) => Some((RMM_ERROR_INVALID_ARGUMENT, "awake")),
            _ => None,
        };
        // A stack that reaches an expandable resource by two ways (a binning resource's bin and
        // its upstream over the same one) visits it twice and finds it asleep the second time:
        // refused, the first visit woken again, so that nothing sleeps, but in discard mode its
        // blocks' contents are gone (reported to the sleep feature's owners). Both answers pass.
        let twice = sleep.is_some() && reached.iter().any(|&e| self.routes(node, e) > 1);
        if stream == Named::NotLive && status == RMM_ERROR_INVALID_ARGUMENT && message.contains("is not a live stream") {
            self.refusals += 1;
        } else if twice && refusal.is_none() && status == RMM_ERROR_INVALID_ARGUMENT && message.contains("already asleep") {
            self.refusals += 1;
            if sleep == Some(RMM_SLEEP_DISCARD) {
                self.mark_stale(&reached);
            }
        } else if let Some((code, why)) = refusal {
            assert_eq!(status, code, "{context}");
            assert!(message.contains(why), "{context}: the message does not say {why:?}");
            self.refusals += 1;
        } else {
            assert_ne!(stream, Named::NotLive, "{context}: a stream that is not live was taken");
            match (sleep, status) {
                (Some(mode), RMM_SUCCESS) => {
                    SLEEPS[(mode == RMM_SLEEP_DISCARD) as usize].fetch_add(1, Ordering::Relaxed);
                    let mode = if mode == RMM_SLEEP_KEEP { Mode::Keep } else { Mode::Discard };
                    self.asleep.extend(reached.iter().map(|&e| (e, mode)));
                }
                // No pinned host memory for the copy: nothing sleeps.
                (Some(_), RMM_ERROR_OUT_OF_MEMORY) => {}
                (None, RMM_SUCCESS) => {
                    WAKES.fetch_add(1, Ordering::Relaxed);
                    self.woke(&asleep)
                }
                (None, RMM_ERROR_OUT_OF_MEMORY) => {
                    // The device is full: those that could not get their memory back stay asleep.
                    let woken: Vec<usize> = asleep.iter().copied().filter(|&e| !self.probe_asleep(e)).collect();
                    self.woke(&woken);
                }
                _ => panic!("{context}"),
            }
        }
        // The library agrees, whatever happened.
        for e in reached {
            assert_eq!(self.probe_asleep(e), self.asleep.contains_key(&e), "{context}: expandable node {e} asleep?");
        }
    }

    fn sleep_op(&mut self) {
        if self.rng.chance(15) {
            // A device's current resource, without a handle; now and then a device that does
            // not exist.
            let device = self.rng.below(devices() as u64 + 1) as i32;
            let node = self.current[device.min(devices() - 1) as usize];
            let sleep = self.rng.chance(50).then(|| self.sleep_mode(node));
            let (stream, named) = self.sleep_stream(device.min(devices() - 1));
            let status = call(match sleep {
                Some(mode) => rmmDeviceSleep(device, mode, stream),
                None => rmmDeviceWake(device, stream),
            });
            if device == devices() {
                return self.refused(status, RMM_ERROR_INVALID_ARGUMENT, "a device that does not exist");
            }
            return self.slept_or_woke(node, sleep, named, status, "rmmDeviceSleep/rmmDeviceWake");
        }
        if self.handles.is_empty() {
            return;
        }
        // Mostly a handle over an expandable resource.
        let over: Vec<(rmmResource_t, usize)> = self.handles.iter().copied().filter(|&(_, n)| !self.reached(n).is_empty()).collect();
        let (handle, node) = match over.is_empty() || self.rng.chance(20) {
            true => *self.rng.pick(&self.handles),
            false => *self.rng.pick(&over),
        };
        let (stream, named) = self.sleep_stream(self.model.nodes[node].device);
        match self.rng.below(10) {
            0..=4 => {
                let mode = self.sleep_mode(node);
                let status = call(rmmResourceSleep(handle, mode, stream));
                self.slept_or_woke(node, Some(mode), named, status, "rmmResourceSleep");
            }
            5..=8 => {
                let status = call(rmmResourceWake(handle, stream));
                self.slept_or_woke(node, None, named, status, "rmmResourceWake");
            }
            _ => {
                let mut asleep = -1;
                let status = call(rmmResourceIsAsleep(handle, &mut asleep));
                let reached = self.reached(node);
                if reached.is_empty() {
                    return self.refused(status, RMM_ERROR_NOT_SUPPORTED, "rmmResourceIsAsleep over no expandable resource");
                }
                assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("rmmResourceIsAsleep"), last_message());
                let expected = reached.iter().any(|e| self.asleep.contains_key(e));
                assert_eq!(asleep, expected as i32, "{}: asleep over {reached:?}", self.context("rmmResourceIsAsleep"));
            }
        }
    }

    /// Keep or discard, and now and then a mode that does not exist. Keep only where the
    /// expandable resources `node` reaches hold at most `KEEP_AT_MOST` (on simulated devices
    /// a kept page costs about a millisecond, its copies and page faults).
    fn sleep_mode(&mut self, node: usize) -> u32 {
        match self.rng.below(20) {
            0 => 7,
            1..=9 if self.held(node) <= KEEP_AT_MOST => RMM_SLEEP_KEEP,
            _ => RMM_SLEEP_DISCARD,
        }
    }

    /// Bytes the expandable resources `node` reaches hold from the device.
    fn held(&self, node: usize) -> usize {
        self.reached(node)
            .iter()
            .map(|e| {
                let mut footprint = rmmFootprint_t::default();
                assert_eq!(call(rmmResourceGetFootprint(self.probes[e], &mut footprint)), RMM_SUCCESS);
                footprint.reserved_bytes
            })
            .sum()
    }

    fn step(&mut self) {
        self.step += 1;
        match self.rng.below(100) {
            0..=2 => self.create_resource(),
            3 => self.destroy_handle(),
            4 => self.add_bin(),
            5..=24 => self.allocate_through_handle(),
            25..=34 => self.allocate_legacy(),
            35..=39 => self.allocate_framework(),
            40..=64 => self.free_valid(),
            65..=68 => self.realloc(),
            69..=78 => self.free_bad(),
            79..=82 => self.buffer_create(),
            83..=87 => self.buffer_change(),
            88..=89 => self.set_current_resource(),
            90 => self.lifecycle(),
            91..=93 => self.stream_op(),
            94 => self.release(),
            // Sleeps cost the simulated devices page faults and copies: a little rarer.
            95 if self.rng.chance(60) => self.sleep_op(),
            _ => {}
        }
        assert_no_races(self.context("race check"));
        if self.step.is_multiple_of(64) {
            self.check_everything();
        }
    }

    /// Frees everything, destroys every handle, buffer and stream, puts each device's original
    /// resource back: the devices' memory must then be all free again.
    /// Returns whether legacy RMM ends finalized (the next seed starts there).
    fn finish(mut self, baseline: &[usize]) -> bool {
        if !self.asleep.is_empty() && self.rng.chance(50) {
            // Woken through their probes (a full device may keep some asleep); the others' blocks
            // are freed while they sleep, and they are destroyed asleep.
            for node in self.asleep.keys().copied().collect::<Vec<_>>() {
                let status = call(rmmResourceWake(self.probes[&node], null_mut()));
                self.slept_or_woke(node, None, Named::Own, status, "a wake at the end");
            }
        }
        self.check_everything();
        for buffer in std::mem::take(&mut self.buffers) {
            assert_eq!(call(rmmDeviceBufferSetStream(buffer.handle, null_mut())), RMM_SUCCESS);
            assert_eq!(call(rmmDeviceBufferDestroy(buffer.handle)), RMM_SUCCESS, "{}", self.context("finish"));
            if buffer.ptr != 0 {
                self.model.freed(buffer.ptr, &self.context("finish"));
            }
        }
        for (ptr, _) in self.model.live_in_order() {
            self.model.live.remove(&ptr);
            let status = call(rmmFree(ptr as *mut c_void, null_mut(), std::ptr::null(), 0));
            assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context("finish"), last_message());
        }
        if matches!(self.legacy, Legacy::Initialized(_)) {
            assert_eq!(call(rmmFinalize()), RMM_SUCCESS);
            self.legacy = Legacy::Finalized;
        }
        for device in 0..devices() {
            assert_eq!(call(rmmSetPerDeviceResource(device, self.defaults[device as usize], null_mut())), RMM_SUCCESS);
            assert_eq!(call(rmmResourceDestroy(self.defaults[device as usize])), RMM_SUCCESS);
        }
        for (handle, _) in std::mem::take(&mut self.handles) {
            assert_eq!(call(rmmResourceDestroy(handle)), RMM_SUCCESS);
        }
        for (_, probe) in std::mem::take(&mut self.probes) {
            assert_eq!(call(rmmResourceDestroy(probe)), RMM_SUCCESS);
        }
        for stream in self.streams.iter().flatten() {
            assert_eq!(call(rmmStreamDestroy(*stream)), RMM_SUCCESS);
        }
        assert_no_races(format_args!("seed {}, at its end", self.seed));
        for device in 0..devices() {
            assert_eq!(device_used(device), baseline[device as usize], "seed {}: device {device} memory left reserved", self.seed);
        }
        matches!(self.legacy, Legacy::Finalized)
    }
}

/// A statistics adaptor over an expandable resource, to ask whether it sleeps.
fn created_probe(expandable: rmmResource_t) -> rmmResource_t {
    let mut probe: rmmResource_t = null_mut();
    assert_eq!(call(rmmStatisticsAdaptorCreate(&mut probe, expandable)), RMM_SUCCESS, "{}", last_message());
    probe
}

/// Runs one seed from legacy RMM's state `finalized`; returns the state it leaves.
fn run_seed(seed: u64, budget: &Budget, finalized: bool) -> bool {
    let baseline: Vec<usize> = (0..devices()).map(device_used).collect();
    let mut world = World {
        rng: Rng::new(seed),
        model: Model::default(),
        handles: Vec::new(),
        dead_handles: Vec::new(),
        buffers: Vec::new(),
        dead_buffers: Vec::new(),
        current: (0..devices() as usize).collect(),
        defaults: vec![null_mut(); devices() as usize],
        legacy: if finalized { Legacy::Finalized } else { Legacy::Implicit },
        streams: vec![Vec::new(); devices() as usize],
        dead_streams: Vec::new(),
        allocated_on: Default::default(),
        freed: Vec::new(),
        host: Box::new([0; 8]),
        step: 0,
        seed,
        refusals: 0,
        registered: seed % 2 == 1,
        asleep: BTreeMap::new(),
        probes: BTreeMap::new(),
        stale: BTreeSet::new(),
        uncounted: BTreeMap::new(),
        any_sources: Vec::new(),
    };
    for device in 0..devices() {
        world.set_device(device);
        let mut handle: rmmResource_t = null_mut();
        assert_eq!(call(rmmGetCurrentDeviceResource(&mut handle)), RMM_SUCCESS);
        world.defaults[device as usize] = handle;
        world.add_node(Kind::Installed, device, None, null_mut());
    }
    // After the devices' defaults, which configure rmm from RMM_ALLOC_CONF at the first seed.
    rmm::platform::streams::set_registered_only(world.registered);
    let calls_before = CALLS.load(Ordering::Relaxed);
    answers_digest();
    while world.step < budget.steps && !budget.spent() {
        world.step();
    }
    let steps = world.step;
    let finalized = world.finish(&baseline);
    rmm::platform::streams::set_registered_only(false);
    if std::env::var_os("RMM_FUZZ_TRACE").is_some() {
        let calls = CALLS.load(Ordering::Relaxed) - calls_before;
        println!("fuzz_api seed {seed}: {steps} steps, {calls} calls, answers {:016x}", answers_digest());
    }
    finalized
}

/// A kind added to the registry fails here until the fuzzer creates it or says why not.
#[test]
fn the_fuzzer_creates_every_registered_kind_or_says_why_not() {
    let mut fuzzed: Vec<&str> = FUZZED.iter().filter_map(|kind| kind.name()).collect();
    fuzzed.sort();
    fuzzed.dedup();
    let mut covered: Vec<&str> = fuzzed.iter().copied().chain(NOT_FUZZED.iter().map(|(name, _)| *name)).collect();
    covered.sort();
    let mut registered: Vec<&str> = rmm::resources::kinds::KINDS.iter().map(|kind| kind.name).collect();
    registered.sort();
    assert_eq!(covered, registered, "FUZZED and NOT_FUZZED (tests/fuzz/mod.rs) together list each registered kind once");
}

/// A run replays: the same environment gives the same calls and the same answers, seed by seed
/// (issue 51: a failure CI printed could not be reproduced). Two runs of this binary's fuzzer,
/// each in a process of its own, print the same digests.
#[test]
fn a_run_replays_seed_by_seed() {
    let run = || {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "random_call_sequences_keep_the_c_api_contract", "--nocapture", "--test-threads=1"])
            .env("RMM_FUZZ_TRACE", "1")
            .env("RMM_FUZZ_SEED", "5")
            .env("RMM_FUZZ_CALLS", "30000")
            .env("RMM_FUZZ_STEPS", "4000")
            .env_remove("RMM_FUZZ_SECONDS")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
        stdout.lines().filter(|line| line.starts_with("fuzz_api seed")).map(str::to_owned).collect::<Vec<_>>()
    };
    let (first, second) = (run(), run());
    assert!(first.len() >= 2, "two seeds at least: {first:?}");
    assert_eq!(first, second, "the same environment, another run: the seeds' calls and answers differ");
}

#[test]
fn random_call_sequences_keep_the_c_api_contract() {
    // One device gets the memory of two: it holds the resources both would (pools keep more
    // than the live bytes).
    std::env::set_var("RMM_SIM_DEVICES", format!("{}:{}GiB", devices(), 3 - devices()));
    std::env::set_var("RMM_SIM_ON_RACE", "count");
    configure_legacy_api();
    let budget = Budget::from_env(if cfg!(debug_assertions) { 40_000 } else { 400_000 });
    let started = std::time::Instant::now();
    let mut seed = budget.seed;
    let mut finalized = false;
    while !budget.spent() {
        finalized = run_seed(seed, &budget, finalized);
        seed += 1;
    }
    let calls = CALLS.load(Ordering::Relaxed);
    println!(
        "fuzz_api: {calls} C API calls clean over seeds {}..{} on {} device(s) in {:.1} s ({:.0} calls/s; {} sleeps kept, {} discarded, {} wakes)",
        budget.seed,
        seed,
        devices(),
        started.elapsed().as_secs_f64(),
        calls as f64 / started.elapsed().as_secs_f64(),
        SLEEPS[0].load(Ordering::Relaxed),
        SLEEPS[1].load(Ordering::Relaxed),
        WAKES.load(Ordering::Relaxed)
    );
}
