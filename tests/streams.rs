//! What a stream costs and what it is trusted with: allocations on the streams rmm-rs can
//! recognize by their handle make no driver call, other streams' allocations check the
//! driver's id, and a destroyed stream's memory reaches a new stream that got its handle only
//! in order after the old stream's work (RMM #2251), by its last event: recorded when rmm-rs saw
//! the destruction coming, and by its young frees when it did not.

mod common;

use common::*;
use rmm::platform::sim::DriverCalls;
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::{streams, DirectResource, MemoryResource, PoolResource};
use std::sync::Arc;

const MIB: usize = 1 << 20;

fn pool(maximum: usize) -> PoolResource {
    PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, maximum).unwrap()
}

/// What `pairs` allocate+free pairs of mixed sizes on `stream` cost in driver calls, after a
/// round of warm-up pairs (which may take memory from other streams).
fn calls_of_pairs(pool: &PoolResource, stream: Stream, pairs: usize) -> DriverCalls {
    let sizes = [256, 4096, 100_000, 3 * MIB];
    for bytes in sizes {
        pool.deallocate(pool.allocate(bytes, stream).unwrap(), bytes, stream).unwrap();
    }
    let before = driver_calls();
    for i in 0..pairs {
        let bytes = sizes[i % sizes.len()];
        let ptr = pool.allocate(bytes, stream).unwrap();
        pool.deallocate(ptr, bytes, stream).unwrap();
    }
    driver_calls_since(before)
}

#[test]
fn pairs_on_streams_rmm_recognizes_make_no_driver_call() {
    let _guard = setup();
    let pool = pool(0);
    let created = streams::create(0).unwrap();
    let registered = backend().unwrap().stream_create(0).unwrap();
    streams::register(registered).unwrap();
    for stream in [Stream::DEFAULT, Stream::LEGACY, Stream::PER_THREAD, created, registered] {
        assert_eq!(calls_of_pairs(&pool, stream, 1000), DriverCalls::default(), "stream {stream:?}");
    }
    // Another thread's per-thread default stream is another stream, just as free of calls.
    let pool = Arc::new(pool);
    let other = pool.clone();
    let on_thread = std::thread::spawn(move || calls_of_pairs(&other, Stream::PER_THREAD, 1000)).join().unwrap();
    assert_eq!(on_thread.event_record + on_thread.stream_identity + on_thread.host_wait, 0);
    streams::destroy(created).unwrap();
    streams::destroy(registered).unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_stream_rmm_did_not_see_made_is_checked_once_per_allocation() {
    let _guard = setup();
    let pool = pool(0);
    let stream = backend().unwrap().stream_create(0).unwrap();
    let spent = calls_of_pairs(&pool, stream, 1000);
    // And, while it is young, each of its first frees that leave a chunk wholly free records
    // its event (on its handle checked first), so that memory it freed is covered when it is
    // destroyed unannounced: at most `DONOR_PATIENCE` (8) over its life.
    assert!(spent.event_record <= 8, "{spent:?}");
    assert_eq!(spent, DriverCalls { stream_identity: 1000 + spent.event_record, event_record: spent.event_record, ..Default::default() });
    // Registered, it is checked no more.
    streams::register(stream).unwrap();
    assert_eq!(calls_of_pairs(&pool, stream, 1000), DriverCalls::default());
    streams::destroy(stream).unwrap();
}

/// A block freed on stream `old` while work still runs there (held), then `old` destroyed,
/// and a new stream, which gets the same handle, asks for the same memory.
fn reuse_after_destruction(announced: bool) -> (DriverCalls, usize, usize) {
    let platform = backend().unwrap();
    let sim = simulator().unwrap();
    let pool = pool(4 * MIB);
    let old = match announced {
        true => streams::create(0).unwrap(),
        false => platform.stream_create(0).unwrap(),
    };
    let block = pool.allocate(4 * MIB, old).unwrap();
    sim.stream_hold(old).unwrap(); // a kernel still using the block
    pool.deallocate(block, 4 * MIB, old).unwrap();
    match announced {
        true => streams::destroy(old).unwrap(),
        false => platform.stream_destroy(old).unwrap(),
    }
    let new = platform.stream_create(0).unwrap();
    assert_eq!(new, old, "the simulator hands a destroyed stream's handle out again, as CUDA may");
    let before = driver_calls();
    let again = pool.allocate(4 * MIB, new).unwrap();
    let spent = driver_calls_since(before);
    pool.deallocate(again, 4 * MIB, new).unwrap();
    platform.stream_destroy(new).unwrap();
    (spent, block, again)
}

#[test]
fn a_destroyed_streams_memory_goes_to_a_new_stream_with_its_handle_only_in_order() {
    let _guard = setup();
    // Seen coming: the old stream's last event orders the new one after its work.
    let (spent, block, again) = reuse_after_destruction(true);
    assert!(races().is_empty(), "{:?}", races());
    assert_eq!(again, block, "the only chunk the maximum allows");
    assert_eq!(spent.host_wait, 0, "ordered by an event, not by waiting: {spent:?}");
    assert!(spent.stream_wait_event >= 1, "{spent:?}");
    // Unannounced: the handle's new id gives the new stream a state of its own and shows the
    // old stream gone; its memory comes in the order of the event its free recorded (a young
    // unannounced stream records at a free that leaves a chunk wholly free).
    let (spent, block, again) = reuse_after_destruction(false);
    assert!(races().is_empty(), "{:?}", races());
    assert_eq!(again, block);
    assert_eq!(spent.host_wait, 0, "ordered by an event, not by waiting: {spent:?}");
    assert!(spent.stream_wait_event >= 1, "{spent:?}");
}

#[test]
fn a_stream_only_its_own_allocations_may_record_is_asked_and_records_at_its_next_one() {
    let _guard = setup();
    let platform = backend().unwrap();
    let pool = pool(10 * MIB);
    let own = platform.stream_create(0).unwrap(); // rmm-rs did not see it made
    let (taker, third) = (streams::create(0).unwrap(), streams::create(0).unwrap());
    // Past its young donations: its first frees that leave a chunk wholly free record its event.
    for _ in 0..8 {
        pool.deallocate(pool.allocate(256, own).unwrap(), 256, own).unwrap(); // a 2 MiB chunk
    }
    let whole = pool.allocate(4 * MIB, own).unwrap(); // a 4 MiB chunk
    let kept = pool.allocate(256, own).unwrap(); // from the 2 MiB chunk
    pool.deallocate(whole, 4 * MIB, own).unwrap();
    // The taker may not record `own`'s event: it leaves the free chunk, grows, and asks.
    let before = driver_calls();
    let grown = pool.allocate(4 * MIB, taker).unwrap();
    assert_ne!(grown, whole);
    assert_eq!(driver_calls().event_record, before.event_record);
    // `own`'s next allocation records its event, once...
    let small = pool.allocate(256, own).unwrap();
    assert_eq!(driver_calls().event_record - before.event_record, 1);
    let other = pool.allocate(256, own).unwrap();
    assert_eq!(driver_calls().event_record - before.event_record, 1, "asked once, recorded once");
    // ...so a stream at the maximum takes the free chunk by waiting on that event, without a
    // host synchronization.
    let before = driver_calls();
    let taken = pool.allocate(4 * MIB, third).unwrap();
    assert_eq!(taken, whole);
    assert_eq!(driver_calls().host_wait, before.host_wait);
    assert!(races().is_empty(), "{:?}", races());
    for (ptr, bytes, stream) in [(taken, 4 * MIB, third), (grown, 4 * MIB, taker), (small, 256, own), (other, 256, own), (kept, 256, own)] {
        pool.deallocate(ptr, bytes, stream).unwrap();
    }
    pool.check_invariants().unwrap();
    streams::destroy(taker).unwrap();
    streams::destroy(third).unwrap();
    platform.stream_destroy(own).unwrap();
}

#[test]
fn registering_and_unregistering_refuse_the_default_streams() {
    let _guard = setup();
    use rmm::boundary::{rmmStreamRegister, rmmStreamUnregister};
    use rmm::error::rmmError_t::RMM_ERROR_INVALID_ARGUMENT;
    for stream in [0usize, 1, 2] {
        let handle = stream as rmm::boundary::types::cudaStream_t;
        assert_eq!(rmmStreamRegister(handle), RMM_ERROR_INVALID_ARGUMENT);
        assert_eq!(rmmStreamUnregister(handle), RMM_ERROR_INVALID_ARGUMENT);
    }
    assert!(last_message().contains("default streams"), "{}", last_message());
}

#[test]
fn streams_rmm_did_not_see_made_hand_memory_on_by_events_while_others_take_it() {
    let _guard = setup();
    let platform = backend().unwrap();
    let pool = pool(4 * MIB); // one chunk, passed back and forth
    let (a, b) = (platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap());
    let exchange = |rounds: usize| {
        let before = driver_calls();
        for round in 0..rounds {
            let (from, to) = if round % 2 == 0 { (a, b) } else { (b, a) };
            let block = pool.allocate(4 * MIB, from).unwrap();
            pool.deallocate(block, 4 * MIB, from).unwrap();
            let again = pool.allocate(4 * MIB, to).unwrap();
            assert_eq!(again, block);
            pool.deallocate(again, 4 * MIB, to).unwrap();
        }
        let after = driver_calls();
        (after.host_wait - before.host_wait, after.event_record - before.event_record)
    };
    // Young, both streams donate from the start (and keep donating while the other takes):
    // events alone order them.
    let (waits, _) = exchange(4);
    assert_eq!(waits, 0);
    let (waits, records) = exchange(20);
    assert_eq!(waits, 0, "no host synchronization once the streams donate");
    assert!(records >= 20, "{records}");
    assert!(races().is_empty(), "{:?}", races());
    // Left alone, a stream stops recording for takers that no longer come.
    let before = driver_calls();
    for _ in 0..100 {
        let block = pool.allocate(4 * MIB, a).unwrap();
        pool.deallocate(block, 4 * MIB, a).unwrap();
    }
    assert!(driver_calls().event_record - before.event_record <= 8, "{:?}", driver_calls());
    let before = driver_calls();
    for _ in 0..100 {
        let block = pool.allocate(4 * MIB, a).unwrap();
        pool.deallocate(block, 4 * MIB, a).unwrap();
    }
    assert_eq!(driver_calls().event_record, before.event_record);
    pool.check_invariants().unwrap();
    platform.stream_destroy(a).unwrap();
    platform.stream_destroy(b).unwrap();
}

#[test]
fn memory_of_one_device_is_not_ordered_on_another_devices_stream() {
    let _guard = setup();
    let platform = backend().unwrap();
    let pool = pool(64 * MIB);
    let (own, other) = (platform.stream_create(0).unwrap(), platform.stream_create(1).unwrap());
    for current in [0, 1] {
        platform.set_device(current).unwrap();
        // An event of device 0 cannot be recorded on device 1's stream: refused, nothing taken.
        let refused = pool.allocate(4096, other).unwrap_err().to_string();
        assert!(refused.contains("belongs to device 1") && refused.contains("memory of device 0"), "{refused}");
        assert_eq!(pool.usage().live, 0);
        // Device 0's own stream and its default stream, whichever device is current.
        for stream in [own, Stream::DEFAULT] {
            let ptr = pool.allocate(4096, stream).unwrap();
            pool.deallocate(ptr, 4096, stream).unwrap();
        }
    }
    platform.set_device(0).unwrap();
    for stream in [own, other] {
        platform.stream_destroy(stream).unwrap();
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_pair_through_another_devices_resource_makes_no_driver_call() {
    use rmm::boundary::*;
    use rmm::error::rmmError_t::RMM_SUCCESS;
    let _guard = setup();
    let (mut cuda, mut pool, mut stream) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(rmmSetDevice(1), RMM_SUCCESS);
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmPoolResourceCreate(&mut pool, cuda, 16 * MIB, 0), RMM_SUCCESS);
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
    // Frameworks allocate for one device while another is current: device 1's memory on the
    // NULL stream (device 1's own, for its allocations and frees alike) and on device 1's
    // stream, with device 0 current, as with device 1 current.
    for current in [1, 0] {
        assert_eq!(rmmSetDevice(current), RMM_SUCCESS);
        for on in [std::ptr::null_mut(), stream] {
            let mut ptr = std::ptr::null_mut();
            assert_eq!(rmmResourceAllocate(pool, &mut ptr, 256, on), RMM_SUCCESS);
            assert_eq!(rmmResourceDeallocate(pool, ptr, 256, on), RMM_SUCCESS);
            let before = driver_calls();
            for _ in 0..100 {
                assert_eq!(rmmResourceAllocate(pool, &mut ptr, 256, on), RMM_SUCCESS);
                assert_eq!(rmmResourceDeallocate(pool, ptr, 256, on), RMM_SUCCESS);
            }
            let after = driver_calls();
            assert_eq!(
                (after.event_record - before.event_record, after.stream_wait_event - before.stream_wait_event),
                (0, 0),
                "device {current} current, stream {on:?}"
            );
        }
    }
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}

/// `rmmStreamCreateWithFlags`: the default flags make a stream that synchronizes with the legacy
/// default stream, `RMM_STREAM_NON_BLOCKING` one that does not; both serve allocations as any
/// stream rmm-rs made and go with `rmmStreamDestroy`. Other flags and NULL are refused.
#[test]
fn streams_with_flags_are_blocking_or_not_as_asked() {
    use rmm::boundary::types::cudaStream_t;
    use rmm::boundary::{rmmStreamCreateWithFlags, rmmStreamDestroy, RMM_STREAM_DEFAULT, RMM_STREAM_NON_BLOCKING};
    use rmm::error::rmmError_t::*;
    let _guard = setup();
    let sim = simulator().unwrap();
    let pool = PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 0).unwrap();
    for (flags, blocking) in [(RMM_STREAM_DEFAULT, true), (RMM_STREAM_NON_BLOCKING, false)] {
        let mut handle: cudaStream_t = std::ptr::null_mut();
        assert_eq!(rmmStreamCreateWithFlags(&mut handle, flags), RMM_SUCCESS);
        let stream = Stream(handle as usize);
        assert_eq!(sim.stream_blocking(stream).unwrap(), blocking, "flags {flags}");
        let block = pool.allocate(4096, stream).unwrap();
        pool.deallocate(block, 4096, stream).unwrap();
        assert_eq!(rmmStreamDestroy(handle), RMM_SUCCESS);
    }
    let mut handle: cudaStream_t = std::ptr::null_mut();
    assert_eq!(rmmStreamCreateWithFlags(&mut handle, 2), RMM_ERROR_INVALID_ARGUMENT);
    assert!(last_message().contains("unknown stream flags"), "{}", last_message());
    assert!(handle.is_null());
    assert_eq!(rmmStreamCreateWithFlags(std::ptr::null_mut(), RMM_STREAM_NON_BLOCKING), RMM_ERROR_INVALID_ARGUMENT);
    assert!(races().is_empty(), "{:?}", races());
}
