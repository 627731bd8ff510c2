//! Measures the library's own cost per allocate+free pair through the C API, on a simulated
//! device with race tracking off (so no device time is involved):
//!   RMM_SIM_DEVICES=1:8GiB RMM_SIM_ON_RACE=off cargo run --release --example pair_bench

use rmm::error::rmmError_t::RMM_SUCCESS;
use rmm::ffi::*;
use std::time::Instant;

fn main() {
    let (mut cuda, mut pool, mut binning) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 64 << 20, 0), RMM_SUCCESS);
    assert_eq!(rmmBinningResourceCreate(&mut binning, pool, 8, 20), RMM_SUCCESS);
    for (name, resource) in [("pool", pool), ("binning", binning)] {
        for size in [256usize, 1 << 20] {
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
    }
}
