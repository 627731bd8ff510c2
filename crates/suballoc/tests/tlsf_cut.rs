//! Cutting whole free pages out of chunks (`Tlsf::cut_free_pages`) and joining chunks that
//! meet again (`Tlsf::join_chunks`): the index stays consistent, live blocks are untouched,
//! and random sequences keep every byte of every chunk accounted for.

use rmm_suballoc::model::{Choices, Xorshift};
use rmm_suballoc::tlsf::{Chunk, Tlsf, GRANULE};

const PAGE: usize = 8 * GRANULE;
const BASE: usize = 0x100_0000;

#[test]
fn a_hole_in_the_middle_splits_its_chunk_around_its_whole_pages() {
    let mut tlsf = Tlsf::new();
    tlsf.add_chunk(BASE, 8 * PAGE);
    let first = tlsf.allocate(PAGE / 2).unwrap().0;
    let hole = tlsf.allocate(4 * PAGE).unwrap().0;
    let last = tlsf.allocate(PAGE).unwrap().0;
    tlsf.free(hole).unwrap();
    // Free: [BASE + PAGE/2, BASE + 4.5 PAGE) in the middle, and the chunk's end.
    let cuts = tlsf.cut_free_pages(PAGE, 2 * PAGE);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    let cut = cuts[0];
    assert_eq!((cut.start, cut.size, cut.chunk), (BASE + PAGE, 2 * PAGE, BASE), "middle first, just the budget");
    assert_eq!(cut.before, Some(Chunk { base: BASE, size: PAGE }));
    assert_eq!(cut.after, Some(Chunk { base: BASE + 3 * PAGE, size: 5 * PAGE }));
    tlsf.check_invariants().unwrap();
    assert_eq!(tlsf.chunk_bytes(), 6 * PAGE);
    assert_eq!(tlsf.used_block(first).map(|(size, _)| size), Some(PAGE / 2));
    assert_eq!(tlsf.used_block(last).map(|(size, _)| size), Some(PAGE));
    // The rest of the hole and the chunk's end come next; a partial page is never cut.
    let rest = tlsf.cut_free_pages(PAGE, usize::MAX);
    let pages: usize = rest.iter().map(|cut| cut.size).sum();
    assert_eq!(pages, PAGE + 2 * PAGE, "{rest:?}");
    tlsf.check_invariants().unwrap();
    assert_eq!(tlsf.free(first), Some(PAGE / 2));
    assert_eq!(tlsf.free(last), Some(PAGE));
    tlsf.check_invariants().unwrap();
}

#[test]
fn chunks_that_meet_again_are_joined_and_their_free_blocks_coalesce() {
    let mut tlsf = Tlsf::new();
    tlsf.add_chunk(BASE, 6 * PAGE);
    let first = tlsf.allocate(PAGE).unwrap().0;
    let hole = tlsf.allocate(2 * PAGE).unwrap().0;
    let last = tlsf.allocate(3 * PAGE).unwrap().0;
    tlsf.free(hole).unwrap();
    let cuts = tlsf.cut_free_pages(PAGE, PAGE);
    assert_eq!(cuts[0].start, BASE + PAGE);
    // Mapped back: the first part grows over the cut page and joins the second part.
    assert!(tlsf.extend_chunk(BASE, PAGE));
    assert!(tlsf.join_chunks(BASE, BASE + 2 * PAGE));
    tlsf.check_invariants().unwrap();
    assert_eq!(tlsf.chunk_bases(), vec![BASE]);
    assert_eq!(tlsf.largest_free_block(), 2 * PAGE, "the two free parts are one block again");
    assert!(!tlsf.join_chunks(BASE, BASE + 2 * PAGE), "nothing left to join");
    tlsf.free(first).unwrap();
    tlsf.free(last).unwrap();
    assert_eq!(tlsf.take_wholly_free_chunks(), vec![Chunk { base: BASE, size: 6 * PAGE }]);
}

#[test]
fn random_cuts_keep_the_index_consistent_and_live_blocks_in_place() {
    for seed in 1..=16u64 {
        let mut rng = Xorshift(seed * 0x9E37_79B9);
        let mut tlsf = Tlsf::new();
        tlsf.add_chunk(BASE, 64 * PAGE);
        let mut live: Vec<(usize, usize)> = Vec::new();
        let mut cut_bytes = 0;
        for _ in 0..600 {
            match rng.below(4) {
                0 | 1 => {
                    let bytes = 1 + rng.below(3 * PAGE as u64) as usize;
                    if let Some((addr, size)) = tlsf.allocate(bytes) {
                        live.push((addr, size));
                    }
                }
                2 if !live.is_empty() => {
                    let (addr, size) = live.swap_remove(rng.below(live.len() as u64) as usize);
                    assert_eq!(tlsf.free(addr), Some(size));
                }
                _ => {
                    let budget = rng.below(4) as usize * PAGE;
                    for cut in tlsf.cut_free_pages(PAGE, budget) {
                        assert!(cut.start.is_multiple_of(PAGE) && cut.size.is_multiple_of(PAGE) && cut.size > 0);
                        assert!(live.iter().all(|&(addr, size)| addr + size <= cut.start || addr >= cut.start + cut.size));
                        cut_bytes += cut.size;
                    }
                }
            }
            tlsf.check_invariants().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(tlsf.chunk_bytes() + cut_bytes, 64 * PAGE, "seed {seed}");
            for &(addr, size) in &live {
                assert_eq!(tlsf.used_block(addr).map(|(s, _)| s), Some(size), "seed {seed}");
            }
        }
    }
}
