//! Pool, fixed-size and binning resources on simulated devices: shadow-model workloads on
//! several streams, threaded stress with cross-thread and cross-stream frees, growth, limits
//! and release. The race checker counts (and the tests require zero) ordering races.

mod common;

use common::*;
use rmm::ownership::{records, Expected, Holder, StackRef};
use rmm::platform::{backend, Stream};
use rmm::resources::{ArenaResource, BinningResource, DirectResource, FixedSizeResource, MemoryResource, PoolResource};
use std::sync::Arc;

fn upstream() -> Arc<dyn MemoryResource> {
    Arc::new(DirectResource::cuda(0).unwrap())
}

/// The default streams, two streams whose handles rmm-rs trusts (made by it) and two it
/// checks against the driver's id (the program's own).
fn streams() -> Vec<Stream> {
    let platform = backend().unwrap();
    let mut streams = vec![Stream::DEFAULT, Stream::PER_THREAD];
    streams.extend((0..2).map(|_| rmm::resources::streams::create(0).unwrap()));
    streams.extend((0..2).map(|_| platform.stream_create(0).unwrap()));
    streams
}

fn device_free() -> usize {
    backend().unwrap().mem_get_info(0).unwrap().0
}

#[test]
fn pool_matches_the_shadow_model_on_several_streams() {
    let _guard = setup();
    let free_before = device_free();
    let pool = Arc::new(PoolResource::new(upstream(), 0, 96 << 20).unwrap());
    let resource: Arc<dyn MemoryResource> = pool.clone();
    let check = || pool.check_invariants();
    let refused = shadow_workload(&resource, &check, &streams(), 20, 24 << 20, 7, 4000);
    assert!(refused < 40, "{refused} refusals with the pool far below its maximum");
    assert!(pool.release().unwrap() > 0);
    assert_eq!(pool.pool_size(), Some(0), "every byte comes back when all is freed");
    assert_eq!(device_free(), free_before);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn fixed_size_matches_the_shadow_model() {
    let _guard = setup();
    let fixed = Arc::new(FixedSizeResource::new(upstream(), 4000, 16).unwrap());
    assert_eq!(fixed.block_size(), 4096);
    assert_eq!(fixed.pool_size(), Some(16 * 4096), "preallocated");
    let resource: Arc<dyn MemoryResource> = fixed.clone();
    let check = || fixed.check_invariants();
    shadow_workload(&resource, &check, &streams(), 12, 1 << 20, 11, 3000);
    assert!(matches!(resource.allocate(4097, Stream::DEFAULT).map_err(rmm::Error::into_kind), Err(rmm::ErrorKind::InvalidArgument(_))));
    fixed.release().unwrap();
    assert_eq!(fixed.pool_size(), Some(0));
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn binning_routes_by_size_and_matches_the_shadow_model() {
    let _guard = setup();
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(upstream(), 16 << 20, 0).unwrap());
    let binning = Arc::new(BinningResource::new(pool.clone(), 10, 16).unwrap());
    assert_eq!(binning.bin_sizes(), (10..=16).map(|e| 1usize << e).collect::<Vec<_>>());
    let custom: Arc<dyn MemoryResource> = Arc::new(FixedSizeResource::new(pool.clone(), 1 << 18, 4).unwrap());
    binning.add_bin(1 << 18, Some(custom.clone())).unwrap();
    let resource: Arc<dyn MemoryResource> = binning.clone();
    let check = || Ok(());
    shadow_workload(&resource, &check, &streams(), 21, 16 << 20, 13, 3000);
    let small = resource.allocate(100, Stream::DEFAULT).unwrap();
    let large = resource.allocate(3 << 20, Stream::DEFAULT).unwrap();
    assert!(custom.pool_size().unwrap() >= 4 << 18);
    resource.deallocate(small, 100, Stream::DEFAULT).unwrap();
    resource.deallocate(large, 3 << 20, Stream::DEFAULT).unwrap();
    assert!(binning.add_bin(0, None).is_err());
    assert!(BinningResource::new(pool, -1, 3).is_err());
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn arena_matches_the_shadow_model_on_threads_and_streams() {
    let _guard = setup();
    let free_before = device_free();
    let arena = Arc::new(ArenaResource::new(upstream(), 32 << 20).unwrap());
    let resource: Arc<dyn MemoryResource> = arena.clone();
    let check = || arena.check_invariants();
    shadow_workload(&resource, &check, &streams(), 21, 24 << 20, 17, 3000);
    let workers: Vec<_> = (0..4)
        .map(|t| {
            let resource = resource.clone();
            std::thread::spawn(move || {
                let check = || Ok(());
                shadow_workload(&resource, &check, &[Stream::DEFAULT], 16, 4 << 20, 100 + t, 1500)
            })
        })
        .collect();
    workers.into_iter().for_each(|w| assert_eq!(w.join().unwrap(), 0));
    let (global, local) = arena.usage();
    assert!(local.streams >= 5, "each thread has its own arena on the default stream: {local:?}");
    assert!(global.reserved >= 32 << 20);
    arena.check_invariants().unwrap();
    arena.release().unwrap();
    assert_eq!(arena.pool_size(), Some(0));
    drop((resource, arena));
    assert_eq!(device_free(), free_before);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn pool_grows_geometrically_backs_off_and_respects_its_maximum() {
    let _guard = setup();
    let pool = PoolResource::new(upstream(), 4 << 20, 40 << 20).unwrap();
    assert_eq!(pool.pool_size(), Some(4 << 20));
    let a = pool.allocate(3 << 20, Stream::DEFAULT).unwrap();
    let b = pool.allocate(3 << 20, Stream::DEFAULT).unwrap();
    assert_eq!(pool.pool_size(), Some(8 << 20), "grew by half of what it had, at least the request");
    let c = pool.allocate(30 << 20, Stream::DEFAULT).unwrap();
    assert!(pool.pool_size().unwrap() <= 40 << 20);
    let refused = pool.allocate(8 << 20, Stream::DEFAULT).unwrap_err();
    assert!(matches!(refused.kind(), rmm::ErrorKind::OutOfMemory { .. }), "{refused}");
    assert!(refused.to_string().contains("maximum"), "{refused}");
    assert!(pool.deallocate(a, 5 << 20, Stream::DEFAULT).is_err(), "a wrong size is refused");
    for (ptr, size) in [(a, 3 << 20), (b, 3 << 20), (c, 30 << 20)] {
        pool.deallocate(ptr, size, Stream::DEFAULT).unwrap();
    }
    assert!(pool.deallocate(a, 3 << 20, Stream::DEFAULT).is_err(), "double free");
    assert!(pool.deallocate(0x1000, 256, Stream::DEFAULT).is_err(), "foreign pointer");
    pool.check_invariants().unwrap();
    // Upstream failure: a pool over a small simulated device backs off to what fits.
    let big = PoolResource::new(upstream(), 0, 0).unwrap();
    let held = big.allocate(300 << 20, Stream::DEFAULT).unwrap();
    let more = big.allocate(150 << 20, Stream::DEFAULT).unwrap();
    assert!(big.allocate(400 << 20, Stream::DEFAULT).is_err());
    big.deallocate(held, 300 << 20, Stream::DEFAULT).unwrap();
    big.deallocate(more, 150 << 20, Stream::DEFAULT).unwrap();
    big.check_invariants().unwrap();
}

#[test]
fn a_request_no_upstream_can_serve_leaves_the_initial_reservation() {
    let _guard = setup();
    let pool = PoolResource::new(upstream(), 64 << 20, 0).unwrap();
    let refused = pool.allocate(1 << 30, Stream::DEFAULT).unwrap_err();
    assert!(refused.is_out_of_memory(), "{refused}");
    assert_eq!(pool.pool_size(), Some(64 << 20), "the pool still holds its initial size");
    let ptr = pool.allocate(32 << 20, Stream::DEFAULT).unwrap();
    pool.deallocate(ptr, 32 << 20, Stream::DEFAULT).unwrap();
    pool.check_invariants().unwrap();
}

#[test]
fn out_of_memory_reclaims_other_streams_free_chunks_first() {
    let _guard = setup();
    let platform = backend().unwrap();
    let (a, b) = (platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap());
    let pool = PoolResource::new(upstream(), 0, 64 << 20).unwrap();
    let on_a: Vec<_> = (0..6).map(|_| pool.allocate(8 << 20, a).unwrap()).collect();
    for ptr in &on_a {
        pool.deallocate(*ptr, 8 << 20, a).unwrap();
    }
    let reserved = pool.pool_size().unwrap();
    let on_b = pool.allocate(40 << 20, b).unwrap();
    assert!(pool.pool_size().unwrap() <= 64 << 20);
    assert!(pool.pool_size().unwrap() >= reserved.min(40 << 20));
    pool.deallocate(on_b, 40 << 20, b).unwrap();
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn memory_of_a_destroyed_stream_is_reused_without_touching_its_handle() {
    let _guard = setup();
    let platform = backend().unwrap();
    let pool = PoolResource::new(upstream(), 0, 8 << 20).unwrap();
    let doomed = platform.stream_create(0).unwrap();
    let blocks: Vec<_> = (0..4).map(|_| pool.allocate(2 << 20, doomed).unwrap()).collect();
    let survivor = platform.stream_create(0).unwrap();
    // One block is freed on another, live stream: a cross-stream free into doomed's index.
    pool.deallocate(blocks[0], 2 << 20, survivor).unwrap();
    for ptr in &blocks[1..] {
        pool.deallocate(*ptr, 2 << 20, doomed).unwrap();
    }
    platform.stream_destroy(doomed).unwrap();
    // The simulator refuses any use of the destroyed handle, so success here means the pool
    // ordered the reuse through events recorded while the stream was alive.
    let reused = pool.allocate(8 << 20, survivor).unwrap();
    pool.deallocate(reused, 8 << 20, survivor).unwrap();
    pool.check_invariants().unwrap();
    drop(pool);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_dropped_pool_keeps_live_blocks_valid_until_freed() {
    let _guard = setup();
    for pool_block_first in [false, true] {
        let free_before = device_free();
        let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(upstream(), 0, 0).unwrap());
        let binning = StackRef::new(Arc::new(BinningResource::new(pool.clone(), 8, 12).unwrap()));
        let mut kept: Vec<(usize, usize)> = [100usize, 5000, 3 << 20]
            .iter()
            .map(|&size| (records::allocate(binning.stack(), size, Stream::DEFAULT, Holder::Caller).unwrap(), size))
            .collect();
        drop((pool, binning));
        if pool_block_first {
            kept.reverse();
        }
        for (i, &(ptr, size)) in kept.iter().enumerate() {
            stamp(ptr, size, i as u8 + 1);
        }
        assert!(device_free() < free_before, "the chunks are still held");
        for (i, &(ptr, size)) in kept.iter().enumerate() {
            assert!(stamped(ptr, size, i as u8 + 1));
            rmm::ownership::legacy::free(ptr, Stream::DEFAULT).unwrap();
        }
        assert!(rmm::ownership::legacy::free(kept[0].0, Stream::DEFAULT).is_err(), "double free after the orphan is gone");
        assert_eq!(device_free(), free_before, "the orphaned chunks went back once their last block was freed");
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_chunk_completed_by_a_cross_stream_free_is_not_taken_without_covering_earlier_frees() {
    let _guard = setup();
    let platform = backend().unwrap();
    let (s, x, w) = (platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap());
    // One chunk of 4 MiB, which s takes over from the default stream for both blocks.
    let pool = PoolResource::new(upstream(), 4 << 20, 4 << 20).unwrap();
    let b1 = pool.allocate(2 << 20, s).unwrap();
    let b2 = pool.allocate(2 << 20, s).unwrap();
    assert_eq!(b2, b1 + (2 << 20), "both blocks lie in the one chunk");
    // s frees b1 without recording (the chunk is not yet free); x frees b2 and completes it.
    pool.deallocate(b1, 2 << 20, s).unwrap();
    pool.deallocate(b2, 2 << 20, x).unwrap();
    // w needs the whole chunk: it may not simply wait on x's event, which does not cover s's
    // free of b1.
    let all = pool.allocate(4 << 20, w).unwrap();
    pool.deallocate(all, 4 << 20, w).unwrap();
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn eight_threads_allocate_and_free_across_threads_and_streams() {
    let _guard = setup();
    let pool = Arc::new(PoolResource::new(upstream(), 32 << 20, 0).unwrap());
    let binning: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(pool.clone(), 8, 14).unwrap());
    let arena: Arc<dyn MemoryResource> = Arc::new(ArenaResource::new(upstream(), 0).unwrap());
    let fixed: Arc<dyn MemoryResource> = Arc::new(FixedSizeResource::new(upstream(), 1 << 16, 0).unwrap());
    for resource in [pool.clone() as Arc<dyn MemoryResource>, binning, arena, fixed] {
        let platform = backend().unwrap();
        let streams: Vec<Stream> = (0..8).map(|i| if i == 0 { Stream::DEFAULT } else { platform.stream_create(0).unwrap() }).collect();
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..8).map(|_| std::sync::mpsc::channel::<(usize, usize, u8)>()).unzip();
        let workers: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(t, inbox)| {
                let resource = resource.clone();
                let senders = senders.clone();
                let streams = streams.clone();
                std::thread::spawn(move || {
                    let mut rng = Rng(t as u64 + 1);
                    let stream = streams[t];
                    for i in 0..1500 {
                        let size = rng.log_uniform(16);
                        let ptr = resource.allocate(size, stream).unwrap();
                        let tag = (t * 31 + i) as u8 | 1;
                        stamp(ptr, size.min(64), tag);
                        // Half the blocks are freed by another thread, on that thread's stream.
                        let to = if i % 2 == 0 { t } else { (t + 1 + rng.below(7) as usize) % 8 };
                        senders[to].send((ptr, size, tag)).unwrap();
                        while let Ok((ptr, size, tag)) = inbox.try_recv() {
                            assert!(stamped(ptr, size.min(64), tag), "thread {t}: block {ptr:#x} overwritten");
                            resource.deallocate(ptr, size, stream).unwrap();
                        }
                    }
                    drop(senders);
                    inbox
                })
            })
            .collect();
        drop(senders);
        let inboxes: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        for inbox in inboxes {
            for (ptr, size, tag) in inbox.try_iter() {
                assert!(stamped(ptr, size.min(64), tag));
                resource.deallocate(ptr, size, Stream::DEFAULT).unwrap();
            }
        }
    }
    pool.check_invariants().unwrap();
    assert!(races().is_empty(), "{:?}", races());
}

fn through(stack: &StackRef, size: usize) -> Expected<'_> {
    Expected { stack: Some(stack), size: Some(size), holder: Holder::Caller }
}

#[test]
fn a_binning_resource_and_the_pool_beneath_refuse_each_others_blocks() {
    let _guard = setup();
    let pool = Arc::new(PoolResource::new(upstream(), 16 << 20, 0).unwrap());
    let binning = StackRef::new(Arc::new(BinningResource::new(pool.clone(), 8, 12).unwrap()));
    let pool_stack = StackRef::new(pool.clone());
    let s = Stream::DEFAULT;
    for size in [100, 3 << 20] {
        // In a bin (100 bytes) or passed to the pool (3 MiB): either way the binning resource's.
        let mine = records::allocate(binning.stack(), size, s, Holder::Caller).unwrap();
        assert!(
            records::free(mine, s, through(&pool_stack, size)).is_err(),
            "{size}: the pool refuses a block the binning resource handed out"
        );
        let direct = records::allocate(pool_stack.stack(), size, s, Holder::Caller).unwrap();
        assert!(records::free(direct, s, through(&binning, size)).is_err(), "{size}: binning refuses a block of the pool's own");
        // (Called directly, below the records, the binning resource trusts its caller: a
        // block of a size it passes upstream goes upstream by its size while the bins are
        // the ones it was made with. Only the records decide who may free what.)
        // rmmFree names no resource: both go back to where they came from.
        records::free(mine, s, Expected::ANY_OF_CALLERS).unwrap();
        records::free(direct, s, Expected::ANY_OF_CALLERS).unwrap();
    }
    pool.check_invariants().unwrap();
}
