//! Measures the library's own cost per allocate+free pair through the C API, on a simulated
//! device with race tracking off (so no device time is involved):
//!   RMM_SIM_DEVICES=1:8GiB RMM_SIM_ON_RACE=off cargo run --release --example pair_bench
//! (the logging adaptor writes its log to the temporary directory; ONLY=<name> runs one;
//! THREADS=n adds the benchmark's threaded churn on n threads, each on its own stream, or with
//! SHARED_STREAM=1 all on the NULL stream; ONLY=devices: a pair through device 1's pool with
//! each device current, with RMM_SIM_DEVICES=2)

use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;
use std::time::Instant;

fn main() {
    let (mut cuda, mut pool, mut binning) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 64 << 20, 0), RMM_SUCCESS);
    assert_eq!(rmmBinningResourceCreate(&mut binning, pool, 8, 20), RMM_SUCCESS);
    let mut arena = std::ptr::null_mut();
    assert_eq!(rmmArenaResourceCreate(&mut arena, cuda, 0), RMM_SUCCESS);
    let (mut stats, mut logging) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmStatisticsAdaptorCreate(&mut stats, pool), RMM_SUCCESS);
    let log_path = std::env::temp_dir().join("rmm-pair-bench.csv");
    let log_path = std::ffi::CString::new(log_path.to_str().unwrap()).unwrap();
    assert_eq!(rmmLoggingAdaptorCreate(&mut logging, pool, log_path.as_ptr()), RMM_SUCCESS);
    let only = std::env::var("ONLY").ok();
    for (name, resource) in [("pool", pool), ("binning", binning), ("arena", arena), ("statistics/pool", stats), ("logging/pool", logging)]
    {
        if only.as_deref().is_some_and(|only| only != name) {
            continue;
        }
        for size in sizes() {
            let iterations: usize = std::env::var("PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
            let mut ptr = std::ptr::null_mut();
            let start = Instant::now();
            for _ in 0..iterations {
                rmmResourceAllocate(resource, &mut ptr, size, std::ptr::null_mut());
                rmmResourceDeallocate(resource, ptr, size, std::ptr::null_mut());
            }
            let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
            println!("{name} {size} B: {ns:.1} ns per pair");
        }
        println!("{name} random_allocations: {:.1} ns per allocation", random_allocations(resource, 200_000));
        if let Some(threads) = std::env::var("THREADS").ok().and_then(|t| t.parse().ok()) {
            println!("{name} {threads} threads: {:.1} ns per allocation (aggregate)", threaded(resource, threads, 200_000));
        }
    }
    if only.as_deref().is_none_or(|only| only == "legacy") {
        // RMM_ALLOC/RMM_FREE with the pool as the current device's resource.
        assert_eq!(rmmSetCurrentDeviceResource(pool, std::ptr::null_mut()), RMM_SUCCESS);
        for size in sizes() {
            let iterations: usize = std::env::var("PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
            let mut ptr = std::ptr::null_mut();
            let start = Instant::now();
            for _ in 0..iterations {
                rmmAlloc(&mut ptr, size, std::ptr::null_mut(), std::ptr::null(), 0);
                rmmFree(ptr, std::ptr::null_mut(), std::ptr::null(), 0);
            }
            let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
            println!("legacy (rmmAlloc/rmmFree, pool) {size} B: {ns:.1} ns per pair");
        }
        // The framework entry points, called as CuPy's CFunctionAllocator and PyTorch's
        // pluggable allocator call them: what rmm-rs adds under each framework.
        let iterations: usize = std::env::var("PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
        let start = Instant::now();
        for _ in 0..iterations {
            let ptr = rmmCupyAllocate(std::ptr::null_mut(), 256, 0);
            rmmCupyDeallocate(std::ptr::null_mut(), ptr, 0);
        }
        println!("CuPy entry points (pool) 256 B: {:.1} ns per pair", start.elapsed().as_nanos() as f64 / iterations as f64);
        let start = Instant::now();
        for _ in 0..iterations {
            let ptr = rmmTorchAllocate(256, 0, std::ptr::null_mut());
            rmmTorchDeallocate(ptr, 256, 0, std::ptr::null_mut());
        }
        println!("PyTorch entry points (pool) 256 B: {:.1} ns per pair", start.elapsed().as_nanos() as f64 / iterations as f64);
    }
    if only.as_deref().is_none_or(|only| only == "devices") {
        other_device_current();
    }
}

/// With two devices or more: a pair through device 1's pool with device 1 current, then with
/// device 0 current (frameworks allocate for one device while another is current), on the NULL
/// stream and on a stream of device 1.
fn other_device_current() {
    let mut count = 0;
    if rmmGetDeviceCount(&mut count) != RMM_SUCCESS || count < 2 {
        return;
    }
    let (mut cuda, mut pool, mut stream) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmSetDevice(1), RMM_SUCCESS);
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 64 << 20, 0), RMM_SUCCESS);
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
    let iterations: usize = std::env::var("PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000_000);
    for (what, on) in [("NULL stream", std::ptr::null_mut()), ("device 1's stream", stream)] {
        for current in [1, 0] {
            assert_eq!(rmmSetDevice(current), RMM_SUCCESS);
            let mut ptr = std::ptr::null_mut();
            for _ in 0..iterations / 10 {
                rmmResourceAllocate(pool, &mut ptr, 256, on);
                rmmResourceDeallocate(pool, ptr, 256, on);
            }
            let start = Instant::now();
            for _ in 0..iterations {
                rmmResourceAllocate(pool, &mut ptr, 256, on);
                rmmResourceDeallocate(pool, ptr, 256, on);
            }
            let ns = start.elapsed().as_nanos() as f64 / iterations as f64;
            println!("device 1's pool, {what}, device {current} current, 256 B: {ns:.1} ns per pair");
        }
    }
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
}

/// The pair sizes: 256 B and 1 MiB, or the one SIZE names.
fn sizes() -> Vec<usize> {
    match std::env::var("SIZE").ok().and_then(|size| size.parse().ok()) {
        Some(size) => vec![size],
        None => vec![256, 1 << 20],
    }
}

/// RMM's random_allocations, as in bench/workloads.hpp: uniform sizes up to 1 MiB, random
/// interleaving of allocations and frees of random live blocks.
fn random_allocations(resource: rmm::boundary::handles::rmmResource_t, count: usize) -> f64 {
    let mut state = 42u64.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut live: Vec<(*mut std::ffi::c_void, usize)> = Vec::new();
    let start = Instant::now();
    let mut made = 0;
    while made < count || !live.is_empty() {
        if made < count && (live.is_empty() || next() % 2 == 0) {
            let size = 1 + (next() % (1 << 20)) as usize;
            let mut ptr = std::ptr::null_mut();
            rmmResourceAllocate(resource, &mut ptr, size, std::ptr::null_mut());
            live.push((ptr, size));
            made += 1;
        } else {
            let victim = (next() % live.len() as u64) as usize;
            let (ptr, size) = live.swap_remove(victim);
            rmmResourceDeallocate(resource, ptr, size, std::ptr::null_mut());
        }
    }
    start.elapsed().as_nanos() as f64 / count as f64
}

/// As the benchmark's threaded workload: each thread keeps 64 blocks of log-uniform sizes
/// (256 B to 1 MiB) on a stream of its own (SHARED_STREAM=1: all on the NULL stream) and
/// replaces a random one `per_thread` times. Wall time over all the threads' allocations.
fn threaded(resource: rmm::boundary::handles::rmmResource_t, threads: u64, per_thread: usize) -> f64 {
    let resource = resource as usize;
    let shared = std::env::var("SHARED_STREAM").is_ok_and(|v| v == "1");
    let start = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let resource = resource as rmm::boundary::handles::rmmResource_t;
                let mut stream = std::ptr::null_mut();
                if !shared {
                    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
                }
                let mut state = (100 + t).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut size = move || {
                    state ^= state >> 12;
                    state ^= state << 25;
                    state ^= state >> 27;
                    let r = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
                    ((256.0f64 * 4096f64.powf((r >> 11) as f64 / (1u64 << 53) as f64)) as usize, r)
                };
                let mut live: Vec<(*mut std::ffi::c_void, usize)> = (0..64)
                    .map(|_| {
                        let (bytes, _) = size();
                        let mut ptr = std::ptr::null_mut();
                        assert_eq!(rmmResourceAllocate(resource, &mut ptr, bytes, stream), RMM_SUCCESS);
                        (ptr, bytes)
                    })
                    .collect();
                for _ in 0..per_thread {
                    let (bytes, r) = size();
                    let victim = (r % 64) as usize;
                    rmmResourceDeallocate(resource, live[victim].0, live[victim].1, stream);
                    assert_eq!(rmmResourceAllocate(resource, &mut live[victim].0, bytes, stream), RMM_SUCCESS);
                    live[victim].1 = bytes;
                }
                for (ptr, bytes) in live {
                    rmmResourceDeallocate(resource, ptr, bytes, stream);
                }
                if !shared {
                    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    start.elapsed().as_nanos() as f64 / (threads as usize * (per_thread + 64)) as f64
}
