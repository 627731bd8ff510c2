//! The TLSF index against a shadow model: random chunk additions, allocations, frees and chunk
//! releases, with every invariant checked after each operation.

use rmm::mr::suballoc::tlsf::{Tlsf, GRANULE};
use std::collections::BTreeMap;

mod common;

use common::Rng;

struct Model {
    chunks: BTreeMap<usize, usize>,
    live: BTreeMap<usize, usize>,
}

impl Model {
    fn largest_free_run(&self) -> usize {
        let mut largest = 0;
        for (&base, &size) in &self.chunks {
            let mut cursor = base;
            for (&addr, &len) in self.live.range(base..base + size) {
                largest = largest.max(addr - cursor);
                cursor = addr + len;
            }
            largest = largest.max(base + size - cursor);
        }
        largest
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let mut tlsf = Tlsf::new();
    if seed.is_multiple_of(2) {
        tlsf.enable_parking();
    }
    let mut model = Model { chunks: BTreeMap::new(), live: BTreeMap::new() };
    // Chunks are laid out back to back with gaps sometimes, so adjacency across chunks occurs.
    let mut next_base = 1usize << 30;
    for step in 0..steps {
        match rng.below(100) {
            0..=4 => {
                let size = (1 + rng.below(64) as usize) * 64 * GRANULE;
                tlsf.add_chunk(next_base, size);
                model.chunks.insert(next_base, size);
                next_base += size + if rng.below(2) == 0 { 0 } else { GRANULE };
            }
            5..=54 => {
                let bytes = rng.log_uniform(20);
                let need = bytes.div_ceil(GRANULE) * GRANULE;
                match tlsf.allocate(bytes) {
                    Some((addr, size)) => {
                        assert_eq!(size, need, "step {step}: sizes are rounded to the granule");
                        assert_eq!(addr % GRANULE, 0);
                        let (&base, &chunk) = model.chunks.range(..=addr).next_back().expect("inside a chunk");
                        assert!(addr + size <= base + chunk, "step {step}: block crosses its chunk's end");
                        if let Some((&a, &s)) = model.live.range(..addr + size).next_back() {
                            assert!(a + s <= addr, "step {step}: overlaps a live block at {a:#x}");
                        }
                        model.live.insert(addr, size);
                    }
                    None => assert!(model.largest_free_run() < need, "step {step}: refused {need} bytes though a run fits"),
                }
            }
            55..=97 => {
                if model.live.is_empty() {
                    continue;
                }
                let nth = rng.below(model.live.len() as u64) as usize;
                let (&addr, &size) = model.live.iter().nth(nth).unwrap();
                assert_eq!(tlsf.free(addr), Some(size));
                assert_eq!(tlsf.free(addr), None, "a double free is refused");
                model.live.remove(&addr);
            }
            _ => {
                for chunk in tlsf.take_wholly_free_chunks() {
                    assert!(!model.live.range(chunk.base..chunk.base + chunk.size).any(|_| true));
                    assert_eq!(model.chunks.remove(&chunk.base), Some(chunk.size));
                }
            }
        }
        tlsf.check_invariants().unwrap_or_else(|e| panic!("step {step}: {e}"));
        let live_bytes: usize = model.live.values().sum();
        assert_eq!(tlsf.free_bytes() + live_bytes, tlsf.chunk_bytes());
        assert!(tlsf.largest_free_block() <= model.largest_free_run(), "step {step}");
        if step % 16 == 0 {
            tlsf.flush_quick();
            tlsf.check_invariants().unwrap_or_else(|e| panic!("step {step}, flushed: {e}"));
            assert_eq!(tlsf.largest_free_block(), model.largest_free_run(), "step {step}: coalesced once flushed");
        }
    }
    for (addr, size) in std::mem::take(&mut model.live) {
        assert_eq!(tlsf.free(addr), Some(size));
    }
    tlsf.check_invariants().unwrap();
    let released: usize = tlsf.take_wholly_free_chunks().iter().map(|c| c.size).sum();
    assert_eq!(released, model.chunks.values().sum::<usize>(), "every byte comes back when all is freed");
    assert_eq!((tlsf.chunk_bytes(), tlsf.free_bytes(), tlsf.used_blocks()), (0, 0, 0));
}

#[test]
fn random_operations_match_the_model() {
    for seed in 1..=24 {
        run(seed * 0x9E37_79B9, 2_000);
    }
}

#[test]
fn a_freed_block_is_reused_as_is_for_the_same_size_and_refused_twice() {
    let mut tlsf = Tlsf::new();
    tlsf.enable_parking();
    tlsf.add_chunk(0x10_0000, 64 * GRANULE);
    let (a, size) = tlsf.allocate(3 * GRANULE).unwrap();
    assert_eq!(tlsf.free(a), Some(size));
    assert_eq!(tlsf.free(a), None, "a parked block cannot be freed again");
    assert_eq!(tlsf.used_blocks(), 0);
    assert_eq!(tlsf.free_bytes(), 64 * GRANULE);
    assert_eq!(tlsf.allocate(3 * GRANULE), Some((a, size)), "the parked block comes back");
    tlsf.free(a).unwrap();
    // A request nothing parked can serve flushes the parked blocks and coalesces them.
    assert_eq!(tlsf.allocate(64 * GRANULE).map(|(addr, _)| addr), Some(0x10_0000));
    tlsf.check_invariants().unwrap();
}

#[test]
fn freeing_coalesces_back_to_one_block_and_never_across_chunks() {
    let mut tlsf = Tlsf::new();
    tlsf.add_chunk(0x10000, 4 * GRANULE);
    tlsf.add_chunk(0x10000 + 4 * GRANULE, 4 * GRANULE);
    let blocks: Vec<_> = (0..8).map(|_| tlsf.allocate(GRANULE).unwrap().0).collect();
    assert!(tlsf.allocate(1).is_none());
    for addr in [blocks[1], blocks[3], blocks[0], blocks[2], blocks[4], blocks[5], blocks[6], blocks[7]] {
        tlsf.free(addr).unwrap();
        tlsf.check_invariants().unwrap();
    }
    tlsf.flush_quick();
    assert_eq!(tlsf.largest_free_block(), 4 * GRANULE, "adjacent chunks stay separate");
    assert!(tlsf.allocate(5 * GRANULE).is_none());
    assert_eq!(tlsf.take_wholly_free_chunks().len(), 2);
}

/// Parking pays only while allocations ask again for the sizes just freed: with sizes that
/// vary it stops (frees coalesce at once), and a run of one size starts it again.
#[test]
fn parking_follows_the_workload() {
    let mut tlsf = Tlsf::new();
    tlsf.enable_parking();
    tlsf.add_chunk(0x100_0000, 4096 * GRANULE);
    let pair = |tlsf: &mut Tlsf, units: usize| {
        let (addr, _) = tlsf.allocate(units * GRANULE).unwrap();
        tlsf.free(addr).unwrap();
        tlsf.check_invariants().unwrap();
    };
    pair(&mut tlsf, 3);
    assert_eq!(tlsf.parked_blocks(), 1, "a pair parks its block");
    for units in 4..40 {
        pair(&mut tlsf, units);
    }
    assert_eq!(tlsf.parked_blocks(), 0, "sizes that never repeat stop parking");
    assert_eq!(tlsf.largest_free_block(), 4096 * GRANULE, "and every free coalesced");
    for _ in 0..4 {
        pair(&mut tlsf, 7);
    }
    assert_eq!(tlsf.parked_blocks(), 1, "a run of one size parks again");
}
