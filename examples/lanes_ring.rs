//! Threads sharing the NULL stream, each keeping a ring of 8 blocks of 256 B (the threads
//! matrix's 256 B shape), on a pool that grows from nothing, on a simulated device: five rounds
//! of new threads, each thread 200,000 pairs through the resource API. Prints ns per pair in
//! aggregate per round. The stream splits into lanes; a lane whose own memory is too small
//! takes blocks from its siblings, at most `SIBLING_TAKES` since it last grew (before that
//! bound every pair of every lane but the first went through the slow path).
//!   RMM_SIM_DEVICES=1:8GiB RMM_SIM_ON_RACE=off cargo run --release --example lanes_ring [THREADS]

#[path = "common/ring.rs"]
mod common;

use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;
use std::time::Instant;

const PAIRS: usize = 200_000;

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|t| t.parse().ok()).unwrap_or(8);
    let (mut cuda, mut pool) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 0, 0), RMM_SUCCESS);
    let shared = pool as usize;
    for round in 0..5 {
        let start = Instant::now();
        let workers: Vec<_> = (0..threads).map(|_| std::thread::spawn(move || common::ring_of_8(shared as rmmResource_t, PAIRS))).collect();
        workers.into_iter().for_each(|worker| worker.join().unwrap());
        let ns = start.elapsed().as_nanos() as f64 / (threads * PAIRS) as f64;
        println!("round {round}: {threads} threads on the NULL stream, rings of 8 x 256 B: {ns:.1} ns per pair in aggregate");
    }
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
}
