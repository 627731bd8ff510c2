//! A two-level segregated-fit (TLSF) free-block index over address ranges, with all metadata
//! on the host (out of band): the host cannot write into device memory. Allocation and free
//! are O(1): bitmaps find a non-empty size class, and physical neighbour links coalesce a freed
//! block with adjacent free blocks. Blocks never coalesce across chunks (separate upstream
//! allocations), because two chunks that happen to be adjacent are still freed separately.


/// Granularity and alignment of every block.
pub const GRANULE: usize = 256;
const GRANULE_SHIFT: u32 = 8;
const SL_BITS: u32 = 4;
const SL_COUNT: usize = 1 << SL_BITS;
const FL_COUNT: usize = 64;
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Block {
    addr: usize,
    size: usize,
    chunk: u32,
    free: bool,
    /// Freed, but parked on a quick list instead of being coalesced.
    cached: bool,
    prev_phys: u32,
    next_phys: u32,
    prev_free: u32,
    next_free: u32,
    /// For used blocks: what the block was handed out for.
    lease: Lease,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    pub base: usize,
    pub size: usize,
}

pub use crate::address_map::AddressMap;
use crate::mr::via::{Lease, Via};

/// Why a free was refused (the block stays allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a used block here: never handed out, or already freed.
    NotLive,
    /// A block handed out for another size; the size it was handed out for.
    WrongSize(usize),
    /// A block allocated through another (outer) resource.
    OtherVia(Via),
}

/// A block, for snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockView {
    pub addr: usize,
    pub size: usize,
    /// None for free blocks; the bytes asked for, for used ones.
    pub requested: Option<usize>,
}

/// A freed block's size, and whether the free left its whole chunk free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freed {
    pub size: usize,
    pub chunk_now_free: bool,
}

pub struct Tlsf {
    blocks: Vec<Block>,
    spare_blocks: Vec<u32>,
    heads: Vec<[u32; SL_COUNT]>,
    fl_bitmap: u64,
    sl_bitmaps: [u32; FL_COUNT],
    used: AddressMap<u32>,
    chunks: Vec<Option<Chunk>>,
    /// The block that starts each chunk, to find wholly free chunks.
    chunk_first_block: Vec<u32>,
    free_bytes: usize,
    chunk_bytes: usize,
    /// Recently freed blocks (up to `QUICK_MAX` bytes each), reused as they are when the same
    /// size is asked for again: an allocate/free pair of one size then neither splits nor
    /// coalesces. Bounded, and flushed into the index whenever it cannot serve.
    parked: Vec<u32>,
    quick_bytes: usize,
    parking: bool,
}

/// Blocks up to this size may be parked...
const QUICK_MAX: usize = 4 << 20;
/// ...at most this many...
const QUICK_DEPTH: usize = 8;
/// ...and this many bytes in all: parked blocks do not coalesce, so more would fragment.
const QUICK_BUDGET: usize = 8 << 20;

/// Size class of a block of `units` granules.
fn class_of(units: usize) -> (usize, usize) {
    if units < SL_COUNT {
        return (0, units);
    }
    let top = usize::BITS - 1 - units.leading_zeros();
    let fl = (top - SL_BITS + 1) as usize;
    let sl = (units >> (top - SL_BITS)) & (SL_COUNT - 1);
    (fl, sl)
}

/// The first class whose every block holds `units` granules.
fn class_for_request(units: usize) -> (usize, usize) {
    if units < SL_COUNT {
        return (0, units);
    }
    let top = usize::BITS - 1 - units.leading_zeros();
    let rounded = units + (1usize << (top - SL_BITS)) - 1;
    class_of(rounded)
}

/// Rounds a byte count up to whole granules; None when it overflows.
pub fn granules(bytes: usize) -> Option<usize> {
    bytes.checked_add(GRANULE - 1).map(|b| b >> GRANULE_SHIFT)
}

impl Default for Tlsf {
    fn default() -> Self {
        Self::new()
    }
}

impl Tlsf {
    pub fn new() -> Self {
        Tlsf {
            blocks: Vec::new(),
            spare_blocks: Vec::new(),
            heads: vec![[NONE; SL_COUNT]; FL_COUNT],
            fl_bitmap: 0,
            sl_bitmaps: [0; FL_COUNT],
            used: AddressMap::default(),
            chunks: Vec::new(),
            chunk_first_block: Vec::new(),
            free_bytes: 0,
            chunk_bytes: 0,
            parked: Vec::with_capacity(QUICK_DEPTH),
            quick_bytes: 0,
            parking: false,
        }
    }

    /// Free bytes, parked blocks included.
    pub fn free_bytes(&self) -> usize {
        self.free_bytes + self.quick_bytes
    }

    /// Bytes of all chunks held.
    pub fn chunk_bytes(&self) -> usize {
        self.chunk_bytes
    }

    pub fn used_blocks(&self) -> usize {
        self.used.len() - self.parked.len()
    }

    /// The size of the used block at `addr`.
    pub fn block_size(&self, addr: usize) -> Option<usize> {
        let block = &self.blocks[*self.used.get(&addr)? as usize];
        (!block.cached).then_some(block.size)
    }


    /// Size of the largest free block in the index (0 if none); parked blocks are not counted.
    pub fn largest_free_block(&self) -> usize {
        if self.fl_bitmap == 0 {
            return 0;
        }
        let fl = (u64::BITS - 1 - self.fl_bitmap.leading_zeros()) as usize;
        let sl = (u32::BITS - 1 - self.sl_bitmaps[fl].leading_zeros()) as usize;
        let mut largest = 0;
        let mut at = self.heads[fl][sl];
        while at != NONE {
            largest = largest.max(self.blocks[at as usize].size);
            at = self.blocks[at as usize].next_free;
        }
        largest
    }

    fn new_block(&mut self, block: Block) -> u32 {
        match self.spare_blocks.pop() {
            Some(index) => {
                self.blocks[index as usize] = block;
                index
            }
            None => {
                self.blocks.push(block);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    fn link_free(&mut self, index: u32) {
        let (fl, sl) = class_of(self.blocks[index as usize].size >> GRANULE_SHIFT);
        let head = self.heads[fl][sl];
        {
            let block = &mut self.blocks[index as usize];
            block.free = true;
            block.prev_free = NONE;
            block.next_free = head;
        }
        if head != NONE {
            self.blocks[head as usize].prev_free = index;
        }
        self.heads[fl][sl] = index;
        self.fl_bitmap |= 1 << fl;
        self.sl_bitmaps[fl] |= 1 << sl;
        self.free_bytes += self.blocks[index as usize].size;
    }

    fn unlink_free(&mut self, index: u32) {
        let Block { size, prev_free, next_free, .. } = self.blocks[index as usize];
        let (fl, sl) = class_of(size >> GRANULE_SHIFT);
        if prev_free != NONE {
            self.blocks[prev_free as usize].next_free = next_free;
        } else {
            self.heads[fl][sl] = next_free;
            if next_free == NONE {
                self.sl_bitmaps[fl] &= !(1 << sl);
                if self.sl_bitmaps[fl] == 0 {
                    self.fl_bitmap &= !(1 << fl);
                }
            }
        }
        if next_free != NONE {
            self.blocks[next_free as usize].prev_free = prev_free;
        }
        self.blocks[index as usize].free = false;
        self.free_bytes -= size;
    }

    /// Adds `[base, base+size)` (GRANULE-aligned) as one free block of a new chunk.
    pub fn add_chunk(&mut self, base: usize, size: usize) {
        debug_assert!(base.is_multiple_of(GRANULE) && size.is_multiple_of(GRANULE) && size > 0);
        let chunk = match self.chunks.iter().position(Option::is_none) {
            Some(slot) => slot,
            None => {
                self.chunks.push(None);
                self.chunk_first_block.push(NONE);
                self.chunks.len() - 1
            }
        };
        let index = self.new_block(Block {
            addr: base,
            size,
            chunk: chunk as u32,
            free: false,
            cached: false,
            prev_phys: NONE,
            next_phys: NONE,
            prev_free: NONE,
            next_free: NONE,
            lease: Lease::direct(0),
        });
        self.chunks[chunk] = Some(Chunk { base, size });
        self.chunk_first_block[chunk] = index;
        self.chunk_bytes += size;
        self.link_free(index);
    }

    fn find_free(&self, units: usize) -> Option<u32> {
        self.find_free_in_own_class(units, 16)
            .or_else(|| self.find_free_in_larger_class(units))
            .or_else(|| self.find_free_in_own_class(units, usize::MAX))
    }

    /// O(1): the head of the first class whose every block fits.
    fn find_free_in_larger_class(&self, units: usize) -> Option<u32> {
        let (fl, sl) = class_for_request(units);
        if fl >= FL_COUNT {
            return None;
        }
        let in_class = self.sl_bitmaps[fl] & (u32::MAX << sl);
        let (fl, sl) = if in_class != 0 {
            (fl, in_class.trailing_zeros() as usize)
        } else {
            let above = if fl + 1 >= FL_COUNT { 0 } else { self.fl_bitmap & (u64::MAX << (fl + 1)) };
            if above == 0 {
                return None;
            }
            let fl = above.trailing_zeros() as usize;
            (fl, self.sl_bitmaps[fl].trailing_zeros() as usize)
        };
        // Every block here fits; the smallest of the first few splits off the least.
        let mut at = self.heads[fl][sl];
        let mut best = at;
        for _ in 0..8 {
            at = self.blocks[at as usize].next_free;
            if at == NONE {
                break;
            }
            if self.blocks[at as usize].size < self.blocks[best as usize].size {
                best = at;
            }
        }
        Some(best)
    }

    /// The best fit among the first few blocks of the request's own class: splitting a block
    /// of nearly the right size, rather than the head of a larger class, keeps large free
    /// blocks whole and the footprint down. The scan is bounded on the fast path.
    fn find_free_in_own_class(&self, units: usize, scan: usize) -> Option<u32> {
        let need = units << GRANULE_SHIFT;
        let (fl, sl) = class_of(units);
        let mut at = *self.heads.get(fl)?.get(sl)?;
        let mut best: Option<(usize, u32)> = None;
        for _ in 0..scan {
            if at == NONE {
                break;
            }
            let size = self.blocks[at as usize].size;
            if size == need {
                return Some(at);
            }
            if size > need && best.is_none_or(|(b, _)| size < b) {
                best = Some((size, at));
            }
            at = self.blocks[at as usize].next_free;
        }
        best.map(|(_, at)| at)
    }

    /// Takes a block of at least `bytes` (rounded up to GRANULE); returns (address, size).
    pub fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
        self.allocate_leased(Lease::direct(bytes))
    }

    /// `allocate` for `lease.requested` bytes, remembering the lease.
    pub fn allocate_leased(&mut self, lease: Lease) -> Option<(usize, usize)> {
        let units = granules(lease.requested)?.max(1);
        let need = units << GRANULE_SHIFT;
        if let Some(at) = self.parked.iter().rposition(|&index| self.blocks[index as usize].size == need) {
            let index = self.parked.swap_remove(at);
            self.blocks[index as usize].cached = false;
            self.blocks[index as usize].lease = lease;
            self.quick_bytes -= need;
            return Some((self.blocks[index as usize].addr, need));
        }
        // A miss means sizes vary: parked blocks would only fragment, so coalesce them now.
        if !self.parked.is_empty() {
            self.flush_quick();
        }
        let index = self.find_free(units)?;
        self.unlink_free(index);
        let Block { addr, size, chunk, next_phys, .. } = self.blocks[index as usize];
        if size > need {
            let rest = self.new_block(Block {
                addr: addr + need,
                size: size - need,
                chunk,
                free: false,
            cached: false,
                prev_phys: index,
                next_phys,
                prev_free: NONE,
                next_free: NONE,
                lease: Lease::direct(0),
            });
            if next_phys != NONE {
                self.blocks[next_phys as usize].prev_phys = rest;
            }
            let block = &mut self.blocks[index as usize];
            block.next_phys = rest;
            block.size = need;
            self.link_free(rest);
        }
        self.blocks[index as usize].lease = lease;
        self.used.insert(addr, index);
        Some((addr, need))
    }

    /// Merges `next` (physically after `index`, free, same chunk) into `index`.
    fn absorb_next(&mut self, index: u32, next: u32) {
        self.unlink_free(next);
        self.absorb_next_used(index, next);
    }

    /// Returns the block at `addr` and coalesces it with free neighbours; returns its size, or
    /// None when `addr` is not an allocated block of this index.
    pub fn free(&mut self, addr: usize) -> Option<usize> {
        self.free_checked(addr, None, None).ok().map(|freed| freed.size)
    }

    /// Frees the block at `addr` if it is used and, given `bytes`, was handed out for that
    /// many bytes and, given `via`, through that resource.
    pub fn free_checked(&mut self, addr: usize, bytes: Option<usize>, via: Option<Via>) -> Result<Freed, Refused> {
        let Some(&index) = self.used.get(&addr) else {
            return Err(Refused::NotLive);
        };
        let Block { size, cached, lease, .. } = self.blocks[index as usize];
        if cached {
            return Err(Refused::NotLive);
        }
        // Blocks are the request rounded up to whole granules.
        if bytes.is_some_and(|bytes| granules(bytes).is_none_or(|units| units.max(1) << GRANULE_SHIFT != size)) {
            return Err(Refused::WrongSize(size));
        }
        if via.is_some_and(|via| via != lease.via) {
            return Err(Refused::OtherVia(lease.via));
        }
        if self.parking && size <= QUICK_MAX && self.parked.len() < QUICK_DEPTH && self.quick_bytes + size <= QUICK_BUDGET {
            self.parked.push(index);
            self.blocks[index as usize].cached = true;
            self.quick_bytes += size;
            return Ok(Freed { size, chunk_now_free: false });
        }
        self.used.remove(&addr);
        Ok(self.release(index))
    }

    /// The size and lease of the used block at `addr`.
    pub fn lease(&self, addr: usize) -> Option<(usize, Lease)> {
        let block = &self.blocks[*self.used.get(&addr)? as usize];
        (!block.cached).then_some((block.size, block.lease))
    }

    /// Every block of the chunk based at `base`, in address order (parked blocks count as
    /// free).
    pub fn chunk_blocks(&self, base: usize) -> Vec<BlockView> {
        let Some(chunk) = self.chunks.iter().position(|c| c.is_some_and(|c| c.base == base)) else {
            return Vec::new();
        };
        let mut views = Vec::new();
        let mut at = self.chunk_first_block[chunk];
        while at != NONE {
            let block = &self.blocks[at as usize];
            let used = !block.free && !block.cached;
            views.push(BlockView { addr: block.addr, size: block.size, requested: used.then_some(block.lease.requested) });
            at = block.next_phys;
        }
        views
    }

    /// Parks freed blocks on quick lists from now on. Parked blocks keep their chunk from
    /// being wholly free, so only an index whose frees need no event to be taken by another
    /// stream (the legacy default stream's) should park.
    pub fn enable_parking(&mut self) {
        self.parking = true;
    }

    /// Puts every parked block back into the index, coalesced. Returns whether a chunk became
    /// wholly free.
    pub fn flush_quick(&mut self) -> bool {
        let mut chunk_freed = false;
        while let Some(index) = self.parked.pop() {
            let block = &mut self.blocks[index as usize];
            block.cached = false;
            let (addr, size) = (block.addr, block.size);
            self.quick_bytes -= size;
            self.used.remove(&addr);
            chunk_freed |= self.release(index).chunk_now_free;
        }
        chunk_freed
    }

    /// Coalesces a block that left the used map with its free neighbours and lists it.
    fn release(&mut self, mut index: u32) -> Freed {
        let size = self.blocks[index as usize].size;
        let next = self.blocks[index as usize].next_phys;
        if next != NONE && self.blocks[next as usize].free {
            self.absorb_next(index, next);
        }
        let prev = self.blocks[index as usize].prev_phys;
        if prev != NONE && self.blocks[prev as usize].free {
            self.unlink_free(prev);
            self.absorb_next_used(prev, index);
            index = prev;
        }
        self.link_free(index);
        let block = &self.blocks[index as usize];
        Freed { size, chunk_now_free: block.prev_phys == NONE && block.next_phys == NONE }
    }

    /// Merges the (not free-listed) block `next` into `index`.
    fn absorb_next_used(&mut self, index: u32, next: u32) {
        let Block { size, next_phys, .. } = self.blocks[next as usize];
        self.blocks[index as usize].size += size;
        self.blocks[index as usize].next_phys = next_phys;
        if next_phys != NONE {
            self.blocks[next_phys as usize].prev_phys = index;
        }
        self.spare_blocks.push(next);
    }

    /// Removes every chunk that is wholly free and returns them, for release upstream.
    pub fn take_wholly_free_chunks(&mut self) -> Vec<Chunk> {
        self.flush_quick();
        (0..self.chunks.len())
            .filter(|&chunk| self.chunk_is_wholly_free(chunk).is_some())
            .collect::<Vec<_>>()
            .into_iter()
            .map(|chunk| self.remove_chunk(chunk))
            .collect()
    }

    /// Removes one wholly free chunk of at least `bytes` (the smallest such), to hand it to
    /// another stream.
    pub fn take_free_chunk(&mut self, bytes: usize) -> Option<Chunk> {
        self.flush_quick();
        let chunk = (0..self.chunks.len())
            .filter(|&c| self.chunk_is_wholly_free(c).is_some_and(|info| info.size >= bytes))
            .min_by_key(|&c| self.chunks[c].map(|info| info.size))?;
        Some(self.remove_chunk(chunk))
    }

    fn chunk_is_wholly_free(&self, chunk: usize) -> Option<Chunk> {
        let info = self.chunks[chunk]?;
        let block = &self.blocks[self.chunk_first_block[chunk] as usize];
        (block.free && block.size == info.size).then_some(info)
    }

    fn remove_chunk(&mut self, chunk: usize) -> Chunk {
        let info = self.chunks[chunk].take().expect("chunk is live");
        let first = std::mem::replace(&mut self.chunk_first_block[chunk], NONE);
        self.unlink_free(first);
        self.spare_blocks.push(first);
        self.chunk_bytes -= info.size;
        info
    }

    /// Checks every structural invariant; tests call it after each operation.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut free_total = 0;
        let mut seen_free = 0;
        for (chunk, info) in self.chunks.iter().enumerate() {
            let Some(info) = info else { continue };
            let mut at = self.chunk_first_block[chunk];
            let (mut expected_addr, mut prev, mut prev_free) = (info.base, NONE, false);
            if self.blocks[at as usize].prev_phys != NONE {
                return Err(format!("chunk {chunk} first block has a previous block"));
            }
            while at != NONE {
                let b = &self.blocks[at as usize];
                if b.addr != expected_addr || b.chunk != chunk as u32 || b.prev_phys != prev {
                    return Err(format!("chunk {chunk}: block {at} breaks the physical chain: {b:?}"));
                }
                if b.size == 0 || !b.size.is_multiple_of(GRANULE) {
                    return Err(format!("block {at} has size {}", b.size));
                }
                if b.free && prev_free {
                    return Err(format!("block {at} and its predecessor are both free: not coalesced"));
                }
                if b.free {
                    free_total += b.size;
                    seen_free += 1;
                } else if self.used.get(&b.addr) != Some(&at) {
                    return Err(format!("used block {at} at {:#x} is not in the used map", b.addr));
                }
                expected_addr += b.size;
                prev_free = b.free;
                prev = at;
                at = b.next_phys;
            }
            if expected_addr != info.base + info.size {
                return Err(format!("chunk {chunk} blocks end at {expected_addr:#x}, not at the chunk end"));
            }
        }
        let mut listed = 0;
        for fl in 0..FL_COUNT {
            for sl in 0..SL_COUNT {
                let mut at = self.heads[fl][sl];
                let has_bit = self.fl_bitmap & (1 << fl) != 0 && self.sl_bitmaps[fl] & (1 << sl) != 0;
                if (at != NONE) != has_bit {
                    return Err(format!("class ({fl},{sl}) bitmap disagrees with its list"));
                }
                let mut prev = NONE;
                while at != NONE {
                    let b = &self.blocks[at as usize];
                    if !b.free || class_of(b.size >> GRANULE_SHIFT) != (fl, sl) || b.prev_free != prev {
                        return Err(format!("block {at} is misfiled in class ({fl},{sl}): {b:?}"));
                    }
                    listed += 1;
                    prev = at;
                    at = b.next_free;
                }
            }
            if self.sl_bitmaps[fl] != 0 && self.fl_bitmap & (1 << fl) == 0 {
                return Err(format!("first-level bit {fl} is clear over a non-empty row"));
            }
        }
        let mut parked = (0, 0);
        for &index in &self.parked {
            let b = &self.blocks[index as usize];
            if !b.cached || b.free || self.used.get(&b.addr) != Some(&index) {
                return Err(format!("parked block {index} is inconsistent: {b:?}"));
            }
            parked = (parked.0 + 1, parked.1 + b.size);
        }
        if parked != (self.parked.len(), self.quick_bytes) {
            return Err(format!("{parked:?} parked, {} bytes counted", self.quick_bytes));
        }
        if listed != seen_free || free_total != self.free_bytes {
            return Err(format!("{listed} listed vs {seen_free} free blocks; {free_total} vs {} free bytes", self.free_bytes));
        }
        Ok(())
    }
}
