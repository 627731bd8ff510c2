//! A shadow-model fuzzer of the C API on simulated devices: random sequences of calls over every
//! resource and adaptor, device buffers, the legacy and framework entry points, realloc,
//! finalize and re-initialize, with bad input mixed in, each call checked against a model of
//! what is live. Shared by the three variants (tests/fuzz_api.rs, tests/fuzz_api_threads.rs,
//! tests/fuzz_api_oom.rs), each a process of its own because the simulated devices are set up
//! once per process.
//!
//! What must hold after every call (the C API's contract):
//! - every call answers a code; a pointer is freed only by its exact address, once, through the
//!   resource it came from (any handle to it) with its exact size, or by rmmFree; anything else
//!   is RMM_ERROR_INVALID_ARGUMENT and changes nothing;
//! - live blocks never overlap and keep their contents (each is stamped when handed out and
//!   checked before it is freed);
//! - statistics, limiting and tracking adaptors count exactly what passes through them;
//! - the race checker finds no stream-ordering race;
//! - once everything is freed and destroyed, each device's memory is all free again.
//!
//! Budgets: RMM_FUZZ_CALLS (C API calls per variant), RMM_FUZZ_SECONDS (wall-clock limit),
//! RMM_FUZZ_SEED (first seed), RMM_FUZZ_STEPS (steps per seed). Defaults suit `cargo test`; scripts/fuzz.sh runs long.
//! RMM_FUZZ_GROWTH=1: the threaded variant's growth mode (stacks rebuilt empty every round,
//! threads growing them at once, out of memory without a limit a failure).

#![allow(dead_code)]

#[path = "../common/mod.rs"]
mod common;
pub use common::{configure_legacy_api, last_message, Rng};

use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every C API call made by this process's fuzzer.
pub static CALLS: AtomicU64 = AtomicU64::new(0);

/// A digest of the codes the C API answered, in order (`answers_digest`): equal for two runs
/// of one seed when the run replays (same calls, same answers).
static ANSWERS: AtomicU64 = AtomicU64::new(0);

/// Counts one C API call and passes its result on; a code is folded into the answers' digest.
pub fn call<T: 'static>(result: T) -> T {
    CALLS.fetch_add(1, Ordering::Relaxed);
    if let Some(&code) = (&result as &dyn std::any::Any).downcast_ref::<rmmError_t>() {
        // FNV-1a over the codes; only the sequential fuzzer reads it (one thread calls).
        let digest = ANSWERS.load(Ordering::Relaxed);
        ANSWERS.store((digest ^ code as u64).wrapping_mul(0x100_0000_01b3), Ordering::Relaxed);
    }
    result
}

/// The digest of the answers since the last call, which starts a new one.
pub fn answers_digest() -> u64 {
    ANSWERS.swap(0xcbf2_9ce4_8422_2325, Ordering::Relaxed)
}

pub struct Budget {
    pub calls: u64,
    pub deadline: Instant,
    pub seed: u64,
    /// Steps per seed (RMM_FUZZ_STEPS): a failing seed's prefix reproduces with fewer.
    pub steps: u64,
}

impl Budget {
    /// From the environment, with `calls` C API calls by default.
    pub fn from_env(calls: u64) -> Self {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<f64>().ok());
        let calls = var("RMM_FUZZ_CALLS").map_or(calls, |c| c as u64);
        let seconds = var("RMM_FUZZ_SECONDS").unwrap_or(f64::INFINITY);
        let deadline = Instant::now() + Duration::from_secs_f64(seconds.min(1e9));
        let seed = var("RMM_FUZZ_SEED").map_or(1, |s| s as u64);
        Budget { calls, deadline, seed, steps: var("RMM_FUZZ_STEPS").map_or(4_000, |s| s as u64) }
    }

    pub fn spent(&self) -> bool {
        CALLS.load(Ordering::Relaxed) >= self.calls || Instant::now() >= self.deadline
    }
}

pub fn race_count() -> usize {
    let mut count = 0;
    assert_eq!(call(rmmSimGetRaceCount(&mut count)), RMM_SUCCESS);
    count
}

/// Panics with the simulator's reports (what raced, on which streams) when it saw a
/// stream-ordering race or a stale handle: `context` says where the check ran.
pub fn assert_no_races(context: impl std::fmt::Display) {
    if race_count() != 0 {
        let reports = rmm::platform::simulator().map(|sim| sim.race_reports()).unwrap_or_default();
        panic!("{context}: a stream-ordering race: {reports:#?}");
    }
}

/// The bytes a stamp covers: all of a small block, the ends of a large one.
fn stamp_ranges(ptr: usize, size: usize) -> [(usize, usize); 2] {
    let edge = size.min(256);
    [(ptr, edge), (ptr + size - edge, edge)]
}

fn pattern(tag: u64, at: usize) -> u8 {
    (tag.wrapping_mul(0x9E37_79B9).wrapping_add(at as u64 * 31) >> 7) as u8
}

/// The first `len` bytes of a stamp (the bytes at the start of a block of at least `len`).
pub fn stamp_bytes(tag: u64, len: usize) -> Vec<u8> {
    (0..len).map(|at| pattern(tag, at)).collect()
}

/// Writes a block's stamp (simulated device memory is host memory).
pub fn stamp(ptr: usize, size: usize, tag: u64) {
    for (start, len) in stamp_ranges(ptr, size) {
        // SAFETY: a live simulated block of at least `size` bytes at `ptr`; `start..start+len`
        // lies inside it.
        let bytes = unsafe { std::slice::from_raw_parts_mut(start as *mut u8, len) };
        for (at, byte) in bytes.iter_mut().enumerate() {
            *byte = pattern(tag, start + at - ptr);
        }
    }
}

/// Whether a block still holds its stamp.
pub fn stamped(ptr: usize, size: usize, tag: u64) -> bool {
    stamp_ranges(ptr, size).iter().all(|&(start, len)| {
        // SAFETY: as in `stamp`.
        let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, len) };
        bytes.iter().enumerate().all(|(at, &byte)| byte == pattern(tag, start + at - ptr))
    })
}

/// Bytes of `device` in use (simulated devices count every platform allocation).
pub fn device_used(device: i32) -> usize {
    let (free, total) = rmm::platform::backend().unwrap().mem_get_info(device).unwrap();
    total - free
}

/// The kinds of resource the fuzzer builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cuda,
    Managed,
    Pool,
    Arena,
    Binning,
    FixedSize {
        block: usize,
    },
    Statistics,
    Limiting {
        limit: usize,
    },
    Tracking,
    Logging,
    FailureCallback,
    Aligned {
        alignment: usize,
        threshold: usize,
    },
    Prefetch,
    /// On the virtual-memory API; `release`: free pages go back as soon as they are free
    /// (release threshold 0), cutting holes out of chunks on every free.
    Expandable {
        release: bool,
    },
    /// A resource rmm installed itself (a device's default, or rmmInitialize's).
    Installed,
}

/// What the fuzzer creates, each equally likely (a kind listed twice is picked twice as often).
pub const FUZZED: [Kind; 19] = [
    Kind::Cuda,
    Kind::Managed,
    Kind::Pool,
    Kind::Arena,
    Kind::Binning,
    Kind::FixedSize { block: 4096 },
    Kind::FixedSize { block: 1 << 16 },
    Kind::Statistics,
    Kind::Statistics,
    Kind::Limiting { limit: 8 << 20 },
    Kind::Limiting { limit: 64 << 20 },
    Kind::Tracking,
    Kind::Logging,
    Kind::FailureCallback,
    Kind::Aligned { alignment: 4096, threshold: 1000 },
    Kind::Aligned { alignment: 1 << 16, threshold: 0 },
    Kind::Prefetch,
    Kind::Expandable { release: false },
    Kind::Expandable { release: true },
];

/// The registry's kinds the fuzzer leaves out, and why: a kind is in `FUZZED` or here.
pub const NOT_FUZZED: [(&str, &str); 8] = [
    ("pinned_host", "host memory: the model checks device memory (device_used) and would not see it"),
    ("cuda_async", "the driver's pool keeps freed memory the model cannot see; tests/core.rs covers it"),
    ("callback", "needs an allocator of the test's own; fuzz_api_oom's failure callbacks free through one"),
    ("cuda_async_view", "a driver pool as cuda_async's, and one the test must make and keep; tests/pool_resources.rs covers it"),
    ("cuda_async_managed", "the driver's pool keeps freed memory the model cannot see; tests/pool_resources.rs covers it"),
    (
        "cuda_async_pinned_host",
        "host memory in a driver pool: neither the model's device figures nor its pool; tests/pool_resources.rs covers it",
    ),
    ("system", "needs pageable memory access, off on the fuzzer's simulated devices; tests/pool_resources.rs covers it"),
    ("sam_headroom", "needs pageable memory access, off on the fuzzer's simulated devices; tests/pool_resources.rs covers it"),
];

impl Kind {
    /// The kind's name in the registry (`rmm::resources::kinds`); None for `Installed`, which
    /// stands for whatever rmm installed.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Kind::Cuda => "cuda",
            Kind::Managed => "managed",
            Kind::Pool => "pool",
            Kind::Arena => "arena",
            Kind::Binning => "binning",
            Kind::FixedSize { .. } => "fixed_size",
            Kind::Statistics => "statistics",
            Kind::Limiting { .. } => "limiting",
            Kind::Tracking => "tracking",
            Kind::Logging => "logging",
            Kind::FailureCallback => "failure_callback",
            Kind::Aligned { .. } => "aligned",
            Kind::Prefetch => "prefetch",
            Kind::Expandable { .. } => "expandable",
            Kind::Installed => return None,
        })
    }

    /// Adaptors pass each block through to their upstream unchanged (the aligned adaptor does
    /// not: it asks its upstream for more and hands out an address inside).
    pub fn transparent(self) -> bool {
        matches!(self, Kind::Statistics | Kind::Limiting { .. } | Kind::Tracking | Kind::Logging | Kind::FailureCallback | Kind::Prefetch)
    }
}

pub struct Node {
    pub kind: Kind,
    pub device: i32,
    pub upstream: Option<usize>,
    /// Only callers' blocks pass through it: its counts are exact. False once a suballocator
    /// or an aligned adaptor (which ask for blocks of their own) sits over it.
    pub exact: bool,
    /// Live bytes and blocks through it (exact adaptors), as the adaptor counts them.
    pub bytes: usize,
    pub count: usize,
    pub total_count: usize,
    /// A handle that stays valid while the node is in the model (to read its figures).
    pub handle: rmmResource_t,
    /// A binning resource's bins: largest size served -> the caller's bin (None: its own
    /// fixed-size bin).
    pub bins: BTreeMap<usize, Option<usize>>,
    /// Every caller's bin ever added to a binning resource (a replaced one may still hold
    /// blocks, so it is still reached).
    pub callers_bins: Vec<usize>,
}

/// Who freed a block may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    Caller,
    Buffer,
}

#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub node: usize,
    pub size: usize,
    pub tag: u64,
    pub holder: Holder,
}

/// The blocks the fuzzer believes live, and the nodes they came from.
#[derive(Default)]
pub struct Model {
    pub nodes: Vec<Node>,
    pub live: BTreeMap<usize, Block>,
    pub next_tag: u64,
}

impl Model {
    /// The live blocks in the order they were stamped, not by address: addresses differ from
    /// run to run (the simulated devices' memory comes from the host's allocator), and a choice
    /// made by address would keep a seed from replaying.
    pub fn live_in_order(&self) -> Vec<(usize, Block)> {
        let mut live: Vec<(usize, Block)> = self.live.iter().map(|(&ptr, &block)| (ptr, block)).collect();
        live.sort_by_key(|(_, block)| block.tag);
        live
    }

    /// The nodes a block from `node` passes through whose counts are exact.
    pub fn counting_path(&self, node: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = Some(node);
        while let Some(index) = at {
            let n = &self.nodes[index];
            if !n.kind.transparent() {
                break;
            }
            if n.exact {
                path.push(index);
            }
            at = n.upstream;
        }
        path
    }

    /// Whether a call into `from` can reach `target` (`from` itself included).
    pub fn reaches(&self, from: usize, target: usize) -> bool {
        let n = &self.nodes[from];
        from == target || n.upstream.into_iter().chain(n.callers_bins.iter().copied()).any(|next| self.reaches(next, target))
    }

    /// The first node under `node` (itself included) that is not a transparent adaptor.
    pub fn base(&self, node: usize) -> usize {
        let mut at = node;
        while self.nodes[at].kind.transparent() {
            at = self.nodes[at].upstream.expect("adaptors have upstreams");
        }
        at
    }

    /// Marks the transparent adaptors at the top of `node`'s stack as no longer exact: a
    /// suballocator or an aligned adaptor now asks them for blocks of its own.
    pub fn used_as_upstream(&mut self, node: usize) {
        let mut at = Some(node);
        while let Some(index) = at {
            if !self.nodes[index].kind.transparent() {
                break;
            }
            self.nodes[index].exact = false;
            at = self.nodes[index].upstream;
        }
    }

    /// Whether `[ptr, ptr + size)` overlaps a live block.
    pub fn overlaps(&self, ptr: usize, size: usize) -> Option<usize> {
        if let Some((&start, block)) = self.live.range(..ptr + size).next_back() {
            if start + block.size > ptr {
                return Some(start);
            }
        }
        None
    }

    /// Records a block handed out (checking it against every live one) and stamps it.
    pub fn handed_out(&mut self, ptr: usize, node: usize, size: usize, holder: Holder, context: &str) {
        assert_ne!(ptr, 0, "{context}: NULL for {size} bytes");
        let base = self.base(node);
        let alignment = match self.nodes[base].kind {
            Kind::Aligned { alignment, threshold } if size >= threshold => alignment,
            _ => 256,
        };
        assert_eq!(ptr % alignment, 0, "{context}: {ptr:#x} is not {alignment}-byte aligned");
        if let Some(other) = self.overlaps(ptr, size) {
            panic!("{context}: [{ptr:#x}, +{size}) overlaps the live block at {other:#x} ({:?})", self.live[&other]);
        }
        self.next_tag += 1;
        let tag = self.next_tag;
        stamp(ptr, size, tag);
        self.live.insert(ptr, Block { node, size, tag, holder });
        let counted = size.div_ceil(256) * 256;
        for n in self.counting_path(node) {
            let node = &mut self.nodes[n];
            node.bytes += if matches!(node.kind, Kind::Limiting { .. }) { counted } else { size };
            node.count += 1;
            node.total_count += 1;
        }
    }

    /// Forgets a block the library freed, after checking its contents survived.
    pub fn freed(&mut self, ptr: usize, context: &str) -> Block {
        let block = self.live.remove(&ptr).unwrap_or_else(|| panic!("{context}: {ptr:#x} is not live in the model"));
        let counted = block.size.div_ceil(256) * 256;
        for n in self.counting_path(block.node) {
            let node = &mut self.nodes[n];
            node.bytes -= if matches!(node.kind, Kind::Limiting { .. }) { counted } else { block.size };
            node.count -= 1;
        }
        block
    }

    /// Checks a block's stamp.
    pub fn intact(&self, ptr: usize, context: &str) {
        let block = &self.live[&ptr];
        assert!(stamped(ptr, block.size, block.tag), "{context}: the contents of {ptr:#x} ({block:?}) were overwritten");
    }

    /// Checks every exact adaptor's figures against the model.
    pub fn check_counts(&self, context: &str) {
        for (index, node) in self.nodes.iter().enumerate() {
            if !node.exact || node.handle.is_null() {
                continue;
            }
            match node.kind {
                Kind::Statistics => {
                    let mut counts = rmmStatistics_t::default();
                    assert_eq!(call(rmmStatisticsAdaptorGetCounts(node.handle, &mut counts)), RMM_SUCCESS, "{context}");
                    assert_eq!(
                        (counts.current_bytes, counts.current_count, counts.total_count),
                        (node.bytes as i64, node.count as i64, node.total_count as i64),
                        "{context}: statistics node {index}"
                    );
                }
                Kind::Limiting { limit } => {
                    let mut bytes = 0;
                    assert_eq!(call(rmmLimitingAdaptorGetAllocatedBytes(node.handle, &mut bytes)), RMM_SUCCESS, "{context}");
                    assert_eq!(bytes, node.bytes, "{context}: limiting node {index}");
                    assert!(bytes <= limit, "{context}: limiting node {index} past its limit");
                }
                Kind::Tracking => {
                    let mut outstanding = 0;
                    assert_eq!(call(rmmTrackingAdaptorGetOutstanding(node.handle, null_mut(), 0, &mut outstanding)), RMM_SUCCESS);
                    assert_eq!(outstanding, node.count, "{context}: tracking node {index}");
                }
                _ => {}
            }
        }
    }
}

/// The answer an allocation of `size` bytes from `node` must get, when the model knows it: 0
/// bytes succeed (with NULL) before any resource sees them; otherwise walking down the stack as
/// the request does, a limiting adaptor whose count is exact (or whose limit is below the
/// request) refuses with out of memory, a fixed-size resource refuses a block larger than its
/// blocks as an invalid argument, and an aligned adaptor's padded request that overflows is
/// out of memory. None where the answer may be success or out of memory (a full device, or a
/// suballocator's upstream that cannot be predicted).
pub fn known_answer(model: &Model, node: usize, size: usize) -> Option<rmmError_t> {
    if size == 0 {
        return Some(RMM_SUCCESS);
    }
    let mut at = node;
    let mut asked = size;
    loop {
        let n = &model.nodes[at];
        let next = match n.kind {
            Kind::Limiting { limit } => {
                let counted = asked.div_ceil(256).saturating_mul(256);
                if counted > limit || (n.exact && n.bytes + counted > limit) {
                    return Some(RMM_ERROR_OUT_OF_MEMORY);
                }
                n.upstream
            }
            Kind::FixedSize { block } => return (asked > block).then_some(RMM_ERROR_INVALID_ARGUMENT),
            Kind::Aligned { alignment, threshold } => {
                if asked >= threshold && alignment > 256 {
                    match asked.checked_add(alignment - 256) {
                        Some(padded) => asked = padded,
                        None => return Some(RMM_ERROR_OUT_OF_MEMORY),
                    }
                }
                n.upstream
            }
            Kind::Binning => match n.bins.range(asked..).next() {
                Some((_, Some(bin))) => Some(*bin),
                Some((_, None)) => return None,
                None => n.upstream,
            },
            kind if kind.transparent() => n.upstream,
            _ => return None,
        };
        at = next.expect("adaptors have upstreams");
    }
}

/// The blocks a fixed-size resource takes from its upstream when it is created.
pub const PREALLOCATED_BLOCKS: usize = 4;

/// Creates a resource of `kind` over `upstream` (None for device resources) on the current
/// device. Returns the status and the handle.
pub fn create(kind: Kind, upstream: rmmResource_t) -> (rmmError_t, rmmResource_t) {
    let mut handle: rmmResource_t = null_mut();
    let status = call(match kind {
        Kind::Cuda => rmmCudaResourceCreate(&mut handle),
        Kind::Managed => rmmManagedResourceCreate(&mut handle),
        Kind::Pool => rmmPoolResourceCreate(&mut handle, upstream, 0, 0),
        Kind::Arena => rmmArenaResourceCreate(&mut handle, upstream, 0),
        Kind::Binning => rmmBinningResourceCreate(&mut handle, upstream, 8, 14),
        Kind::FixedSize { block } => rmmFixedSizeResourceCreate(&mut handle, upstream, block, PREALLOCATED_BLOCKS),
        Kind::Statistics => rmmStatisticsAdaptorCreate(&mut handle, upstream),
        Kind::Limiting { limit } => rmmLimitingAdaptorCreate(&mut handle, upstream, limit),
        Kind::Tracking => rmmTrackingAdaptorCreate(&mut handle, upstream, false),
        Kind::Logging => {
            let path = std::env::temp_dir().join(format!("rmm-fuzz-{}.csv", std::process::id()));
            let path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            rmmLoggingAdaptorCreate(&mut handle, upstream, path.as_ptr())
        }
        Kind::FailureCallback => rmmFailureCallbackAdaptorCreate(&mut handle, upstream, Some(never_retry), null_mut()),
        Kind::Aligned { alignment, threshold } => rmmAlignedAdaptorCreate(&mut handle, upstream, alignment, threshold),
        Kind::Prefetch => rmmPrefetchAdaptorCreate(&mut handle, upstream),
        Kind::Expandable { release } => {
            let options = rmm::boundary::types::rmmExpandableOptions_t {
                initial_size: 0,
                maximum_size: 0,
                release_free_pages: release.into(),
                release_threshold: 0,
                page_size: 0,
                peers: std::ptr::null(),
                num_peers: 0,
            };
            rmmExpandableResourceCreateWithOptions(&mut handle, &options)
        }
        Kind::Installed => unreachable!("installed by rmm, not created"),
    });
    (status, handle)
}

extern "C" fn never_retry(_bytes: usize, _arg: *mut c_void) -> bool {
    false
}

/// Creates a resource that must be created.
pub fn created(kind: Kind, upstream: rmmResource_t) -> rmmResource_t {
    let (status, handle) = create(kind, upstream);
    assert_eq!(status, RMM_SUCCESS, "creating {kind:?}: {}", last_message());
    handle
}

/// Allocates through a handle; the status and the pointer.
pub fn allocate(handle: rmmResource_t, size: usize, stream: cudaStream_t) -> (rmmError_t, usize) {
    let mut ptr: *mut c_void = null_mut();
    let status = call(rmmResourceAllocate(handle, &mut ptr, size, stream));
    (status, ptr as usize)
}
