//! Giving memory back: a device's free memory on demand (`rmmDeviceRelease`) while other
//! threads allocate and free (nothing live is lost or handed out twice, nothing races, and what
//! is free at the end all goes back), and a pool's chunks as its frees empty them while it holds
//! more than its release threshold (only once the stream of the free has passed it).

mod common;

use common::*;
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::{expandable_resource, streams, DirectResource, ExpandableOptions, MemoryResource, PoolResource};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

const MIB: usize = 1 << 20;

/// Every block live now, by address: a new one must overlap none.
#[derive(Default)]
struct Live(Mutex<BTreeMap<usize, usize>>);

impl Live {
    fn handed_out(&self, ptr: usize, bytes: usize) {
        let mut live = self.0.lock().unwrap();
        if let Some((&before, &size)) = live.range(..=ptr).next_back() {
            assert!(before + size <= ptr, "{ptr:#x} lies in the live block at {before:#x}");
        }
        if let Some((&after, _)) = live.range(ptr..).next() {
            assert!(ptr + bytes <= after, "{ptr:#x}+{bytes} overlaps the live block at {after:#x}");
        }
        live.insert(ptr, bytes);
    }

    fn freed(&self, ptr: usize) {
        self.0.lock().unwrap().remove(&ptr);
    }
}

#[test]
fn releasing_the_device_while_threads_allocate_loses_nothing_and_hands_nothing_out_twice() {
    let _guard = setup_with("2:1GiB");
    let cuda: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(0).unwrap());
    let pool = Arc::new(PoolResource::new(cuda, 8 * MIB, 0).unwrap());
    pool.split_into_lanes(Stream::DEFAULT).unwrap();
    let expandable: Arc<dyn MemoryResource> =
        Arc::new(expandable_resource(0, &ExpandableOptions { page_size: 2 * MIB, ..Default::default() }).unwrap());
    let resources: Vec<Arc<dyn MemoryResource>> = vec![pool.clone(), expandable.clone()];
    let live = Arc::new(Live::default());
    let done = Arc::new(AtomicBool::new(false));
    let releaser = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut releases = 0;
            while !done.load(Ordering::Relaxed) || releases == 0 {
                rmm::resources::caches::release_device(0).unwrap();
                releases += 1;
                std::thread::yield_now();
            }
            releases
        })
    };
    let workers: Vec<_> = (0..8u64)
        .map(|seed| {
            let (resources, live) = (resources.clone(), live.clone());
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed);
                let own = streams::create(0).unwrap();
                let mut blocks: Vec<(usize, usize, usize, Stream)> = Vec::new();
                for _ in 0..300 {
                    if blocks.len() < 24 && rng.below(3) != 0 {
                        let which = rng.below(2) as usize;
                        let bytes = 256 + rng.below(3 * MIB as u64) as usize;
                        let stream = if rng.below(2) == 0 { Stream::DEFAULT } else { own };
                        let ptr = resources[which].allocate(bytes, stream).unwrap();
                        live.handed_out(ptr, bytes);
                        blocks.push((which, ptr, bytes, stream));
                    } else if !blocks.is_empty() {
                        let (which, ptr, bytes, stream) = blocks.swap_remove(rng.below(blocks.len() as u64) as usize);
                        live.freed(ptr);
                        resources[which].deallocate(ptr, bytes, stream).unwrap();
                    }
                }
                for (which, ptr, bytes, stream) in blocks {
                    live.freed(ptr);
                    resources[which].deallocate(ptr, bytes, stream).unwrap();
                }
                streams::destroy(own).unwrap();
            })
        })
        .collect();
    workers.into_iter().for_each(|worker| worker.join().unwrap());
    done.store(true, Ordering::Relaxed);
    assert!(releaser.join().unwrap() > 0);
    assert!(races().is_empty(), "{:?}", races());
    pool.check_invariants().unwrap();
    // Everything is free now: all of it goes back, the pool's initial size too.
    rmm::resources::caches::release_device(0).unwrap();
    assert_eq!(pool.usage().reserved, 0);
    assert_eq!(expandable.footprint().unwrap().reserved, 0);
}

/// Bytes of device 0 in use (the simulated device's own count).
fn device_used() -> usize {
    let (free, total) = backend().unwrap().mem_get_info(0).unwrap();
    total - free
}

#[test]
fn above_its_release_threshold_a_pool_gives_back_the_chunks_frees_empty_once_their_stream_passed() {
    let _guard = setup_with("2:1GiB");
    let sim = simulator().unwrap();
    let cuda: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(0).unwrap());
    let pool = PoolResource::new(cuda, 0, 0).unwrap();
    pool.set_release_threshold(8 * MIB).unwrap();
    let stream = streams::create(0).unwrap();
    // Four chunks (each block larger than the half a new chunk adds) on a stream whose kernels
    // still run when the blocks are freed.
    let blocks: Vec<usize> = (0..4).map(|i| pool.allocate((4 + i) * MIB, stream).unwrap()).collect();
    let held = pool.usage().reserved;
    assert!(held >= 22 * MIB && pool.usage().chunks == 4, "{:?}", pool.usage());
    let before = device_used();
    sim.stream_hold(stream).unwrap();
    for (i, &ptr) in blocks.iter().enumerate() {
        pool.deallocate(ptr, (4 + i) * MIB, stream).unwrap();
    }
    // The pool keeps no more than its threshold, but the device gets nothing back while the
    // stream's work may still use the memory.
    assert!(pool.usage().reserved <= 8 * MIB, "{:?}", pool.usage());
    assert_eq!(device_used(), before, "chunks given back before their stream passed its frees");
    sim.stream_finish_held(stream).unwrap();
    // The next growth gives them back, without waiting (as does the next free that empties a
    // chunk, here this one's, which is given back at once: its stream has passed the free).
    let ptr = pool.allocate(30 * MIB, stream).unwrap();
    pool.deallocate(ptr, 30 * MIB, stream).unwrap();
    assert!(pool.usage().reserved <= 8 * MIB, "{:?}", pool.usage());
    assert_eq!(before - device_used(), held - pool.usage().reserved);
    assert!(races().is_empty(), "{:?}", races());
    pool.check_invariants().unwrap();
    // Without a threshold (the default) freed chunks stay.
    pool.set_release_threshold(usize::MAX).unwrap();
    let kept = pool.usage().reserved;
    let ptr = pool.allocate(30 * MIB, stream).unwrap();
    pool.deallocate(ptr, 30 * MIB, stream).unwrap();
    assert!(pool.usage().reserved >= kept + 30 * MIB);
    streams::destroy(stream).unwrap();
}

#[test]
fn a_release_threshold_is_refused_where_nothing_would_follow_it() {
    let _guard = setup_with("2:1GiB");
    let cuda = DirectResource::cuda(0).unwrap();
    assert!(cuda.set_release_threshold(0).is_err(), "a cuda resource keeps no pool");
    let expandable = expandable_resource(0, &ExpandableOptions::default()).unwrap();
    let refused = expandable.set_release_threshold(0).unwrap_err();
    assert!(refused.to_string().contains("release_threshold option"), "{refused}");
}
