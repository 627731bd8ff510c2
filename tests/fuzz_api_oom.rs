//! The API fuzzer's out-of-memory variant, on two small simulated devices (64 MiB each): each
//! round builds a random stack on each device and drives it into out of memory again and
//! again, from the pool's maximum, a limit, or the device itself, with bad frees at the edge;
//! a failure-callback adaptor frees memory from inside the failing allocation (through the
//! same stack) and retries. Every refusal must be RMM_ERROR_OUT_OF_MEMORY with nothing lost:
//! every live block keeps its contents and none overlap. After a round's blocks are freed and
//! its handles destroyed, each device's memory must be all free again, and all of it must be
//! usable in one block.
//!
//! Bounded by RMM_FUZZ_CALLS, RMM_FUZZ_SECONDS and RMM_FUZZ_SEED (first seed).

mod fuzz;

use fuzz::*;
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::Mutex;

const DEVICES: i32 = 2;
const DEVICE_BYTES: usize = 64 << 20;

/// Blocks the failure callback may free to let a failing allocation succeed: (top handle,
/// pointer, size, stamp).
struct Reserve {
    blocks: Mutex<Vec<(usize, usize, u64)>>,
    top: Mutex<usize>,
    callbacks: Mutex<u64>,
}

static RESERVE: Reserve = Reserve { blocks: Mutex::new(Vec::new()), top: Mutex::new(0), callbacks: Mutex::new(0) };

/// Frees one reserved block through the stack that is failing and asks for a retry; gives
/// up when the reserve is empty.
extern "C" fn free_reserve_and_retry(_bytes: usize, _arg: *mut c_void) -> bool {
    *RESERVE.callbacks.lock().unwrap() += 1;
    let top = *RESERVE.top.lock().unwrap();
    let Some((ptr, size, _)) = RESERVE.blocks.lock().unwrap().pop() else { return false };
    let status = call(rmmResourceDeallocate(top as rmmResource_t, ptr as *mut c_void, size, null_mut()));
    // A panic cannot cross this extern "C" callback: report through the status instead.
    if status != RMM_SUCCESS {
        eprintln!("the failure callback could not free {ptr:#x}: {status:?} ({})", last_message());
        std::process::abort();
    }
    true
}

/// One round's stack on one device.
struct Stack {
    /// Created handles, top first.
    handles: Vec<rmmResource_t>,
    what: String,
    /// The largest single block the stack can hand out (fixed-size resources).
    largest: usize,
    /// Whether the top has a failure callback that frees the reserve.
    retries: bool,
}

fn pool_with_maximum(upstream: rmmResource_t, maximum: usize) -> rmmResource_t {
    let mut handle: rmmResource_t = null_mut();
    assert_eq!(call(rmmPoolResourceCreate(&mut handle, upstream, 0, maximum)), RMM_SUCCESS, "{}", last_message());
    handle
}

fn build(rng: &mut Rng, device: i32) -> Stack {
    assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
    let cuda = created(Kind::Cuda, null_mut());
    let mut handles = vec![cuda];
    let mut largest = usize::MAX;
    let choice = rng.below(10);
    let what = match choice {
        0 => "cuda".to_string(),
        1 => {
            handles.push(pool_with_maximum(cuda, 32 << 20));
            "pool (maximum 32 MiB)".to_string()
        }
        2 => {
            handles.push(created(Kind::Pool, cuda));
            "pool (grows to the device)".to_string()
        }
        3 => {
            handles.push(created(Kind::Arena, cuda));
            "arena".to_string()
        }
        4 => {
            let pool = created(Kind::Pool, cuda);
            handles.push(pool);
            handles.push(created(Kind::Binning, pool));
            "binning over pool".to_string()
        }
        5 => {
            let pool = created(Kind::Pool, cuda);
            handles.push(pool);
            handles.push(created(Kind::FixedSize { block: 1 << 16 }, pool));
            largest = 1 << 16;
            "fixed-size over pool".to_string()
        }
        6 => {
            let pool = created(Kind::Pool, cuda);
            let statistics = created(Kind::Statistics, pool);
            handles.extend([pool, statistics, created(Kind::Limiting { limit: 24 << 20 }, statistics)]);
            "limit 24 MiB over statistics over pool".to_string()
        }
        8 | 9 => {
            let release = choice == 9;
            handles.push(created(Kind::Expandable { release }, null_mut()));
            format!("expandable ({})", if release { "pages back as soon as free" } else { "keeps its pages" })
        }
        _ => {
            let limiting = created(Kind::Limiting { limit: 40 << 20 }, cuda);
            let pool = pool_with_maximum(limiting, 0);
            handles.extend([limiting, pool, created(Kind::Aligned { alignment: 1 << 16, threshold: 4096 }, pool)]);
            "aligned over pool over limit 40 MiB".to_string()
        }
    };
    let mut retries = false;
    let mut what = what;
    if rng.chance(40) {
        // Frees from inside the failing allocation, through the same stack, then retries; a
        // statistics adaptor over it counts what the callback's frees and the retry do.
        let top = *handles.last().unwrap();
        let mut callback: rmmResource_t = null_mut();
        let status = call(rmmFailureCallbackAdaptorCreate(&mut callback, top, Some(free_reserve_and_retry), null_mut()));
        assert_eq!(status, RMM_SUCCESS);
        handles.push(callback);
        handles.push(created(Kind::Statistics, callback));
        retries = true;
        what = format!("statistics over a failure callback over {what}");
    }
    handles.reverse();
    Stack { handles, what, largest, retries }
}

struct Round<'a> {
    rng: &'a mut Rng,
    device: i32,
    top: rmmResource_t,
    largest: usize,
    /// ptr -> (size, tag)
    live: BTreeMap<usize, (usize, u64)>,
    next_tag: u64,
    out_of_memory: u64,
    what: String,
}

impl Round<'_> {
    fn context(&self) -> String {
        format!("device {} ({}), {} live blocks", self.device, self.what, self.live.len())
    }

    fn check_all(&self) {
        let mut end = 0;
        for (&ptr, &(size, tag)) in &self.live {
            assert!(ptr >= end, "{}: blocks overlap at {ptr:#x}", self.context());
            assert!(stamped(ptr, size, tag), "{}: the block at {ptr:#x} ({size} bytes) lost its contents", self.context());
            end = ptr + size;
        }
    }

    fn size(&mut self) -> usize {
        let size = match self.rng.below(10) {
            0 => 1 + self.rng.below(12 << 20) as usize,
            1..=3 => 1 + self.rng.below(1 << 20) as usize,
            _ => self.rng.log_uniform(16),
        };
        size.min(self.largest)
    }

    /// Allocates until `misses` allocations in a row fail; every failure must be out of memory.
    fn fill(&mut self, misses: u32) {
        let mut in_a_row = 0;
        while in_a_row < misses {
            let size = self.size();
            let (status, ptr) = allocate(self.top, size, null_mut());
            match status {
                RMM_SUCCESS => {
                    in_a_row = 0;
                    assert!(!self.live.contains_key(&ptr), "{}: {ptr:#x} handed out twice", self.context());
                    self.next_tag += 1;
                    stamp(ptr, size, self.next_tag);
                    self.live.insert(ptr, (size, self.next_tag));
                }
                RMM_ERROR_OUT_OF_MEMORY => {
                    in_a_row += 1;
                    self.out_of_memory += 1;
                    assert!(last_message().contains("out of memory"), "{}: {}", self.context(), last_message());
                    self.bad_frees();
                }
                other => panic!("{}: allocating {size} bytes: {other:?} ({})", self.context(), last_message()),
            }
        }
        self.check_all();
    }

    /// Bad frees while the stack is full: refused, and nothing moves.
    fn bad_frees(&mut self) {
        let Some((&ptr, &(size, _))) = self.live.iter().nth(self.rng.below(self.live.len().max(1) as u64) as usize) else { return };
        let mut refused: Vec<(rmmError_t, &str)> =
            vec![(call(rmmResourceDeallocate(self.top, ptr as *mut c_void, size + 1, null_mut())), "a wrong size")];
        if size > 256 {
            refused.push((call(rmmResourceDeallocate(self.top, (ptr + 256) as *mut c_void, size, null_mut())), "an interior pointer"));
        }
        if !self.live.contains_key(&(ptr + size)) {
            refused.push((call(rmmFree((ptr + size) as *mut c_void, null_mut(), c"oom.c".as_ptr(), 1)), "one past the end"));
        }
        for (status, what) in refused {
            assert_eq!(status, RMM_ERROR_INVALID_ARGUMENT, "{}: {what}: {}", self.context(), last_message());
        }
    }

    fn free_some(&mut self, percent: u64) {
        let chosen: Vec<usize> = self.live.keys().copied().filter(|_| self.rng.chance(percent)).collect();
        for ptr in chosen {
            let (size, tag) = self.live.remove(&ptr).unwrap();
            assert!(stamped(ptr, size, tag), "{}: the block at {ptr:#x} lost its contents", self.context());
            let status = call(rmmResourceDeallocate(self.top, ptr as *mut c_void, size, null_mut()));
            assert_eq!(status, RMM_SUCCESS, "{}: {}", self.context(), last_message());
        }
    }
}

/// The device's whole free memory in one block, straight from a cuda resource.
fn whole_device_usable(device: i32) {
    assert_eq!(call(rmmSetDevice(device)), RMM_SUCCESS);
    let cuda = created(Kind::Cuda, null_mut());
    let free = DEVICE_BYTES - device_used(device);
    let (status, ptr) = allocate(cuda, free, null_mut());
    assert_eq!(status, RMM_SUCCESS, "device {device}: {free} free bytes are not usable in one block: {}", last_message());
    assert_eq!(call(rmmResourceDeallocate(cuda, ptr as *mut c_void, free, null_mut())), RMM_SUCCESS);
    assert_eq!(call(rmmResourceDestroy(cuda)), RMM_SUCCESS);
}

#[test]
fn stacks_driven_out_of_memory_lose_nothing() {
    std::env::set_var("RMM_SIM_DEVICES", "2:64MiB");
    std::env::set_var("RMM_SIM_ON_RACE", "count");
    configure_legacy_api();
    let budget = Budget::from_env(if cfg!(debug_assertions) { 30_000 } else { 300_000 });
    let baseline: Vec<usize> = (0..DEVICES).map(device_used).collect();
    let started = std::time::Instant::now();
    let mut rng = Rng::new(budget.seed);
    let (mut rounds, mut out_of_memory) = (0u64, 0u64);
    let mut kinds = BTreeMap::new();
    while !budget.spent() {
        for device in 0..DEVICES {
            let stack = build(&mut rng, device);
            *kinds.entry(stack.what.clone()).or_insert(0u64) += 1;
            let top = stack.handles[0];
            let mut round = Round {
                rng: &mut rng,
                device,
                top,
                largest: stack.largest,
                live: BTreeMap::new(),
                next_tag: rounds << 32,
                out_of_memory: 0,
                what: stack.what.clone(),
            };
            for _ in 0..4 {
                round.fill(3);
                if stack.retries {
                    // Some of what is live becomes the callback's to free.
                    *RESERVE.top.lock().unwrap() = top as usize;
                    let handed: Vec<usize> = round.live.keys().copied().filter(|_| round.rng.chance(30)).collect();
                    let mut reserve = RESERVE.blocks.lock().unwrap();
                    for ptr in handed {
                        let (size, tag) = round.live.remove(&ptr).unwrap();
                        reserve.push((ptr, size, tag));
                    }
                    drop(reserve);
                    round.fill(3);
                    for (ptr, size, tag) in RESERVE.blocks.lock().unwrap().drain(..) {
                        round.live.insert(ptr, (size, tag));
                    }
                }
                round.free_some(50);
            }
            round.free_some(100);
            out_of_memory += round.out_of_memory;
            let mut released = 0;
            assert_eq!(call(rmmResourceRelease(top, &mut released)), RMM_SUCCESS);
            for handle in &stack.handles {
                assert_eq!(call(rmmResourceDestroy(*handle)), RMM_SUCCESS, "{}", last_message());
            }
            assert_eq!(device_used(device), baseline[device as usize], "device {device} ({}): memory left reserved", stack.what);
            whole_device_usable(device);
        }
        rounds += 1;
        assert_no_races(format_args!("round {rounds}"));
    }
    let callbacks = *RESERVE.callbacks.lock().unwrap();
    assert!(out_of_memory > 0 && callbacks > 0, "the fuzzer never reached out of memory ({out_of_memory}) or a callback ({callbacks})");
    println!(
        "fuzz_api_oom: {} C API calls clean over {rounds} rounds (seed {}) in {:.1} s: {out_of_memory} out-of-memory refusals, {callbacks} failure callbacks; stacks {kinds:?}",
        CALLS.load(std::sync::atomic::Ordering::Relaxed),
        budget.seed,
        started.elapsed().as_secs_f64()
    );
}
