//! Streams the library sees destroyed (retired) stop costing: their states and lanes leave the
//! pool's core once they hold no live block, their free memory goes to whichever stream wants
//! it next, ordered by the events they left, and an event another stream may still wait on
//! outlives the state it belonged to.

mod common;

use common::*;
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::{streams, DirectResource, MemoryResource, PoolResource};

const MIB: usize = 1 << 20;

fn pool(initial: usize, maximum: usize) -> PoolResource {
    PoolResource::new(std::sync::Arc::new(DirectResource::cuda(0).unwrap()), initial, maximum).unwrap()
}

/// Copies `tag` into `[ptr, ptr + len)` on `stream` (device work, which the race checker orders).
fn write_on(stream: Stream, ptr: usize, len: usize, tag: u8) {
    let bytes = vec![tag; len];
    backend().unwrap().copy_async(0, ptr, bytes.as_ptr() as usize, len, stream).unwrap();
    backend().unwrap().stream_synchronize(stream).unwrap();
}

#[test]
fn a_stream_per_request_leaves_nothing_behind_over_twenty_thousand_requests() {
    let _guard = setup();
    let pool = pool(64 * MIB, 0);
    let started = std::time::Instant::now();
    let mut first_thousand = None;
    for i in 0..20_000 {
        let stream = streams::create(0).unwrap();
        if i % 10 == 0 {
            // Some streams split into lanes too: theirs go with them.
            pool.split_into_lanes(stream).unwrap();
        }
        let ptr = pool.allocate(4096, stream).unwrap();
        pool.deallocate(ptr, 4096, stream).unwrap();
        streams::destroy(stream).unwrap();
        let usage = pool.usage();
        assert!(usage.streams <= 2 && usage.lanes <= 1, "iteration {i}: {usage:?}");
        assert_eq!(usage.reserved, 64 * MIB, "iteration {i}: {usage:?}");
        if i % 1000 == 0 {
            pool.check_invariants().unwrap();
        }
        if i == 999 {
            first_thousand = Some(started.elapsed());
        }
    }
    let (first, all) = (first_thousand.unwrap(), started.elapsed());
    // Flat: all 20,000 cost about 20 times the first 1,000 (with room for a loaded machine),
    // where keeping every stream's state made it about 600 times.
    assert!(all < first * 100, "the first 1,000 took {first:?}, all 20,000 {all:?}");
    let usage = pool.usage();
    assert_eq!((usage.live, usage.free), (0, 64 * MIB), "{usage:?}");
    assert_eq!(pool.snapshot()["streams"], usage.streams);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn live_blocks_keep_a_destroyed_streams_state_until_freed_elsewhere_then_it_goes_in_order() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let pool = pool(4 * MIB, 4 * MIB);
    let old = streams::create(0).unwrap();
    let blocks: Vec<usize> = (0..4).map(|_| pool.allocate(MIB, old).unwrap()).collect();
    write_on(old, blocks[0], 64, 1);
    // One block freed on its own stream, which the old stream's last event covers.
    pool.deallocate(blocks[3], MIB, old).unwrap();
    streams::destroy(old).unwrap();
    assert_eq!(pool.usage().streams, 2, "live blocks keep the retired state: {:?}", pool.usage());
    pool.check_invariants().unwrap();
    // The rest freed on another stream, whose work on them still runs.
    let other = streams::create(0).unwrap();
    for &block in &blocks[..3] {
        pool.deallocate(block, MIB, other).unwrap();
    }
    sim.stream_hold(other).unwrap();
    let usage = pool.usage();
    // The default stream and the freeing one: the old one went with the last free.
    assert_eq!((usage.streams, usage.live, usage.free), (2, 0, 4 * MIB), "the last free prunes it: {usage:?}");
    assert_eq!(pool.snapshot()["chunks"][0]["stream"], "retired");
    pool.check_invariants().unwrap();
    // A third stream gets that memory (the only memory the maximum allows) after the frees.
    let third = streams::create(0).unwrap();
    let before = driver_calls();
    let again = pool.allocate(4 * MIB, third).unwrap();
    let spent = driver_calls_since(before);
    assert_eq!(again, blocks[0]);
    write_on(third, again, 64, 3);
    assert!(races().is_empty(), "{:?}", races());
    assert_eq!(spent.host_wait, 0, "ordered by events: {spent:?}");
    assert!(spent.stream_wait_event >= 2, "the old stream's event and the freeing stream's: {spent:?}");
    sim.stream_finish_held(other).unwrap();
    pool.deallocate(again, 4 * MIB, third).unwrap();
    for stream in [other, third] {
        streams::destroy(stream).unwrap();
    }
    let usage = pool.usage();
    assert_eq!((usage.streams, usage.live, usage.reserved), (1, 0, 4 * MIB), "{usage:?}");
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn an_event_a_pending_list_holds_outlives_its_pruned_state_and_is_not_given_to_a_new_one() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let pool = pool(0, 0);
    let long = streams::create(0).unwrap();
    let (b, c) = (pool.allocate(MIB, long).unwrap(), pool.allocate(MIB, long).unwrap());
    // A short-lived stream frees `b` (its work on it still running): its event waits on the
    // long-lived stream's pending list; then it is destroyed, and its state, holding nothing,
    // goes.
    let short = streams::create(0).unwrap();
    pool.deallocate(b, MIB, short).unwrap();
    sim.stream_hold(short).unwrap();
    streams::destroy(short).unwrap();
    assert_eq!(pool.usage().streams, 1, "{:?}", pool.usage());
    pool.check_invariants().unwrap();
    // A new stream, ordered after none of the short stream's work, takes a spare event if
    // there is one: it must not be the one still pending.
    let new = streams::create(0).unwrap();
    let ptr = pool.allocate(4096, new).unwrap();
    // `new` records its event by freeing one of `long`'s blocks: were it the short stream's
    // event, `long` would wait for `new`'s work instead of the short stream's.
    pool.deallocate(c, MIB, new).unwrap();
    pool.check_invariants().unwrap();
    let again = pool.allocate(2 * MIB, long).unwrap();
    assert_eq!(again, b, "the long stream reuses what the destroyed stream freed");
    assert!(races().is_empty(), "{:?}", races());
    sim.stream_finish_held(short).unwrap();
    pool.deallocate(again, 2 * MIB, long).unwrap();
    pool.deallocate(ptr, 4096, new).unwrap();
    for stream in [new, long] {
        streams::destroy(stream).unwrap();
    }
    let usage = pool.usage();
    assert_eq!((usage.streams, usage.live), (0, 0), "{usage:?}");
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}
