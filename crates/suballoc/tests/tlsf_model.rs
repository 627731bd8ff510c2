//! The TLSF index against a shadow model (`model::check_tlsf`): random chunk additions,
//! allocations, frees (valid, double, interior, of a wrong size) and chunk releases, with every
//! invariant checked after each operation; and the behaviours the model does not pin down.

use rmm_suballoc::model::{check_tlsf, Xorshift};
use rmm_suballoc::tlsf::{Tlsf, GRANULE};

#[test]
fn random_operations_match_the_model() {
    for seed in 1..=24u64 {
        check_tlsf(&mut Xorshift(seed * 0x9E37_79B9), 2_000);
    }
}

#[test]
fn a_freed_block_is_reused_as_is_for_the_same_size_and_refused_twice() {
    let mut tlsf = Tlsf::new();
    tlsf.set_parking(true);
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
    tlsf.set_parking(true);
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

/// Mapped memory grows a chunk at its end and gives back whole pages from its free end.
#[test]
fn a_chunk_grows_at_its_end_and_its_free_end_is_cut_back_to_whole_units() {
    let unit = 8 * GRANULE;
    let mut tlsf = Tlsf::new();
    tlsf.add_chunk(0x100_0000, unit);
    let (a, _) = tlsf.allocate(5 * GRANULE).unwrap();
    // 3 granules free at the end: a request for 7 needs only one unit more, and spans the old end.
    assert!(tlsf.allocate(7 * GRANULE).is_none());
    assert!(!tlsf.extend_chunk(0x200_0000, unit), "no chunk starts there");
    assert_eq!(tlsf.free_tail(0x100_0000).map(|(chunk, tail)| (chunk.size, tail)), Some((unit, 3 * GRANULE)));
    assert_eq!(tlsf.free_head(0x100_0000), Some(0), "the chunk starts with the block in use");
    assert_eq!(tlsf.free_head(0x200_0000), None);
    assert!(tlsf.extend_chunk(0x100_0000, unit));
    let (b, _) = tlsf.allocate(7 * GRANULE).unwrap();
    assert_eq!(b, a + 5 * GRANULE, "the new block starts in the old free end");
    tlsf.check_invariants().unwrap();
    assert_eq!(tlsf.trim_free_tail(0x100_0000, unit), None, "4 granules free at the end: less than a unit");
    tlsf.free(b).unwrap();
    tlsf.flush_quick();
    assert_eq!(tlsf.trim_free_tail(0x100_0000, unit), Some((0x100_0000 + unit, unit)), "the page past the block in use");
    assert_eq!((tlsf.chunk_bytes(), tlsf.free_bytes()), (unit, 3 * GRANULE));
    assert_eq!(tlsf.peak_used_bytes(), 12 * GRANULE);
    tlsf.check_invariants().unwrap();
    tlsf.free(a).unwrap();
    assert_eq!(tlsf.free_head(0x100_0000), Some(unit), "the whole chunk is free from its start");
    assert_eq!(tlsf.trim_free_tail(0x100_0000, unit), None, "a wholly free chunk goes back whole");
    assert_eq!(tlsf.take_wholly_free_chunks().len(), 1);
}

/// A parked block is free: a chunk whose only block is parked has that block as its largest
/// free block (reports said 0 B free in one piece for a pool with nothing in use).
#[test]
fn a_parked_block_counts_as_free() {
    let mut tlsf = Tlsf::new();
    tlsf.set_parking(true);
    tlsf.add_chunk(0x100_0000, 3 * GRANULE);
    let (addr, _) = tlsf.allocate(3 * GRANULE).unwrap();
    tlsf.free(addr).unwrap();
    assert_eq!(tlsf.parked_blocks(), 1);
    assert_eq!(tlsf.largest_free_block(), 3 * GRANULE);
    assert_eq!(tlsf.free_bytes(), 3 * GRANULE);
}
