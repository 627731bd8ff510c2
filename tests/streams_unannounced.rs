//! Streams the library is never told of ("unannounced": a program's own `cudaStreamCreate`,
//! CuPy's or Numba's streams, used through the allocation calls) stop costing once destroyed:
//! a handle handed to a new stream shows the old one gone, and an amortized sweep asks the
//! driver about the others. A live stream is never taken for a dead one.

mod common;

use common::*;
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::{DirectResource, MemoryResource, PoolResource};

const MIB: usize = 1 << 20;

fn pool(initial: usize, maximum: usize) -> PoolResource {
    PoolResource::new(std::sync::Arc::new(DirectResource::cuda(0).unwrap()), initial, maximum).unwrap()
}

/// A stream the library is not told of (as `cudaStreamCreate`).
fn unannounced() -> Stream {
    backend().unwrap().stream_create(0).unwrap()
}

/// Destroys `stream` without telling the library (as `cudaStreamDestroy`).
fn destroy_unannounced(stream: Stream) {
    backend().unwrap().stream_destroy(stream).unwrap()
}

/// Copies `tag` into `[ptr, ptr + len)` on `stream` (device work, which the race checker orders).
fn write_on(stream: Stream, ptr: usize, len: usize, tag: u8) {
    let bytes = vec![tag; len];
    backend().unwrap().copy_async(0, ptr, bytes.as_ptr() as usize, len, stream).unwrap();
}

/// Whether `[ptr, ptr + len)` holds `tag` throughout, after the device's work.
fn holds(ptr: usize, len: usize, tag: u8) -> bool {
    backend().unwrap().device_synchronize(0).unwrap();
    let mut bytes = vec![0u8; len];
    backend().unwrap().copy_async(0, bytes.as_mut_ptr() as usize, ptr, len, Stream::DEFAULT).unwrap();
    backend().unwrap().device_synchronize(0).unwrap();
    bytes.iter().all(|&b| b == tag)
}

/// Puts the simulator's handle reuse back as it was when dropped.
struct HandleReuse;

impl HandleReuse {
    fn set(on: bool) -> Self {
        simulator().unwrap().reuse_stream_handles(on);
        HandleReuse
    }
}

impl Drop for HandleReuse {
    fn drop(&mut self) {
        simulator().unwrap().reuse_stream_handles(true);
    }
}

/// The most states unannounced streams may keep in a pool that a loop of them churns through:
/// fewer than two sweeps' worth (the sweep runs once 64 more have come).
const STATES_BOUND: usize = 2 * 64 + 2;

/// `iterations` of {make an unannounced stream; allocate 4 KiB on it; write it; free it there;
/// destroy the stream}, the next stream made before (`overlapped`) or after the previous one
/// is destroyed. Checks states and reserved bytes stay bounded and the time flat.
fn churn(iterations: usize, reuse: bool, overlapped: bool) {
    let _guard = setup();
    let _reuse = HandleReuse::set(reuse);
    let pool = pool(64 * MIB, 0);
    let started = std::time::Instant::now();
    let before = driver_calls();
    let mut first_thousand = None;
    let mut previous: Option<Stream> = None;
    let mut most_states = 0;
    for i in 0..iterations {
        let stream = unannounced();
        if !overlapped {
            if let Some(previous) = previous.take() {
                destroy_unannounced(previous);
            }
        }
        let ptr = pool.allocate(4096, stream).unwrap();
        write_on(stream, ptr, 64, i as u8);
        pool.deallocate(ptr, 4096, stream).unwrap();
        if let Some(previous) = previous.replace(stream) {
            destroy_unannounced(previous);
        }
        let usage = pool.usage();
        most_states = most_states.max(usage.streams);
        assert!(usage.streams <= STATES_BOUND, "iteration {i} (reuse {reuse}, overlapped {overlapped}): {usage:?}");
        assert_eq!(usage.reserved, 64 * MIB, "iteration {i} (reuse {reuse}, overlapped {overlapped}): {usage:?}");
        if i % 1000 == 0 {
            pool.check_invariants().unwrap();
        }
        if i == 999 {
            first_thousand = Some(started.elapsed());
        }
    }
    destroy_unannounced(previous.unwrap());
    // Each stream's free recorded its event (it left a chunk wholly free): no synchronization.
    assert_eq!(driver_calls_since(before).host_wait, 0);
    let (first, all) = (first_thousand.unwrap(), started.elapsed());
    eprintln!(
        "reuse {reuse}, overlapped {overlapped}: {iterations} iterations in {all:?} ({:.1} us each), at most {most_states} states",
        all.as_secs_f64() * 1e6 / iterations as f64
    );
    let scale = (iterations / 1000) as u32;
    assert!(all < first * scale * 5, "the first 1,000 took {first:?}, all {iterations} {all:?}");
    let usage = pool.usage();
    assert_eq!((usage.live, usage.reserved), (0, 64 * MIB), "{usage:?}");
    assert_eq!(pool.snapshot()["streams"], usage.streams);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn unannounced_streams_whose_handles_the_driver_hands_out_again_leave_nothing_behind() {
    churn(20_000, true, false);
}

#[test]
fn unannounced_streams_made_before_the_previous_one_is_destroyed_leave_nothing_behind() {
    churn(20_000, true, true);
}

#[test]
fn unannounced_streams_with_handles_never_seen_again_leave_nothing_behind() {
    churn(20_000, false, false);
}

#[test]
fn unannounced_streams_with_fresh_handles_made_before_the_previous_one_goes_leave_nothing_behind() {
    churn(20_000, false, true);
}

#[test]
fn sweeps_never_take_a_live_unannounced_stream_for_a_dead_one() {
    let _guard = setup();
    let _reuse = HandleReuse::set(false);
    let pool = pool(0, 0);
    let live = unannounced();
    let blocks: Vec<usize> = (0..4).map(|_| pool.allocate(MIB, live).unwrap()).collect();
    for (i, &block) in blocks.iter().enumerate() {
        write_on(live, block, 256, 10 + i as u8);
    }
    // A block freed on the live stream before and kept for its own reuse.
    pool.deallocate(blocks[3], MIB, live).unwrap();
    // Many sweeps: unannounced streams made and destroyed with handles never seen again.
    let before = driver_calls();
    for i in 0..1000 {
        let stream = unannounced();
        let ptr = pool.allocate(4096, stream).unwrap();
        write_on(stream, ptr, 64, i as u8);
        pool.deallocate(ptr, 4096, stream).unwrap();
        destroy_unannounced(stream);
    }
    let spent = driver_calls_since(before);
    // One identity check per allocation, and the sweeps' (amortized: a few per stream).
    assert!(spent.stream_identity < 1000 * 4, "{spent:?}");
    let usage = pool.usage();
    assert!(usage.streams <= STATES_BOUND, "{usage:?}");
    // The live stream's state is still there: its blocks are valid, it reuses its own free block
    // with no event to wait on, and frees there still work.
    for (i, &block) in blocks[..3].iter().enumerate() {
        assert!(holds(block, 256, 10 + i as u8), "block {i}");
    }
    let waits = driver_calls();
    let again = pool.allocate(MIB, live).unwrap();
    assert_eq!(again, blocks[3], "the live stream reuses its own free block");
    assert_eq!(driver_calls_since(waits).stream_wait_event, 0);
    write_on(live, again, 256, 99);
    for &block in blocks[..3].iter().chain([&again]) {
        pool.deallocate(block, MIB, live).unwrap();
    }
    assert_eq!(pool.usage().live, 0);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
    destroy_unannounced(live);
}

/// Blocks still live when an unannounced stream is destroyed keep its state; freed later on
/// another stream (whose work on them still runs), they go to the next taker in order.
fn blocks_outlive_their_unannounced_stream(reuse: bool) {
    let _guard = setup();
    let _reuse = HandleReuse::set(reuse);
    let sim = simulator().unwrap();
    let pool = pool(4 * MIB, 4 * MIB);
    let old = unannounced();
    let blocks: Vec<usize> = (0..4).map(|_| pool.allocate(MIB, old).unwrap()).collect();
    for &block in &blocks {
        write_on(old, block, 64, 1);
    }
    destroy_unannounced(old);
    // Enough unannounced streams for the old one to be found gone either way (a handle handed
    // out again, or a sweep), on the legacy default stream's memory.
    for _ in 0..2 * SWEEP {
        let stream = unannounced();
        pool.check_invariants().unwrap();
        let _ = pool.allocate(4096, stream).map(|ptr| pool.deallocate(ptr, 4096, stream));
        destroy_unannounced(stream);
    }
    assert!(pool.usage().live == 4 * MIB && pool.usage().streams <= STATES_BOUND, "{:?}", pool.usage());
    // Freed on another stream, which still works on them.
    let other = unannounced();
    for &block in &blocks {
        write_on(other, block, 64, 2);
        pool.deallocate(block, MIB, other).unwrap();
    }
    sim.stream_hold(other).unwrap();
    let usage = pool.usage();
    assert_eq!((usage.live, usage.free), (0, 4 * MIB), "{usage:?}");
    pool.check_invariants().unwrap();
    // A third stream gets that memory (all the maximum allows) after those frees.
    let third = unannounced();
    let again = pool.allocate(4 * MIB, third).unwrap();
    write_on(third, again, 4 * MIB, 3);
    assert!(races().is_empty(), "{:?}", races());
    sim.stream_finish_held(other).unwrap();
    pool.deallocate(again, 4 * MIB, third).unwrap();
    pool.check_invariants().unwrap();
    for stream in [other, third] {
        destroy_unannounced(stream);
    }
    assert!(races().is_empty(), "{:?}", races());
}

const SWEEP: usize = 64;

#[test]
fn blocks_live_on_a_destroyed_unannounced_stream_are_freed_later_in_order_handles_reused() {
    blocks_outlive_their_unannounced_stream(true);
}

#[test]
fn blocks_live_on_a_destroyed_unannounced_stream_are_freed_later_in_order_fresh_handles() {
    blocks_outlive_their_unannounced_stream(false);
}

#[test]
fn dead_streams_whose_frees_no_event_covers_go_after_one_synchronization_per_many() {
    let _guard = setup();
    let pool = pool(64 * MIB, 0);
    let before = driver_calls();
    let streams = 20 * SWEEP;
    for i in 0..streams {
        let stream = unannounced();
        // More chunk emptyings than a young stream records its event for: its last frees are
        // covered by no event when it is destroyed.
        for round in 0..20 {
            let ptr = pool.allocate(4096, stream).unwrap();
            write_on(stream, ptr, 64, round);
            pool.deallocate(ptr, 4096, stream).unwrap();
        }
        destroy_unannounced(stream);
        let usage = pool.usage();
        assert!(usage.streams <= STATES_BOUND, "stream {i}: {usage:?}");
        // Until the synchronization, each new stream grows by a chunk (2 MiB) rather than wait
        // for the dead ones; then it takes theirs.
        assert!(usage.reserved <= 64 * MIB + (SWEEP + 1) * 2 * MIB, "stream {i}: {usage:?}");
    }
    let syncs = driver_calls_since(before).host_wait;
    let usage = pool.usage();
    eprintln!("{streams} streams: {syncs} synchronizations, {usage:?}");
    assert!(syncs <= (streams / SWEEP + 1) as u64, "{syncs} synchronizations for {streams} streams");
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

/// A young unannounced stream records its event when a free leaves a chunk wholly free (so that
/// what it freed is covered if it goes unannounced); one that lives on with nobody taking its
/// memory stops after `DONOR_QUIET_FREES` frees and parks blocks as any other
/// stream does: a chunk it empties then costs no driver call.
#[test]
fn an_unannounced_stream_that_lives_on_stops_donating_and_parks() {
    let _guard = setup();
    let pool = pool(0, 0);
    let empties_a_chunk = |stream: Stream, pairs: usize| {
        let kept = pool.allocate(4096, stream).unwrap();
        for _ in 0..pairs {
            let ptr = pool.allocate(256, stream).unwrap();
            pool.deallocate(ptr, 256, stream).unwrap();
        }
        let before = driver_calls();
        pool.deallocate(kept, 4096, stream).unwrap();
        driver_calls_since(before).event_record
    };
    let young = unannounced();
    assert_eq!(empties_a_chunk(young, 10), 1, "a young stream's free that empties its chunk records its event");
    let settled = unannounced();
    assert_eq!(empties_a_chunk(settled, 400), 0, "a stream that freed 400 blocks parks the block: no chunk empties, no record");
    pool.check_invariants().unwrap();
    destroy_unannounced(young);
    destroy_unannounced(settled);
    assert!(races().is_empty(), "{:?}", races());
}
