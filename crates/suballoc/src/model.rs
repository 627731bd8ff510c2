//! Each index against a shadow model, driven by a source of choices: the property tests feed
//! it a seeded generator, the fuzz targets (`fuzz/`) the fuzzer's bytes. Any disagreement with
//! the model, or a broken invariant, panics with the step at which it happened.

use crate::address_map::AddressMap;
use crate::fixed_blocks::FixedBlocks;
use crate::tlsf::{Refused, Tlsf, GRANULE};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

/// Where the checks get their choices from.
pub trait Choices {
    /// A number in 0..n (n > 0).
    fn below(&mut self, n: u64) -> u64;
    /// True when the source has nothing more to give: the check then cleans up and stops.
    fn exhausted(&self) -> bool;

    /// Log-uniform in [1, 2^max_log2].
    fn log_uniform(&mut self, max_log2: u32) -> usize {
        let bits = self.below(max_log2 as u64 + 1) as u32;
        1 + (self.below(1 << bits.min(62)) as usize & ((1usize << bits) - 1))
    }
}

/// xorshift64*: an endless, deterministic source for property tests.
pub struct Xorshift(pub u64);

impl Choices for Xorshift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }

    fn exhausted(&self) -> bool {
        false
    }
}

/// A fuzzer's input, read four bytes a choice.
pub struct Bytes<'a>(pub &'a [u8]);

impl Choices for Bytes<'_> {
    fn below(&mut self, n: u64) -> u64 {
        let take = self.0.len().min(4);
        let (head, rest) = self.0.split_at(take);
        self.0 = rest;
        head.iter().fold(0u64, |value, &byte| value << 8 | byte as u64) % n
    }

    fn exhausted(&self) -> bool {
        self.0.is_empty()
    }
}

/// The TLSF index: chunks added back to back (so adjacency across chunks occurs), allocations
/// of log-uniform sizes, frees (valid, double, wrong size, interior), chunk releases, parking on
/// or off. Checks placement, the largest free run, coalescing and every invariant.
pub fn check_tlsf(choices: &mut impl Choices, steps: usize) {
    let mut tlsf = Tlsf::new();
    if choices.below(2) == 0 {
        tlsf.set_parking(true);
    }
    let mut chunks: BTreeMap<usize, usize> = BTreeMap::new();
    // Live blocks: address -> (size, bytes asked for).
    let mut live: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let largest_free_run = |chunks: &BTreeMap<usize, usize>, live: &BTreeMap<usize, (usize, usize)>| {
        let mut largest = 0;
        for (&base, &size) in chunks {
            let mut cursor = base;
            for (&addr, &(len, _)) in live.range(base..base + size) {
                largest = largest.max(addr - cursor);
                cursor = addr + len;
            }
            largest = largest.max(base + size - cursor);
        }
        largest
    };
    let mut next_base = 1usize << 30;
    for step in 0..steps {
        if choices.exhausted() {
            break;
        }
        match choices.below(100) {
            0..=4 => {
                let size = (1 + choices.below(64) as usize) * 64 * GRANULE;
                tlsf.add_chunk(next_base, size);
                chunks.insert(next_base, size);
                next_base += size + if choices.below(2) == 0 { 0 } else { GRANULE };
            }
            5..=54 => {
                let bytes = choices.log_uniform(20);
                let need = bytes.div_ceil(GRANULE) * GRANULE;
                // A third of the requests ask for an alignment above the granule, served by
                // the index or, as the pool does where the index cannot, carved out of a block
                // allocated with the alignment as padding.
                let alignment = match choices.below(6) {
                    0 => GRANULE << (1 + choices.below(8)),
                    _ => GRANULE,
                };
                let (served, padding) = match (alignment > GRANULE, choices.below(2)) {
                    (false, _) => (tlsf.allocate(bytes), 0),
                    (true, 0) => (tlsf.allocate_aligned(bytes, alignment), alignment - GRANULE),
                    (true, _) => match tlsf.allocate(bytes + alignment - GRANULE) {
                        Some((padded, _)) => {
                            let aligned = tlsf.carve_aligned(padded, bytes, alignment).expect("a padded block holds an aligned one");
                            assert!(aligned >= padded && aligned < padded + alignment, "step {step}: carved outside the block");
                            (Some((aligned, need)), alignment - GRANULE)
                        }
                        None => (None, alignment - GRANULE),
                    },
                };
                match served {
                    Some((addr, size)) => {
                        assert_eq!(size, need, "step {step}: sizes are rounded to the granule");
                        assert_eq!(addr % alignment, 0, "step {step}: alignment");
                        let (&base, &chunk) = chunks.range(..=addr).next_back().expect("inside a chunk");
                        assert!(addr + size <= base + chunk, "step {step}: block crosses its chunk's end");
                        if let Some((&a, &(s, _))) = live.range(..addr + size).next_back() {
                            assert!(a + s <= addr, "step {step}: overlaps a live block at {a:#x}");
                        }
                        assert_eq!(tlsf.used_block(addr), Some((size, bytes)), "step {step}");
                        live.insert(addr, (size, bytes));
                    }
                    None => assert!(
                        largest_free_run(&chunks, &live) < need + padding,
                        "step {step}: refused {need} bytes aligned to {alignment} though a run fits them"
                    ),
                }
            }
            55..=97 => {
                if live.is_empty() {
                    continue;
                }
                let nth = choices.below(live.len() as u64) as usize;
                let (&addr, &(size, bytes)) = live.iter().nth(nth).expect("nth < len");
                if size > GRANULE {
                    assert_eq!(tlsf.free_checked(addr + GRANULE, None), Err(Refused::NotLive), "step {step}: an interior pointer");
                }
                assert_eq!(tlsf.free_checked(addr, Some(bytes + 1)), Err(Refused::WrongSize(bytes)), "step {step}: a wrong size");
                assert_eq!(tlsf.free_checked(addr, Some(bytes)).map(|freed| freed.size), Ok(size), "step {step}");
                assert_eq!(tlsf.free(addr), None, "step {step}: a double free is refused");
                live.remove(&addr);
            }
            98 => {
                for chunk in tlsf.take_wholly_free_chunks() {
                    assert!(live.range(chunk.base..chunk.base + chunk.size).next().is_none(), "step {step}: released a chunk in use");
                    assert_eq!(chunks.remove(&chunk.base), Some(chunk.size), "step {step}");
                }
            }
            _ => {
                // Growing the highest chunk in place, or cutting the free end of any chunk
                // back to whole units (what mapped memory does).
                let unit = 4 * GRANULE;
                if choices.below(2) == 0 {
                    let Some((&base, &size)) = chunks.iter().next_back() else { continue };
                    let extra = (1 + choices.below(16) as usize) * unit;
                    assert!(tlsf.extend_chunk(base, extra), "step {step}: extending a live chunk");
                    chunks.insert(base, size + extra);
                    next_base = next_base.max(base + size + extra);
                } else {
                    if chunks.is_empty() {
                        continue;
                    }
                    let nth = choices.below(chunks.len() as u64) as usize;
                    let (&base, &size) = chunks.iter().nth(nth).expect("nth < len");
                    if let Some((start, cut)) = tlsf.trim_free_tail(base, unit) {
                        assert_eq!(start + cut, base + size, "step {step}: a cut ends where the chunk did");
                        assert!(start > base && start % unit == 0 && cut % unit == 0, "step {step}: cut {start:#x} +{cut}");
                        assert!(live.range(start..start + cut).next().is_none(), "step {step}: cut a block in use");
                        chunks.insert(base, size - cut);
                    }
                }
            }
        }
        tlsf.check_invariants().unwrap_or_else(|e| panic!("step {step}: {e}"));
        let live_bytes: usize = live.values().map(|(size, _)| size).sum();
        assert_eq!(tlsf.free_bytes() + live_bytes, tlsf.chunk_bytes(), "step {step}");
        assert!(tlsf.peak_used_bytes() >= live_bytes, "step {step}: the peak is below what is in use");
        assert_eq!(tlsf.largest_free_block(), largest_free_run(&chunks, &live), "step {step}: parked blocks count as free");
        if step % 16 == 0 {
            tlsf.flush_quick();
            tlsf.check_invariants().unwrap_or_else(|e| panic!("step {step}, flushed: {e}"));
            assert_eq!(tlsf.largest_free_block(), largest_free_run(&chunks, &live), "step {step}: coalesced once flushed");
        }
    }
    for (addr, (size, _)) in std::mem::take(&mut live) {
        assert_eq!(tlsf.free(addr), Some(size));
    }
    tlsf.check_invariants().unwrap_or_else(|e| panic!("at the end: {e}"));
    let released: usize = tlsf.take_wholly_free_chunks().iter().map(|c| c.size).sum();
    assert_eq!(released, chunks.values().sum::<usize>(), "every byte comes back when all is freed");
    assert_eq!((tlsf.chunk_bytes(), tlsf.free_bytes(), tlsf.used_blocks()), (0, 0, 0));
}

/// The fixed-size block index: chunks added out of address order, allocations, frees (valid,
/// double, interior, foreign, of a wrong size) and chunk releases.
pub fn check_fixed_blocks(choices: &mut impl Choices, block_size: usize, steps: usize) {
    let mut index = FixedBlocks::new(block_size);
    let mut chunks: BTreeMap<usize, usize> = BTreeMap::new();
    // Live blocks: address -> bytes asked for.
    let mut live: BTreeMap<usize, usize> = BTreeMap::new();
    for step in 0..steps {
        if choices.exhausted() {
            break;
        }
        match choices.below(100) {
            0..=3 => {
                let blocks = 1 + choices.below(8) as usize;
                let base = chunk_base(choices);
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
                let requested = 1 + choices.below(block_size as u64) as usize;
                match index.allocate(requested) {
                    Some((addr, size)) => {
                        assert_eq!(size, block_size, "step {step}");
                        let (&base, &chunk) = chunks.range(..=addr).next_back().expect("inside a chunk");
                        assert!(addr + size <= base + chunk && (addr - base) % block_size == 0, "step {step}: misplaced block");
                        assert!(live.insert(addr, requested).is_none(), "step {step}: {addr:#x} handed out twice");
                        assert_eq!(index.used_block(addr), Some((block_size, requested)), "step {step}");
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
                let nth = choices.below(live.len() as u64) as usize;
                let (&addr, &requested) = live.iter().nth(nth).expect("nth < len");
                if block_size > GRANULE {
                    assert_eq!(index.free_checked(addr + GRANULE, None), Err(Refused::NotLive), "step {step}: an interior pointer");
                }
                for wrong in [requested - 1, requested + 1, block_size + 1] {
                    if wrong != requested && wrong > 0 {
                        assert_eq!(index.free_checked(addr, Some(wrong)), Err(Refused::WrongSize(requested)), "step {step}: a wrong size");
                    }
                }
                let freed = index.free_checked(addr, Some(requested)).expect("a live block frees");
                assert_eq!(freed.size, block_size, "step {step}");
                assert_eq!(index.free_checked(addr, None), Err(Refused::NotLive), "step {step}: a double free");
                live.remove(&addr);
                let (&base, &size) = chunks.range(..=addr).next_back().expect("inside a chunk");
                assert_eq!(freed.chunk_now_free, !live.keys().any(|&a| a >= base && a < base + size), "step {step}");
            }
            91..=94 => {
                let foreign = chunk_base(choices) + 3 * GRANULE;
                if !live.contains_key(&foreign) {
                    assert_eq!(index.free_checked(foreign, None), Err(Refused::NotLive), "step {step}: a foreign pointer");
                }
            }
            _ => {
                for chunk in index.take_wholly_free_chunks() {
                    assert!(!live.keys().any(|&a| a >= chunk.base && a < chunk.base + chunk.size), "step {step}: released a chunk in use");
                    assert_eq!(chunks.remove(&chunk.base), Some(chunk.size), "step {step}");
                }
            }
        }
        index.check_invariants().unwrap_or_else(|e| panic!("step {step}: {e}"));
        assert_eq!(index.used_blocks(), live.len(), "step {step}");
    }
}

/// A chunk base drawn from a wide range, so chunks arrive in no particular address order.
fn chunk_base(choices: &mut impl Choices) -> usize {
    (1usize << 36) + (choices.below(1 << 20) as usize) * (1 << 16)
}

/// The address map against std's `HashMap` (insert, try_insert, get, get_mut, remove, and
/// removal by slot), with keys crowded into a spread the source picks (few keys: probes wrap
/// around and removals shift long runs).
pub fn check_address_map(choices: &mut impl Choices, steps: usize) {
    let spread = [8u64, 64, 1 << 20][choices.below(3) as usize];
    let mut map = AddressMap::default();
    let mut model = HashMap::new();
    for step in 0..steps as u64 {
        if choices.exhausted() {
            break;
        }
        let key = (choices.below(spread) as usize + 1) << 8;
        match choices.below(10) {
            0..=1 => assert_eq!(map.insert(key, step), model.insert(key, step), "step {step}"),
            2 => {
                let expected = match model.entry(key) {
                    Entry::Occupied(_) => Err(step),
                    Entry::Vacant(vacant) => {
                        vacant.insert(step);
                        Ok(())
                    }
                };
                assert_eq!(map.try_insert(key, step), expected, "step {step}");
                assert_eq!(map.get(&key), model.get(&key), "step {step}: the first value stays");
            }
            3..=4 => assert_eq!(map.remove(&key), model.remove(&key), "step {step}"),
            5 => {
                let found = map.get_slot(&key).map(|(slot, &value)| (slot, value));
                assert_eq!(found.map(|(_, value)| value), model.remove(&key), "step {step}");
                if let Some((slot, value)) = found {
                    assert_eq!(map.remove_slot(slot), value, "step {step}");
                }
            }
            6 => {
                let changed = map.get_mut(&key).map(|value| *value = step).is_some();
                assert_eq!(changed, model.get_mut(&key).map(|value| *value = step).is_some(), "step {step}");
            }
            _ => assert_eq!(map.get(&key), model.get(&key), "step {step}"),
        }
        assert_eq!(map.len(), model.len(), "step {step}");
    }
    for (key, value) in &model {
        assert_eq!(map.get(key), Some(value));
    }
    assert_eq!(map.iter().count(), model.len());
}
