//! Threads that grow a pool at once: each must get its block. The shape of RAPIDS RMM's
//! multi-threaded resource test (threads allocating 1 B-5 MiB with frees in between, on a
//! resource that starts empty), many rounds, with 2, 4 and 8 threads: a correct program on a
//! device with room to spare never sees out of memory.

mod common;

use common::*;
use rmm::platform::Stream;
use rmm::resources::{ArenaResource, DirectResource, MemoryResource, PoolResource};
use std::sync::{Arc, Barrier};

const MIB: usize = 1 << 20;
/// Allocations each thread makes per round.
const STEPS: usize = 100;

fn rounds() -> usize {
    std::env::var("RMM_GROWTH_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(200)
}

/// Runs `rounds()` rounds of `threads` threads on a new resource from `make` each, on `stream`
/// (or, with `None`, a stream per thread); returns the failed allocations' messages.
fn failures_in_rounds(threads: usize, stream: Option<Stream>, make: impl Fn() -> Arc<dyn MemoryResource>) -> Vec<String> {
    let mut failures = Vec::new();
    for round in 0..rounds() {
        let resource = make();
        let start = Arc::new(Barrier::new(threads));
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (resource, start) = (resource.clone(), start.clone());
                std::thread::spawn(move || {
                    let stream = stream.unwrap_or_else(|| rmm::resources::streams::create(0).unwrap());
                    let mut rng = Rng::new((round * 64 + t) as u64);
                    let mut live: Vec<(usize, usize)> = Vec::new();
                    let mut failed = Vec::new();
                    start.wait();
                    for _ in 0..STEPS {
                        let bytes = 1 + rng.below(5 * MIB as u64) as usize;
                        match resource.allocate(bytes, stream) {
                            Ok(ptr) => live.push((ptr, bytes)),
                            Err(e) => failed.push(format!("round {round}, thread {t}, {bytes} bytes: {e}")),
                        }
                        if !live.is_empty() && rng.chance(50) {
                            let (ptr, bytes) = live.swap_remove(rng.below(live.len() as u64) as usize);
                            resource.deallocate(ptr, bytes, stream).unwrap();
                        }
                    }
                    for (ptr, bytes) in live {
                        resource.deallocate(ptr, bytes, stream).unwrap();
                    }
                    if stream.0 > 2 {
                        rmm::resources::streams::destroy(stream).unwrap();
                    }
                    failed
                })
            })
            .collect();
        failures.extend(workers.into_iter().flat_map(|worker| worker.join().unwrap()));
    }
    failures
}

fn cuda() -> Arc<dyn MemoryResource> {
    Arc::new(DirectResource::cuda(0).unwrap())
}

fn pool() -> Arc<dyn MemoryResource> {
    Arc::new(PoolResource::new(cuda(), 0, 0).unwrap())
}

fn arena() -> Arc<dyn MemoryResource> {
    Arc::new(ArenaResource::new(cuda(), 0).unwrap())
}

fn assert_no_failures(failures: Vec<String>) {
    assert!(failures.is_empty(), "{} allocations failed; the first: {}", failures.len(), failures[0]);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn threads_growing_a_pool_on_one_stream_each_get_their_block() {
    let _guard = setup_with("2:6GiB");
    for threads in [2, 4, 8] {
        assert_no_failures(failures_in_rounds(threads, Some(Stream::DEFAULT), pool));
    }
}

#[test]
fn threads_growing_an_arena_on_one_stream_each_get_their_block() {
    let _guard = setup_with("2:6GiB");
    for threads in [2, 4, 8] {
        assert_no_failures(failures_in_rounds(threads, Some(Stream::DEFAULT), arena));
    }
}

#[test]
fn threads_growing_a_pool_on_streams_of_their_own_each_get_their_block() {
    let _guard = setup_with("2:6GiB");
    for threads in [2, 4, 8] {
        assert_no_failures(failures_in_rounds(threads, None, pool));
    }
}
