//! Free-block index for blocks of one size: chunks are cut into equal blocks kept on a LIFO
//! free list (the most recently freed block is the warmest). O(1) allocate and free.
//!
//! Each chunk keeps the bytes each block was handed out for (0 marks a free block), so a
//! free finds its block by arithmetic: the chunk holding the address (the last one used, or
//! a binary search over the chunks by base), then the offset divided by the block size. No
//! hash map is touched on either path.

use super::tlsf::{BlockView, Chunk, Freed, Refused};

/// A free block: its address, its chunk's slot and its index in the chunk.
#[derive(Debug, Clone, Copy)]
struct FreeBlock {
    addr: usize,
    slot: u32,
    index: u32,
}

#[derive(Debug, Clone)]
struct ChunkBlocks {
    base: usize,
    size: usize,
    blocks_in_use: usize,
    /// The bytes each block was handed out for, by block index; 0 for free blocks.
    requested: Vec<usize>,
}

/// A free-block index whose blocks all have one size (see the module comment): a block serves
/// any request up to that size, so nothing splits or coalesces.
pub struct FixedBlocks {
    block_size: usize,
    /// log2(block_size) when it is a power of two: a shift instead of a division.
    shift: Option<u32>,
    /// Most recently freed last.
    free: Vec<FreeBlock>,
    /// Chunks by slot (None: a slot whose chunk was taken away, reused by the next chunk).
    chunks: Vec<Option<ChunkBlocks>>,
    /// (base, slot) of every chunk, sorted by base.
    by_base: Vec<(usize, u32)>,
    /// The slot the last free found, tried first by the next one.
    recent: u32,
    used: usize,
    /// The most blocks in use at once.
    peak_used: usize,
    chunk_bytes: usize,
}

impl FixedBlocks {
    /// An index with no chunks, whose blocks will be `block_size` bytes.
    pub fn new(block_size: usize) -> Self {
        FixedBlocks {
            block_size,
            shift: block_size.is_power_of_two().then(|| block_size.trailing_zeros()),
            free: Vec::new(),
            chunks: Vec::new(),
            by_base: Vec::new(),
            recent: 0,
            used: 0,
            peak_used: 0,
            chunk_bytes: 0,
        }
    }

    /// Adds `[base, base + size)`, a chunk from upstream, cut into whole blocks (a remainder
    /// smaller than a block stays unused). The chunk must hold at least one block.
    pub fn add_chunk(&mut self, base: usize, size: usize) {
        let blocks = size / self.block_size;
        debug_assert!(blocks > 0 && blocks <= u32::MAX as usize);
        let chunk = ChunkBlocks { base, size, blocks_in_use: 0, requested: vec![0; blocks] };
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
        let at = self.by_base.partition_point(|&(b, _)| b < base);
        self.by_base.insert(at, (base, slot));
        self.chunk_bytes += size;
        self.free.extend((0..blocks).rev().map(|i| FreeBlock { addr: base + i * self.block_size, slot, index: i as u32 }));
    }

    /// (address, block size) of a free block, for a request of 1 to `block_size` bytes; None
    /// when none is free or the request is 0 or larger than a block.
    #[inline(always)]
    pub fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
        if bytes > self.block_size || bytes == 0 {
            return None;
        }
        let FreeBlock { addr, slot, index } = self.free.pop()?;
        let chunk = self.chunks[slot as usize].as_mut().expect("free blocks lie in live chunks");
        chunk.blocks_in_use += 1;
        chunk.requested[index as usize] = bytes;
        self.used += 1;
        self.peak_used = self.peak_used.max(self.used);
        Some((addr, self.block_size))
    }

    /// The chunk slot and block index of the block starting at `addr`, if one does. Tries the
    /// chunk the last free found first, and remembers the chunk it finds.
    #[inline(always)]
    fn locate(&mut self, addr: usize) -> Option<(u32, usize)> {
        let recent = self.chunks.get(self.recent as usize).and_then(Option::as_ref);
        let slot = match recent {
            Some(chunk) if addr.wrapping_sub(chunk.base) < chunk.size => self.recent,
            _ => {
                let slot = self.chunk_containing(addr)?;
                self.recent = slot;
                slot
            }
        };
        Some((slot, self.block_index(slot, addr)?))
    }

    /// The slot of the chunk that holds `addr`.
    #[cold]
    fn chunk_containing(&self, addr: usize) -> Option<u32> {
        let at = self.by_base.partition_point(|&(base, _)| base <= addr).checked_sub(1)?;
        let (base, slot) = self.by_base[at];
        let chunk = self.chunks[slot as usize].as_ref()?;
        (addr - base < chunk.size).then_some(slot)
    }

    /// The index of the block that starts at `addr` in the chunk of `slot`, if one does.
    #[inline(always)]
    fn block_index(&self, slot: u32, addr: usize) -> Option<usize> {
        let chunk = self.chunks[slot as usize].as_ref()?;
        let offset = addr - chunk.base;
        let index = match self.shift {
            Some(shift) => offset >> shift,
            None => offset / self.block_size,
        };
        (index * self.block_size == offset && index < chunk.requested.len()).then_some(index)
    }

    /// The block size when `addr` is the start of a used block; None otherwise.
    pub fn block_size(&self, addr: usize) -> Option<usize> {
        self.used_block(addr).map(|(size, _)| size)
    }

    /// The size of the used block at `addr` and the bytes it was handed out for.
    pub fn used_block(&self, addr: usize) -> Option<(usize, usize)> {
        let slot = self.chunk_containing(addr)?;
        let requested = self.chunks[slot as usize].as_ref()?.requested[self.block_index(slot, addr)?];
        (requested != 0).then_some((self.block_size, requested))
    }

    /// Every block of the chunk based at `base`, in address order.
    pub fn chunk_blocks(&self, base: usize) -> Vec<BlockView> {
        let Some(chunk) = self.chunks.iter().flatten().find(|chunk| chunk.base == base) else {
            return Vec::new();
        };
        (chunk.requested.iter().enumerate())
            .map(|(i, &requested)| BlockView {
                addr: base + i * self.block_size,
                size: self.block_size,
                requested: (requested != 0).then_some(requested),
            })
            .collect()
    }

    /// Blocks handed out and not yet freed.
    pub fn used_blocks(&self) -> usize {
        self.used
    }

    /// The most bytes in use at once (whole blocks).
    pub fn peak_used_bytes(&self) -> usize {
        self.peak_used * self.block_size
    }

    /// Frees the used block at `addr` whatever size it was handed out for: its size, or None
    /// (nothing changed) when `addr` is not the start of a used block.
    pub fn free(&mut self, addr: usize) -> Option<usize> {
        self.free_checked(addr, None).ok().map(|freed| freed.size)
    }

    /// As `Tlsf::free_checked`.
    #[inline(always)]
    pub fn free_checked(&mut self, addr: usize, bytes: Option<usize>) -> Result<Freed, Refused> {
        let Some((slot, index)) = self.locate(addr) else { return Err(Refused::NotLive) };
        let chunk = self.chunks[slot as usize].as_mut().expect("located in a live chunk");
        let requested = chunk.requested[index];
        if requested == 0 {
            return Err(Refused::NotLive);
        }
        if bytes.is_some_and(|bytes| bytes != requested) {
            return Err(Refused::WrongSize(requested));
        }
        chunk.requested[index] = 0;
        chunk.blocks_in_use -= 1;
        let chunk_now_free = chunk.blocks_in_use == 0;
        self.used -= 1;
        self.free.push(FreeBlock { addr, slot, index: index as u32 });
        Ok(Freed { size: self.block_size, chunk_now_free })
    }

    /// Removes the wholly free chunks `pick` accepts (given their size).
    fn remove_chunks(&mut self, mut pick: impl FnMut(usize) -> bool) -> Vec<Chunk> {
        let mut taken = Vec::new();
        for slot in &mut self.chunks {
            if slot.as_ref().is_some_and(|chunk| chunk.blocks_in_use == 0 && pick(chunk.size)) {
                let chunk = slot.take().expect("checked above");
                self.chunk_bytes -= chunk.size;
                taken.push(Chunk { base: chunk.base, size: chunk.size });
            }
        }
        if !taken.is_empty() {
            let chunks = &self.chunks;
            self.free.retain(|block| chunks[block.slot as usize].is_some());
            self.by_base.retain(|&(_, slot)| chunks[slot as usize].is_some());
        }
        taken
    }

    /// Removes every chunk with no block in use and returns them, for release upstream.
    pub fn take_wholly_free_chunks(&mut self) -> Vec<Chunk> {
        self.remove_chunks(|_| true)
    }

    /// Removes one chunk of at least `bytes` with no block in use (the first found, not the
    /// smallest), for another index to take.
    pub fn take_free_chunk(&mut self, bytes: usize) -> Option<Chunk> {
        let mut found = false;
        self.remove_chunks(|size| {
            let take = !found && size >= bytes;
            found |= take;
            take
        })
        .pop()
    }

    /// Bytes in free blocks.
    pub fn free_bytes(&self) -> usize {
        self.free.len() * self.block_size
    }

    /// Bytes of all chunks held, used and free (remainders smaller than a block included).
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    /// The block size when a block is free, else 0.
    pub fn largest_free_block(&self) -> usize {
        if self.free.is_empty() {
            0
        } else {
            self.block_size
        }
    }

    /// Checks that the free list, the chunks' records and the counters agree; the first
    /// inconsistency, in words. Tests call it after every operation.
    pub fn check_invariants(&self) -> Result<(), String> {
        let live = || self.chunks.iter().flatten();
        let capacity: usize = live().map(|chunk| chunk.requested.len()).sum();
        let leased: usize = live().map(|chunk| chunk.requested.iter().filter(|&&bytes| bytes != 0).count()).sum();
        let in_use: usize = live().map(|chunk| chunk.blocks_in_use).sum();
        if leased != in_use || in_use != self.used || self.free.len() + in_use != capacity {
            return Err(format!("{} free + {in_use} used ({leased} leased, {} counted) blocks != {capacity}", self.free.len(), self.used));
        }
        if live().map(|chunk| chunk.size).sum::<usize>() != self.chunk_bytes {
            return Err(format!("chunks hold other than the {} bytes counted", self.chunk_bytes));
        }
        if let Some(slot) = live().position(|chunk| chunk.blocks_in_use != chunk.requested.iter().filter(|&&bytes| bytes != 0).count()) {
            return Err(format!("the {slot}th live chunk miscounts its used blocks"));
        }
        let bases: Vec<usize> = self.by_base.iter().map(|&(base, _)| base).collect();
        let mut expected: Vec<usize> = live().map(|chunk| chunk.base).collect();
        expected.sort_unstable();
        if bases != expected || self.by_base.iter().any(|&(base, slot)| self.chunks[slot as usize].as_ref().is_none_or(|c| c.base != base))
        {
            return Err("the chunks by base disagree with the chunks".to_string());
        }
        let mut seen = std::collections::HashSet::new();
        for block in &self.free {
            let chunk = self
                .chunks
                .get(block.slot as usize)
                .and_then(Option::as_ref)
                .ok_or(format!("free block {:#x} names no live chunk", block.addr))?;
            let index = block.index as usize;
            if block.addr != chunk.base + index * self.block_size
                || index >= chunk.requested.len()
                || chunk.requested[index] != 0
                || !seen.insert(block.addr)
            {
                return Err(format!("free block {:#x} misplaced, used or listed twice", block.addr));
            }
        }
        Ok(())
    }
}
