//! A two-level segregated-fit (TLSF) free-block index over address ranges, with all metadata
//! on the host (out of band): the host cannot write into device memory. Allocation and free
//! are O(1): bitmaps find a non-empty size class, and physical neighbour links coalesce a freed
//! block with adjacent free blocks. Blocks never coalesce across chunks (separate upstream
//! allocations), because two chunks that happen to be adjacent are still freed separately.
//!
//! The fit is "good fit": the head of the request's own size class when it is large enough
//! (an exact fit for sizes below 16 granules), otherwise the head of the next non-empty class,
//! every block of which fits. Measured on the benchmark's churn, an exhaustive best fit
//! reserves no less.

pub use crate::address_map::AddressMap;

/// Granularity and alignment of every block.
pub const GRANULE: usize = 256;
const GRANULE_SHIFT: u32 = 8;
const SL_BITS: u32 = 4;
const SL_COUNT: usize = 1 << SL_BITS;
const FL_COUNT: usize = 64;
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Used,
    /// Freed, but parked on the quick list instead of being coalesced.
    Parked,
}

#[derive(Debug, Clone, Copy)]
struct Block {
    addr: usize,
    size: usize,
    prev_phys: u32,
    next_phys: u32,
    prev_free: u32,
    next_free: u32,
    chunk: u32,
    state: State,
    /// The bytes a used (or parked) block was handed out for: beside the block, so that a
    /// free checks its state and its size with one bounds check.
    requested: usize,
}

/// One upstream allocation an index manages: blocks are cut from it and coalesce only within
/// it, and it goes back upstream whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// The chunk's first address.
    pub base: usize,
    /// The chunk's length in bytes.
    pub size: usize,
}

/// Why a free was refused (the block stays allocated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not a used block here: never handed out, or already freed.
    NotLive,
    /// A block handed out for another size; the size it was handed out for.
    WrongSize(usize),
}

/// A block, for snapshots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockView {
    /// The block's first address.
    pub addr: usize,
    /// The block's length in bytes (whole granules: at least what was asked for).
    pub size: usize,
    /// None for free blocks; the bytes asked for, for used ones.
    pub requested: Option<usize>,
}

/// A range cut out of the middle of a chunk (`Tlsf::cut_free_pages`): the chunk based at
/// `chunk` became `before` (the part before the range, same base) and `after` (the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut {
    /// The first address of the range cut out.
    pub start: usize,
    /// The range's length in bytes (whole `unit`s).
    pub size: usize,
    /// The base the chunk had before the cut.
    pub chunk: usize,
    /// What is left before the range (based at `chunk`); None when the range began the chunk.
    pub before: Option<Chunk>,
    /// What is left after the range; None when the range ended the chunk.
    pub after: Option<Chunk>,
}

/// A freed block's size, and whether the free left its whole chunk free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Freed {
    /// The block's length in bytes (whole granules: what was reserved, not what was asked).
    pub size: usize,
    /// Whether no block of the chunk is in use any more, so the chunk could go back upstream.
    pub chunk_now_free: bool,
}

/// Blocks up to this size may be parked...
const QUICK_MAX: usize = 4 << 20;
/// ...at most this many...
const QUICK_DEPTH: usize = 8;
/// ...and this many bytes in all: parked blocks do not coalesce, so more would fragment.
const QUICK_BUDGET: usize = 8 << 20;
/// Parking pays when allocations ask again for the sizes just freed. Each allocation that the
/// quick list serves earns credit, each miss halves it, and frees park only with credit left;
/// an allocation of the size freed last earns credit back while nothing is parked.
const QUICK_CREDIT: u8 = 8;

/// Parked blocks, (size, block index), oldest first: kept inside the index, so that parking
/// and unparking follow no pointer and check no capacity.
#[derive(Clone, Copy)]
struct Parked {
    blocks: [(usize, u32); QUICK_DEPTH],
    len: usize,
}

impl Parked {
    #[inline(always)]
    fn as_slice(&self) -> &[(usize, u32)] {
        &self.blocks[..self.len]
    }

    #[inline(always)]
    fn has_room(&self) -> bool {
        self.len < QUICK_DEPTH
    }

    /// Parks a block; the caller saw `has_room`.
    #[inline(always)]
    fn push(&mut self, block: (usize, u32)) {
        self.blocks[self.len] = block;
        self.len += 1;
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<(usize, u32)> {
        self.len = self.len.checked_sub(1)?;
        Some(self.blocks[self.len])
    }

    /// Takes the block at `at` out; the last one takes its place.
    #[inline(always)]
    fn swap_remove(&mut self, at: usize) -> (usize, u32) {
        let taken = self.blocks[at];
        self.len -= 1;
        self.blocks[at] = self.blocks[self.len];
        taken
    }
}

/// A TLSF free-block index over chunks of address space (see the module comment): O(1)
/// allocation and free, exact ownership checks on free, and coalescing within a chunk.
pub struct Tlsf {
    blocks: Vec<Block>,
    spare_blocks: Vec<u32>,
    heads: [[u32; SL_COUNT]; FL_COUNT],
    fl_bitmap: u64,
    sl_bitmaps: [u32; FL_COUNT],
    used: AddressMap<u32>,
    chunks: Vec<Option<Chunk>>,
    /// The block that starts each chunk, to find wholly free chunks.
    chunk_first_block: Vec<u32>,
    free_bytes: usize,
    chunk_bytes: usize,
    /// The most bytes in use (handed out, not parked) at once.
    peak_used: usize,
    /// Recently freed blocks (size, index), reused as they are when the same size is asked
    /// for again: an allocate/free pair of one size then neither splits nor coalesces.
    /// Bounded, and flushed into the index whenever it cannot serve.
    parked: Parked,
    quick_bytes: usize,
    parking: bool,
    /// Never above 0 while parking is off, so that a free tests the credit alone.
    credit: u8,
    last_freed_size: usize,
}

/// Size class of a block of `units` granules.
#[inline]
fn class_of(units: usize) -> (usize, usize) {
    if units < SL_COUNT {
        return (0, units);
    }
    let top = usize::BITS - 1 - units.leading_zeros();
    let fl = (top - SL_BITS + 1) as usize;
    let sl = (units >> (top - SL_BITS)) & (SL_COUNT - 1);
    (fl, sl)
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
    /// An index with no chunks: nothing can be allocated until `add_chunk`. Parking is off.
    pub fn new() -> Self {
        Tlsf {
            blocks: Vec::new(),
            spare_blocks: Vec::new(),
            heads: [[NONE; SL_COUNT]; FL_COUNT],
            fl_bitmap: 0,
            sl_bitmaps: [0; FL_COUNT],
            used: AddressMap::default(),
            chunks: Vec::new(),
            chunk_first_block: Vec::new(),
            free_bytes: 0,
            chunk_bytes: 0,
            peak_used: 0,
            parked: Parked { blocks: [(0, NONE); QUICK_DEPTH], len: 0 },
            quick_bytes: 0,
            parking: false,
            credit: 0,
            last_freed_size: 0,
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

    /// Blocks handed out and not yet freed (parked blocks are free and not counted).
    pub fn used_blocks(&self) -> usize {
        self.used.len() - self.parked.len
    }

    /// Bytes in blocks handed out and not freed.
    pub fn used_bytes(&self) -> usize {
        self.chunk_bytes - self.free_bytes - self.quick_bytes
    }

    /// The most bytes in use at once since the index was made.
    pub fn peak_used_bytes(&self) -> usize {
        self.peak_used
    }

    #[inline(always)]
    fn note_peak(&mut self) {
        let used = self.used_bytes();
        if used > self.peak_used {
            self.peak_used = used;
        }
    }

    /// Freed blocks parked on the quick list.
    pub fn parked_blocks(&self) -> usize {
        self.parked.len
    }

    /// The size of the used block at `addr`.
    pub fn block_size(&self, addr: usize) -> Option<usize> {
        self.used_block(addr).map(|(size, _)| size)
    }

    /// Size of the largest free block in the index (0 if none): parked blocks are free, and
    /// one with free or parked neighbours counts as the block they make together once flushed.
    pub fn largest_free_block(&self) -> usize {
        let mut largest = self.parked.as_slice().iter().map(|&(_, index)| self.free_run_around(index)).max().unwrap_or(0);
        if self.fl_bitmap == 0 {
            return largest;
        }
        let fl = (u64::BITS - 1 - self.fl_bitmap.leading_zeros()) as usize;
        let sl = (u32::BITS - 1 - self.sl_bitmaps[fl].leading_zeros()) as usize;
        let mut at = self.heads[fl][sl];
        while at != NONE {
            largest = largest.max(self.blocks[at as usize].size);
            at = self.blocks[at as usize].next_free;
        }
        largest
    }

    /// The bytes of the run of free and parked blocks around the parked block `index`.
    fn free_run_around(&self, index: u32) -> usize {
        let free = |at: u32| at != NONE && matches!(self.blocks[at as usize].state, State::Free | State::Parked);
        let mut first = index;
        while free(self.blocks[first as usize].prev_phys) {
            first = self.blocks[first as usize].prev_phys;
        }
        let (mut bytes, mut at) = (0, first);
        while free(at) {
            bytes += self.blocks[at as usize].size;
            at = self.blocks[at as usize].next_phys;
        }
        bytes
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

    /// A new free block of `[addr, addr + size)` in `chunk` between `prev_phys` and
    /// `next_phys` (which is linked back to it), listed free.
    #[inline(always)]
    fn new_free_block(&mut self, addr: usize, size: usize, prev_phys: u32, next_phys: u32, chunk: u32) -> u32 {
        let index = self.new_unlisted_block(addr, size, prev_phys, next_phys, chunk);
        self.link_free(index);
        index
    }

    /// `new_free_block`, not listed free (state Used) yet.
    #[inline(always)]
    fn new_unlisted_block(&mut self, addr: usize, size: usize, prev_phys: u32, next_phys: u32, chunk: u32) -> u32 {
        let index = self.new_block(Block {
            addr,
            size,
            prev_phys,
            next_phys,
            prev_free: NONE,
            next_free: NONE,
            chunk,
            state: State::Used,
            requested: 0,
        });
        if next_phys != NONE {
            self.blocks[next_phys as usize].prev_phys = index;
        }
        index
    }

    #[inline]
    fn link_free(&mut self, index: u32) {
        let size = self.blocks[index as usize].size;
        let (fl, sl) = class_of(size >> GRANULE_SHIFT);
        let head = self.heads[fl][sl];
        let block = &mut self.blocks[index as usize];
        block.state = State::Free;
        block.prev_free = NONE;
        block.next_free = head;
        if head != NONE {
            self.blocks[head as usize].prev_free = index;
        }
        self.heads[fl][sl] = index;
        self.fl_bitmap |= 1 << fl;
        self.sl_bitmaps[fl] |= 1 << sl;
        self.free_bytes += size;
    }

    #[inline]
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
        self.blocks[index as usize].state = State::Used;
        self.free_bytes -= size;
    }

    /// Adds `[base, base+size)` (GRANULE-aligned) as one free block of a new chunk.
    pub fn add_chunk(&mut self, base: usize, size: usize) {
        debug_assert!(base.is_multiple_of(GRANULE) && size.is_multiple_of(GRANULE) && size > 0);
        let chunk = self.new_chunk_slot();
        let index = self.new_free_block(base, size, NONE, NONE, chunk as u32);
        self.chunks[chunk] = Some(Chunk { base, size });
        self.chunk_first_block[chunk] = index;
        self.chunk_bytes += size;
    }

    /// A chunk slot not in use.
    fn new_chunk_slot(&mut self) -> usize {
        match self.chunks.iter().position(Option::is_none) {
            Some(slot) => slot,
            None => {
                self.chunks.push(None);
                self.chunk_first_block.push(NONE);
                self.chunks.len() - 1
            }
        }
    }

    /// A free block of at least `units` granules.
    #[inline]
    fn find_free(&self, units: usize) -> Option<u32> {
        let need = units << GRANULE_SHIFT;
        let (fl, sl) = class_of(units);
        if fl >= FL_COUNT {
            return None;
        }
        let head = self.heads[fl][sl];
        if head != NONE && self.blocks[head as usize].size >= need {
            return Some(head);
        }
        self.find_free_in_larger_class(fl, sl).or_else(|| self.find_free_in_own_class(fl, sl, need))
    }

    /// O(1): the head of the first class above (fl, sl), every block of which fits.
    #[inline]
    fn find_free_in_larger_class(&self, fl: usize, sl: usize) -> Option<u32> {
        let in_row = self.sl_bitmaps[fl] & (u32::MAX.checked_shl(sl as u32 + 1).unwrap_or(0));
        let (fl, sl) = if in_row != 0 {
            (fl, in_row.trailing_zeros() as usize)
        } else {
            let above = self.fl_bitmap & u64::MAX.checked_shl(fl as u32 + 1).unwrap_or(0);
            if above == 0 {
                return None;
            }
            let fl = above.trailing_zeros() as usize;
            (fl, self.sl_bitmaps[fl].trailing_zeros() as usize)
        };
        Some(self.heads[fl][sl])
    }

    /// The last resort: a block of the request's own class that is large enough (its head
    /// was not), so that a request is refused only when no free block can hold it.
    #[cold]
    fn find_free_in_own_class(&self, fl: usize, sl: usize, need: usize) -> Option<u32> {
        let mut at = self.heads[fl][sl];
        while at != NONE {
            let block = &self.blocks[at as usize];
            if block.size >= need {
                return Some(at);
            }
            at = block.next_free;
        }
        None
    }

    /// Takes a block of at least `bytes` (rounded up to GRANULE), remembering `bytes` for the
    /// free; returns (address, size).
    #[inline(always)]
    pub fn allocate(&mut self, bytes: usize) -> Option<(usize, usize)> {
        let units = granules(bytes)?.max(1);
        let need = units << GRANULE_SHIFT;
        if self.parked.len > 0 {
            if let Some(at) = self.parked.as_slice().iter().rposition(|&(size, _)| size == need) {
                return Some(self.unpark(at, bytes));
            }
            self.parked_miss();
        } else if need == self.last_freed_size && self.parking {
            self.earn_credit();
        }
        self.allocate_from_index(units, bytes)
    }

    /// `allocate`, at an address that is a multiple of `alignment` (a power of two). A parked
    /// block of the size is taken if it lies aligned; otherwise the index serves a block large
    /// enough to hold the request at an aligned address wherever it starts, and what lies
    /// before that address stays free, so nothing is lost to the alignment.
    #[inline(always)]
    pub fn allocate_aligned(&mut self, bytes: usize, alignment: usize) -> Option<(usize, usize)> {
        debug_assert!(alignment.is_power_of_two());
        if alignment <= GRANULE {
            return self.allocate(bytes);
        }
        let units = granules(bytes)?.max(1);
        let need = units << GRANULE_SHIFT;
        if self.parked.len > 0 {
            for at in (0..self.parked.len).rev() {
                let (size, index) = self.parked.blocks[at];
                if size == need && self.blocks[index as usize].addr & (alignment - 1) == 0 {
                    return Some(self.unpark(at, bytes));
                }
            }
            self.parked_miss();
        }
        let padded = units.checked_add((alignment >> GRANULE_SHIFT) - 1)?;
        let index = self.find_free(padded)?;
        self.unlink_free(index);
        let addr = self.blocks[index as usize].addr;
        let used = match addr.next_multiple_of(alignment) - addr {
            0 => index,
            head => self.split_after(index, head),
        };
        if used != index {
            self.link_free(index);
        }
        Some(self.hand_out(used, need, bytes))
    }

    /// Splits `head` bytes off the front of the block `index`, which keeps them; returns the
    /// new block holding the rest (state Used, not listed).
    fn split_after(&mut self, index: u32, head: usize) -> u32 {
        let Block { addr, size, next_phys, chunk, .. } = self.blocks[index as usize];
        debug_assert!(head > 0 && head < size && head.is_multiple_of(GRANULE));
        let rest = self.new_unlisted_block(addr + head, size - head, index, next_phys, chunk);
        let block = &mut self.blocks[index as usize];
        block.size = head;
        block.next_phys = rest;
        rest
    }

    /// Carves the used block at `addr` down to `bytes` at its first multiple of `alignment`:
    /// what lies before and after goes back to the index, coalesced with free neighbours.
    /// Returns the aligned address; None (and nothing changes) when `addr` is not a used block
    /// or it cannot hold `bytes` there. For a block served by `allocate` for the request
    /// padded by the alignment, where `allocate_aligned` could not serve it.
    pub fn carve_aligned(&mut self, addr: usize, bytes: usize, alignment: usize) -> Option<usize> {
        debug_assert!(alignment.is_power_of_two());
        let need = granules(bytes)?.max(1) << GRANULE_SHIFT;
        let (slot, &index) = self.used.get_slot(&addr)?;
        let Block { size, state, .. } = self.blocks[index as usize];
        let aligned = addr.checked_next_multiple_of(alignment)?;
        if state != State::Used || (aligned - addr).checked_add(need)? > size {
            return None;
        }
        self.used.remove_slot(slot);
        let used = match aligned - addr {
            0 => index,
            head => {
                let used = self.split_after(index, head);
                self.release(index);
                used
            }
        };
        self.hand_out(used, need, bytes);
        Some(aligned)
    }

    /// No parked block served the request. A miss means sizes vary: parked blocks would only
    /// fragment, so coalesce them now.
    fn parked_miss(&mut self) {
        self.credit /= 2;
        self.flush_quick();
    }

    /// Takes the parked block at `at` of the quick list for a request of `bytes`.
    #[inline(always)]
    fn unpark(&mut self, at: usize, bytes: usize) -> (usize, usize) {
        let (need, index) = self.parked.swap_remove(at);
        let block = &mut self.blocks[index as usize];
        block.state = State::Used;
        block.requested = bytes;
        let addr = block.addr;
        self.quick_bytes -= need;
        self.earn_credit();
        self.note_peak();
        (addr, need)
    }

    #[inline(never)]
    fn allocate_from_index(&mut self, units: usize, bytes: usize) -> Option<(usize, usize)> {
        let index = self.find_free(units)?;
        self.unlink_free(index);
        Some(self.hand_out(index, units << GRANULE_SHIFT, bytes))
    }

    /// Hands out the first `need` bytes of the block `index` (state Used, not listed, at
    /// least `need` long) for a request of `bytes`; the rest goes back to the index, joining
    /// the next block when that one is free.
    #[inline(always)]
    fn hand_out(&mut self, index: u32, need: usize, bytes: usize) -> (usize, usize) {
        let Block { addr, size, chunk, next_phys, .. } = self.blocks[index as usize];
        if size > need {
            let rest = size - need;
            if next_phys != NONE && self.blocks[next_phys as usize].state == State::Free {
                self.unlink_free(next_phys);
                let next = &mut self.blocks[next_phys as usize];
                next.addr -= rest;
                next.size += rest;
                self.link_free(next_phys);
            } else {
                let rest = self.new_free_block(addr + need, rest, index, next_phys, chunk);
                self.blocks[index as usize].next_phys = rest;
            }
            self.blocks[index as usize].size = need;
        }
        self.blocks[index as usize].requested = bytes;
        self.used.insert(addr, index);
        self.note_peak();
        (addr, need)
    }

    /// Returns the block at `addr` and coalesces it with free neighbours; returns its size, or
    /// None when `addr` is not an allocated block of this index.
    pub fn free(&mut self, addr: usize) -> Option<usize> {
        self.free_checked(addr, None).ok().map(|freed| freed.size)
    }

    /// Frees the block at `addr` if it is used and, given `bytes`, was handed out for exactly
    /// that many bytes.
    #[inline(always)]
    pub fn free_checked(&mut self, addr: usize, bytes: Option<usize>) -> Result<Freed, Refused> {
        let Some((entry, &index)) = self.used.get_slot(&addr) else {
            return Err(Refused::NotLive);
        };
        let block = &mut self.blocks[index as usize];
        if block.state != State::Used {
            return Err(Refused::NotLive);
        }
        if bytes.is_some_and(|bytes| bytes != block.requested) {
            return Err(Refused::WrongSize(block.requested));
        }
        let size = block.size;
        self.last_freed_size = size;
        // Credit is only ever earned while parking is on.
        if self.credit > 0 && size <= QUICK_MAX && self.parked.has_room() && self.quick_bytes + size <= QUICK_BUDGET {
            block.state = State::Parked;
            self.parked.push((size, index));
            self.quick_bytes += size;
            return Ok(Freed { size, chunk_now_free: false });
        }
        self.used.remove_slot(entry);
        Ok(self.release(index))
    }

    /// The size of the used block at `addr` and the bytes it was handed out for.
    pub fn used_block(&self, addr: usize) -> Option<(usize, usize)> {
        let index = *self.used.get(&addr)? as usize;
        let block = &self.blocks[index];
        (block.state == State::Used).then_some((block.size, block.requested))
    }

    /// Every block of the chunk based at `base`, in address order (parked blocks count as
    /// free).
    pub fn chunk_blocks(&self, base: usize) -> Vec<BlockView> {
        let Some(chunk) = self.chunk_slot(base) else {
            return Vec::new();
        };
        let mut views = Vec::new();
        let mut at = self.chunk_first_block[chunk];
        while at != NONE {
            let block = &self.blocks[at as usize];
            let requested = (block.state == State::Used).then_some(block.requested);
            views.push(BlockView { addr: block.addr, size: block.size, requested });
            at = block.next_phys;
        }
        views
    }

    /// Parks freed blocks on quick lists from now on (`on`), or coalesces every free at once,
    /// the parked blocks first (`!on`). Parked blocks keep their chunk from being wholly free,
    /// so an index whose frees must tell when a chunk becomes free should not park.
    pub fn set_parking(&mut self, on: bool) {
        self.parking = on;
        self.credit = if on { QUICK_CREDIT } else { 0 };
        if !on {
            self.flush_quick();
        }
    }

    /// One more allocation served as parking hopes: credit up to `QUICK_CREDIT`.
    #[inline(always)]
    fn earn_credit(&mut self) {
        if self.credit < QUICK_CREDIT {
            self.credit += 1;
        }
    }

    /// Puts every parked block back into the index, coalesced. Returns whether a chunk became
    /// wholly free.
    pub fn flush_quick(&mut self) -> bool {
        let mut chunk_freed = false;
        while let Some((size, index)) = self.parked.pop() {
            self.quick_bytes -= size;
            let addr = self.blocks[index as usize].addr;
            self.used.remove(&addr);
            chunk_freed |= self.release(index).chunk_now_free;
        }
        chunk_freed
    }

    /// Coalesces a block that left the used map with its free neighbours and lists it.
    #[inline(never)]
    fn release(&mut self, mut index: u32) -> Freed {
        let size = self.blocks[index as usize].size;
        let next = self.blocks[index as usize].next_phys;
        if next != NONE && self.blocks[next as usize].state == State::Free {
            self.unlink_free(next);
            self.absorb_next(index, next);
        }
        let prev = self.blocks[index as usize].prev_phys;
        if prev != NONE && self.blocks[prev as usize].state == State::Free {
            self.unlink_free(prev);
            self.absorb_next(prev, index);
            index = prev;
        }
        self.link_free(index);
        let block = &self.blocks[index as usize];
        Freed { size, chunk_now_free: block.prev_phys == NONE && block.next_phys == NONE }
    }

    /// Merges the (not free-listed) block `next`, physically after `index`, into `index`.
    fn absorb_next(&mut self, index: u32, next: u32) {
        let Block { size, next_phys, .. } = self.blocks[next as usize];
        self.blocks[index as usize].size += size;
        self.blocks[index as usize].next_phys = next_phys;
        if next_phys != NONE {
            self.blocks[next_phys as usize].prev_phys = index;
        }
        self.spare_blocks.push(next);
    }

    /// The slot of the chunk based at `base`.
    fn chunk_slot(&self, base: usize) -> Option<usize> {
        self.chunks.iter().position(|c| c.is_some_and(|c| c.base == base))
    }

    /// The last block of chunk `slot`, in address order.
    fn last_block(&self, slot: usize) -> u32 {
        let mut at = self.chunk_first_block[slot];
        while self.blocks[at as usize].next_phys != NONE {
            at = self.blocks[at as usize].next_phys;
        }
        at
    }

    /// The chunk based at `base`, and the size of the free block at its end (0 when its last
    /// block is in use).
    pub fn free_tail(&self, base: usize) -> Option<(Chunk, usize)> {
        let slot = self.chunk_slot(base)?;
        let last = &self.blocks[self.last_block(slot) as usize];
        Some((self.chunks[slot]?, if last.state == State::Free { last.size } else { 0 }))
    }

    /// The size of the free block at the start of the chunk based at `base` (0 when its first
    /// block is in use, None when no chunk starts there).
    pub fn free_head(&self, base: usize) -> Option<usize> {
        let first = &self.blocks[self.chunk_first_block[self.chunk_slot(base)?] as usize];
        Some(if first.state == State::Free { first.size } else { 0 })
    }

    /// Grows the chunk based at `base` by `extra` bytes (GRANULE-aligned) at its end, which
    /// joins its free last block if it has one: memory mapped right after a chunk extends it,
    /// so that a request can span the old end. Returns false when no chunk starts at `base`.
    pub fn extend_chunk(&mut self, base: usize, extra: usize) -> bool {
        debug_assert!(extra.is_multiple_of(GRANULE) && extra > 0);
        let Some(slot) = self.chunk_slot(base) else { return false };
        self.flush_quick();
        let last = self.last_block(slot);
        let info = self.chunks[slot].as_mut().expect("found above");
        let end = info.base + info.size;
        info.size += extra;
        self.chunk_bytes += extra;
        if self.blocks[last as usize].state == State::Free {
            self.unlink_free(last);
            self.blocks[last as usize].size += extra;
            self.link_free(last);
        } else {
            let tail = self.new_free_block(end, extra, last, NONE, slot as u32);
            self.blocks[last as usize].next_phys = tail;
        }
        true
    }

    /// Cuts the free end of the chunk based at `base` back to a multiple of `unit` bytes past
    /// the last block in use (never the whole chunk: a wholly free chunk goes back whole).
    /// Returns the range cut off, `(start, size)`, for release upstream.
    pub fn trim_free_tail(&mut self, base: usize, unit: usize) -> Option<(usize, usize)> {
        debug_assert!(unit.is_multiple_of(GRANULE) && unit > 0);
        let slot = self.chunk_slot(base)?;
        self.flush_quick();
        let last = self.last_block(slot);
        let Block { addr, size, prev_phys, state, .. } = self.blocks[last as usize];
        if state != State::Free || prev_phys == NONE {
            return None;
        }
        let info = self.chunks[slot].expect("found above");
        let end = info.base + info.size;
        let keep_to = addr.next_multiple_of(unit).max(addr);
        if keep_to >= end || !(end - keep_to).is_multiple_of(unit) {
            return None;
        }
        let cut = end - keep_to;
        self.unlink_free(last);
        if cut == size {
            self.blocks[prev_phys as usize].next_phys = NONE;
            self.spare_blocks.push(last);
        } else {
            self.blocks[last as usize].size -= cut;
            self.link_free(last);
        }
        self.chunks[slot].as_mut().expect("found above").size -= cut;
        self.chunk_bytes -= cut;
        Some((keep_to, cut))
    }

    /// Cuts whole `unit`-aligned ranges out of free blocks, until at least `budget` bytes are
    /// cut or none is left: first from blocks in the middle of chunks, largest first, then
    /// from free chunk ends (which a chunk could also grow at). A cut in the middle splits its
    /// chunk in two around the range; the cuts are listed in the order made, so that applying
    /// their splits in turn keeps a record of chunk bases in step.
    pub fn cut_free_pages(&mut self, unit: usize, budget: usize) -> Vec<Cut> {
        debug_assert!(unit.is_multiple_of(GRANULE) && unit > 0);
        self.flush_quick();
        let mut candidates: Vec<(bool, usize, u32)> = Vec::new();
        for fl in 0..FL_COUNT {
            for sl in 0..SL_COUNT {
                let mut at = self.heads[fl][sl];
                while at != NONE {
                    let block = &self.blocks[at as usize];
                    let pages = Self::whole_units(block.addr, block.size, unit).1;
                    if pages > 0 {
                        candidates.push((block.next_phys == NONE, pages, at));
                    }
                    at = block.next_free;
                }
            }
        }
        candidates.sort_by_key(|&(tail, pages, at)| (tail, std::cmp::Reverse(pages), self.blocks[at as usize].addr));
        let mut cuts = Vec::new();
        let mut cut_bytes = 0;
        for (_, pages, index) in candidates {
            if cut_bytes >= budget {
                break;
            }
            let Block { addr, size, .. } = self.blocks[index as usize];
            let start = Self::whole_units(addr, size, unit).0;
            let size = (pages * unit).min((budget - cut_bytes).div_ceil(unit).saturating_mul(unit));
            cuts.push(self.cut_free_block(index, start, size));
            cut_bytes += size;
        }
        cuts
    }

    /// The first whole `unit`-aligned address in `[addr, addr + size)` and how many whole
    /// units follow it inside.
    fn whole_units(addr: usize, size: usize, unit: usize) -> (usize, usize) {
        let start = addr.next_multiple_of(unit);
        let end = (addr + size) / unit * unit;
        (start, end.saturating_sub(start) / unit)
    }

    /// Removes `[start, start + size)`, inside the free block `index`, from its chunk, which
    /// keeps the part before the range (if any) and leaves the part after it to a new chunk.
    fn cut_free_block(&mut self, index: u32, start: usize, size: usize) -> Cut {
        let Block { addr, size: block_size, prev_phys, next_phys, chunk, .. } = self.blocks[index as usize];
        let slot = chunk as usize;
        let info = self.chunks[slot].expect("a free block's chunk is live");
        let (cut_end, block_end, chunk_end) = (start + size, addr + block_size, info.base + info.size);
        self.unlink_free(index);
        // What stays of the block before the range ends the first part.
        let last_before = if start > addr {
            self.blocks[index as usize].size = start - addr;
            self.blocks[index as usize].next_phys = NONE;
            self.link_free(index);
            index
        } else {
            if prev_phys != NONE {
                self.blocks[prev_phys as usize].next_phys = NONE;
            }
            self.spare_blocks.push(index);
            prev_phys
        };
        // What stays of it after the range starts the second part.
        let first_after =
            if cut_end < block_end { self.new_free_block(cut_end, block_end - cut_end, NONE, next_phys, chunk) } else { next_phys };
        if first_after != NONE {
            self.blocks[first_after as usize].prev_phys = NONE;
        }
        self.chunk_bytes -= size;
        let before = (last_before != NONE).then_some(Chunk { base: info.base, size: start - info.base });
        let after = (first_after != NONE).then_some(Chunk { base: cut_end, size: chunk_end - cut_end });
        match (before, after) {
            (Some(before), Some(after)) => {
                self.chunks[slot] = Some(before);
                let new_slot = self.new_chunk_slot();
                self.chunks[new_slot] = Some(after);
                self.chunk_first_block[new_slot] = first_after;
                self.move_blocks_to_chunk(first_after, new_slot);
            }
            (Some(before), None) => self.chunks[slot] = Some(before),
            (None, Some(after)) => {
                self.chunks[slot] = Some(after);
                self.chunk_first_block[slot] = first_after;
            }
            (None, None) => {
                self.chunks[slot] = None;
                self.chunk_first_block[slot] = NONE;
            }
        }
        Cut { start, size, chunk: info.base, before, after }
    }

    /// Marks the block `first` and every block after it (by address) as chunk `slot`'s.
    fn move_blocks_to_chunk(&mut self, first: u32, slot: usize) {
        let mut at = first;
        while at != NONE {
            self.blocks[at as usize].chunk = slot as u32;
            at = self.blocks[at as usize].next_phys;
        }
    }

    /// Joins the chunk based at `second`, which starts where the chunk based at `first` ends,
    /// onto `first` (coalescing the free blocks that meet): memory mapped back between two
    /// parts of a chunk that was cut makes them one again. False when they do not meet.
    pub fn join_chunks(&mut self, first: usize, second: usize) -> bool {
        let (Some(a), Some(b)) = (self.chunk_slot(first), self.chunk_slot(second)) else { return false };
        let (Some(info_a), Some(info_b)) = (self.chunks[a], self.chunks[b]) else { return false };
        if a == b || info_a.base + info_a.size != info_b.base {
            return false;
        }
        self.flush_quick();
        let last = self.last_block(a);
        let head = std::mem::replace(&mut self.chunk_first_block[b], NONE);
        self.chunks[b] = None;
        self.chunks[a] = Some(Chunk { base: info_a.base, size: info_a.size + info_b.size });
        self.move_blocks_to_chunk(head, a);
        self.blocks[last as usize].next_phys = head;
        self.blocks[head as usize].prev_phys = last;
        if self.blocks[last as usize].state == State::Free && self.blocks[head as usize].state == State::Free {
            self.unlink_free(last);
            self.unlink_free(head);
            self.absorb_next(last, head);
            self.link_free(last);
        }
        true
    }

    /// Bases of every chunk held.
    pub fn chunk_bases(&self) -> Vec<usize> {
        self.chunks.iter().flatten().map(|c| c.base).collect()
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
        (block.state == State::Free && block.size == info.size).then_some(info)
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
        let mut seen_used = 0;
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
                let free = b.state == State::Free;
                if free && prev_free {
                    return Err(format!("block {at} and its predecessor are both free: not coalesced"));
                }
                if free {
                    free_total += b.size;
                    seen_free += 1;
                } else if self.used.get(&b.addr) != Some(&at) {
                    return Err(format!("used block {at} at {:#x} is not in the used map", b.addr));
                } else {
                    seen_used += 1;
                }
                expected_addr += b.size;
                prev_free = free;
                prev = at;
                at = b.next_phys;
            }
            if expected_addr != info.base + info.size {
                return Err(format!("chunk {chunk} blocks end at {expected_addr:#x}, not at the chunk end"));
            }
        }
        if seen_used != self.used.len() {
            return Err(format!("{seen_used} blocks in chunks are used or parked, the used map holds {}", self.used.len()));
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
                    if b.state != State::Free || class_of(b.size >> GRANULE_SHIFT) != (fl, sl) || b.prev_free != prev {
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
        for &(size, index) in self.parked.as_slice() {
            let b = &self.blocks[index as usize];
            if b.state != State::Parked || b.size != size || self.used.get(&b.addr) != Some(&index) {
                return Err(format!("parked block {index} is inconsistent: {b:?}"));
            }
            parked = (parked.0 + 1, parked.1 + b.size);
        }
        if parked != (self.parked.len, self.quick_bytes) {
            return Err(format!("{parked:?} parked, {} bytes counted", self.quick_bytes));
        }
        if listed != seen_free || free_total != self.free_bytes {
            return Err(format!("{listed} listed vs {seen_free} free blocks; {free_total} vs {} free bytes", self.free_bytes));
        }
        Ok(())
    }
}
