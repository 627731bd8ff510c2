//! A lock that costs its usual thread no atomic read-modify-write.
//!
//! Each stream's free lists, a statistics adaptor's counters and a logging adaptor's line
//! buffer are locked on every allocation, almost always by one thread. Even an uncontended
//! lock costs an atomic compare-exchange, the largest single cost of an allocate+free pair.
//! This lock is biased to one thread, which takes it with plain loads and stores: it marks
//! itself inside and checks it is still the owner. Another thread that wants the lock revokes
//! the bias: it marks the lock as revoking, then issues `membarrier(PRIVATE_EXPEDITED)`, which
//! runs a full memory barrier on every processor running this process, so that from then on
//! either the owner sees the revocation or the revoker sees the owner inside and waits for it
//! to leave (the asymmetric Dekker handshake of userspace RCU and Folly). From then on the
//! lock is an ordinary spin lock, until one thread has taken it many times in a row: the bias
//! then goes to that thread, and the streak needed next time doubles, so threads that share
//! a lock do not trade the bias back and forth.
//!
//! Where `membarrier` is not available the lock is never biased and behaves as a spin lock.

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// No thread has taken the lock yet: the first one gets the bias.
const FRESH: u64 = 0;
/// Spin-lock mode.
const UNBIASED: u64 = u64::MAX;
/// A revoker is waiting for the owner to leave.
const REVOKING: u64 = u64::MAX - 1;

/// Acquisitions in a row by one thread, in spin-lock mode, before the bias goes to it...
const FIRST_STREAK: u32 = 256;
/// ...doubling with each revocation, up to this.
const LONGEST_STREAK: u32 = 1 << 20;

/// Spins this many times before yielding the processor.
const SPINS_BEFORE_YIELD: u32 = 100;

thread_local! {
    /// This thread's key: unique for the life of the process (never reused by a later thread).
    static THREAD_KEY: Cell<u64> = const { Cell::new(FRESH) };
}

#[inline]
fn thread_key() -> u64 {
    THREAD_KEY.with(|key| match key.get() {
        FRESH => {
            static NEXT: AtomicU64 = AtomicU64::new(1);
            let new = NEXT.fetch_add(1, Ordering::Relaxed);
            key.set(new);
            new
        }
        known => known,
    })
}

/// Spin-lock mode bookkeeping, read and written only by the holder of `locked`.
struct Streak {
    thread: u64,
    length: u32,
    needed: u32,
}

pub struct BiasedLock<T> {
    /// FRESH, the key of the thread the lock is biased to, REVOKING or UNBIASED.
    owner: AtomicU64,
    /// The owner is inside (written by the owner only).
    owner_inside: AtomicBool,
    /// The spin lock of every thread but the owner (and of revokers).
    locked: AtomicBool,
    streak: UnsafeCell<Streak>,
    value: UnsafeCell<T>,
}

// SAFETY: the value and the streak are only reached by the one thread the protocol above lets
// in at a time (the owner inside, or the holder of `locked`).
unsafe impl<T: Send> Sync for BiasedLock<T> {}
unsafe impl<T: Send> Send for BiasedLock<T> {}

pub struct BiasedGuard<'a, T> {
    lock: &'a BiasedLock<T>,
    biased: bool,
}

impl<T> BiasedLock<T> {
    pub const fn new(value: T) -> Self {
        BiasedLock {
            owner: AtomicU64::new(FRESH),
            owner_inside: AtomicBool::new(false),
            locked: AtomicBool::new(false),
            streak: UnsafeCell::new(Streak { thread: 0, length: 0, needed: FIRST_STREAK }),
            value: UnsafeCell::new(value),
        }
    }

    #[inline]
    pub fn lock(&self) -> BiasedGuard<'_, T> {
        let me = thread_key();
        if self.owner.load(Ordering::Relaxed) == me {
            self.owner_inside.store(true, Ordering::Relaxed);
            // The processor may still hold the store above when it loads `owner` below; a
            // revoker's membarrier makes one of the two visible to the other.
            compiler_fence(Ordering::SeqCst);
            if self.owner.load(Ordering::Acquire) == me {
                return BiasedGuard { lock: self, biased: true };
            }
            self.owner_inside.store(false, Ordering::Release);
        }
        self.lock_slow(me)
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, me: u64) -> BiasedGuard<'_, T> {
        self.spin_acquire();
        // SAFETY: `locked` is held.
        let streak = unsafe { &mut *self.streak.get() };
        match self.owner.load(Ordering::Acquire) {
            FRESH => {
                let bias = if barriers_available() { me } else { UNBIASED };
                self.owner.store(bias, Ordering::Release);
            }
            UNBIASED => {
                if streak.thread == me {
                    streak.length += 1;
                } else {
                    *streak = Streak { thread: me, length: 1, ..*streak };
                }
                if streak.length >= streak.needed {
                    streak.length = 0;
                    self.owner.store(me, Ordering::Release);
                }
            }
            owner if owner == me => {}
            _ => {
                self.owner.store(REVOKING, Ordering::SeqCst);
                heavy_barrier();
                let mut spins = 0;
                while self.owner_inside.load(Ordering::Acquire) {
                    backoff(&mut spins);
                }
                streak.needed = streak.needed.saturating_mul(2).min(LONGEST_STREAK);
                self.owner.store(UNBIASED, Ordering::Release);
            }
        }
        BiasedGuard { lock: self, biased: false }
    }

    fn spin_acquire(&self) {
        let mut spins = 0;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                backoff(&mut spins);
            }
        }
    }

    /// Whether the lock is biased to the calling thread now (for tests).
    pub fn is_biased_to_me(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == thread_key()
    }
}

fn backoff(spins: &mut u32) {
    if *spins < SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
        *spins += 1;
    } else {
        std::thread::yield_now();
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
        match self.biased {
            true => self.lock.owner_inside.store(false, Ordering::Release),
            false => self.lock.locked.store(false, Ordering::Release),
        }
    }
}

const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 8;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 16;

fn membarrier(command: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, command, 0, 0) == 0 }
}

/// Whether this process may bias locks: it can make every running thread pass a barrier.
/// `RMM_BIASED_LOCKS=0` turns biasing off.
fn barriers_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        std::env::var("RMM_BIASED_LOCKS").map_or(true, |v| v != "0")
            && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED)
            && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
    })
}

/// A full memory barrier on every processor that runs a thread of this process. Only reached
/// once `barriers_available` said yes; a forked child registers again, and the global command
/// is the last resort (slower, needs no registration).
fn heavy_barrier() {
    if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        || (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        || membarrier(MEMBARRIER_CMD_GLOBAL)
    {
        return;
    }
    // Revoking without the barrier could let two threads in at once; a process in which
    // membarrier worked once and then stopped working cannot go on safely.
    eprintln!("rmm: membarrier stopped working; aborting rather than risking a data race");
    std::process::abort();
}

#[cfg(test)]
mod tests {
    use super::BiasedLock;

    #[test]
    fn the_first_thread_gets_the_bias_and_another_revokes_it() {
        let lock = BiasedLock::new(Vec::new());
        lock.lock().push(1);
        if !super::barriers_available() {
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
