//! What an adaptor adds over the bare pool beneath it, through the C API, on a simulated device
//! (the GPU benchmark's adaptor table, at home):
//!   RMM_SIM_DEVICES=1:8GiB RMM_SIM_ON_RACE=off cargo run --release --example adaptor_cost
//! prints, for each adaptor over a pool of its own, the ns it adds per 256 B allocate+free pair
//! (interleaved with the bare pool in slices, as bench::added_per_allocation does) and per
//! allocation of the benchmark's churn on THREADS threads (default 8) sharing it (ONLY=a,b
//! measures those adaptors only; CLOCK=thread times the pairs in processor time of the
//! measuring thread).
//!
//! Timings on a shared machine wander; instruction counts do not. Under callgrind, ADAPTOR
//! names one resource (`pool` for the bare one) and MODE `pairs` or `threads`; only the
//! `measured_*` functions are counted:
//!   valgrind --tool=callgrind --toggle-collect='*measured_*' target/release/examples/adaptor_cost
//! and the instructions per pair are the total over PAIRS (default 100000; per thread in the
//! churn, each step a free and an allocation). Run without valgrind, MODE `pairs` prints the ns
//! per pair (with CLOCK=thread, of processor time: the log writer's thread is left out).

use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;
use std::time::Instant;

type Create = fn(&mut rmmResource_t, rmmResource_t) -> rmm::error::rmmError_t;

fn adaptors() -> Vec<(&'static str, Create)> {
    vec![
        ("pool", |out, pool| {
            *out = pool;
            RMM_SUCCESS
        }),
        ("statistics", |out, pool| rmmStatisticsAdaptorCreate(out, pool)),
        ("limiting", |out, pool| rmmLimitingAdaptorCreate(out, pool, usize::MAX)),
        ("tracking", |out, pool| rmmTrackingAdaptorCreate(out, pool, false)),
        ("logging", |out, pool| {
            let path = std::env::temp_dir().join(format!("rmm-adaptor-cost-{}.csv", std::process::id()));
            let path = std::ffi::CString::new(path.to_str().expect("a UTF-8 temporary directory")).expect("no NUL");
            rmmLoggingAdaptorCreate(out, pool, path.as_ptr())
        }),
        ("aligned", |out, pool| rmmAlignedAdaptorCreate(out, pool, 4096, 0)),
    ]
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let mut cuda = std::ptr::null_mut();
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    let pairs = env_number("PAIRS", 100_000);
    let threads = env_number("THREADS", 8);
    if let Ok(only) = std::env::var("ADAPTOR") {
        let (_, create) = adaptors()
            .into_iter()
            .find(|(name, _)| *name == only)
            .expect("ADAPTOR: pool, statistics, limiting, tracking, logging or aligned");
        let (pool, adaptor) = over_a_pool(cuda, create);
        match std::env::var("MODE").as_deref() {
            Ok("threads") => {
                churn(adaptor, threads, 1_000);
                churn(adaptor, threads, pairs);
            }
            _ => {
                unmeasured_pairs(adaptor, 1_000);
                let start = now_ns();
                measured_pairs(adaptor, pairs);
                eprintln!("{only}: {:.1} ns per pair", (now_ns() - start) as f64 / pairs as f64);
            }
        }
        destroy(adaptor, pool);
        return;
    }
    let only = std::env::var("ONLY").ok();
    for (name, create) in adaptors().into_iter().skip(1) {
        if only.as_deref().is_some_and(|only| !only.split(',').any(|one| one == name)) {
            continue;
        }
        let (pool, adaptor) = over_a_pool(cuda, create);
        let (mut on_pairs, mut on_threads) = (Vec::new(), Vec::new());
        for round in 0..8 {
            let (bare_ns, adapted_ns) = interleaved(pool, adaptor, pairs);
            let bare_churn = churn(pool, threads, 20_000);
            let adapted_churn = churn(adaptor, threads, 20_000);
            if round > 0 {
                on_pairs.push(adapted_ns - bare_ns);
                on_threads.push(adapted_churn - bare_churn);
            }
        }
        println!(
            "{name}/pool: pair +{:.1} ns (median of {}), {threads} threads +{:.1} ns per allocation",
            median(on_pairs),
            7,
            median(on_threads)
        );
        destroy(adaptor, pool);
    }
}

fn over_a_pool(cuda: rmmResource_t, create: Create) -> (rmmResource_t, rmmResource_t) {
    let (mut pool, mut adaptor) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 64 << 20, 0), RMM_SUCCESS);
    assert_eq!(create(&mut adaptor, pool), RMM_SUCCESS);
    (pool, adaptor)
}

fn destroy(adaptor: rmmResource_t, pool: rmmResource_t) {
    if adaptor != pool {
        assert_eq!(rmmResourceDestroy(adaptor), RMM_SUCCESS);
    }
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[inline(always)]
fn pair(resource: rmmResource_t) {
    let mut ptr = std::ptr::null_mut();
    assert_eq!(rmmResourceAllocate(resource, &mut ptr, 256, std::ptr::null_mut()), RMM_SUCCESS);
    assert_eq!(rmmResourceDeallocate(resource, ptr, 256, std::ptr::null_mut()), RMM_SUCCESS);
}

#[inline(never)]
fn unmeasured_pairs(resource: rmmResource_t, count: usize) {
    (0..count).for_each(|_| pair(resource));
}

#[inline(never)]
fn measured_pairs(resource: rmmResource_t, count: usize) {
    (0..count).for_each(|_| pair(resource));
}

/// ns per pair on `bare` and on `adapted`, in alternating slices of 256 pairs, so that both see
/// the same spells of a shared machine.
fn interleaved(bare: rmmResource_t, adapted: rmmResource_t, count: usize) -> (f64, f64) {
    const SLICE: usize = 256;
    let (mut bare_ns, mut adapted_ns) = (0u64, 0u64);
    for _ in 0..count.div_ceil(SLICE) {
        let start = now_ns();
        unmeasured_pairs(bare, SLICE);
        bare_ns += now_ns() - start;
        let start = now_ns();
        unmeasured_pairs(adapted, SLICE);
        adapted_ns += now_ns() - start;
    }
    let pairs = (count.div_ceil(SLICE) * SLICE) as f64;
    (bare_ns as f64 / pairs, adapted_ns as f64 / pairs)
}

/// The time the pairs are measured in: wall-clock, or with CLOCK=thread the calling thread's
/// processor time, which leaves out the spells other processes run on its processor (on a
/// machine shared with other work, the wall-clock figures wander by tens of ns).
fn now_ns() -> u64 {
    static THREAD_CLOCK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let clock = if *THREAD_CLOCK.get_or_init(|| std::env::var("CLOCK").is_ok_and(|c| c == "thread")) {
        libc::CLOCK_THREAD_CPUTIME_ID
    } else {
        libc::CLOCK_MONOTONIC
    };
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// The benchmark's threaded churn: each thread keeps 64 blocks of log-uniform sizes (256 B to
/// 1 MiB) on a stream of its own and replaces a random one `steps` times. Wall ns per
/// allocation over all the threads.
fn churn(resource: rmmResource_t, threads: usize, steps: usize) -> f64 {
    let resource = resource as usize;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for thread in 0..threads {
            scope.spawn(move || measured_churn(resource as rmmResource_t, thread as u64, steps));
        }
    });
    start.elapsed().as_nanos() as f64 / (threads * (steps + 64)) as f64
}

#[inline(never)]
fn measured_churn(resource: rmmResource_t, thread: u64, steps: usize) {
    let mut stream = std::ptr::null_mut();
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
    let mut state = (100 + thread).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut random = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut size = || (256.0f64 * 4096f64.powf((random() >> 11) as f64 / (1u64 << 53) as f64)) as usize;
    let mut live: Vec<(*mut std::ffi::c_void, usize)> = (0..64)
        .map(|_| {
            let bytes = size();
            let mut ptr = std::ptr::null_mut();
            assert_eq!(rmmResourceAllocate(resource, &mut ptr, bytes, stream), RMM_SUCCESS);
            (ptr, bytes)
        })
        .collect();
    for step in 0..steps {
        let victim = step * 37 % 64;
        let (ptr, bytes) = live[victim];
        assert_eq!(rmmResourceDeallocate(resource, ptr, bytes, stream), RMM_SUCCESS);
        let bytes = size();
        assert_eq!(rmmResourceAllocate(resource, &mut live[victim].0, bytes, stream), RMM_SUCCESS);
        live[victim].1 = bytes;
    }
    for (ptr, bytes) in live {
        assert_eq!(rmmResourceDeallocate(resource, ptr, bytes, stream), RMM_SUCCESS);
    }
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
}
