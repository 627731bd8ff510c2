//! A hash map keyed by device addresses, for the lookups every free makes. Addresses handed
//! out are 256-byte aligned and unique, so a multiply-shift of the address spreads them well,
//! and open addressing with linear probing finds a key in the first slot it looks at almost
//! always. Removal shifts the entries after it back (no tombstones), so lookups never slow
//! down as blocks come and go. The table stays at most half full.

/// Never a key: addresses handed out are aligned.
const EMPTY: usize = usize::MAX;
const MIN_CAPACITY: usize = 16;

/// The hash of a 256-byte aligned address: the aligned low bits dropped, then a Fibonacci
/// multiply so that the top bits (which pick a slot) depend on every remaining bit.
pub fn address_hash(address: usize) -> u64 {
    ((address as u64) >> 8).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Which of `shards` (a power of two up to 2^24) holds `address`, for maps sharded by
/// address. It takes bits of the hash below the ones a map of up to 2^32 slots uses for the
/// home slot: shards chosen by those same bits would crowd every key of a shard into a
/// fraction of its table.
#[inline]
pub fn shard_of(address: usize, shards: usize) -> usize {
    debug_assert!(shards.is_power_of_two() && shards <= 1 << 24);
    (address_hash(address) >> 8) as usize & (shards - 1)
}

/// Which of `shards` (a power of two) holds `address` when every address in one aligned
/// window of `2^window_bits` bytes shares a shard. A stream's or a thread's blocks come from
/// chunks of its own (an arena's from a thread's own superblocks), so threads that allocate on
/// their own streams or lanes meet different shards, and a shard's lock can stay biased to one
/// thread; sharding by every address would have all threads take every shard. Consecutive
/// windows go to consecutive shards (not hashed): chunks a device hands out side by side never
/// share a shard, where a hash would put some of them together for the program's whole run.
#[inline]
pub fn window_shard_of(address: usize, window_bits: u32, shards: usize) -> usize {
    debug_assert!(shards.is_power_of_two());
    (address >> window_bits) & (shards - 1)
}

/// The address window whose blocks share a shard in the maps kept per block handed out
/// (`window_shard_of`): 2 MiB, the granularity and alignment of the chunks pools take from a
/// device, so that no window holds two chunks, which two threads' lanes may own.
pub const RECORD_WINDOW_BITS: u32 = 21;

/// Where an entry lies, from `get_slot`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot(usize);

/// A map from addresses (aligned and never `usize::MAX`) to `V` (see the module comment).
#[derive(Clone)]
pub struct AddressMap<V> {
    /// (key, value); EMPTY keys mark free slots (their value is None).
    slots: Vec<(usize, Option<V>)>,
    len: usize,
    /// 64 - log2(slots.len()): the hash's top bits pick the home slot.
    shift: u32,
}

impl<V> Default for AddressMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> AddressMap<V> {
    /// An empty map; it allocates nothing until the first insertion.
    pub const fn new() -> Self {
        AddressMap { slots: Vec::new(), len: 0, shift: 64 }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, key: usize) -> usize {
        (address_hash(key) >> self.shift) as usize
    }

    /// The slot holding `key` and its value, if any. The value comes from the same look at the
    /// slot as the key: indexing the slot again costs a free through the pointer records a
    /// measurable few instructions (a second bounds check and a reload).
    #[inline(always)]
    fn find(&self, key: usize) -> Option<(usize, &V)> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            match &self.slots[at] {
                (k, value) if *k == key => return value.as_ref().map(|value| (at, value)),
                (EMPTY, _) => return None,
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// The value stored for `key`.
    #[inline]
    pub fn get(&self, key: &usize) -> Option<&V> {
        self.find(*key).map(|(_, value)| value)
    }

    /// Whether `key` has an entry.
    #[inline]
    pub fn contains_key(&self, key: &usize) -> bool {
        self.find(*key).is_some()
    }

    /// Inserts or replaces; returns the value replaced.
    #[inline(always)]
    pub fn insert(&mut self, key: usize, value: V) -> Option<V> {
        match self.probe_for(key) {
            Ok(vacant) => {
                self.fill(vacant, key, value);
                None
            }
            Err(occupied) => self.slots[occupied].1.replace(value),
        }
    }

    /// Inserts unless `key` is present; then changes nothing and gives `value` back. For
    /// records where a second entry under one key is an error to report, and the first entry
    /// must survive it.
    #[inline(always)]
    pub fn try_insert(&mut self, key: usize, value: V) -> Result<(), V> {
        match self.probe_for(key) {
            Ok(vacant) => {
                self.fill(vacant, key, value);
                Ok(())
            }
            Err(_) => Err(value),
        }
    }

    /// Grows the table if one more entry would make it more than half full, then looks for
    /// `key`: Ok(the vacant slot it would go into) or Err(the slot that holds it).
    #[inline(always)]
    fn probe_for(&mut self, key: usize) -> Result<usize, usize> {
        debug_assert!(key != EMPTY, "{key:#x} cannot be a key");
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            match self.slots[at].0 {
                EMPTY => return Ok(at),
                k if k == key => return Err(at),
                _ => at = (at + 1) & mask,
            }
        }
    }

    #[inline(always)]
    fn fill(&mut self, vacant: usize, key: usize, value: V) {
        self.slots[vacant] = (key, Some(value));
        self.len += 1;
    }

    /// The value of `key`, to change in place.
    #[inline]
    pub fn get_mut(&mut self, key: &usize) -> Option<&mut V> {
        let (at, _) = self.find(*key)?;
        self.slots[at].1.as_mut()
    }

    /// The slot of `key` and its value, to look at before removing it with `remove_slot`.
    #[inline(always)]
    pub fn get_slot(&self, key: &usize) -> Option<(Slot, &V)> {
        self.find(*key).map(|(at, value)| (Slot(at), value))
    }

    /// Removes the entry `get_slot` found (the map must not have changed since).
    #[inline(always)]
    pub fn remove_slot(&mut self, slot: Slot) -> V {
        self.remove_at(slot.0)
    }

    /// Removes `key`'s entry and returns its value; None (nothing changed) when there is none.
    #[inline]
    pub fn remove(&mut self, key: &usize) -> Option<V> {
        let (at, _) = self.find(*key)?;
        Some(self.remove_at(at))
    }

    /// Empties slot `at` and moves back the entries after it that would otherwise no longer be
    /// found from their home slot. Always inlined: a call costs a free through the pointer
    /// records more than the loop itself (the value returned through memory, the registers
    /// saved), and most callers drop the value, which inlined needs no copy.
    #[inline(always)]
    fn remove_at(&mut self, mut at: usize) -> V {
        let mask = self.slots.len() - 1;
        let value = std::mem::replace(&mut self.slots[at], (EMPTY, None)).1.expect("occupied slots hold values");
        self.len -= 1;
        let mut next = (at + 1) & mask;
        while self.slots[next].0 != EMPTY {
            let home = self.home(self.slots[next].0);
            // Move the entry at `next` into the hole unless its home lies cyclically in (at, next].
            let stays = if at <= next { at < home && home <= next } else { at < home || home <= next };
            if !stays {
                self.slots.swap(at, next);
                at = next;
            }
            next = (next + 1) & mask;
        }
        value
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let capacity = (self.slots.len() * 2).max(MIN_CAPACITY);
        let old = std::mem::replace(&mut self.slots, (0..capacity).map(|_| (EMPTY, None)).collect());
        self.shift = 64 - capacity.trailing_zeros();
        let mask = capacity - 1;
        for (key, value) in old {
            if value.is_some() {
                let mut at = self.home(key);
                while self.slots[at].0 != EMPTY {
                    at = (at + 1) & mask;
                }
                self.slots[at] = (key, value);
            }
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&usize, &V)> {
        self.slots.iter().filter_map(|(key, value)| value.as_ref().map(|value| (key, value)))
    }

    /// Every value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::{window_shard_of, AddressMap, RECORD_WINDOW_BITS};
    use crate::model::{check_address_map, Xorshift};

    /// Against std's map (`model::check_address_map`), keys crowded into few home slots or
    /// spread wide.
    /// Chunks a device hands out side by side (2 MiB aligned, as pools take them) never share
    /// a shard, and every block of one shares its chunk's.
    #[test]
    fn neighbouring_chunks_get_shards_of_their_own() {
        let (window, shards) = (1usize << RECORD_WINDOW_BITS, 1024);
        let base = 0x7f12_3400_0000;
        let of = |chunk: usize, offset: usize| window_shard_of(base + chunk * window + offset, RECORD_WINDOW_BITS, shards);
        let mut seen = std::collections::HashSet::new();
        for chunk in 0..shards {
            assert!(seen.insert(of(chunk, 0)), "chunk {chunk} shares a shard with an earlier neighbour");
            assert_eq!(of(chunk, window - 256), of(chunk, 0));
        }
    }

    #[test]
    fn behaves_as_a_hash_map() {
        for seed in 1..=12 {
            check_address_map(&mut Xorshift(seed), 20_000);
        }
    }

    /// A second `try_insert` of a key is refused and leaves the first value, also when the
    /// table is about to grow (the refusal may grow it, but must not lose or move the key).
    #[test]
    fn try_insert_keeps_the_first_value() {
        let mut map = AddressMap::new();
        for key in 1..=8usize {
            assert_eq!(map.try_insert(key << 8, key), Ok(()));
        }
        assert_eq!(map.len(), 8);
        assert_eq!(map.try_insert(3 << 8, 30), Err(30));
        assert_eq!(map.try_insert(8 << 8, 80), Err(80));
        assert_eq!(map.len(), 8);
        assert_eq!(map.get(&(3 << 8)), Some(&3));
        assert_eq!(map.get(&(8 << 8)), Some(&8));
        assert_eq!(map.remove(&(3 << 8)), Some(3));
        assert_eq!(map.try_insert(3 << 8, 30), Ok(()));
        assert_eq!(map.get(&(3 << 8)), Some(&30));
    }

    /// `get_mut` changes the value where it lies: a later lookup, `get_slot` and removal see
    /// the change, and an absent key gives None.
    #[test]
    fn get_mut_changes_in_place() {
        let mut map = AddressMap::new();
        map.insert(0x1000, 'a');
        map.insert(0x2000, 'b');
        *map.get_mut(&0x1000).unwrap() = 'c';
        assert_eq!(map.get_mut(&0x3000), None);
        assert_eq!(map.get_slot(&0x1000).map(|(_, &value)| value), Some('c'));
        assert_eq!(map.remove(&0x1000), Some('c'));
        assert_eq!(map.get_mut(&0x1000), None);
        assert_eq!(map.len(), 1);
    }
}
