//! The fixed-size block index against a shadow model: chunks added out of address order,
//! allocations, frees (valid, double, interior, foreign, of a wrong size) and chunk releases,
//! with every invariant checked after each operation.

use rmm::mr::suballoc::fixed_blocks::FixedBlocks;
use rmm::mr::suballoc::tlsf::{Refused, GRANULE};
use std::collections::BTreeMap;

mod common;

use common::Rng;

fn run(seed: u64, block_size: usize, steps: usize) {
    let mut rng = Rng(seed);
    let mut index = FixedBlocks::new(block_size);
    let mut chunks: BTreeMap<usize, usize> = BTreeMap::new();
    let mut live: BTreeMap<usize, usize> = BTreeMap::new();
    // Bases drawn from a wide range, so chunks arrive in no particular address order.
    let mut next_base = || (1usize << 36) + (rng.below(1 << 20) as usize) * (1 << 16);
    let mut rng = Rng(seed ^ 0x5555);
    for step in 0..steps {
        match rng.below(100) {
            0..=3 => {
                let blocks = 1 + rng.below(8) as usize;
                let base = next_base();
                let size = blocks * block_size;
                if chunks.range(..base + size).next_back().is_some_and(|(&b, &s)| b + s > base)
                    || chunks.range(base..base + size).next().is_some()
                {
                    continue;
                }
                index.add_chunk(base, size);
                chunks.insert(base, size);
            }
            4..=50 => {
                let requested = 1 + rng.below(block_size as u64) as usize;
                match index.allocate(requested) {
                    Some((addr, size)) => {
                        assert_eq!(size, block_size);
                        let (&base, &chunk) = chunks.range(..=addr).next_back().expect("inside a chunk");
                        assert!(addr + size <= base + chunk && (addr - base) % block_size == 0, "step {step}: misplaced block");
                        assert!(live.insert(addr, requested).is_none(), "step {step}: {addr:#x} handed out twice");
                        assert_eq!(index.used_block(addr), Some((block_size, requested)));
                    }
                    None => {
                        let capacity: usize = chunks.values().map(|size| size / block_size).sum();
                        assert_eq!(live.len(), capacity, "step {step}: refused with free blocks left");
                    }
                }
            }
            51..=90 => {
                if live.is_empty() {
                    continue;
                }
                let nth = rng.below(live.len() as u64) as usize;
                let (&addr, &requested) = live.iter().nth(nth).unwrap();
                if block_size > GRANULE {
                    assert_eq!(index.free_checked(addr + GRANULE, None), Err(Refused::NotLive), "an interior pointer is refused");
                }
                for wrong in [requested - 1, requested + 1, block_size + 1] {
                    if wrong != requested && wrong > 0 {
                        assert_eq!(index.free_checked(addr, Some(wrong)), Err(Refused::WrongSize(requested)), "a wrong size is refused");
                    }
                }
                let freed = index.free_checked(addr, Some(requested)).expect("a live block frees");
                assert_eq!(freed.size, block_size);
                assert_eq!(index.free_checked(addr, None), Err(Refused::NotLive), "a double free is refused");
                live.remove(&addr);
                let (&base, &size) = chunks.range(..=addr).next_back().unwrap();
                assert_eq!(freed.chunk_now_free, !live.keys().any(|&a| a >= base && a < base + size));
            }
            91..=94 => {
                let foreign = next_base() + 3 * GRANULE;
                if !live.contains_key(&foreign) {
                    assert_eq!(index.free_checked(foreign, None), Err(Refused::NotLive), "a foreign pointer is refused");
                }
            }
            _ => {
                for chunk in index.take_wholly_free_chunks() {
                    assert!(!live.keys().any(|&a| a >= chunk.base && a < chunk.base + chunk.size), "step {step}: released a chunk in use");
                    assert_eq!(chunks.remove(&chunk.base), Some(chunk.size));
                }
            }
        }
        index.check_invariants().unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(index.used_blocks(), live.len());
    }
}

#[test]
fn power_of_two_blocks_match_the_model() {
    for seed in 1..=12 {
        run(seed, 1024, 3000);
    }
}

#[test]
fn other_block_sizes_match_the_model() {
    for (seed, block_size) in [(21, GRANULE), (22, 3 * GRANULE), (23, 5 * GRANULE), (24, 100 * GRANULE)] {
        run(seed, block_size, 3000);
    }
}
