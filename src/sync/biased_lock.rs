//! A lock that costs its usual thread no atomic read-modify-write: a `Bias` in front of a
//! spin lock. The thread the lock is biased to enters with plain loads and stores; any other
//! thread takes the spin lock, revoking the bias first. In spin-lock mode, a thread that takes
//! the lock many times in a row gets the bias, and the streak needed next time doubles with
//! each revocation, so threads that share a lock do not trade the bias back and forth.
//!
//! Locks of one `BiasFamily` (many shards of one structure, split by address) stop biasing
//! together, for good, once their biases are taken from their owners often (many times within
//! a second): each such revocation interrupts every processor running the process (a
//! membarrier), and a family whose state wanders between threads would pay one for every shard
//! it wanders through, as a JVM stops biasing a class whose locks keep being revoked.

use super::bias::{backoff, thread_key, thread_running, Bias, Inside};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Acquisitions in a row by one thread, in spin-lock mode, before the bias goes to it...
const FIRST_STREAK: u32 = 256;
/// ...doubling with each revocation, up to this.
const LONGEST_STREAK: u32 = 1 << 20;

/// A family closes when its locks lose this many biases (each a membarrier), whether their
/// owners still run or ended (a thread per task leaves the next one its biases to take)...
const FAMILY_REVOCATIONS: u32 = 64;
/// ...within this long. The records of pointers handed out are spread over shards by 2 MiB
/// address windows; threads on streams that come and go hand chunks to one another, and each
/// shard they reach was biased to the thread that used it last. Measured on simulated devices,
/// 8 threads making a stream each and walking 5,000 random blocks of up to 4 MiB on it made one
/// membarrier per 40 allocations (examples/short_lived_streams), where a program whose threads
/// keep to their own memory loses a bias now and then.
const FAMILY_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// Locks that stop biasing together (see the module's comment). Read on the slow path only:
/// the owner's way in does not look at it.
pub struct BiasFamily {
    closed: AtomicBool,
    /// When the current window began and the biases lost in it.
    window: Mutex<Option<(std::time::Instant, u32)>>,
    /// Calls its argument with the bias of every lock of the family (`BiasedLock::bias`), which
    /// are revoked all at once, with one membarrier, as the family closes.
    members: fn(&mut dyn FnMut(&'static Bias)),
}

impl BiasFamily {
    /// A family whose locks may be biased until it closes; `members` visits their biases.
    pub const fn new(members: fn(&mut dyn FnMut(&'static Bias))) -> Self {
        BiasFamily { closed: AtomicBool::new(false), window: Mutex::new(None), members }
    }

    /// Whether the family's locks may still be biased.
    fn open(&self) -> bool {
        !self.closed.load(Ordering::Relaxed)
    }

    /// A bias of the family was taken from its owner, running or ended (after a membarrier,
    /// so the clock and the lock cost nothing that counts).
    fn note_revocation(&self) {
        let now = std::time::Instant::now();
        let mut window = self.window.lock();
        let (began, lost) = match *window {
            Some((began, lost)) if now.duration_since(began) < FAMILY_WINDOW => (began, lost + 1),
            _ => (now, 1),
        };
        *window = Some((began, lost));
        drop(window);
        if lost >= FAMILY_REVOCATIONS && !self.closed.swap(true, Ordering::Relaxed) {
            // Each lock still biased would cost a membarrier when another thread next comes.
            Bias::revoke_all(self.members);
        }
    }
}

/// Spin-lock mode bookkeeping, read and written only by the holder of `locked`.
struct Streak {
    thread: u64,
    length: u32,
    needed: u32,
}

/// A value behind a lock whose usual thread enters with plain loads and stores (see the
/// module's comment).
pub struct BiasedLock<T> {
    bias: Bias,
    /// The spin lock of every thread but the owner (and of revokers).
    locked: AtomicBool,
    streak: UnsafeCell<Streak>,
    /// None: the lock stops biasing only by its own streaks.
    family: Option<&'static BiasFamily>,
    value: UnsafeCell<T>,
}

// SAFETY: the value and the streak are only reached by the one thread the protocol lets in at
// a time (the owner inside, or the holder of `locked`).
unsafe impl<T: Send> Sync for BiasedLock<T> {}
unsafe impl<T: Send> Send for BiasedLock<T> {}

/// Access to a `BiasedLock`'s value until it drops. Not `Send`: the owner's way in is a flag
/// only the owner may clear.
pub struct BiasedGuard<'a, T> {
    lock: &'a BiasedLock<T>,
    /// Some for the owner; None for the holder of the spin lock.
    inside: Option<Inside<'a>>,
    /// Another thread held the spin lock when this one came.
    contended: bool,
    _holder_thread: std::marker::PhantomData<*const ()>,
}

impl<T> BiasedLock<T> {
    /// An unlocked lock around `value`, biased to no thread yet: `const`, so that statics
    /// (the pointer records' shards) need no lazy initialization on the hot path.
    pub const fn new(value: T) -> Self {
        Self::with_family(value, None)
    }

    /// `new`, in `family`: no thread gets the lock's bias once the family has closed.
    pub const fn in_family(value: T, family: &'static BiasFamily) -> Self {
        Self::with_family(value, Some(family))
    }

    const fn with_family(value: T, family: Option<&'static BiasFamily>) -> Self {
        BiasedLock {
            bias: Bias::new(),
            locked: AtomicBool::new(false),
            streak: UnsafeCell::new(Streak { thread: 0, length: 0, needed: FIRST_STREAK }),
            family,
            value: UnsafeCell::new(value),
        }
    }

    /// The lock's bias, for its family's list of members (`BiasFamily::new`).
    pub fn bias(&self) -> &Bias {
        &self.bias
    }

    /// Whether a thread may be given the bias now.
    fn may_bias(&self) -> bool {
        self.family.is_none_or(BiasFamily::open)
    }

    /// Locks, through the bias when the calling thread holds it or may take it, else through
    /// the spin lock (revoking another thread's bias first). Not reentrant: locking again on
    /// the thread inside panics.
    #[inline(always)]
    pub fn lock(&self) -> BiasedGuard<'_, T> {
        match self.bias.enter_claiming(|| self.may_bias()) {
            Some(inside) => BiasedGuard { lock: self, inside: Some(inside), contended: false, _holder_thread: std::marker::PhantomData },
            None => self.lock_slow(),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self) -> BiasedGuard<'_, T> {
        let mut spins = 0;
        let mut contended = false;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            contended = true;
            while self.locked.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
        }
        // SAFETY: `locked` is held.
        let streak = unsafe { &mut *self.streak.get() };
        let revoked = self.bias.revoke_owner(|| {});
        if let (Some(_), Some(family)) = (revoked, self.family) {
            family.note_revocation();
        }
        match revoked {
            // The owner has ended (a thread pool replaced it): this thread takes its place at
            // once, and threads that come and go do not make the next one wait longer.
            Some(owner) if !thread_running(owner) => {
                if self.may_bias() {
                    // SAFETY: this thread holds `locked`, which every other thread takes
                    // before touching the value, and the bias was just revoked (unheld).
                    unsafe { self.bias.give_to_me() };
                }
            }
            Some(_) => streak.needed = streak.needed.saturating_mul(2).min(LONGEST_STREAK),
            None if !self.may_bias() => {}
            None => {
                let me = thread_key();
                if streak.thread == me {
                    streak.length += 1;
                } else {
                    *streak = Streak { thread: me, length: 1, ..*streak };
                }
                if streak.length >= streak.needed {
                    streak.length = 0;
                    // SAFETY: this thread holds `locked`, which every other thread takes before
                    // touching the value, and the bias is unheld (not revoked: no owner).
                    unsafe { self.bias.give_to_me() };
                }
            }
        }
        BiasedGuard { lock: self, inside: None, contended, _holder_thread: std::marker::PhantomData }
    }

    /// Gives the lock's bias up if the calling thread holds it and is not inside
    /// (`Bias::relinquish`): for a value its thread is done with.
    pub fn relinquish(&self) {
        self.bias.relinquish();
    }

    /// Whether the lock is biased to the calling thread now (for tests).
    pub fn is_biased_to_me(&self) -> bool {
        self.bias.is_mine()
    }
}

impl<T> BiasedGuard<'_, T> {
    /// Whether the holder came in through the bias (not through the spin lock): then another
    /// thread that takes the lock revokes the bias first, which makes every thread of the
    /// process pass a barrier (see `Bias`).
    #[inline]
    pub fn is_biased(&self) -> bool {
        self.inside.is_some()
    }

    /// Whether another thread held the lock when this one came: threads that use the value at
    /// the same time, not merely in turn.
    #[inline]
    pub fn was_contended(&self) -> bool {
        self.contended
    }
}

impl<T> std::ops::Deref for BiasedGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the value exists.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> std::ops::DerefMut for BiasedGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, so no other reference to the value exists.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for BiasedGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.inside.is_none() {
            self.lock.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::bias::Bias;
    use super::{BiasFamily, BiasedLock};
    use std::sync::Barrier;

    const MEMBERS: usize = 2 * super::FAMILY_REVOCATIONS as usize;

    /// Once a family's biases were taken from a running thread `FAMILY_REVOCATIONS` times
    /// within `FAMILY_WINDOW` (milliseconds here), the rest are taken at once, but for one its
    /// owner is inside, which stays its owner's; no lock of the family is biased again, neither
    /// a fresh one's first thread nor after a long streak; a lock outside the family still is.
    #[test]
    fn a_family_whose_biases_keep_moving_stops_biasing() {
        if !super::super::bias::barriers_available() {
            return;
        }
        static FAMILY: BiasFamily = BiasFamily::new(members);
        static LOCKS: [BiasedLock<u32>; MEMBERS] = [const { BiasedLock::in_family(0, &FAMILY) }; MEMBERS];
        fn members(visit: &mut dyn FnMut(&'static Bias)) {
            LOCKS.iter().for_each(|lock| visit(lock.bias()));
        }
        let (owned, closed, checked) = (Barrier::new(2), Barrier::new(2), Barrier::new(2));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for lock in &LOCKS {
                    *lock.lock() += 1;
                    assert!(lock.is_biased_to_me(), "an open family's fresh lock goes to its first thread");
                }
                let inside = LOCKS[MEMBERS - 1].lock();
                owned.wait();
                closed.wait();
                let (taken, kept) = LOCKS.split_at(MEMBERS - 1);
                assert!(taken.iter().all(|lock| !lock.is_biased_to_me()), "the family's biases went as it closed");
                assert!(kept[0].is_biased_to_me(), "the lock its owner was inside stays biased");
                drop(inside);
                checked.wait(); // the owner runs while its biases are taken
            });
            owned.wait();
            for lock in &LOCKS[..MEMBERS / 2] {
                *lock.lock() += 1;
                assert!(!lock.is_biased_to_me());
            }
            closed.wait();
            checked.wait();
        });
        let fresh = BiasedLock::in_family(0u32, &FAMILY);
        for _ in 0..4 * super::FIRST_STREAK {
            *fresh.lock() += 1;
            assert!(!fresh.is_biased_to_me(), "a closed family biases no lock");
        }
        let outside = BiasedLock::new(0u32);
        *outside.lock() += 1;
        assert!(outside.is_biased_to_me());
        for lock in &LOCKS {
            *lock.lock() += 1;
            assert!(!lock.is_biased_to_me());
        }
        assert!(LOCKS[..MEMBERS / 2].iter().all(|lock| *lock.lock() == 3));
        assert!(LOCKS[MEMBERS / 2..].iter().all(|lock| *lock.lock() == 2));
        assert_eq!(*fresh.lock(), 4 * super::FIRST_STREAK);
    }

    /// Threads that each do one task and end leave their biases to the next thread, and each
    /// taking over costs a membarrier too: those close a family as well.
    #[test]
    fn biases_taken_over_from_ended_threads_close_a_family_too() {
        if !super::super::bias::barriers_available() {
            return;
        }
        static FAMILY: BiasFamily = BiasFamily::new(members);
        static LOCKS: [BiasedLock<u32>; MEMBERS] = [const { BiasedLock::in_family(0, &FAMILY) }; MEMBERS];
        fn members(visit: &mut dyn FnMut(&'static Bias)) {
            LOCKS.iter().for_each(|lock| visit(lock.bias()));
        }
        std::thread::scope(|scope| {
            scope.spawn(|| {
                for lock in &LOCKS {
                    *lock.lock() += 1;
                    assert!(lock.is_biased_to_me());
                }
            });
        });
        for lock in &LOCKS[..MEMBERS / 2] {
            *lock.lock() += 1;
        }
        let fresh = BiasedLock::in_family(0u32, &FAMILY);
        *fresh.lock() += 1;
        assert!(!fresh.is_biased_to_me(), "a closed family biases no lock");
        assert!(LOCKS.iter().all(|lock| !lock.is_biased_to_me()), "nor keeps one taken over");
        assert!(LOCKS[..MEMBERS / 2].iter().all(|lock| *lock.lock() == 2));
    }

    #[test]
    fn the_first_thread_gets_the_bias_and_another_revokes_it() {
        let lock = BiasedLock::new(Vec::new());
        lock.lock().push(1);
        if !super::super::bias::barriers_available() {
            return;
        }
        assert!(lock.is_biased_to_me());
        std::thread::scope(|scope| {
            scope.spawn(|| {
                lock.lock().push(2);
                assert!(!lock.is_biased_to_me());
                // A long streak moves the bias here: twice the first streak, since a
                // revocation doubles it.
                for i in 0..2 * super::FIRST_STREAK {
                    lock.lock().push(i as i32);
                }
                assert!(lock.is_biased_to_me());
            });
        });
        assert!(!lock.is_biased_to_me());
        lock.lock().push(3);
        assert_eq!(lock.lock().len(), 3 + 2 * super::FIRST_STREAK as usize);
    }

    /// A thread pool that replaces its threads: each new thread takes the bias of the one that
    /// ended at its first call, and the next never waits for a longer streak.
    #[test]
    fn a_thread_takes_the_place_of_an_owner_that_ended() {
        let lock = std::sync::Arc::new(BiasedLock::new(0u64));
        for _ in 0..20 {
            let lock = lock.clone();
            // join waits for the thread's end (its thread-locals are gone then).
            std::thread::spawn(move || {
                *lock.lock() += 1;
                assert_eq!(lock.is_biased_to_me(), super::super::bias::barriers_available());
                *lock.lock() += 1;
            })
            .join()
            .unwrap();
        }
        assert_eq!(*lock.lock(), 40);
    }

    /// Threads that take turns in streaks, so the bias keeps being revoked and regained, never
    /// lose an update of a value that is not atomic.
    #[test]
    fn updates_survive_revocations() {
        let lock = BiasedLock::new((0u64, Vec::<u32>::new()));
        std::thread::scope(|scope| {
            for thread in 0..3u32 {
                let lock = &lock;
                scope.spawn(move || {
                    for round in 0..40u32 {
                        let streak = if (round + thread) % 3 == 0 { 600 } else { 5 };
                        for _ in 0..streak {
                            let mut guard = lock.lock();
                            guard.0 += 1;
                            guard.1.push(thread);
                        }
                    }
                });
            }
        });
        let guard = lock.lock();
        assert_eq!(guard.0 as usize, guard.1.len());
        let expected: u64 = (0..3u32).map(|t| (0..40u32).map(|r| if (r + t) % 3 == 0 { 600 } else { 5 }).sum::<u64>()).sum();
        assert_eq!(guard.0, expected);
    }
}
