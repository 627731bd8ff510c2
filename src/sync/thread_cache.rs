//! Threads' copies of values published per index (each device's current resource), read with
//! plain loads and taken back from idle threads when a value is replaced.
//!
//! The publisher keeps each index's value (an `Arc<T>`) under a lock of its own and moves the
//! index's generation on with every change (`advance`). Each thread keeps a copy of the `Arc`
//! it last read for each index, with the generation then: a read compares two numbers and takes
//! no lock and no reference count. A copy would keep a replaced value alive until its thread
//! read that index again, so the copies live in per-thread records that the replacing thread
//! reaches through a list of them all, and `retire` takes the stale copies of idle threads:
//!
//! - The owner of a record marks itself in a call (`depth`, a plain store), loads the
//!   generation after a compiler fence only, and clears the mark with a release store when
//!   the call ends.
//! - `retire`, after the generation moved on, issues `barrier::heavy`, then takes the older
//!   copies of every thread it finds outside a call. The barrier makes it one or the other: a
//!   thread outside a call then loads the new generation on its next call and never touches a
//!   stale copy again; a thread that loaded the old generation still shows as in a call until
//!   its outermost call ends.
//! - A thread found in a call is flagged (`sweep`) and drops its older copies itself when its
//!   outermost call ends. A second barrier and a second look cover a thread that was leaving
//!   just then: either it sees the flag or it is seen outside.
//! - Storing a copy and taking one happen under the record's lock, so the owner and a retiring
//!   thread never both drop one `Arc`. A copy stored already stale (the value changed while it
//!   was being read) flags the record, since `retire` may have looked before it was there.
//!
//! Calls nest (a failure callback that allocates, inside an allocation): only the outermost
//! call stores or drops copies, since an outer call may be using the copy an inner one would
//! replace. Where membarrier is not available, `retire` only flags: each thread drops its stale
//! copies when a call of its own ends, or when it exits.
//!
//! Records are never freed: a thread that exits empties its record and leaves it to the next
//! thread that comes, so there are as many records as threads ever ran at once. A forked
//! child's one thread marks its parent's other threads' records dead
//! (`forget_other_threads`): their copies stay where they are, as those threads'
//! thread-locals do, and no lock they held is waited for.

use super::barrier;
use super::bias::backoff;
use std::cell::Cell;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::LocalKey;

/// The generation of an entry that holds no copy: above every generation, so it is never the
/// current one and never older than one.
const EMPTY: u64 = u64::MAX;

/// A record's states. A free record waits for a thread; a dead one belonged to a thread a
/// forked child does not have, and is left alone.
const FREE: u8 = 0;
const IN_USE: u8 = 1;
const DEAD: u8 = 2;

struct Entry<T> {
    /// The generation the copy was read at; `EMPTY` without one.
    generation: AtomicU64,
    /// The copy, from `Arc::into_raw`; null without one.
    value: AtomicPtr<T>,
}

impl<T> Entry<T> {
    const fn new() -> Self {
        Entry { generation: AtomicU64::new(EMPTY), value: AtomicPtr::new(ptr::null_mut()) }
    }
}

/// One thread's copies, on cache lines of their own: the owner writes `depth` on every call,
/// beside the first entries.
#[repr(C, align(128))]
struct Record<T, const N: usize> {
    /// The owner's calls in progress (written by the owner only).
    depth: AtomicU32,
    /// Set by `retire` for an owner that was in a call: drop the stale copies when the
    /// outermost call ends.
    sweep: AtomicBool,
    state: AtomicU8,
    /// Held while a copy is stored or taken. A spin lock rather than a parked one: a forked
    /// child lets go of one that a thread it does not have held.
    locked: AtomicBool,
    /// The next record of the list (records are only ever added, at the head).
    next: AtomicPtr<Record<T, N>>,
    entries: [Entry<T>; N],
    /// The entries own `Arc`s: a record moves between threads as they do.
    _owns: PhantomData<Arc<T>>,
}

/// The lock of a record, let go of on drop.
struct Locked<'a>(&'a AtomicBool);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The `Arc` an entry held, now taken out of it.
fn taken<T>(raw: *mut T) -> Option<Arc<T>> {
    // SAFETY: a non-null entry value came from `Arc::into_raw`, and the swap that took it out
    // of the entry made the caller its only holder.
    (!raw.is_null()).then(|| unsafe { Arc::from_raw(raw) })
}

impl<T, const N: usize> Record<T, N> {
    fn new() -> Self {
        Record {
            depth: AtomicU32::new(0),
            sweep: AtomicBool::new(false),
            state: AtomicU8::new(IN_USE),
            locked: AtomicBool::new(false),
            next: AtomicPtr::new(ptr::null_mut()),
            entries: [const { Entry::new() }; N],
            _owns: PhantomData,
        }
    }

    fn lock(&self) -> Locked<'_> {
        let mut spins = 0;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            backoff(&mut spins);
        }
        Locked(&self.locked)
    }

    /// Stores `value`, read at `generation`, as the copy of `index`; answers the copy it
    /// replaces.
    fn store(&self, index: usize, generation: u64, value: Arc<T>) -> Option<Arc<T>> {
        let _locked = self.lock();
        let entry = &self.entries[index];
        let old = entry.value.swap(Arc::into_raw(value).cast_mut(), Ordering::Relaxed);
        entry.generation.store(generation, Ordering::Relaxed);
        taken(old)
    }

    /// Takes the copies of `indexes` read before generation `current(index)` into `into`.
    fn take_older(&self, indexes: std::ops::Range<usize>, current: impl Fn(usize) -> u64, into: &mut Vec<Arc<T>>) {
        let _locked = self.lock();
        for index in indexes {
            let entry = &self.entries[index];
            if entry.generation.load(Ordering::Relaxed) < current(index) {
                into.extend(taken(entry.value.swap(ptr::null_mut(), Ordering::Relaxed)));
                entry.generation.store(EMPTY, Ordering::Relaxed);
            }
        }
    }
}

/// A thread's membership: its record, once it has one. Declare one per `ThreadCache` with
/// `thread_local!` (const-initialized with `Member::new()`) and pass that same key to every
/// call on the cache; when the thread ends, it empties the record and frees it for the next
/// thread.
pub struct Member<T: Send + Sync + 'static, const N: usize> {
    record: Cell<Option<&'static Record<T, N>>>,
}

impl<T: Send + Sync + 'static, const N: usize> Member<T, N> {
    /// A thread's membership before its first call.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Member { record: Cell::new(None) }
    }
}

impl<T: Send + Sync + 'static, const N: usize> Drop for Member<T, N> {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            let mut copies = Vec::new();
            record.take_older(0..N, |_| EMPTY, &mut copies);
            record.state.store(FREE, Ordering::Release);
            // Dropped after the record is free: a value's destructor may call back in, and
            // finds this thread without a record then (its thread-local is going).
            drop(copies);
        }
    }
}

/// A call in progress on the owner's record; ends on drop (unwinding included, so a panic
/// caught above does not leave the thread marked in a call for good).
struct Call<'a, T: Send + Sync + 'static, const N: usize> {
    cache: &'a ThreadCache<T, N>,
    record: &'static Record<T, N>,
    /// The depth before this call: 0 for an outermost call.
    outer: u32,
}

impl<'a, T: Send + Sync + 'static, const N: usize> Call<'a, T, N> {
    #[inline(always)]
    fn enter(cache: &'a ThreadCache<T, N>, record: &'static Record<T, N>) -> Self {
        let outer = record.depth.load(Ordering::Relaxed);
        record.depth.store(outer + 1, Ordering::Relaxed);
        // The processor may still hold the store above when the caller loads the generation;
        // `retire`'s barrier makes one of the two visible to the other.
        compiler_fence(Ordering::SeqCst);
        Call { cache, record, outer }
    }
}

impl<T: Send + Sync + 'static, const N: usize> Drop for Call<'_, T, N> {
    #[inline(always)]
    fn drop(&mut self) {
        self.record.depth.store(self.outer, Ordering::Release);
        // Pairs with `retire`'s second barrier: it sees this thread outside, or this thread
        // sees the flag. (A nested call sees it too, and leaves it to the outermost.)
        compiler_fence(Ordering::SeqCst);
        if self.record.sweep.load(Ordering::Relaxed) {
            self.cache.sweep_after(self.record, self.outer);
        }
    }
}

/// Values published per index (`N` of them), with every thread's copies (see the module
/// comment). Lives in a `static`, with its threads' `Member` in a `thread_local!` whose key
/// every call names (`members`): a key known where the call is compiled costs a few
/// instructions to reach, where one read from the cache would cost an indirect call.
pub struct ThreadCache<T: Send + Sync + 'static, const N: usize> {
    /// Each index's generation: 0 until a value is published, then moved on by `advance`.
    generations: [AtomicU64; N],
    /// The head of the list of records.
    records: AtomicPtr<Record<T, N>>,
    /// Run when a thread joins, before it gets its record (the publisher's set-up, such as
    /// its fork handler).
    on_join: fn(),
}

/// Where a cache's threads keep their membership.
pub type Members<T, const N: usize> = LocalKey<Member<T, N>>;

impl<T: Send + Sync + 'static, const N: usize> ThreadCache<T, N> {
    /// An empty cache.
    pub const fn new(on_join: fn()) -> Self {
        ThreadCache { generations: [const { AtomicU64::new(0) }; N], records: AtomicPtr::new(ptr::null_mut()), on_join }
    }

    /// The generation of `index` now: read it under the publisher's lock, with the value.
    pub fn generation(&self, index: usize) -> u64 {
        self.generations[index].load(Ordering::Acquire)
    }

    /// Moves the generation of `index` on, under the publisher's lock, as its value changes;
    /// answers the new generation (for `retire`).
    pub fn advance(&self, index: usize) -> u64 {
        self.generations[index].fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Runs `use_it` on the calling thread's copy of `index` if it is current, else on what
    /// `current` reads from the publisher (the value and its generation), which becomes the
    /// thread's copy.
    #[inline(always)]
    pub fn with<R, E>(
        &'static self,
        members: &'static Members<T, N>,
        index: usize,
        use_it: impl FnOnce(&Arc<T>) -> Result<R, E>,
        current: impl FnOnce() -> Result<(Arc<T>, u64), E>,
    ) -> Result<R, E> {
        // `try_with`: a thread-local destructor that calls in after the membership is gone
        // still gets its answer, without a copy.
        let record = match members.try_with(|member| member.record.get()) {
            Ok(Some(record)) => record,
            Ok(None) => match members.try_with(|member| self.join(member)) {
                Ok(record) => record,
                Err(_) => return Self::uncached(use_it, current),
            },
            Err(_) => return Self::uncached(use_it, current),
        };
        let call = Call::enter(self, record);
        let generation = self.generations[index].load(Ordering::Acquire);
        let entry = &record.entries[index];
        if entry.generation.load(Ordering::Relaxed) == generation {
            // SAFETY: an entry whose generation is current holds a pointer from
            // `Arc::into_raw` (stored by this thread, with it). Only this thread replaces it,
            // and only in an outermost call, after this one; `retire` takes it only once the
            // generation moved on and this thread is seen outside every call, which this call
            // (marked above, before the generation was loaded) rules out. So the `Arc` lives
            // at least as long as `copy`, which never drops it.
            let copy = ManuallyDrop::new(unsafe { Arc::from_raw(entry.value.load(Ordering::Relaxed)) });
            return use_it(&copy);
        }
        self.refresh(record, call.outer, index, use_it, current)
    }

    /// `with` where the thread's copy is not current: `record`'s owner is in a call, `outer`
    /// deep before it.
    #[cold]
    #[inline(never)]
    fn refresh<R, E>(
        &self,
        record: &Record<T, N>,
        outer: u32,
        index: usize,
        use_it: impl FnOnce(&Arc<T>) -> Result<R, E>,
        current: impl FnOnce() -> Result<(Arc<T>, u64), E>,
    ) -> Result<R, E> {
        let (value, generation) = current()?;
        if outer == 0 {
            drop(record.store(index, generation, value.clone()));
            // A copy stored stale (the value changed meanwhile), or stored by a thread that
            // `retire` did not find in the list yet, goes when this call ends.
            if self.generations[index].load(Ordering::SeqCst) != generation {
                record.sweep.store(true, Ordering::Relaxed);
            }
        }
        use_it(&value)
    }

    #[cold]
    fn uncached<R, E>(use_it: impl FnOnce(&Arc<T>) -> Result<R, E>, current: impl FnOnce() -> Result<(Arc<T>, u64), E>) -> Result<R, E> {
        let (value, _) = current()?;
        use_it(&value)
    }

    /// Gives the calling thread a record: a free one, or a new one added to the list.
    #[cold]
    #[inline(never)]
    fn join(&self, member: &Member<T, N>) -> &'static Record<T, N> {
        (self.on_join)();
        let free = self.records().find(|record| record.state.compare_exchange(FREE, IN_USE, Ordering::SeqCst, Ordering::Relaxed).is_ok());
        let record = free.unwrap_or_else(|| {
            let record: &'static Record<T, N> = Box::leak(Box::new(Record::new()));
            let mut head = self.records.load(Ordering::Relaxed);
            loop {
                record.next.store(head, Ordering::Relaxed);
                match self.records.compare_exchange_weak(head, ptr::from_ref(record).cast_mut(), Ordering::SeqCst, Ordering::Relaxed) {
                    Ok(_) => break record,
                    Err(now) => head = now,
                }
            }
        });
        member.record.set(Some(record));
        record
    }

    fn records(&self) -> impl Iterator<Item = &'static Record<T, N>> {
        let mut next = self.records.load(Ordering::Acquire);
        std::iter::from_fn(move || {
            // SAFETY: the list holds only records leaked by `join`, which are never freed.
            let record: &'static Record<T, N> = unsafe { next.as_ref() }?;
            next = record.next.load(Ordering::Acquire);
            Some(record)
        })
    }

    /// A call `outer` deep ended on a flagged record: the outermost drops the stale copies.
    #[cold]
    #[inline(never)]
    fn sweep_after(&self, record: &Record<T, N>, outer: u32) {
        if outer == 0 {
            self.sweep(record);
        }
    }

    /// The owner, outside every call, drops its copies that are not current (after a flag).
    fn sweep(&self, record: &Record<T, N>) {
        // A swap, not a store: it reads the latest flag, and with it the generation that the
        // `retire` which set it had moved on.
        record.sweep.swap(false, Ordering::Acquire);
        let mut stale = Vec::new();
        record.take_older(0..N, |index| self.generations[index].load(Ordering::Acquire), &mut stale);
        drop(stale);
    }

    /// After `advance(index)` answered `generation`: drops the copies of `index` read before
    /// it, at once for every thread outside a call, and as each other thread's outermost call
    /// ends. `reach_idle` false, or a process without membarrier, only flags each thread to
    /// drop them when a call of its own ends (the calling thread drops its own at once). Runs
    /// the replaced values' destructors where it drops the last copy: call it holding no lock
    /// they may take.
    pub fn retire(&self, members: &'static Members<T, N>, index: usize, generation: u64, reach_idle: bool) {
        let in_use = |record: &&'static Record<T, N>| record.state.load(Ordering::Acquire) == IN_USE;
        let older = |_| generation;
        let mut stale = Vec::new();
        if reach_idle && barrier::available() {
            barrier::heavy();
            let mut busy = Vec::new();
            for record in self.records().filter(in_use) {
                if record.depth.load(Ordering::Acquire) == 0 {
                    record.take_older(index..index + 1, older, &mut stale);
                } else {
                    record.sweep.store(true, Ordering::Release);
                    busy.push(record);
                }
            }
            if !busy.is_empty() {
                barrier::heavy();
                for record in busy.into_iter().filter(|record| record.depth.load(Ordering::Acquire) == 0) {
                    record.take_older(index..index + 1, older, &mut stale);
                }
            }
        } else {
            self.records().filter(in_use).for_each(|record| record.sweep.store(true, Ordering::Release));
            if let Ok(Some(mine)) = members.try_with(|member| member.record.get()) {
                if mine.depth.load(Ordering::Relaxed) == 0 {
                    self.sweep(mine);
                }
            }
        }
        drop(stale);
    }

    /// In a forked child, on its one thread (a fork handler): marks the records of every other
    /// thread dead, their copies left as they are (those threads' thread-locals stay too), and
    /// lets go of every record's lock, which a thread the child does not have may have held.
    /// Touches atomics and the calling thread's own thread-local only.
    pub fn forget_other_threads(&self, members: &'static Members<T, N>) {
        let mine = members.try_with(|member| member.record.get()).ok().flatten();
        for record in self.records() {
            if !mine.is_some_and(|mine| ptr::eq(mine, record)) {
                let _ = record.state.compare_exchange(IN_USE, DEAD, Ordering::Relaxed, Ordering::Relaxed);
            }
            record.locked.store(false, Ordering::Release);
        }
    }

    /// Records by state (free, in use, dead), for tests.
    pub fn census(&self) -> [usize; 3] {
        let mut counts = [0; 3];
        self.records().for_each(|record| counts[record.state.load(Ordering::Acquire) as usize] += 1);
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::{Member, ThreadCache};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc};

    /// A value that counts its drops.
    struct Counted;

    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    impl Drop for Counted {
        fn drop(&mut self) {
            DROPPED.fetch_add(1, Ordering::SeqCst);
        }
    }

    thread_local! {
        static MEMBERS: Member<Counted, 2> = const { Member::new() };
    }
    static CACHE: ThreadCache<Counted, 2> = ThreadCache::new(|| {});
    static PUBLISHED: parking_lot::Mutex<[Option<Arc<Counted>>; 2]> = parking_lot::Mutex::new([None, None]);
    /// The tests count drops of one process-wide counter: one at a time.
    static SERIAL: parking_lot::Mutex<()> = parking_lot::Mutex::new(());

    fn publish(index: usize, reach_idle: bool) -> Arc<Counted> {
        let value = Arc::new(Counted);
        let generation = {
            let mut published = PUBLISHED.lock();
            published[index] = Some(value.clone());
            CACHE.advance(index)
        };
        CACHE.retire(&MEMBERS, index, generation, reach_idle);
        value
    }

    /// Runs `use_it` on the calling thread's copy of `index`.
    fn read<R>(index: usize, use_it: impl FnOnce(&Arc<Counted>) -> R) -> R {
        let current = || {
            let published = PUBLISHED.lock();
            Ok::<_, ()>((published[index].clone().unwrap(), CACHE.generation(index)))
        };
        CACHE.with(&MEMBERS, index, |value| Ok(use_it(value)), current).unwrap()
    }

    /// A thread that does what it is sent, answers, and waits for more (alive and idle).
    struct Worker {
        jobs: Option<mpsc::Sender<Box<dyn FnOnce() -> usize + Send>>>,
        answers: mpsc::Receiver<usize>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Worker {
        fn spawn() -> Self {
            let (jobs, received) = mpsc::channel::<Box<dyn FnOnce() -> usize + Send>>();
            let (answer, answers) = mpsc::channel();
            let thread = std::thread::spawn(move || received.into_iter().for_each(|job| answer.send(job()).unwrap()));
            Worker { jobs: Some(jobs), answers, thread: Some(thread) }
        }

        fn run(&self, job: impl FnOnce() -> usize + Send + 'static) -> usize {
            self.jobs.as_ref().unwrap().send(Box::new(job)).unwrap();
            self.answers.recv().unwrap()
        }
    }

    impl Drop for Worker {
        fn drop(&mut self) {
            drop(self.jobs.take());
            self.thread.take().unwrap().join().unwrap();
        }
    }

    /// A thread that read index 0 and waits: the replaced value goes at `retire` with the
    /// barrier; without it, after the thread's next call.
    #[test]
    fn an_idle_threads_copy_goes_at_retire() {
        let _serial = SERIAL.lock();
        for reach_idle in [true, false] {
            let first = publish(0, reach_idle);
            let worker = Worker::spawn();
            assert_eq!(worker.run(|| read(0, |value| Arc::as_ptr(value) as usize)), Arc::as_ptr(&first) as usize);
            let second = publish(0, reach_idle);
            let before = DROPPED.load(Ordering::SeqCst);
            drop(first);
            let gone_at_once = DROPPED.load(Ordering::SeqCst) == before + 1;
            assert_eq!(gone_at_once, reach_idle && super::barrier::available(), "reach_idle {reach_idle}");
            assert_eq!(worker.run(|| read(0, |value| Arc::as_ptr(value) as usize)), Arc::as_ptr(&second) as usize);
            assert_eq!(DROPPED.load(Ordering::SeqCst), before + 1, "gone after the thread's next call at the latest");
        }
    }

    /// A copy in use by a call is not taken from under it; the thread drops it itself when the
    /// call ends, while it stays alive.
    #[test]
    fn a_copy_in_use_goes_when_the_call_ends() {
        let _serial = SERIAL.lock();
        let first = publish(1, true);
        let weak = Arc::downgrade(&first);
        let (entered, inside) = mpsc::channel::<()>();
        let (replaced, go_on) = mpsc::channel::<()>();
        let worker = Worker::spawn();
        worker
            .jobs
            .as_ref()
            .unwrap()
            .send(Box::new(move || {
                read(1, |_| ());
                read(1, |value| {
                    entered.send(()).unwrap();
                    go_on.recv().unwrap();
                    Arc::strong_count(value)
                })
            }))
            .unwrap();
        inside.recv().unwrap();
        let second = publish(1, true);
        drop(first);
        assert!(weak.upgrade().is_some(), "the worker's call still uses it");
        replaced.send(()).unwrap();
        assert!(worker.answers.recv().unwrap() >= 1);
        assert!(weak.upgrade().is_none(), "dropped as the worker's call ended");
        drop(second);
    }
}
