//! What a pool holds when threads share a stream (and so split it into lanes), against one
//! thread for the same live set, on a simulated device: threads that together allocate and free
//! the same 512 blocks (4 KiB to 1 MiB, each slot's size fixed) for 20 rounds, every block freed
//! by another thread than the one that allocated it. Prints, for 1, 8 and 16 threads, the bytes
//! live at the end, the pool's bytes held at the end and at its peak, and the lanes.
//!   RMM_SIM_DEVICES=1:64GiB RMM_SIM_ON_RACE=off cargo run --release --example lanes_footprint

use rmm::platform::Stream;
use rmm::resources::{DirectResource, MemoryResource, PoolResource};
use std::sync::{Arc, Barrier, Mutex};

const SLOTS: usize = 512;
const ROUNDS: usize = 20;
const MIB: f64 = (1 << 20) as f64;

fn size_of_slot(slot: usize) -> usize {
    // Log-uniform between 4 KiB and 1 MiB, fixed per slot.
    let mut x = (slot as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^= x >> 29;
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    ((4096f64).ln() + u * ((1 << 20) as f64 / 4096.0).ln()).exp() as usize
}

fn run(threads: usize) -> (usize, usize, usize, usize) {
    let cuda: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(0).unwrap());
    let pool = Arc::new(PoolResource::new(cuda, 0, 0).unwrap());
    let slots: Arc<Vec<Mutex<usize>>> = Arc::new((0..SLOTS).map(|_| Mutex::new(0)).collect());
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|thread| {
            let (pool, slots, start) = (pool.clone(), slots.clone(), start.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    start.wait();
                    // Each round hands a slot to another thread, so blocks are freed by threads
                    // that did not allocate them.
                    for slot in (0..SLOTS).filter(|slot| (slot + round) % threads == thread) {
                        let mut ptr = slots[slot].lock().unwrap();
                        if *ptr != 0 {
                            pool.deallocate(*ptr, size_of_slot(slot), Stream::DEFAULT).unwrap();
                        }
                        *ptr = pool.allocate(size_of_slot(slot), Stream::DEFAULT).unwrap();
                    }
                }
            })
        })
        .collect();
    handles.into_iter().for_each(|handle| handle.join().unwrap());
    let usage = pool.usage();
    let live: usize = (0..SLOTS).map(size_of_slot).sum();
    for (slot, ptr) in slots.iter().enumerate() {
        pool.deallocate(*ptr.lock().unwrap(), size_of_slot(slot), Stream::DEFAULT).unwrap();
    }
    (live, usage.reserved, usage.peak_reserved, usage.lanes)
}

fn main() {
    let mut one = 0;
    for threads in [1, 8, 16] {
        let (live, held, peak, lanes) = run(threads);
        if threads == 1 {
            one = held;
        }
        println!(
            "{threads:>2} threads: live {:.1} MiB, held at the end {:.1} MiB ({:.2}x one thread's), peak {:.1} MiB, {lanes} lanes",
            live as f64 / MIB,
            held as f64 / MIB,
            held as f64 / one as f64,
            peak as f64 / MIB,
        );
    }
}
