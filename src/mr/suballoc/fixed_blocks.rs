//! Free-block index for blocks of one size: chunks are cut into equal blocks kept on a LIFO
//! free list (the most recently freed block is the warmest). O(1) allocate and free.

use super::tlsf::{AddressMap, BlockView, Chunk, Freed, Refused};
use crate::mr::via::{Lease, Via};
use std::collections::BTreeMap;

pub struct FixedBlocks {
    block_size: usize,
    /// Free blocks with the base of their chunk, most recently freed last.
    free: Vec<(usize, usize)>,
    /// Every block handed out, with the base of its chunk and what it was handed out for.
    used: AddressMap<(usize, Lease)>,
    /// Chunk base -> (size, blocks in use).
    chunks: BTreeMap<usize, (usize, usize)>,
    chunk_bytes: usize,
}

impl FixedBlocks {
    pub fn new(block_size: usize) -> Self {
        FixedBlocks { block_size, free: Vec::new(), used: AddressMap::default(), chunks: BTreeMap::new(), chunk_bytes: 0 }
    }

    pub fn add_chunk(&mut self, base: usize, size: usize) {
        let blocks = size / self.block_size;
        debug_assert!(blocks > 0);
        self.chunks.insert(base, (size, 0));
        self.chunk_bytes += size;
        self.free.extend((0..blocks).rev().map(|i| (base + i * self.block_size, base)));
    }

    pub fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
        self.allocate_leased(Lease::direct(bytes))
    }

    pub fn allocate_leased(&mut self, lease: Lease) -> Option<(usize, usize)> {
        if lease.requested > self.block_size {
            return None;
        }
        let (addr, base) = self.free.pop()?;
        self.chunks.get_mut(&base).expect("free blocks lie in chunks").1 += 1;
        self.used.insert(addr, (base, lease));
        Some((addr, self.block_size))
    }

    pub fn block_size(&self, addr: usize) -> Option<usize> {
        self.used.contains_key(&addr).then_some(self.block_size)
    }

    pub fn lease(&self, addr: usize) -> Option<(usize, Lease)> {
        self.used.get(&addr).map(|(_, lease)| (self.block_size, *lease))
    }

    /// Every block of the chunk based at `base`, in address order.
    pub fn chunk_blocks(&self, base: usize) -> Vec<BlockView> {
        let Some(&(size, _)) = self.chunks.get(&base) else { return Vec::new() };
        (base..base + size - self.block_size + 1)
            .step_by(self.block_size)
            .map(|addr| BlockView { addr, size: self.block_size, requested: self.used.get(&addr).map(|(_, lease)| lease.requested) })
            .collect()
    }

    /// Any request up to the block size takes a whole block.
    pub fn size_fits(&self, size: usize, bytes: usize) -> bool {
        bytes <= size
    }

    pub fn used_blocks(&self) -> usize {
        self.used.len()
    }

    pub fn free(&mut self, addr: usize) -> Option<usize> {
        self.free_checked(addr, None, None).ok().map(|freed| freed.size)
    }

    /// As `Tlsf::free_checked`.
    pub fn free_checked(&mut self, addr: usize, bytes: Option<usize>, via: Option<Via>) -> Result<Freed, Refused> {
        let std::collections::hash_map::Entry::Occupied(entry) = self.used.entry(addr) else {
            return Err(Refused::NotLive);
        };
        if bytes.is_some_and(|bytes| bytes > self.block_size) {
            return Err(Refused::WrongSize(self.block_size));
        }
        let lease = entry.get().1;
        if via.is_some_and(|via| via != lease.via) {
            return Err(Refused::OtherVia(lease.via));
        }
        let (base, _) = entry.remove();
        let in_use = &mut self.chunks.get_mut(&base).expect("used blocks lie in chunks").1;
        *in_use -= 1;
        let chunk_now_free = *in_use == 0;
        self.free.push((addr, base));
        Ok(Freed { size: self.block_size, chunk_now_free })
    }

    /// Removes the wholly free chunks `pick` accepts (given their size).
    fn remove_chunks(&mut self, mut pick: impl FnMut(usize) -> bool) -> Vec<Chunk> {
        let taken: BTreeMap<usize, usize> = self
            .chunks
            .iter()
            .filter(|(_, (size, in_use))| *in_use == 0 && pick(*size))
            .map(|(&base, &(size, _))| (base, size))
            .collect();
        for (base, size) in &taken {
            self.chunks.remove(base);
            self.chunk_bytes -= size;
        }
        if !taken.is_empty() {
            self.free.retain(|(_, base)| !taken.contains_key(base));
        }
        taken.into_iter().map(|(base, size)| Chunk { base, size }).collect()
    }

    pub fn take_wholly_free_chunks(&mut self) -> Vec<Chunk> {
        self.remove_chunks(|_| true)
    }

    pub fn take_free_chunk(&mut self, bytes: usize) -> Option<Chunk> {
        let mut found = false;
        self.remove_chunks(|size| {
            let take = !found && size >= bytes;
            found |= take;
            take
        })
        .pop()
    }

    pub fn free_bytes(&self) -> usize {
        self.free.len() * self.block_size
    }

    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    pub fn largest_free_block(&self) -> usize {
        if self.free.is_empty() { 0 } else { self.block_size }
    }

    pub fn check_invariants(&self) -> Result<(), String> {
        let capacity: usize = self.chunks.values().map(|(size, _)| size / self.block_size).sum();
        let in_use: usize = self.chunks.values().map(|(_, n)| n).sum();
        if in_use != self.used.len() || self.free.len() + in_use != capacity {
            return Err(format!("{} free + {in_use} used blocks != {capacity} ({} recorded used)", self.free.len(), self.used.len()));
        }
        let mut seen = std::collections::HashSet::new();
        for addr in self.free.iter().map(|(addr, _)| *addr).chain(self.used.keys().copied()) {
            let (&base, &(size, _)) = self.chunks.range(..=addr).next_back().ok_or("block outside chunks")?;
            if addr + self.block_size > base + size || (addr - base) % self.block_size != 0 || !seen.insert(addr) {
                return Err(format!("block {addr:#x} misplaced or listed twice"));
            }
        }
        Ok(())
    }
}
