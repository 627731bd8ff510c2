//! Threads that allocate on one stream at the same time: the stream splits into lanes, one per
//! thread, and still nothing is lost, handed out twice, freed unchecked or reordered; threads
//! that take turns in runs of allocations keep one index.

mod common;

use common::*;
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::{streams, DirectResource, MemoryResource, PoolResource};
use std::sync::{mpsc, Arc, Barrier};

const MIB: usize = 1 << 20;

fn pool(maximum: usize) -> Arc<PoolResource> {
    Arc::new(PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, maximum).unwrap())
}

/// Runs `work(thread number)` on `threads` threads at once.
fn on_threads<T: Send + 'static>(threads: usize, work: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let work = Arc::new(work);
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (work, start) = (work.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                work(t)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn after_a_split_each_thread_allocates_in_a_lane_of_its_own_with_no_driver_call() {
    let _guard = setup();
    let pool = pool(0);
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let before = driver_calls();
    let shared = pool.clone();
    on_threads(4, move |t| {
        let sizes = [256, 4096, 100_000, 3 * MIB];
        for i in 0..2000 {
            let bytes = sizes[(i + t) % sizes.len()];
            let ptr = shared.allocate(bytes, Stream::DEFAULT).unwrap();
            stamp(ptr, bytes.min(64), t as u8);
            assert!(stamped(ptr, bytes.min(64), t as u8));
            shared.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
        }
    });
    let spent = driver_calls_since(before);
    assert_eq!((spent.event_record, spent.stream_wait_event, spent.host_wait), (0, 0, 0), "{spent:?}");
    let usage = pool.usage();
    assert!(usage.lanes >= 2, "four threads made {} lanes", usage.lanes);
    let snapshot = pool.snapshot();
    assert_eq!(snapshot["lanes"], usage.lanes);
    // Where the free memory sits: the stream's own state and each lane, adding up to the pool.
    let held_by = snapshot["held_by"].as_array().unwrap();
    assert_eq!(held_by.len(), 1 + usage.lanes);
    assert!(held_by.iter().all(|state| state["stream"] == "default" && state["used_bytes"] == 0));
    assert_eq!(held_by.iter().filter(|state| state["lane"] != 0).count(), usage.lanes);
    let held: u64 = held_by.iter().map(|state| state["held_bytes"].as_u64().unwrap()).sum();
    assert_eq!(held as usize, usage.reserved);
    assert_eq!(usage.streams, 1);
    assert_eq!(usage.live, 0);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_block_freed_by_another_thread_goes_back_to_the_lane_that_handed_it_out_checked() {
    let _guard = setup();
    let pool = pool(0);
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let shared = pool.clone();
    let blocks: Vec<(usize, usize)> =
        std::thread::spawn(move || (1..=100).map(|i| (shared.allocate(i * 1000, Stream::DEFAULT).unwrap(), i * 1000)).collect())
            .join()
            .unwrap();
    let (ptr, bytes) = blocks[7];
    let wrong = pool.deallocate(ptr, bytes + 4096, Stream::DEFAULT).unwrap_err();
    assert!(wrong.to_string().contains("bytes were given"), "{wrong}");
    let before = driver_calls();
    for &(ptr, bytes) in &blocks {
        pool.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
    }
    let spent = driver_calls_since(before);
    assert_eq!((spent.event_record, spent.stream_wait_event), (0, 0), "the same stream's order covers them: {spent:?}");
    let twice = pool.deallocate(ptr, bytes, Stream::DEFAULT).unwrap_err();
    assert!(twice.to_string().contains("not a live block"), "{twice}");
    let inside = pool.deallocate(blocks[3].0 + 256, 256, Stream::DEFAULT).unwrap_err();
    assert!(inside.to_string().contains("not"), "{inside}");
    assert_eq!(pool.usage().lanes, 1, "a thread that only frees gets no lane");
    assert_eq!(pool.usage().live, 0);
    pool.check_invariants().unwrap();
}

#[test]
fn blocks_allocated_before_the_split_are_freed_after_it_by_any_thread() {
    let _guard = setup();
    let pool = pool(0);
    let blocks: Vec<(usize, usize)> = (1..=40).map(|i| (pool.allocate(i * 4096, Stream::DEFAULT).unwrap(), i * 4096)).collect();
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let halves: Vec<Vec<(usize, usize)>> = blocks.chunks(20).map(|half| half.to_vec()).collect();
    let shared = pool.clone();
    let halves = Arc::new(halves);
    on_threads(2, move |t| {
        for &(ptr, bytes) in &halves[t] {
            shared.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
        }
    });
    assert_eq!(pool.usage().live, 0);
    assert!(pool.deallocate(blocks[0].0, blocks[0].1, Stream::DEFAULT).is_err(), "a second free is refused");
    pool.check_invariants().unwrap();
}

#[test]
fn a_lane_takes_memory_another_lane_freed_instead_of_failing_at_the_maximum() {
    let _guard = setup();
    let pool = pool(64 * MIB);
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let allocate_and_free_all = |pool: Arc<PoolResource>| {
        std::thread::spawn(move || {
            let blocks: Vec<usize> = (0..12).map(|_| pool.allocate(4 * MIB, Stream::DEFAULT).unwrap()).collect();
            for ptr in blocks {
                pool.deallocate(ptr, 4 * MIB, Stream::DEFAULT).unwrap();
            }
        })
        .join()
        .unwrap()
    };
    allocate_and_free_all(pool.clone());
    let before = driver_calls();
    allocate_and_free_all(pool.clone());
    let spent = driver_calls_since(before);
    assert_eq!((spent.stream_wait_event, spent.host_wait), (0, 0), "{spent:?}");
    assert!(pool.usage().reserved <= 64 * MIB);
    assert!(pool.usage().lanes >= 2);
    pool.check_invariants().unwrap();
}

#[test]
fn a_lane_short_of_memory_takes_blocks_another_lane_freed_before_the_pool_grows() {
    let _guard = setup();
    let sim = simulator().unwrap();
    let pool = pool(0);
    // Created streams: the legacy default stream would order the other stream's work anyway.
    let (split, other) = (streams::create(0).unwrap(), streams::create(0).unwrap());
    pool.deallocate(pool.allocate(256, split).unwrap(), 256, split).unwrap();
    pool.split_into_lanes(split).unwrap();
    // One thread's lane: eight blocks in one chunk, one kept (so the chunk is never wholly
    // free to take), six freed in the stream's order and one freed on another stream while a
    // kernel there still uses it. The thread stays (a thread that ends may leave its lane to
    // the next one).
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let shared = pool.clone();
    let first = std::thread::spawn(move || {
        shared.deallocate(shared.allocate(8 * MIB, split).unwrap(), 8 * MIB, split).unwrap();
        let blocks: Vec<usize> = (0..8).map(|_| shared.allocate(MIB, split).unwrap()).collect();
        for &ptr in &blocks[1..7] {
            shared.deallocate(ptr, MIB, split).unwrap();
        }
        sim.stream_hold(other).unwrap();
        shared.deallocate(blocks[7], MIB, other).unwrap();
        ready_tx.send(blocks[0]).unwrap();
        done_rx.recv().unwrap();
    });
    let kept = ready_rx.recv().unwrap();
    let held = pool.usage().reserved;
    // Another thread's lane, empty: it takes the other lanes' free blocks (the first lane's
    // seven and the stream's own state's two) instead of growing, waiting for the free made on
    // the other stream.
    let shared = pool.clone();
    std::thread::spawn(move || {
        let blocks: Vec<usize> = (0..9).map(|_| shared.allocate(MIB, split).unwrap()).collect();
        blocks.iter().for_each(|&ptr| shared.deallocate(ptr, MIB, split).unwrap());
    })
    .join()
    .unwrap();
    done_tx.send(()).unwrap();
    first.join().unwrap();
    assert_eq!(pool.usage().reserved, held, "the pool grew although another lane of the stream had the memory");
    assert!(pool.usage().lanes >= 2, "{:?}", pool.usage());
    pool.deallocate(kept, MIB, split).unwrap();
    streams::destroy(other).unwrap();
    streams::destroy(split).unwrap();
    assert!(races().is_empty(), "{:?}", races());
    pool.check_invariants().unwrap();
}

/// A lane that keeps a thread's small ring of blocks would take each block from the lane that
/// grew first (a block taken stays in its sibling's index, so the next allocation is short
/// again), every pair on the slow path through the core's growing lock and the sibling's
/// shelf. After a bounded number of takes it grows a chunk of its own, and its pairs stay in
/// its own index from then on.
#[test]
fn a_lane_that_keeps_taking_from_its_siblings_grows_a_chunk_of_its_own() {
    let _guard = setup();
    let pool = pool(0);
    let split = streams::create(0).unwrap();
    pool.deallocate(pool.allocate(256, split).unwrap(), 256, split).unwrap();
    pool.split_into_lanes(split).unwrap();
    // The first lane takes the stream's memory and keeps a block, so its chunk never goes;
    // its thread stays (a thread that ends leaves its lane to the next one).
    let (kept_tx, kept_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let shared = pool.clone();
    let first = std::thread::spawn(move || {
        kept_tx.send(shared.allocate(256, split).unwrap()).unwrap();
        done_rx.recv().unwrap();
    });
    let kept = kept_rx.recv().unwrap();
    let chunks = pool.usage().chunks;
    // Another thread's ring of 8 blocks of 256 B, 4,000 pairs.
    let shared = pool.clone();
    std::thread::spawn(move || {
        let mut ring: Vec<usize> = (0..8).map(|_| shared.allocate(256, split).unwrap()).collect();
        for i in 0..4000 {
            shared.deallocate(ring[i % 8], 256, split).unwrap();
            ring[i % 8] = shared.allocate(256, split).unwrap();
        }
        ring.iter().for_each(|&ptr| shared.deallocate(ptr, 256, split).unwrap());
    })
    .join()
    .unwrap();
    done_tx.send(()).unwrap();
    first.join().unwrap();
    let usage = pool.usage();
    assert_eq!(usage.chunks, chunks + 1, "the ring's lane has one chunk of its own: {usage:?}");
    pool.deallocate(kept, 256, split).unwrap();
    streams::destroy(split).unwrap();
    assert!(races().is_empty(), "{:?}", races());
    pool.check_invariants().unwrap();
}

#[test]
fn a_split_streams_memory_reaches_another_stream_only_in_order() {
    let _guard = setup();
    let sim = simulator().unwrap();
    for announced in [true, false] {
        let pool = pool(4 * MIB);
        let platform = backend().unwrap();
        let split = match announced {
            true => streams::create(0).unwrap(),
            false => platform.stream_create(0).unwrap(),
        };
        // An allocation on the stream's own state first: a stream no thread allocated on has none.
        pool.deallocate(pool.allocate(256, split).unwrap(), 256, split).unwrap();
        pool.split_into_lanes(split).unwrap();
        let shared = pool.clone();
        std::thread::spawn(move || {
            let block = shared.allocate(4 * MIB, split).unwrap();
            sim.stream_hold(split).unwrap(); // a kernel still using the block
            shared.deallocate(block, 4 * MIB, split).unwrap();
        })
        .join()
        .unwrap();
        let other = streams::create(0).unwrap();
        let block = pool.allocate(4 * MIB, other).unwrap();
        pool.deallocate(block, 4 * MIB, other).unwrap();
        match announced {
            true => streams::destroy(split).unwrap(),
            false => platform.stream_destroy(split).unwrap(),
        }
        streams::destroy(other).unwrap();
        assert!(races().is_empty(), "announced {announced}: {:?}", races());
        pool.check_invariants().unwrap();
    }
}

/// Runs `steps` steps of a worker thread that allocates what the main thread sends it (a
/// block of each size) on the NULL stream and sends the blocks back.
fn with_worker(pool: &Arc<PoolResource>, work: impl FnOnce(&mpsc::Sender<Vec<usize>>, &mpsc::Receiver<Vec<usize>>)) {
    let (to_worker, from_main) = mpsc::channel::<Vec<usize>>();
    let (to_main, from_worker) = mpsc::channel::<Vec<usize>>();
    let shared = pool.clone();
    let worker = std::thread::spawn(move || {
        for sizes in from_main {
            to_main.send(sizes.into_iter().map(|bytes| shared.allocate(bytes, Stream::DEFAULT).unwrap()).collect()).unwrap();
        }
    });
    work(&to_worker, &from_worker);
    drop(to_worker);
    worker.join().unwrap();
}

#[test]
fn threads_that_take_turns_in_runs_on_a_stream_keep_one_index() {
    let _guard = setup();
    let pool = pool(0);
    // The forward pass on this thread, the backward pass on the other, as PyTorch's autograd
    // runs them: each allocates a run of blocks while the other waits.
    with_worker(&pool, |to_worker, from_worker| {
        for step in 0..50 {
            let forward: Vec<usize> = (0..32).map(|i| pool.allocate(4096 + step + i, Stream::DEFAULT).unwrap()).collect();
            to_worker.send(vec![8192; 32]).unwrap();
            let backward = from_worker.recv().unwrap();
            backward.into_iter().for_each(|ptr| pool.deallocate(ptr, 8192, Stream::DEFAULT).unwrap());
            forward.into_iter().zip(0..).for_each(|(ptr, i)| pool.deallocate(ptr, 4096 + step + i, Stream::DEFAULT).unwrap());
        }
    });
    assert_eq!(pool.usage().lanes, 0, "turns are not collisions");
    pool.check_invariants().unwrap();
}

#[test]
fn threads_that_interleave_allocation_by_allocation_split_the_stream() {
    let _guard = setup();
    let pool = pool(0);
    // Never at the same time (the lock is never found held), but each allocation by another
    // thread than the one before: the two share the index's cache lines as colliding threads do.
    with_worker(&pool, |to_worker, from_worker| {
        for step in 0..500 {
            let mine = pool.allocate(4096 + step, Stream::DEFAULT).unwrap();
            to_worker.send(vec![8192]).unwrap();
            let theirs = from_worker.recv().unwrap()[0];
            pool.deallocate(theirs, 8192, Stream::DEFAULT).unwrap();
            pool.deallocate(mine, 4096 + step, Stream::DEFAULT).unwrap();
        }
    });
    let usage = pool.usage();
    assert!(usage.lanes >= 1, "the stream did not split: {usage:?}");
    assert_eq!(usage.live, 0);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn threads_that_collide_on_a_stream_lose_nothing_and_get_nothing_twice() {
    let _guard = setup();
    let pool = pool(0);
    let shared = pool.clone();
    on_threads(4, move |t| {
        let mut rng = Rng::new(7 + t as u64);
        let mut live: Vec<(usize, usize, u8)> = Vec::new();
        for i in 0..6000 {
            if live.len() < 32 && (live.is_empty() || rng.chance(55)) {
                let bytes = rng.log_uniform(20).max(1);
                let tag = (i % 251) as u8;
                let ptr = shared.allocate(bytes, Stream::DEFAULT).unwrap();
                stamp(ptr, bytes.min(256), tag);
                live.push((ptr, bytes, tag));
            } else {
                let (ptr, bytes, tag) = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert!(stamped(ptr, bytes.min(256), tag), "block {ptr:#x} was handed out twice");
                shared.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
            }
        }
        for (ptr, bytes, tag) in live {
            assert!(stamped(ptr, bytes.min(256), tag));
            shared.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
        }
    });
    let usage = pool.usage();
    eprintln!("4 colliding threads: {} lanes", usage.lanes);
    assert_eq!(usage.live, 0);
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

/// Fork while threads hold blocks in their lanes, alive but idle: the child allocates in a lane
/// of its own and frees the threads' blocks, checked, with nothing corrupted; the parent goes on
/// unchanged.
#[test]
fn a_child_forked_while_threads_hold_lanes_allocates_and_frees() {
    let _guard = setup();
    let pool = pool(0);
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let (held_tx, held_rx) = mpsc::channel::<Vec<(usize, usize)>>();
    let release = Arc::new(Barrier::new(5));
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let (shared, held_tx, release) = (pool.clone(), held_tx.clone(), release.clone());
            std::thread::spawn(move || {
                let blocks: Vec<(usize, usize)> =
                    (1..=16).map(|i| (shared.allocate(i * 1000 + t, Stream::DEFAULT).unwrap(), i * 1000 + t)).collect();
                held_tx.send(blocks).unwrap();
                release.wait();
            })
        })
        .collect();
    let held: Vec<(usize, usize)> = (0..4).flat_map(|_| held_rx.recv().unwrap()).collect();
    in_forked_child(|| {
        let mut ok = held.iter().all(|&(ptr, bytes)| pool.deallocate(ptr, bytes, Stream::DEFAULT).is_ok());
        ok &= held.iter().all(|&(ptr, bytes)| pool.deallocate(ptr, bytes, Stream::DEFAULT).is_err());
        for bytes in [256, 5000, 3 * MIB] {
            ok &= pool.allocate(bytes, Stream::DEFAULT).and_then(|ptr| pool.deallocate(ptr, bytes, Stream::DEFAULT)).is_ok();
        }
        ok && pool.check_invariants().is_ok() && pool.usage().live == 0
    });
    release.wait();
    workers.into_iter().for_each(|worker| worker.join().unwrap());
    // The parent's blocks are untouched by the child's frees.
    for &(ptr, bytes) in &held {
        pool.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
    }
    assert_eq!(pool.usage().live, 0);
    pool.check_invariants().unwrap();
    assert!(pool.release().unwrap() > 0);
    assert_eq!(pool.usage().reserved, 0, "a released pool holds nothing, lanes included");
}

/// Producers allocate on the NULL stream and hand every block to consumers, which check its
/// stamp and free it, all at once: each free goes back, checked, to the lane of the thread
/// that allocated it, nothing is handed out twice or lost, and the producers' lanes go on
/// serving them with what the consumers freed.
#[test]
fn producers_and_consumers_on_one_stream_lose_nothing() {
    let _guard = setup();
    let pool = pool(64 * MIB);
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let (to_consumers, from_producers) = mpsc::sync_channel::<(usize, usize, u8)>(64);
    let from_producers = Arc::new(std::sync::Mutex::new(from_producers));
    let producers: Vec<_> = (0..3)
        .map(|t| {
            let (shared, to_consumers) = (pool.clone(), to_consumers.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(40 + t);
                for i in 0..3000u64 {
                    let bytes = 1 + rng.below(64 << 10) as usize;
                    let tag = ((t * 89 + i) % 251) as u8;
                    let ptr = shared.allocate(bytes, Stream::DEFAULT).unwrap();
                    stamp(ptr, bytes.min(128), tag);
                    to_consumers.send((ptr, bytes, tag)).unwrap();
                }
            })
        })
        .collect();
    drop(to_consumers);
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let (shared, from_producers) = (pool.clone(), from_producers.clone());
            std::thread::spawn(move || {
                let mut freed = 0;
                loop {
                    let next = from_producers.lock().unwrap().recv();
                    let Ok((ptr, bytes, tag)) = next else { return freed };
                    assert!(stamped(ptr, bytes.min(128), tag), "block {ptr:#x} was handed out twice");
                    assert!(shared.deallocate(ptr, bytes + 256, Stream::DEFAULT).is_err(), "a wrong size is refused");
                    shared.deallocate(ptr, bytes, Stream::DEFAULT).unwrap();
                    freed += 1;
                }
            })
        })
        .collect();
    producers.into_iter().for_each(|producer| producer.join().unwrap());
    let freed: usize = consumers.into_iter().map(|consumer| consumer.join().unwrap()).sum();
    assert_eq!(freed, 9000);
    let usage = pool.usage();
    assert!(usage.lanes >= 2, "the producers allocated in {} lanes", usage.lanes);
    assert_eq!(usage.live, 0);
    assert!(usage.reserved <= 64 * MIB, "the pool grew past its maximum: {usage:?}");
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}
