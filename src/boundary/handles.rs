//! Opaque resource handles. A handle value encodes a slot index and that slot's generation,
//! so a destroyed handle, or a value that never was one, is recognized and refused instead of
//! being dereferenced. Lookups take no lock.
//!
//! Destroying a handle while another thread is inside a call on the same handle is a misuse,
//! as with any C library object.

use crate::error::{Error, Result};
use crate::ownership::StackRef;
use crate::resources::MemoryResource;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// A resource handle: one counted reference to a stack (a resource as callers allocate from it).
#[repr(C)]
pub struct rmmResource_st {
    _opaque: [u8; 0],
}

/// A resource handle as C holds it: a pointer that is never dereferenced, only decoded into
/// a slot and its generation. The header declares it itself (cbindgen.toml).
#[allow(non_camel_case_types)]
pub type rmmResource_t = *mut rmmResource_st;

const SEGMENT_SLOTS: usize = 1024;
const SEGMENTS: usize = 1024;

struct Slot {
    /// Odd while the slot holds a resource (the live handle's generation), even while it is
    /// free; each create and destroy moves it on by one, so a destroyed handle never matches
    /// again.
    generation: AtomicU32,
    /// Kept in the slot itself, not behind a pointer: a lookup, on every allocation's path,
    /// then reaches the resource with one dependent load less.
    resource: UnsafeCell<Option<StackRef>>,
}

// SAFETY: `resource` is written only by `create`, before the odd generation that publishes it
// is stored (release), and by `destroy`, after moving the generation on; it is read only by
// lookups that found the odd generation of their handle (acquire). Destroying a handle while
// another thread still uses it is a misuse of the C API, as with any C library object.
unsafe impl Sync for Slot {}

impl Slot {
    const fn new() -> Self {
        Slot { generation: AtomicU32::new(0), resource: UnsafeCell::new(None) }
    }
}

/// The first segment is part of the static table, so that the handles of a program with
/// fewer than 1024 live resources are found without loading a segment pointer first (a
/// lookup is on every allocation's path). Later segments are allocated when first needed.
struct HandleTable {
    first: [Slot; SEGMENT_SLOTS],
    segments: [OnceCell<Box<[Slot]>>; SEGMENTS],
    free: Mutex<FreeSlots>,
}

#[derive(Default)]
struct FreeSlots {
    recycled: Vec<u32>,
    next_unused: u32,
}

// A plain static (no lazy initialization to check on every lookup).
static TABLE: HandleTable = HandleTable {
    first: [const { Slot::new() }; SEGMENT_SLOTS],
    segments: [const { OnceCell::new() }; SEGMENTS],
    free: Mutex::new(FreeSlots { recycled: Vec::new(), next_unused: 0 }),
};

fn encode(index: u32, generation: u32) -> rmmResource_t {
    (((generation as u64) << 32) | (index as u64 + 1)) as usize as rmmResource_t
}

/// The slot index and generation of a handle; a handle without a slot index (NULL among
/// them) gives an index past every table.
#[inline(always)]
fn decode(handle: rmmResource_t) -> (usize, u32) {
    let value = handle as usize as u64;
    ((value as u32).wrapping_sub(1) as usize, (value >> 32) as u32)
}

/// The error for a handle that is NULL, destroyed or made up (out of line: lookups stay small).
#[cold]
#[inline(never)]
fn not_live(handle: rmmResource_t) -> Error {
    match handle.is_null() {
        true => Error::InvalidHandle("the resource handle is NULL".into()),
        false => Error::InvalidHandle(format!("{handle:p} is not a live resource handle (destroyed, or never created)")),
    }
}

impl HandleTable {
    #[inline(always)]
    fn slot(&self, index: usize) -> Option<&Slot> {
        match self.first.get(index) {
            Some(slot) => Some(slot),
            None => self.later_slot(index),
        }
    }

    fn later_slot(&self, index: usize) -> Option<&Slot> {
        self.segments.get(index / SEGMENT_SLOTS)?.get().map(|segment| &segment[index % SEGMENT_SLOTS])
    }

    #[inline]
    fn live_slot(&self, handle: rmmResource_t) -> Result<(&Slot, u32)> {
        let (index, generation) = decode(handle);
        match self.slot(index) {
            Some(slot) if generation & 1 == 1 && slot.generation.load(Ordering::Acquire) == generation => Ok((slot, generation)),
            _ => Err(not_live(handle)),
        }
    }
}

/// Makes a handle to a new stack whose top is `resource`.
pub fn create(resource: Arc<dyn MemoryResource>) -> Result<rmmResource_t> {
    create_for(StackRef::new(resource))
}

/// Makes a handle that holds one reference to `stack`.
pub fn create_for(stack: StackRef) -> Result<rmmResource_t> {
    let table = &TABLE;
    let index = {
        let mut free = table.free.lock();
        match free.recycled.pop() {
            Some(index) => index,
            None => {
                if free.next_unused as usize >= SEGMENTS * SEGMENT_SLOTS {
                    return Err(Error::out_of_memory(0, "too many live resource handles"));
                }
                free.next_unused += 1;
                free.next_unused - 1
            }
        }
    };
    if index as usize >= SEGMENT_SLOTS {
        table.segments[index as usize / SEGMENT_SLOTS].get_or_init(|| (0..SEGMENT_SLOTS).map(|_| Slot::new()).collect());
    }
    let slot = table.slot(index as usize).expect("the slot's segment exists");
    let generation = slot.generation.load(Ordering::Acquire) | 1;
    // SAFETY: the slot came off the free list, so no handle refers to it: nothing reads it.
    unsafe { *slot.resource.get() = Some(stack) };
    slot.generation.store(generation, Ordering::Release);
    Ok(encode(index, generation))
}

/// Runs `f` on the stack behind a live handle, without taking a new reference.
#[inline]
pub fn with<T>(handle: rmmResource_t, f: impl FnOnce(&StackRef) -> Result<T>) -> Result<T> {
    let (slot, _) = TABLE.live_slot(handle)?;
    // SAFETY: the slot holds this handle's generation, so `create` wrote the resource before
    // publishing it, and `destroy` (which must not run concurrently with calls on the same
    // handle) has not taken it yet.
    match unsafe { &*slot.resource.get() } {
        Some(resource) => f(resource),
        None => Err(not_live(handle)),
    }
}

/// The stack behind a live handle (a new reference).
pub fn stack(handle: rmmResource_t) -> Result<StackRef> {
    with(handle, |stack| Ok(stack.clone()))
}

/// The resource behind a live handle (a new reference), e.g. to build an adaptor over it.
pub fn get(handle: rmmResource_t) -> Result<Arc<dyn MemoryResource>> {
    with(handle, |stack| Ok(stack.resource_arc().clone()))
}

/// Drops the handle's reference; NULL is a no-op.
pub fn destroy(handle: rmmResource_t) -> Result<()> {
    if handle.is_null() {
        return Ok(());
    }
    let table = &TABLE;
    let (slot, generation) = table.live_slot(handle)?;
    if slot.generation.compare_exchange(generation, generation.wrapping_add(1), Ordering::AcqRel, Ordering::Acquire).is_err() {
        return Err(Error::InvalidHandle(format!("{handle:p} was destroyed concurrently")));
    }
    // SAFETY: this call moved the generation on, so no new lookup reaches the slot and no
    // other destroy takes the resource; the slot returns to the free list only after.
    let resource = unsafe { (*slot.resource.get()).take() };
    let (index, _) = decode(handle);
    table.free.lock().recycled.push(index as u32);
    drop(resource);
    Ok(())
}
