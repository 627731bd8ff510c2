//! Opaque resource handles. A handle value encodes a slot index and that slot's generation,
//! so a destroyed handle, or a value that never was one, is recognized and refused instead of
//! being dereferenced. Lookups take no lock.
//!
//! Destroying a handle while another thread is inside a call on the same handle is a misuse,
//! as with any C library object.

use crate::error::{Error, Result};
use crate::mr::MemoryResource;
use once_cell::sync::OnceCell;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

/// A resource handle: one counted reference to a resource.
#[repr(C)]
pub struct rmmResource_st {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
pub type rmmResource_t = *mut rmmResource_st;

const SEGMENT_SLOTS: usize = 1024;
const SEGMENTS: usize = 1024;

type Boxed = Arc<dyn MemoryResource>;

struct Slot {
    generation: AtomicU32,
    resource: AtomicPtr<Boxed>,
}

struct HandleTable {
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
    segments: [const { OnceCell::new() }; SEGMENTS],
    free: Mutex::new(FreeSlots { recycled: Vec::new(), next_unused: 0 }),
};

fn encode(index: u32, generation: u32) -> rmmResource_t {
    (((generation as u64) << 32) | (index as u64 + 1)) as usize as rmmResource_t
}

fn decode(handle: rmmResource_t) -> Option<(usize, u32)> {
    let value = handle as usize as u64;
    let index = (value & 0xFFFF_FFFF).checked_sub(1)? as usize;
    Some((index, (value >> 32) as u32))
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
    #[inline]
    fn slot(&self, index: usize) -> Option<&Slot> {
        self.segments.get(index / SEGMENT_SLOTS)?.get().map(|segment| &segment[index % SEGMENT_SLOTS])
    }

    #[inline]
    fn live_slot(&self, handle: rmmResource_t) -> Result<&Slot> {
        let Some((index, generation)) = decode(handle) else { return Err(not_live(handle)) };
        match self.slot(index) {
            Some(slot) if slot.generation.load(Ordering::Acquire) == generation && !slot.resource.load(Ordering::Acquire).is_null() => Ok(slot),
            _ => Err(not_live(handle)),
        }
    }
}

/// Makes a handle that holds one reference to `resource`.
pub fn create(resource: Arc<dyn MemoryResource>) -> Result<rmmResource_t> {
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
    let segment = table.segments[index as usize / SEGMENT_SLOTS].get_or_init(|| {
        (0..SEGMENT_SLOTS).map(|_| Slot { generation: AtomicU32::new(1), resource: AtomicPtr::new(std::ptr::null_mut()) }).collect()
    });
    let slot = &segment[index as usize % SEGMENT_SLOTS];
    slot.resource.store(Box::into_raw(Box::new(resource)), Ordering::Release);
    Ok(encode(index, slot.generation.load(Ordering::Acquire)))
}

/// Runs `f` on the resource behind a live handle, without taking a new reference.
pub fn with<T>(handle: rmmResource_t, f: impl FnOnce(&Arc<dyn MemoryResource>) -> Result<T>) -> Result<T> {
    let slot = TABLE.live_slot(handle)?;
    let boxed = slot.resource.load(Ordering::Acquire);
    // SAFETY: the slot is live, so `boxed` came from Box::into_raw in `create` and is freed
    // only by `destroy`, which must not run concurrently with calls on the same handle.
    f(unsafe { &*boxed })
}

/// The resource behind a live handle (a new reference).
pub fn get(handle: rmmResource_t) -> Result<Arc<dyn MemoryResource>> {
    with(handle, |resource| Ok(resource.clone()))
}

/// Drops the handle's reference; NULL is a no-op.
pub fn destroy(handle: rmmResource_t) -> Result<()> {
    if handle.is_null() {
        return Ok(());
    }
    let table = &TABLE;
    let slot = table.live_slot(handle)?;
    let boxed = slot.resource.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if boxed.is_null() {
        return Err(Error::InvalidHandle(format!("{handle:p} was destroyed concurrently")));
    }
    slot.generation.fetch_add(1, Ordering::AcqRel);
    let (index, _) = decode(handle).expect("validated by live_slot");
    table.free.lock().recycled.push(index as u32);
    // SAFETY: swapped out of the slot above, so this is the only owner of the box.
    drop(unsafe { Box::from_raw(boxed) });
    crate::mr::via::collect();
    Ok(())
}
