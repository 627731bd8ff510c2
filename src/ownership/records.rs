//! The record of every pointer handed to a caller: the stack it came from, the size asked
//! for, and who holds it (the caller, or a device buffer). Every entry point that allocates
//! records here, and every free is looked up here by its exact base address before anything
//! else happens: a pointer that is not a live record, or that does not match what the free
//! names (stack, size, holder), is refused with nothing changed. A free that matches goes back
//! down the stack it came up, on the device the stack belongs to.
//!
//! Records are sharded by address, each shard behind a biased lock: the thread that does the
//! allocating (usually one) takes it with plain loads and stores, and threads working on
//! different addresses rarely meet. A shard holds one reference to each stack its records
//! belong to, counted with plain arithmetic under the shard's lock, so recording a pointer
//! costs no atomic reference count.

use super::stack::{Stack, SHARD_WORDS};
use crate::error::{Error, Result};
use crate::platform::{backend, Stream};
use crate::resources::{callback, MemoryResource, ALIGNMENT};
use crate::sync::bias::Bias;
use crate::sync::biased_lock::{BiasFamily, BiasedLock};
use rmm_suballoc::address_map::{window_shard_of, AddressMap, RECORD_WINDOW_BITS};
use std::sync::Arc;

const SHARDS: usize = SHARD_WORDS * 64;

/// Who may free a recorded pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// The caller it was handed to: `rmmFree`, `rmmResourceDeallocate`, the framework entry
    /// points.
    Caller,
    /// A device buffer, whose data it is: only the buffer frees it.
    Buffer,
    /// Freed by `rmmCudaFree` without waiting for the device: it goes back to its stack once
    /// the device has done the work given before the free (`ownership::cuda_free`), and nobody
    /// may free it again meanwhile.
    Freeing,
}

/// A live pointer's record. The address map keeps an `Option<Record>` per slot, which the
/// spare values of `Holder` make no larger than a `Record` (the assertion below): a slot stays
/// 24 bytes, so a shard's table touches as many cache lines per lookup as a bare one would.
#[derive(Clone, Copy)]
struct Record {
    size: usize,
    /// The shard's entry of the record's stack.
    entry: u32,
    holder: Holder,
}

const _: () = assert!(std::mem::size_of::<Option<Record>>() == std::mem::size_of::<Record>());

/// A stack the shard has records of, and how many.
struct Entry {
    stack: Arc<Stack>,
    live: u32,
}

impl Entry {
    /// One record fewer; whether the entry may go now: it has none left and nothing else
    /// holds its stack.
    #[inline]
    fn forget_one(&mut self) -> bool {
        self.live -= 1;
        self.live == 0 && !self.stack.is_held()
    }
}

struct Shard {
    /// The shard's live pointers, by address.
    records: AddressMap<Record>,
    /// By entry number; None: vacant.
    entries: Vec<Option<Entry>>,
    /// The entry the last record used, tried first by the next.
    recent: u32,
    /// The last pointers freed here, so that a second free of one is named a double free.
    freed: [usize; FREED_REMEMBERED],
    freed_next: usize,
}

/// Frees each shard remembers (a free writes one slot under the lock it holds anyway).
const FREED_REMEMBERED: usize = 8;

/// How far before a pointer no record names a block that a free looks for one that holds it,
/// to name a pointer inside a block (in record windows; larger blocks are not found).
const INTERIOR_WINDOWS: usize = 32;

impl Shard {
    const fn new() -> Self {
        Shard { records: AddressMap::new(), entries: Vec::new(), recent: 0, freed: [0; FREED_REMEMBERED], freed_next: 0 }
    }

    #[inline(always)]
    fn remember_freed(&mut self, ptr: usize) {
        self.freed[self.freed_next % FREED_REMEMBERED] = ptr;
        self.freed_next = self.freed_next.wrapping_add(1);
    }

    fn was_freed(&self, ptr: usize) -> bool {
        self.freed.contains(&ptr)
    }

    /// The entry of `stack` (made if there is none), counting one more record of it.
    #[inline]
    fn count_record_of(&mut self, stack: &Arc<Stack>, shard: usize) -> u32 {
        if let Some(Some(entry)) = self.entries.get_mut(self.recent as usize) {
            if Stack::same(&entry.stack, stack) {
                entry.live += 1;
                return self.recent;
            }
        }
        self.recent = self.find_or_add_entry(stack, shard);
        self.entries[self.recent as usize].as_mut().expect("just found").live += 1;
        self.recent
    }

    #[inline(never)]
    fn find_or_add_entry(&mut self, stack: &Arc<Stack>, shard: usize) -> u32 {
        if let Some(at) = self.entries.iter().position(|entry| entry.as_ref().is_some_and(|e| Stack::same(&e.stack, stack))) {
            return at as u32;
        }
        stack.note_entry(shard, true);
        let entry = Some(Entry { stack: stack.clone(), live: 0 });
        match self.entries.iter().position(Option::is_none) {
            Some(at) => {
                self.entries[at] = entry;
                at as u32
            }
            None => {
                self.entries.push(entry);
                self.entries.len() as u32 - 1
            }
        }
    }

    fn entry(&self, at: u32) -> &Entry {
        self.entries[at as usize].as_ref().expect("records refer to live entries")
    }

    fn entry_mut(&mut self, at: u32) -> &mut Entry {
        self.entries[at as usize].as_mut().expect("records refer to live entries")
    }

    /// Takes entry `at` out, its stack to be dropped outside the lock.
    fn take_entry(&mut self, at: u32, shard: usize) -> Option<Arc<Stack>> {
        let entry = self.entries[at as usize].take()?;
        entry.stack.note_entry(shard, false);
        Some(entry.stack)
    }
}

#[repr(align(128))]
struct PaddedShard(BiasedLock<Shard>);

/// The shards stop biasing together: a chunk that moves to another thread's stream takes
/// its windows' shards with it.
static RECORDS_FAMILY: BiasFamily = BiasFamily::new(records_biases);

fn records_biases(visit: &mut dyn FnMut(&'static Bias)) {
    RECORDS.iter().for_each(|shard| visit(shard.0.bias()));
}

static RECORDS: [PaddedShard; SHARDS] = [const { PaddedShard(BiasedLock::in_family(Shard::new(), &RECORDS_FAMILY)) }; SHARDS];

#[inline(always)]
fn shard_index(ptr: usize) -> usize {
    window_shard_of(ptr, RECORD_WINDOW_BITS, SHARDS)
}

/// What a free names about the pointer it frees; each part given must match the record.
#[derive(Clone, Copy)]
pub struct Expected<'a> {
    /// The stack it must come from (`rmmResourceDeallocate`'s handle).
    pub stack: Option<&'a Stack>,
    /// The size it must have been allocated with.
    pub size: Option<usize>,
    /// Who the free is made for: the caller's free refuses a device buffer's memory, and the
    /// other way round.
    pub holder: Holder,
}

impl Expected<'_> {
    /// `rmmFree`: any pointer handed to a caller.
    pub const ANY_OF_CALLERS: Expected<'static> = Expected { stack: None, size: None, holder: Holder::Caller };
}

/// Allocates `bytes` from `stack` for `holder` and records the pointer. Zero bytes give NULL
/// (0) and record nothing.
#[inline(always)]
pub fn allocate(stack: &Arc<Stack>, bytes: usize, stream: Stream, holder: Holder) -> Result<usize> {
    allocate_aligned(stack, bytes, ALIGNMENT, stream, holder)
}

/// `allocate` at a multiple of `alignment` (a power of two).
#[inline(always)]
pub fn allocate_aligned(stack: &Arc<Stack>, bytes: usize, alignment: usize, stream: Stream, holder: Holder) -> Result<usize> {
    if bytes == 0 {
        return Ok(0);
    }
    let ptr = match crate::resources::sleep::any_asleep() {
        false => stack.allocate_aligned(bytes, alignment, stream)?,
        true => allocate_beside_sleepers(stack, bytes, alignment, stream)?,
    };
    if callback::running_on_this_thread() {
        return Ok(ptr);
    }
    let index = shard_index(ptr);
    let mut shard = RECORDS[index].0.lock();
    let entry = shard.count_record_of(stack, index);
    if shard.records.try_insert(ptr, Record { size: bytes, entry, holder }).is_err() {
        // The resource handed out memory that is still live: keep the first record, whose
        // owner still uses it, and leave this block alone rather than free it under them.
        let unused = match shard.entry_mut(entry).forget_one() {
            true => shard.take_entry(entry, index),
            false => None,
        };
        drop(shard);
        drop(unused);
        return Err(handed_out_twice(ptr, stack));
    }
    Ok(ptr)
}

/// `stack.allocate_aligned` while some resource sleeps: a stack over a sleeping resource is
/// refused before any layer sees the request; a block that comes from sleeping memory anyway
/// (a sleep that began meanwhile) is given back before anyone can use it.
#[cold]
#[inline(never)]
fn allocate_beside_sleepers(stack: &Arc<Stack>, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
    use crate::resources::sleep;
    if sleep::refuses_allocations(stack.resource()) {
        return Err(sleep::refused_while_asleep(bytes));
    }
    let ptr = stack.allocate_aligned(bytes, alignment, stream)?;
    if sleep::asleep_at(ptr) {
        if let Err(e) = stack.deallocate_aligned(ptr, bytes, alignment, stream) {
            log::error!("giving back {ptr:#x} ({bytes} bytes), handed out from a sleeping resource: {e}");
        }
        return Err(sleep::refused_while_asleep(bytes));
    }
    Ok(ptr)
}

/// Frees `ptr` (NULL: nothing) through the stack it was allocated from, in the order of
/// `stream`, if it is a live record that matches `expected`; otherwise refuses it and changes
/// nothing. A resource that fails to free leaves the record in place.
#[inline(always)]
pub fn free(ptr: usize, stream: Stream, expected: Expected) -> Result<()> {
    free_aligned(ptr, ALIGNMENT, stream, expected)
}

/// `free` of what `allocate_aligned` returned with `alignment`, which goes on to the resources.
#[inline(always)]
pub fn free_aligned(ptr: usize, alignment: usize, stream: Stream, expected: Expected) -> Result<()> {
    if ptr == 0 {
        return Ok(());
    }
    if callback::freeing_on_this_thread() {
        return free_in_callback(ptr, alignment, stream, expected);
    }
    let index = shard_index(ptr);
    let mut guard = RECORDS[index].0.lock();
    let shard = &mut *guard;
    let Some((slot, &record)) = shard.records.get_slot(&ptr) else {
        let freed = shard.was_freed(ptr);
        drop(guard);
        return match callback::running_on_this_thread() {
            // An allocate callback giving back what it (or another) took from rmm-rs.
            true => free_in_callback(ptr, alignment, stream, expected),
            false => Err(not_handed_out(ptr, expected, freed)),
        };
    };
    let entry = shard.entry_mut(record.entry);
    if record.holder != expected.holder
        || expected.stack.is_some_and(|named| !Stack::same(named, &entry.stack))
        || expected.size.is_some_and(|size| size != record.size)
    {
        return Err(mismatch(ptr, record.size, record.holder, &entry.stack, expected));
    }
    let stream = backend()?.stream_on_device(entry.stack.device(), stream, || entry.stack.orders_by_stream())?;
    entry.stack.deallocate_aligned(ptr, record.size, alignment, stream)?;
    // The record goes only once the memory is back: a refused free leaves it in place.
    let unused = match entry.forget_one() {
        true => shard.take_entry(record.entry, index),
        false => None,
    };
    shard.records.remove_slot(slot);
    shard.remember_freed(ptr);
    drop(guard);
    drop(unused);
    Ok(())
}

/// A free inside a callback resource's function (see `callback::running_on_this_thread`) of
/// memory that has no record: what such a function took from rmm-rs. It goes back through the
/// stack it names with the size it names. Inside a deallocate function this is every free,
/// without a record lookup: the free that called the function may hold the record shard of
/// this very address (an allocate function's frees are looked up first).
#[cold]
fn free_in_callback(ptr: usize, alignment: usize, stream: Stream, expected: Expected) -> Result<()> {
    match (expected.stack, expected.size) {
        (Some(stack), Some(size)) => {
            let stream = backend()?.stream_on_device(stack.device(), stream, || stack.orders_by_stream())?;
            stack.deallocate_aligned(ptr, size, alignment, stream)
        }
        _ => Err(Error::invalid(format!(
            "{ptr:#x}: inside a callback resource's function, give memory back with rmmResourceDeallocate (its resource and size)"
        ))),
    }
}

/// What a live record says: its stack, size and holder.
pub struct Found {
    /// The stack it was allocated from, and that frees it.
    pub stack: Arc<Stack>,
    /// The size asked for.
    pub size: usize,
    /// Who may free it.
    pub holder: Holder,
}

/// The live record of `ptr`, if there is one.
pub fn find(ptr: usize) -> Option<Found> {
    let shard = RECORDS[shard_index(ptr)].0.lock();
    let record = shard.records.get(&ptr)?;
    Some(Found { stack: shard.entry(record.entry).stack.clone(), size: record.size, holder: record.holder })
}

/// Hands the caller's live `ptr` over from `from` to `to` (the record stays; the memory is not
/// freed); the device of its stack and the size asked for. Refused with nothing changed when
/// `ptr` is not a live record of `from`'s.
pub fn hand_over(ptr: usize, from: Holder, to: Holder) -> Result<(i32, usize)> {
    let mut guard = RECORDS[shard_index(ptr)].0.lock();
    let shard = &mut *guard;
    let Some(record) = shard.records.get_mut(&ptr) else {
        let freed = shard.was_freed(ptr);
        drop(guard);
        return Err(not_handed_out(ptr, Expected { stack: None, size: None, holder: from }, freed));
    };
    if record.holder != from {
        let record = *record;
        let expected = Expected { stack: None, size: None, holder: from };
        return Err(mismatch(ptr, record.size, record.holder, &shard.entry(record.entry).stack, expected));
    }
    record.holder = to;
    let (entry, size) = (record.entry, record.size);
    Ok((shard.entry(entry).stack.device(), size))
}

/// The number and total bytes of live records.
pub fn totals() -> (usize, usize) {
    RECORDS.iter().fold((0, 0), |(count, bytes), shard| {
        let shard = shard.0.lock();
        (count + shard.records.len(), bytes + shard.records.values().map(|record| record.size).sum::<usize>())
    })
}

/// Lets go of `stack` in every shard that holds it without live records: called when the last
/// handle, slot or buffer that refers to it goes. Shards where it still has records keep it
/// until the last of them is freed.
fn forget_idle(stack: &Stack) {
    for index in stack.shards_with_entries() {
        let mut shard = RECORDS[index].0.lock();
        let idle = shard.entries.iter().position(|entry| entry.as_ref().is_some_and(|e| Stack::same(&e.stack, stack) && e.live == 0));
        let unused = idle.and_then(|at| shard.take_entry(at as u32, index));
        drop(shard);
        drop(unused);
    }
}

#[cold]
#[inline(never)]
fn not_handed_out(ptr: usize, expected: Expected, freed: bool) -> Error {
    let whose = match expected.stack {
        Some(named) => format!("allocation of this {} resource (device {})", named.resource().name(), named.device()),
        None => "rmm allocation".to_string(),
    };
    let why = match (freed, block_holding(ptr)) {
        (true, _) => "it was already freed (a double free)".to_string(),
        (false, Some((base, size))) => {
            format!(
                "it lies inside the block at {base:#x} ({size} bytes), {} bytes from its start: free the block's own address",
                ptr - base
            )
        }
        (false, None) => "never allocated, already freed, or an address inside a block".to_string(),
    };
    Error::invalid(format!("{ptr:#x} is not a live {whose}: {why}"))
}

/// The live block (address, size) that holds `ptr` after its start, looked for in the record
/// windows up to `INTERIOR_WINDOWS` before it, one shard lock at a time (an error path only).
fn block_holding(ptr: usize) -> Option<(usize, usize)> {
    let window = 1usize << RECORD_WINDOW_BITS;
    let mut shards: Vec<usize> = (0..INTERIOR_WINDOWS).filter_map(|back| ptr.checked_sub(back * window)).map(shard_index).collect();
    shards.sort_unstable();
    shards.dedup();
    shards.into_iter().find_map(|index| {
        let shard = RECORDS[index].0.lock();
        let holding = shard.records.iter().find(|(&base, record)| base < ptr && ptr - base < record.size);
        holding.map(|(&base, record)| (base, record.size))
    })
}

#[cold]
#[inline(never)]
fn mismatch(ptr: usize, size: usize, holder: Holder, stack: &Stack, expected: Expected) -> Error {
    let resource = stack.resource();
    if holder != expected.holder {
        return match holder {
            Holder::Buffer => Error::invalid(format!("{ptr:#x} is a device buffer's memory: rmmDeviceBufferDestroy frees it")),
            Holder::Caller => Error::invalid(format!("{ptr:#x} is not this device buffer's memory")),
            Holder::Freeing => Error::invalid(format!("{ptr:#x} was freed already (it waits for the device to finish with it)")),
        };
    }
    if let Some(named) = expected.stack.filter(|named| !Stack::same(named, stack)) {
        return Error::invalid(format!(
            "{ptr:#x} was allocated from another resource (a {} resource of device {}), not from this {} resource (device \
             {}): free it through that resource, or with rmmFree",
            resource.name(),
            stack.device(),
            named.resource().name(),
            named.device()
        ));
    }
    Error::invalid(format!(
        "{ptr:#x} was allocated from the {} resource of device {} with {}, not {}",
        resource.name(),
        stack.device(),
        crate::units::exact(size),
        crate::units::exact(expected.size.unwrap_or(0))
    ))
}

#[cold]
#[inline(never)]
fn handed_out_twice(ptr: usize, stack: &Stack) -> Error {
    Error::Internal(format!(
        "the {} resource handed out {ptr:#x} while it was still allocated: a bug, please report it",
        stack.resource().name()
    ))
}

/// A counted reference to a stack, as a handle or a registry slot holds it.
pub struct StackRef(Arc<Stack>);

impl StackRef {
    /// A new stack over `resource`, held by this reference alone.
    pub fn new(resource: Arc<dyn MemoryResource>) -> Self {
        StackRef(Stack::new_held(resource))
    }

    /// The stack, to allocate from (`allocate` takes the `Arc` so that a record can keep one).
    pub fn stack(&self) -> &Arc<Stack> {
        &self.0
    }
}

impl std::ops::Deref for StackRef {
    type Target = Stack;
    #[inline(always)]
    fn deref(&self) -> &Stack {
        &self.0
    }
}

impl Clone for StackRef {
    fn clone(&self) -> Self {
        self.0.hold();
        StackRef(self.0.clone())
    }
}

impl Drop for StackRef {
    fn drop(&mut self) {
        if self.0.let_go() {
            forget_idle(&self.0);
        }
    }
}
