//! Free-block index for blocks of one size: chunks are cut into equal blocks kept on a LIFO
//! free list (the most recently freed block is the warmest). O(1) allocate and free.

use super::tlsf::{AddressMap, BlockView, Chunk, Freed, Refused};
use crate::mr::via::{Lease, Via};

pub struct FixedBlocks {
    block_size: usize,
    /// Free blocks with their chunk's slot in `chunks`, most recently freed last.
    free: Vec<(usize, u32)>,
    /// Every block handed out, with its chunk's slot and what it was handed out for.
    used: AddressMap<(u32, Lease)>,
    /// Chunks by slot (None: a slot whose chunk was taken away, reused by the next chunk).
    chunks: Vec<Option<ChunkUse>>,
    chunk_bytes: usize,
}

#[derive(Debug, Clone, Copy)]
struct ChunkUse {
    base: usize,
    size: usize,
    blocks_in_use: usize,
}

impl FixedBlocks {
    pub fn new(block_size: usize) -> Self {
        FixedBlocks { block_size, free: Vec::new(), used: AddressMap::default(), chunks: Vec::new(), chunk_bytes: 0 }
    }

    pub fn add_chunk(&mut self, base: usize, size: usize) {
        let blocks = size / self.block_size;
        debug_assert!(blocks > 0);
        let chunk = ChunkUse { base, size, blocks_in_use: 0 };
        let slot = match self.chunks.iter().position(Option::is_none) {
            Some(slot) => {
                self.chunks[slot] = Some(chunk);
                slot
            }
            None => {
                self.chunks.push(Some(chunk));
                self.chunks.len() - 1
            }
        } as u32;
        self.chunk_bytes += size;
        self.free.extend((0..blocks).rev().map(|i| (base + i * self.block_size, slot)));
    }

    fn chunk_mut(&mut self, slot: u32) -> &mut ChunkUse {
        self.chunks[slot as usize].as_mut().expect("blocks lie in live chunks")
    }

    pub fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
        self.allocate_leased(Lease::direct(bytes))
    }

    #[inline(always)]
    pub fn allocate_leased(&mut self, lease: Lease) -> Option<(usize, usize)> {
        if lease.requested > self.block_size {
            return None;
        }
        let (addr, slot) = self.free.pop()?;
        self.chunk_mut(slot).blocks_in_use += 1;
        self.used.insert(addr, (slot, lease));
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
        let Some(size) = self.chunks.iter().flatten().find(|chunk| chunk.base == base).map(|chunk| chunk.size) else {
            return Vec::new();
        };
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
    #[inline(always)]
    pub fn free_checked(&mut self, addr: usize, bytes: Option<usize>, via: Option<Via>) -> Result<Freed, Refused> {
        let Some((entry, &(slot, lease))) = self.used.get_slot(&addr) else {
            return Err(Refused::NotLive);
        };
        if bytes.is_some_and(|bytes| bytes > self.block_size) {
            return Err(Refused::WrongSize(self.block_size));
        }
        if via.is_some_and(|via| via != lease.via) {
            return Err(Refused::OtherVia(lease.via));
        }
        self.used.remove_slot(entry);
        let chunk = self.chunk_mut(slot);
        chunk.blocks_in_use -= 1;
        let chunk_now_free = chunk.blocks_in_use == 0;
        self.free.push((addr, slot));
        Ok(Freed { size: self.block_size, chunk_now_free })
    }

    /// Removes the wholly free chunks `pick` accepts (given their size).
    fn remove_chunks(&mut self, mut pick: impl FnMut(usize) -> bool) -> Vec<Chunk> {
        let mut taken = Vec::new();
        for slot in &mut self.chunks {
            if let Some(chunk) = slot.filter(|chunk| chunk.blocks_in_use == 0 && pick(chunk.size)) {
                *slot = None;
                self.chunk_bytes -= chunk.size;
                taken.push(Chunk { base: chunk.base, size: chunk.size });
            }
        }
        if !taken.is_empty() {
            let chunks = &self.chunks;
            self.free.retain(|&(_, slot)| chunks[slot as usize].is_some());
        }
        taken
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
        let live = || self.chunks.iter().flatten();
        let capacity: usize = live().map(|chunk| chunk.size / self.block_size).sum();
        let in_use: usize = live().map(|chunk| chunk.blocks_in_use).sum();
        if in_use != self.used.len() || self.free.len() + in_use != capacity {
            return Err(format!("{} free + {in_use} used blocks != {capacity} ({} recorded used)", self.free.len(), self.used.len()));
        }
        if live().map(|chunk| chunk.size).sum::<usize>() != self.chunk_bytes {
            return Err(format!("chunks hold other than the {} bytes counted", self.chunk_bytes));
        }
        let mut counted = vec![0usize; self.chunks.len()];
        let mut seen = std::collections::HashSet::new();
        let blocks = self.free.iter().map(|&(addr, slot)| (addr, slot, false)).chain(self.used.iter().map(|(&addr, &(slot, _))| (addr, slot, true)));
        for (addr, slot, used) in blocks {
            let chunk = self.chunks.get(slot as usize).copied().flatten().ok_or(format!("block {addr:#x} names no live chunk"))?;
            if addr < chunk.base || addr + self.block_size > chunk.base + chunk.size || (addr - chunk.base) % self.block_size != 0 || !seen.insert(addr) {
                return Err(format!("block {addr:#x} misplaced or listed twice"));
            }
            counted[slot as usize] += used as usize;
        }
        if let Some(slot) = (0..self.chunks.len()).find(|&slot| self.chunks[slot].is_some_and(|chunk| chunk.blocks_in_use != counted[slot])) {
            return Err(format!("chunk slot {slot} counts other than its {} used blocks", counted[slot]));
        }
        Ok(())
    }
}
