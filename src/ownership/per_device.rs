//! Each device's current resource (as RMM's `get_current_device_resource`), read by every
//! `rmmAlloc`. A slot is replaced rarely and read all the time, so each thread keeps the stack
//! it last read from each slot, with the slot's generation then: a read compares two numbers
//! and takes no lock and no reference count (`sync::thread_cache`). Replacing a slot takes the
//! replaced stack out of the copies of every thread that is not inside a call, at once, and
//! each other thread lets go of it as its call ends: a replaced stack whose handles are gone
//! gives its memory back without waiting for idle threads. Without membarrier (not Linux, a
//! seccomp filter that refuses it, a kernel before 4.14), or with `RMM_RETIRE_REPLACED=0`,
//! each thread lets go of it when a call of its own ends, or when it exits.

use super::records::StackRef;
use super::stack::Stack;
use crate::error::{Error, Result};
use crate::platform::backend;
use crate::sync::thread_cache::{Member, ThreadCache};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};

/// Devices the registry can hold (device ordinals 0..MAX_DEVICES).
pub const MAX_DEVICES: usize = 64;

struct Slot {
    current: Mutex<Option<StackRef>>,
}

static SLOTS: [Slot; MAX_DEVICES] = [const { Slot { current: Mutex::new(None) } }; MAX_DEVICES];

thread_local! {
    static COPIES: Member<Stack, MAX_DEVICES> = const { Member::new() };
}

/// The slots' generations and every thread's copies of their stacks.
static STACKS: ThreadCache<Stack, MAX_DEVICES> = ThreadCache::new(watch_forks);

/// Run as each thread first reads a slot: a forked child's one thread must not wait for the
/// parent's other threads, which it does not have.
fn watch_forks() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        crate::platform::in_forked_children(forget_other_threads_in_child, "a forked child may wait for threads it does not have")
    });
}

extern "C" fn forget_other_threads_in_child() {
    STACKS.forget_other_threads(&COPIES);
}

fn slot(device: i32) -> Result<&'static Slot> {
    backend()?.check_device(device)?;
    SLOTS
        .get(device as usize)
        .ok_or_else(|| Error::NotSupported(format!("device {device}: rmm-rs handles devices 0 to {}", MAX_DEVICES - 1)))
}

/// The stack in `slot`, installing the default one first if there is none (`config`: the
/// stack `rmmConfigure` or `RMM_ALLOC_CONF` names, else RMM's `cuda_memory_resource`), with
/// the slot's generation.
fn current_or_default(slot: &Slot, device: i32) -> Result<(StackRef, u64)> {
    let mut current = slot.current.lock();
    if let Some(stack) = current.as_ref() {
        return Ok((stack.clone(), STACKS.generation(device as usize)));
    }
    let stack = StackRef::new(crate::ownership::config::default_resource(device)?);
    *current = Some(stack.clone());
    // No thread has a copy of the generation that had no stack (0, or one `swap` left empty
    // and retired the copies before): none to let go of.
    Ok((stack, STACKS.advance(device as usize)))
}

/// Runs `f` on the stack of `device`.
#[inline]
pub fn with_stack<T>(device: i32, f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    with_stack_in(slot(device)?, device, f)
}

/// `with_stack` on the slot of a device known to exist. `f` may call in again (a failure
/// callback allocating).
#[inline(always)]
fn with_stack_in<T>(slot: &'static Slot, device: i32, f: impl FnOnce(&Arc<Stack>) -> Result<T>) -> Result<T> {
    STACKS.with(&COPIES, device as usize, f, || {
        current_or_default(slot, device).map(|(stack, generation)| (stack.stack().clone(), generation))
    })
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
/// hand out memory of `device`. Threads outside a call let go of the replaced stack before
/// this returns; threads inside one, as their call ends (see the module comment).
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
    let (replaced, generation) = {
        let mut current = slot.current.lock();
        (current.replace(stack), STACKS.advance(device as usize))
    };
    // Outside the slot's lock: dropping threads' last copies of a stack runs its resources'
    // destructors.
    STACKS.retire(&COPIES, device as usize, generation, reach_idle_threads());
    RESOURCE_CHOSEN.store(true, Ordering::Release);
    Ok(replaced.unwrap_or(previous))
}

/// Ok when `device` exists and has a slot here: what `set` and `swap` check first.
pub fn check(device: i32) -> Result<()> {
    slot(device).map(drop)
}

/// Makes `stack` the resource of `device` (None: none, so that the device gets its default
/// resource at its next use) and returns the one it replaces as it is, None where the device
/// had none yet. Unlike `set` it makes no default resource to return (one that `rmmConfigure`
/// or `RMM_ALLOC_CONF` makes a pool would take memory, or fail, only to be put back later), and
/// it is not the program choosing a resource: `rmmInitialize` installs with it and
/// `rmmFinalize` puts back what was there. Threads let go of the replaced stack as `set` says.
pub fn swap(device: i32, stack: Option<StackRef>) -> Result<Option<StackRef>> {
    if let Some(stack) = stack.as_ref().filter(|stack| stack.device() != device) {
        return Err(Error::invalid(format!(
            "a {} resource of device {} cannot serve device {device}",
            stack.resource().name(),
            stack.device()
        )));
    }
    let slot = slot(device)?;
    let (replaced, generation) = {
        let mut current = slot.current.lock();
        (std::mem::replace(&mut *current, stack), STACKS.advance(device as usize))
    };
    // Outside the slot's lock, as in `set`.
    STACKS.retire(&COPIES, device as usize, generation, reach_idle_threads());
    Ok(replaced)
}

/// Whether a replaced stack is taken out of idle threads' copies at once (see the module
/// comment); says once, at debug level, that it is not where membarrier is missing.
fn reach_idle_threads() -> bool {
    if std::env::var_os("RMM_RETIRE_REPLACED").is_some_and(|value| value == "0") {
        return false;
    }
    let available = crate::sync::barrier::available();
    if !available {
        static SAID: Once = Once::new();
        SAID.call_once(|| {
            log::debug!(
                "membarrier is not available: a replaced per-device resource goes once every thread that allocated from it \
                 has called rmm again, or exited"
            )
        });
    }
    available
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

/// Threads' records of copies by state (free, in use, dead), for tests.
pub fn thread_records() -> [usize; 3] {
    STACKS.census()
}
