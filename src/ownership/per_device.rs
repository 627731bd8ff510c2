//! Each device's current resource (as RMM's `get_current_device_resource`), read by every
//! `rmmAlloc`. A slot is replaced rarely and read all the time, so each thread keeps the stack
//! it last read from each slot, with the slot's generation then: a read compares two numbers
//! and takes no lock and no reference count. A thread's copy keeps a replaced stack alive
//! until that thread reads the slot again.

use super::records::StackRef;
use super::stack::Stack;
use crate::error::{Error, Result};
use crate::platform::backend;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Devices the registry can hold (device ordinals 0..MAX_DEVICES).
pub const MAX_DEVICES: usize = 64;

struct Slot {
    current: Mutex<Option<StackRef>>,
    /// Moves on with every change of `current`; 0 until a stack is installed.
    generation: AtomicU64,
}

static SLOTS: [Slot; MAX_DEVICES] = [const { Slot { current: Mutex::new(None), generation: AtomicU64::new(0) } }; MAX_DEVICES];

type Cached = Option<(u64, Arc<Stack>)>;

thread_local! {
    static CACHE: RefCell<[Cached; MAX_DEVICES]> = const { RefCell::new([const { None }; MAX_DEVICES]) };
}

fn slot(device: i32) -> Result<&'static Slot> {
    backend()?.check_device(device)?;
    SLOTS
        .get(device as usize)
        .ok_or_else(|| Error::NotSupported(format!("device {device}: rmm-rs handles devices 0 to {}", MAX_DEVICES - 1)))
}

/// The stack in `slot`, installing the default one first if there is none (`config`: the
/// stack `rmmConfigure` or `RMM_ALLOC_CONF` names, else RMM's `cuda_memory_resource`).
fn current_or_default(slot: &Slot, device: i32) -> Result<(StackRef, u64)> {
    let mut current = slot.current.lock();
    if let Some(stack) = current.as_ref() {
        return Ok((stack.clone(), slot.generation.load(Ordering::Acquire)));
    }
    let stack = StackRef::new(crate::ownership::config::default_resource(device)?);
    *current = Some(stack.clone());
    let generation = slot.generation.fetch_add(1, Ordering::AcqRel) + 1;
    Ok((stack, generation))
}

/// Runs `f` on the stack of `device`.
#[inline]
pub fn with_stack<T>(device: i32, f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    with_stack_in(slot(device)?, device, f)
}

/// `with_stack` on the slot of a device known to exist.
#[inline(always)]
fn with_stack_in<T>(slot: &Slot, device: i32, f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    let generation = slot.generation.load(Ordering::Acquire);
    let mut f = Some(f);
    // `try_with`: a thread-local destructor that calls rmm after this cache is gone still
    // gets its answer, the slow way. `f` runs with the cache borrowed, which a call made from
    // inside it (a failure callback allocating) may borrow again.
    let answered = CACHE.try_with(|cache| {
        let cache = cache.try_borrow().ok()?;
        match &cache[device as usize] {
            Some((seen, stack)) if *seen == generation && generation != 0 => f.take().map(|f| f(stack)),
            _ => None,
        }
    });
    match (answered, f) {
        (Ok(Some(result)), _) => result,
        (_, Some(f)) => with_stack_refreshed(slot, device, f),
        (_, None) => unreachable!("f ran, so it answered"),
    }
}

#[inline(never)]
fn with_stack_refreshed<T>(slot: &Slot, device: i32, f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    let (stack, generation) = current_or_default(slot, device)?;
    let stack = stack.stack().clone();
    // A call made from inside another (a failure callback allocating) finds the cache
    // borrowed: it goes without caching.
    let _ = CACHE.try_with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            cache[device as usize] = Some((generation, stack.clone()));
        }
    });
    f(&stack)
}

/// Set once the program has chosen a resource for some device (`set`).
static RESOURCE_CHOSEN: AtomicBool = AtomicBool::new(false);

/// Whether the program has ever chosen a device's resource itself.
pub fn resource_chosen() -> bool {
    RESOURCE_CHOSEN.load(Ordering::Acquire)
}

/// The stack of `device`, as a new reference.
pub fn get(device: i32) -> Result<StackRef> {
    let slot = slot(device)?;
    Ok(current_or_default(slot, device)?.0)
}

/// Makes `stack` the resource of `device` and returns the one it replaces. The stack must
/// hand out memory of `device`.
pub fn set(device: i32, stack: StackRef) -> Result<StackRef> {
    if stack.device() != device {
        return Err(Error::invalid(format!(
            "a {} resource of device {} cannot serve device {device}",
            stack.resource().name(),
            stack.device()
        )));
    }
    let slot = slot(device)?;
    let (previous, _) = current_or_default(slot, device)?;
    let replaced = {
        let mut current = slot.current.lock();
        let replaced = current.replace(stack);
        slot.generation.fetch_add(1, Ordering::AcqRel);
        replaced
    };
    forget_cached(device);
    RESOURCE_CHOSEN.store(true, Ordering::Release);
    Ok(replaced.unwrap_or(previous))
}

/// The calling thread's current device's stack.
#[inline]
pub fn with_current<T>(f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    let platform = backend()?;
    let device = match platform.single_device() {
        true => 0,
        false => platform.current_device()?,
    };
    // The current device exists; only the registry's own bound is checked.
    match SLOTS.get(device as usize) {
        Some(slot) => with_stack_in(slot, device, f),
        None => with_stack(device, f),
    }
}

/// Drops this thread's copy of a slot it just replaced, so that the replaced stack does not
/// wait for this thread's next read to be let go of.
fn forget_cached(device: i32) {
    let _ = CACHE.try_with(|cache| {
        if let Ok(mut cache) = cache.try_borrow_mut() {
            cache[device as usize] = None;
        }
    });
}
