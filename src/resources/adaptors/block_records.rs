//! What an adaptor keeps per block it hands out (the tracking adaptor's records, the aligned
//! adaptor's offsets), keyed by address: sharded by address window, as the ownership records
//! are, each shard on cache lines of its own behind a lock biased to the thread that uses it.
//! One thread records with plain loads and stores, and threads allocating on their own
//! streams, whose blocks come from chunks of their own, meet different shards.

use crate::sync::biased_lock::{BiasedGuard, BiasedLock};
use rmm_suballoc::address_map::{window_shard_of, AddressMap, RECORD_WINDOW_BITS};

/// Enough shards that eight threads seldom meet in one.
const SHARDS: usize = 64;

#[repr(align(128))]
struct Shard<V>(BiasedLock<AddressMap<V>>);

pub struct BlockRecords<V> {
    /// An array, not a slice: a shard's index needs no bounds check.
    shards: Box<[Shard<V>; SHARDS]>,
}

impl<V> BlockRecords<V> {
    pub fn new() -> Self {
        let shards: Box<[Shard<V>]> = (0..SHARDS).map(|_| Shard(BiasedLock::new(AddressMap::default()))).collect();
        BlockRecords { shards: shards.try_into().unwrap_or_else(|_| unreachable!("SHARDS shards")) }
    }

    /// The shard that holds `ptr`'s record, locked.
    #[inline(always)]
    pub fn lock(&self, ptr: usize) -> BiasedGuard<'_, AddressMap<V>> {
        self.shards[window_shard_of(ptr, RECORD_WINDOW_BITS, SHARDS)].0.lock()
    }

    /// Every shard, locked: what they hold together at one moment.
    pub fn lock_all(&self) -> Vec<BiasedGuard<'_, AddressMap<V>>> {
        self.shards.iter().map(|shard| shard.0.lock()).collect()
    }
}
