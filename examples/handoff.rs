//! A producer and a consumer on the NULL stream, on a simulated device: one thread allocates
//! 256 B blocks and hands each, through a spinning single-producer single-consumer queue, to
//! another thread, which frees it (the threads matrix's `handoff` row, issue 52's
//! producer/consumer target: at most 2x one thread's pair). Prints ns per pair for the
//! hand-off and for one thread keeping a ring of 8 blocks, on a pool that grows from nothing.
//!   RMM_SIM_DEVICES=1:8GiB RMM_SIM_ON_RACE=off cargo run --release --example handoff

#[path = "common/ring.rs"]
mod common;

use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

const PAIRS: usize = 400_000;
const SLOTS: usize = 1024;

/// The queue: `tail` written by the producer, `head` by the consumer.
struct Queue {
    slots: Vec<AtomicUsize>,
    head: AtomicUsize,
    tail: AtomicUsize,
}

fn produce(pool: rmmResource_t, queue: &Queue) {
    for i in 0..PAIRS {
        let mut ptr = std::ptr::null_mut();
        assert_eq!(rmmResourceAllocate(pool, &mut ptr, 256, std::ptr::null_mut()), RMM_SUCCESS);
        while i - queue.head.load(Ordering::Acquire) >= SLOTS {
            std::hint::spin_loop();
        }
        queue.slots[i % SLOTS].store(ptr as usize, Ordering::Relaxed);
        queue.tail.store(i + 1, Ordering::Release);
    }
}

fn consume(pool: rmmResource_t, queue: &Queue) {
    for i in 0..PAIRS {
        while queue.tail.load(Ordering::Acquire) <= i {
            std::hint::spin_loop();
        }
        let ptr = queue.slots[i % SLOTS].load(Ordering::Relaxed);
        queue.head.store(i + 1, Ordering::Release);
        assert_eq!(rmmResourceDeallocate(pool, ptr as *mut c_void, 256, std::ptr::null_mut()), RMM_SUCCESS);
    }
}

fn main() {
    let (mut cuda, mut pool) = (std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 0, 0), RMM_SUCCESS);
    let shared = pool as usize;
    for round in 0..3 {
        let start = Instant::now();
        common::ring_of_8(pool, PAIRS);
        let alone = start.elapsed().as_nanos() as f64 / PAIRS as f64;
        let queue =
            Queue { slots: (0..SLOTS).map(|_| AtomicUsize::new(0)).collect(), head: AtomicUsize::new(0), tail: AtomicUsize::new(0) };
        let start = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| produce(shared as rmmResource_t, &queue));
            scope.spawn(|| consume(shared as rmmResource_t, &queue));
        });
        let handoff = start.elapsed().as_nanos() as f64 / PAIRS as f64;
        println!(
            "round {round}: one thread {alone:.1} ns per pair; producer and consumer {handoff:.1} ns per pair ({:.1}x)",
            handoff / alone
        );
    }
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
}
