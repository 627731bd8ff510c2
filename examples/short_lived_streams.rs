//! Threads on short-lived streams, on a simulated device (issue 52's shape): each thread creates
//! a non-blocking stream, allocates and frees 5,000 random blocks of 1 B to 4 MiB on it through
//! `RMM_ALLOC` over a pool (each step allocates or frees one at random, so the live set wanders),
//! then synchronizes and destroys the stream; timed from the threads' start to their join.
//! Prints ns per allocation in aggregate and the driver calls per allocation the simulator
//! counted (events recorded, streams made to wait, host waits, stream identity queries): what a
//! build asks of the device for this shape, which a GPU run prices.
//!   RMM_SIM_DEVICES=1:64GiB RMM_SIM_ON_RACE=off cargo run --release --example short_lived_streams [THREADS...]
//! `SHORT_LIVED_STREAMS=application`: the streams are made by the driver directly, as a program's
//! `cudaStreamCreateWithFlags` makes them (rmm-rs is not told of them), instead of by
//! `rmmStreamCreate`.

use rmm::boundary::types::cudaStream_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::RMM_SUCCESS;
use std::ffi::c_void;
use std::time::Instant;

const STEPS: usize = 5_000;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One thread's life: a stream made, STEPS random steps on it, the stream synchronized and
/// destroyed. Returns the allocations it made.
fn thread_body(seed: u64) -> usize {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let application = std::env::var("SHORT_LIVED_STREAMS").as_deref() == Ok("application");
    let backend = rmm::platform::backend().unwrap();
    let mut stream: cudaStream_t = std::ptr::null_mut();
    match application {
        true => stream = backend.stream_create_with_flags(0, true).unwrap().0 as cudaStream_t,
        false => assert_eq!(rmmStreamCreateWithFlags(&mut stream, RMM_STREAM_NON_BLOCKING), RMM_SUCCESS),
    }
    let mut live: Vec<*mut c_void> = Vec::new();
    let mut allocations = 0;
    for _ in 0..STEPS {
        if live.is_empty() || rng.next().is_multiple_of(2) {
            let size = 1 + (rng.next() % (4 << 20)) as usize;
            let mut ptr = std::ptr::null_mut();
            assert_eq!(rmmAlloc(&mut ptr, size, stream, std::ptr::null(), 0), RMM_SUCCESS);
            live.push(ptr);
            allocations += 1;
        } else {
            let at = (rng.next() % live.len() as u64) as usize;
            assert_eq!(rmmFree(live.swap_remove(at), stream, std::ptr::null(), 0), RMM_SUCCESS);
        }
    }
    for ptr in live {
        assert_eq!(rmmFree(ptr, stream, std::ptr::null(), 0), RMM_SUCCESS);
    }
    assert_eq!(rmmStreamSynchronize(stream), RMM_SUCCESS);
    match application {
        true => backend.stream_destroy(rmm::platform::Stream(stream as usize)).unwrap(),
        false => assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS),
    }
    allocations
}

fn main() {
    std::env::set_var("RMM_ALLOC_CONF", std::env::var("RMM_ALLOC_CONF").unwrap_or_else(|_| "pool".into()));
    let counts: Vec<usize> = match std::env::args().skip(1).map(|a| a.parse()).collect::<Result<Vec<_>, _>>() {
        Ok(counts) if !counts.is_empty() => counts,
        _ => vec![1, 8],
    };
    // Warm the pool: one round first, untimed.
    thread_body(0);
    let simulator = rmm::platform::simulator().expect("run on simulated devices (RMM_SIM_DEVICES)");
    for threads in counts {
        for round in 0..3 {
            let before = simulator.driver_calls();
            let start = Instant::now();
            let handles: Vec<_> = (0..threads).map(|t| std::thread::spawn(move || thread_body(1 + (round * 100 + t) as u64))).collect();
            let allocations: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
            let ns = start.elapsed().as_nanos() as f64 / allocations as f64;
            let after = simulator.driver_calls();
            let per = |a: u64, b: u64| (a - b) as f64 / allocations as f64;
            println!(
                "{threads:>2} threads, round {round}: {ns:>7.0} ns per allocation in aggregate; per allocation: {:.2} events recorded, \
                 {:.2} stream waits, {:.3} host waits, {:.2} stream identity queries",
                per(after.event_record, before.event_record),
                per(after.stream_wait_event, before.stream_wait_event),
                per(after.host_wait, before.host_wait),
                per(after.stream_identity, before.stream_identity),
            );
        }
    }
}
