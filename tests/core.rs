//! The Rust core on simulated devices: the ownership records, per-device resources, handles
//! and the legacy state machine.

use rmm::boundary::handles;
use rmm::ownership::legacy;
use rmm::ownership::{per_device, records, Expected, Holder, Stack, StackRef};
use rmm::platform::{backend, Stream};
use rmm::resources::{AsyncResource, DirectResource, MemoryResource, PoolResource};
use rmm::{Error, ErrorKind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, MutexGuard, Weak};

mod common;

fn setup() -> MutexGuard<'static, ()> {
    common::setup_with("2:64MiB")
}

fn cuda(device: i32) -> StackRef {
    StackRef::new(Arc::new(DirectResource::cuda(device).unwrap()))
}

fn allocate(stack: &StackRef, bytes: usize) -> rmm::Result<usize> {
    records::allocate(stack.stack(), bytes, Stream::DEFAULT, Holder::Caller)
}

fn free_through(stack: &StackRef, ptr: usize, bytes: usize) -> rmm::Result<()> {
    records::free(ptr, Stream::DEFAULT, Expected { stack: Some(stack), size: Some(bytes), holder: Holder::Caller })
}

fn same(a: &StackRef, b: &StackRef) -> bool {
    Stack::same(a, b)
}

#[test]
fn records_refuse_double_and_foreign_frees_and_keep_the_memory() {
    let _guard = setup();
    let resource = cuda(0);
    let other = cuda(0);
    let ptr = allocate(&resource, 1000).unwrap();
    assert_eq!(ptr % 256, 0);
    assert_eq!(records::find(ptr).unwrap().size, 1000);
    assert!(free_through(&other, ptr, 1000).is_err(), "another resource's pointer");
    assert!(free_through(&resource, ptr, 999).is_err(), "a wrong size");
    let as_buffer = Expected { stack: None, size: None, holder: Holder::Buffer };
    assert!(records::free(ptr, Stream::DEFAULT, as_buffer).is_err(), "not a buffer's");
    assert!(records::find(ptr).is_some(), "a refused free keeps the record");
    free_through(&resource, ptr, 1000).unwrap();
    assert!(matches!(legacy::free(ptr, Stream::DEFAULT).map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))));
    let on_stack = 0u64;
    assert!(legacy::free(&on_stack as *const u64 as usize, Stream::DEFAULT).is_err());
    assert_eq!(allocate(&resource, 0).unwrap(), 0);
}

#[test]
fn out_of_memory_leaves_everything_allocated_intact() {
    let _guard = setup();
    let resource = cuda(1);
    let kept = allocate(&resource, 1 << 20).unwrap();
    let (count, bytes) = records::totals();
    assert!(matches!(allocate(&resource, 1 << 40).map_err(Error::into_kind), Err(ErrorKind::OutOfMemory { .. })));
    assert!(matches!(allocate(&resource, usize::MAX).map_err(Error::into_kind), Err(ErrorKind::OutOfMemory { .. })));
    assert_eq!(records::totals(), (count, bytes));
    legacy::free(kept, Stream::DEFAULT).unwrap();
}

#[test]
fn per_device_resources_are_separate_and_checked_against_their_device() {
    let _guard = setup();
    let default0 = per_device::get(0).unwrap();
    assert_eq!((default0.resource().name(), default0.device()), ("cuda", 0));
    let managed1 = StackRef::new(Arc::new(DirectResource::managed(1).unwrap()));
    assert!(per_device::set(0, managed1.clone()).is_err(), "device 1's resource cannot serve device 0");
    let previous = per_device::set(1, managed1.clone()).unwrap();
    assert_eq!(previous.resource().name(), "cuda");
    assert!(same(&per_device::get(1).unwrap(), &managed1));
    assert!(same(&per_device::get(0).unwrap(), &default0));
    backend().unwrap().set_device(1).unwrap();
    assert!(per_device::with_current(|stack| Ok(Stack::same(stack, &managed1))).unwrap());
    per_device::set(1, previous).unwrap();
    assert_eq!(per_device::with_current(|stack| Ok(stack.resource().name())).unwrap(), "cuda");
    assert!(per_device::get(2).is_err());
    assert!(per_device::get(-1).is_err());
}

/// A thread that allocates and frees through device 0's slot (reading it through its own
/// copy) each time it is asked, waits idle in between, and exits when dropped.
struct SlotReader {
    ask: Option<std::sync::mpsc::Sender<()>>,
    answers: std::sync::mpsc::Receiver<&'static str>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SlotReader {
    fn spawn() -> Self {
        let (ask, asked) = std::sync::mpsc::channel::<()>();
        let (answer, answers) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            for () in asked {
                let (name, ptr) = per_device::with_stack(0, |stack| {
                    Ok((stack.resource().name(), records::allocate(stack, 1000, Stream::DEFAULT, Holder::Caller)?))
                })
                .unwrap();
                legacy::free(ptr, Stream::DEFAULT).unwrap();
                answer.send(name).unwrap();
            }
        });
        SlotReader { ask: Some(ask), answers, thread: Some(thread) }
    }

    /// The name of the resource the thread finds in the slot now.
    fn read(&self) -> &'static str {
        self.ask.as_ref().unwrap().send(()).unwrap();
        self.answers.recv().unwrap()
    }
}

impl Drop for SlotReader {
    fn drop(&mut self) {
        drop(self.ask.take());
        let _ = self.thread.take().unwrap().join();
    }
}

#[test]
fn a_set_on_one_thread_is_seen_by_threads_that_cached_the_old_resource() {
    let _guard = setup();
    let before = per_device::get(0).unwrap();
    let reader = SlotReader::spawn();
    assert_eq!(reader.read(), "cuda");
    let replaced = per_device::set(0, StackRef::new(Arc::new(DirectResource::managed(0).unwrap()))).unwrap();
    assert_eq!(reader.read(), "managed");
    drop(reader);
    per_device::set(0, replaced).unwrap();
    assert!(same(&per_device::get(0).unwrap(), &before));
}

fn pool_over_cuda(device: i32, initial: usize) -> StackRef {
    let cuda: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(device).unwrap());
    StackRef::new(Arc::new(PoolResource::new(cuda, initial, 0).unwrap()))
}

/// Sets `RMM_RETIRE_REPLACED` for as long as it lives.
struct RetireReplaced;

impl RetireReplaced {
    fn off() -> Self {
        std::env::set_var("RMM_RETIRE_REPLACED", "0");
        RetireReplaced
    }
}

impl Drop for RetireReplaced {
    fn drop(&mut self) {
        std::env::remove_var("RMM_RETIRE_REPLACED");
    }
}

/// What `rmmSetPerDeviceResource` documents: a replaced resource whose last handle goes gives
/// its memory back at once, although a thread that allocated from it (and keeps a copy of the
/// slot) waits idle; with `RMM_RETIRE_REPLACED=0` (what a process without membarrier gets) it
/// waits for that thread's next call.
#[test]
fn a_replaced_resource_gives_its_memory_back_while_a_thread_that_used_it_waits() {
    let _guard = setup();
    let before = per_device::get(0).unwrap();
    let used = common::device_used();
    for retire_off in [false, true] {
        let _off = retire_off.then(RetireReplaced::off);
        per_device::set(0, pool_over_cuda(0, 16 << 20)).unwrap();
        assert!(common::device_used() >= used + (16 << 20));
        let reader = SlotReader::spawn();
        assert_eq!(reader.read(), "pool");
        drop(per_device::set(0, before.clone()).unwrap());
        match retire_off {
            false => assert_eq!(common::device_used(), used, "the pool's memory is back while the reader waits"),
            true => assert!(common::device_used() >= used + (16 << 20), "the reader's copy holds the pool"),
        }
        assert_eq!(reader.read(), "cuda");
        assert_eq!(common::device_used(), used, "back once the reader called again");
    }
}

/// Threads (more than cores) allocate, stamp and free through device 0's slot while another
/// thread replaces its resource over and over (pools, plain cuda): every block comes back
/// intact and is freed once, and once the threads wait idle, alive, after one more
/// replacement, every resource replaced is gone and the device has all its memory back.
#[test]
fn threads_allocate_while_the_slot_is_replaced_over_and_over() {
    const THREADS: usize = 6;
    const REPLACEMENTS: usize = 150;
    /// Each thread's rounds: at least the first, at most the second (the bound, should the
    /// replacements take that long).
    const ROUNDS: (usize, usize) = (100, 1_000_000);
    let _guard = setup();
    let before = per_device::get(0).unwrap();
    let used = common::device_used();
    let records_before = records::totals();
    let replacing = AtomicBool::new(true);
    let idle = Barrier::new(THREADS + 1);
    let go_on = Barrier::new(THREADS + 1);
    let mut replaced: Vec<Weak<dyn MemoryResource>> = Vec::new();
    let rounds = AtomicUsize::new(0);
    let (alive, records_after, used_after) = std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (replacing, rounds, idle, go_on) = (&replacing, &rounds, &idle, &go_on);
            scope.spawn(move || {
                // A failure must not leave the others waiting at the barriers: it is
                // reported once they are past them.
                let worked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let mut rng = common::Rng::new(thread as u64);
                    let mut live = std::collections::VecDeque::new();
                    for round in 0..ROUNDS.1 {
                        if round >= ROUNDS.0 && !replacing.load(Ordering::SeqCst) {
                            break;
                        }
                        let bytes = 256 * (1 + rng.below(16) as usize);
                        let ptr =
                            per_device::with_stack(0, |stack| records::allocate(stack, bytes, Stream::DEFAULT, Holder::Caller)).unwrap();
                        let tag = (thread * 31 + round) as u8 | 1;
                        common::stamp(ptr, bytes, tag);
                        live.push_back((ptr, bytes, tag));
                        if live.len() > 3 {
                            let (ptr, bytes, tag) = live.pop_front().unwrap();
                            assert!(common::stamped(ptr, bytes, tag), "thread {thread} round {round}: {ptr:#x} was overwritten");
                            legacy::free(ptr, Stream::DEFAULT).unwrap();
                        }
                        rounds.fetch_add(1, Ordering::Relaxed);
                    }
                    for (ptr, bytes, tag) in live {
                        assert!(common::stamped(ptr, bytes, tag));
                        legacy::free(ptr, Stream::DEFAULT).unwrap();
                    }
                }));
                idle.wait();
                go_on.wait();
                worked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            });
        }
        for i in 0..REPLACEMENTS {
            let stack = match i % 3 {
                0 => cuda(0),
                _ => pool_over_cuda(0, 1 << 20),
            };
            replaced.push(Arc::downgrade(stack.resource_arc()));
            drop(per_device::set(0, stack).unwrap());
            std::thread::yield_now();
        }
        replacing.store(false, Ordering::SeqCst);
        idle.wait();
        drop(per_device::set(0, before.clone()).unwrap());
        // Read while the threads wait, checked once they may go (a failed check must not
        // leave them waiting).
        let alive = replaced.iter().filter(|resource| resource.upgrade().is_some()).count();
        let seen = (alive, records::totals(), common::device_used());
        go_on.wait();
        seen
    });
    eprintln!("{} allocations by {THREADS} threads during {REPLACEMENTS} replacements", rounds.load(Ordering::Relaxed));
    assert_eq!(alive, 0, "of {REPLACEMENTS} resources replaced, while {THREADS} threads that used them waited idle");
    assert_eq!(records_after, records_before, "every block freed once");
    assert_eq!(used_after, used, "every replaced pool gave its memory back");
    assert!(common::races().is_empty(), "{:?}", common::races());
}

/// Fork while threads that read the slot wait idle: the child's one thread finds their records
/// dead, and replaces the slot and allocates through it without waiting for them; the parent's
/// threads keep theirs.
#[test]
fn a_forked_child_forgets_the_threads_it_does_not_have() {
    let _guard = setup();
    let before = per_device::get(0).unwrap();
    let readers: Vec<SlotReader> = (0..3).map(|_| SlotReader::spawn()).collect();
    readers.iter().for_each(|reader| assert_eq!(reader.read(), "cuda"));
    per_device::with_stack(0, |_| Ok(())).unwrap();
    common::in_forked_child(|| {
        let [_, in_use, dead] = per_device::thread_records();
        let mut ok = in_use == 1 && dead >= readers.len();
        let pool = pool_over_cuda(0, 1 << 20);
        let watch = Arc::downgrade(pool.resource_arc());
        ok &= per_device::set(0, pool).is_ok();
        let allocated = per_device::with_stack(0, |stack| records::allocate(stack, 1000, Stream::DEFAULT, Holder::Caller));
        ok &= allocated.is_ok_and(|ptr| legacy::free(ptr, Stream::DEFAULT).is_ok());
        ok && per_device::set(0, before.clone()).is_ok() && watch.upgrade().is_none()
    });
    assert!(per_device::thread_records()[1] > readers.len(), "the parent's threads keep their records");
    readers.iter().for_each(|reader| assert_eq!(reader.read(), "cuda"));
}

#[test]
fn handles_refuse_destroyed_and_made_up_values() {
    let _guard = setup();
    let handle = handles::create_for(cuda(0)).unwrap();
    assert_eq!(handles::get(handle).unwrap().name(), "cuda");
    handles::destroy(handle).unwrap();
    assert!(matches!(handles::get(handle).map_err(Error::into_kind), Err(ErrorKind::InvalidHandle(_))));
    assert!(matches!(handles::destroy(handle).map_err(Error::into_kind), Err(ErrorKind::InvalidHandle(_))));
    let reused = handles::create_for(cuda(0)).unwrap();
    assert_ne!(reused, handle, "a recycled slot gets a new generation");
    assert!(handles::get(handle).is_err());
    for garbage in [0x1234usize, 0x7fff_0000_1000, usize::MAX] {
        assert!(handles::get(garbage as handles::rmmResource_t).is_err());
    }
    // The live slot's index with any other generation, and a free slot's current generation.
    let (index, generation) = (reused as usize & 0xFFFF_FFFF, reused as usize >> 32);
    for other in [generation + 1, generation + 2, generation.wrapping_sub(1), 0] {
        assert!(handles::get((other << 32 | index) as handles::rmmResource_t).is_err(), "generation {other}");
    }
    assert!(handles::get((2usize << 32 | (index + 500)) as handles::rmmResource_t).is_err(), "a free slot");
    assert!(handles::get(std::ptr::null_mut()).is_err());
    handles::destroy(std::ptr::null_mut()).unwrap();
    handles::destroy(reused).unwrap();
}

#[test]
fn allocations_keep_their_resource_alive_after_its_last_handle() {
    let _guard = setup();
    let handle = handles::create_for(cuda(0)).unwrap();
    let ptr = allocate(&handles::stack(handle).unwrap(), 4096).unwrap();
    handles::destroy(handle).unwrap();
    let found = records::find(ptr).unwrap();
    assert_eq!((found.size, found.stack.resource().name()), (4096, "cuda"));
    let watch = Arc::downgrade(found.stack.resource_arc());
    drop(found);
    legacy::free(ptr, Stream::DEFAULT).unwrap();
    assert!(watch.upgrade().is_none(), "let go of with its last allocation");
}

#[test]
fn legacy_lifecycle_initialize_finalize_and_reinitialize() {
    let _guard = setup();
    assert!(legacy::initialized_options().is_none());
    legacy::initialize(Some(legacy::Options { allocation_mode: legacy::mode::CUDA_MANAGED, ..Default::default() })).unwrap();
    assert_eq!(legacy::initialized_options().unwrap().devices, vec![0]);
    assert!(matches!(legacy::initialize(None).map_err(Error::into_kind), Err(ErrorKind::AlreadyInitialized)));
    assert_eq!(per_device::get(0).unwrap().resource().name(), "managed");
    let ptr = legacy::alloc(1000, Stream::DEFAULT).unwrap();
    let grown = legacy::realloc(ptr, 5000, Stream::DEFAULT).unwrap();
    assert_eq!(records::find(grown).unwrap().stack.resource().name(), "managed");
    assert!(records::find(ptr).is_none(), "realloc frees the old block");
    legacy::finalize().unwrap();
    assert_eq!(per_device::get(0).unwrap().resource().name(), "cuda", "finalize restores the previous resource");
    assert!(matches!(legacy::alloc(8, Stream::DEFAULT).map_err(Error::into_kind), Err(ErrorKind::NotInitialized(_))));
    legacy::free(grown, Stream::DEFAULT).unwrap();
    assert!(matches!(legacy::finalize().map_err(Error::into_kind), Err(ErrorKind::NotInitialized(_))));
    let bad_mode = legacy::Options { allocation_mode: 0x40, ..Default::default() };
    assert!(matches!(legacy::initialize(Some(bad_mode)).map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))));
    let twice = legacy::Options { devices: vec![1, 1], ..Default::default() };
    assert!(matches!(legacy::initialize(Some(twice)).map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))));
    let pool =
        legacy::Options { allocation_mode: legacy::mode::POOL | legacy::mode::CUDA_MANAGED, devices: vec![0, 1], ..Default::default() };
    legacy::initialize(Some(pool)).unwrap();
    let (free, _) = backend().unwrap().mem_get_info(1).unwrap();
    assert_eq!(per_device::get(1).unwrap().resource().pool_size().unwrap(), 32 << 20, "half of the free memory");
    assert_eq!(free, 32 << 20);
    let ptr = legacy::alloc(1 << 20, Stream::DEFAULT).unwrap();
    assert_eq!(records::find(ptr).map(|found| found.size), Some(1 << 20));
    let grown = legacy::realloc(ptr, 3 << 20, Stream::DEFAULT).unwrap();
    assert!(records::find(ptr).is_none());
    legacy::free(grown, Stream::DEFAULT).unwrap();
    legacy::finalize().unwrap();
    legacy::initialize(Some(legacy::Options { allocation_mode: legacy::mode::CUDA_ASYNC, devices: vec![0, 1], ..Default::default() }))
        .unwrap();
    assert_eq!(per_device::get(1).unwrap().resource().name(), "cuda_async");
    let ptr = legacy::alloc(300, Stream::DEFAULT).unwrap();
    assert_eq!(legacy::allocation_offset(ptr + 44).unwrap(), 44);
    legacy::free(ptr, Stream::DEFAULT).unwrap();
    legacy::finalize().unwrap();
}

#[test]
fn the_async_resource_orders_its_own_reuse() {
    let _guard = setup();
    let resource = AsyncResource::new(0, 1 << 20, usize::MAX, 0).unwrap();
    let platform = backend().unwrap();
    let (a, b) = (platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap());
    let ptr = resource.allocate(1 << 16, a).unwrap();
    resource.deallocate(ptr, 1 << 16, a).unwrap();
    let again = resource.allocate(1 << 16, b).unwrap();
    resource.deallocate(again, 1 << 16, b).unwrap();
    resource.trim(0).unwrap();
    assert!(rmm::platform::simulator().unwrap().race_reports().is_empty());
}

#[test]
fn threads_allocate_and_free_across_each_other() {
    let _guard = setup();
    let resource = cuda(0);
    let (tx, rx) = std::sync::mpsc::channel::<usize>();
    let producers: Vec<_> = (0..4)
        .map(|t| {
            let (resource, tx) = (resource.clone(), tx.clone());
            std::thread::spawn(move || {
                for i in 0..200 {
                    let bytes = 256 * (1 + (i + t) % 7);
                    let ptr = records::allocate(resource.stack(), bytes, Stream::PER_THREAD, Holder::Caller).unwrap();
                    tx.send(ptr).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let consumer = std::thread::spawn(move || rx.iter().map(|ptr| legacy::free(ptr, Stream::DEFAULT).unwrap()).count());
    producers.into_iter().for_each(|p| p.join().unwrap());
    assert_eq!(consumer.join().unwrap(), 800);
    assert_eq!(records::totals(), (0, 0));
}
