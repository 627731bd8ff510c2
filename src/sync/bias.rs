//! Ownership of shared state by one thread, at no atomic read-modify-write for that thread.
//!
//! A stream's free lists, a statistics adaptor's counters and a logging adaptor's line buffer
//! are touched on every allocation, almost always by one thread, and even an uncontended
//! atomic compare-exchange is among the largest costs of an allocate+free pair. A `Bias`
//! lets one thread, the owner, in with plain loads and stores: it marks itself inside, then
//! checks it is still the owner. Another thread revokes the bias: it marks the bias as
//! revoking, then issues `membarrier(PRIVATE_EXPEDITED)` (`barrier::heavy`), which runs a full
//! memory barrier on every processor running this process, so that from then on either the
//! owner sees the revocation or the revoker sees the owner inside and waits for it to leave (the
//! asymmetric Dekker handshake of userspace RCU and Folly). What the owner does is then visible
//! to the revoker, and whoever uses the state next must use its shared (atomic or locked) path.
//!
//! The first thread to enter gets the bias. Where `membarrier` is not available, or
//! `RMM_BIASED_LOCKS=0`, no thread ever gets it.
//!
//! Each owner marks itself inside in a flag of its own: the owner word carries an epoch, which
//! moves on with every new owner, and each epoch has its flag. An owner that read the word, was
//! descheduled before it marked itself inside, and had the bias revoked and given to another
//! thread meanwhile then marks (and clears) its own epoch's flag, never the new owner's: with
//! one shared flag it could clear the new owner's mark while that owner was inside (letting a
//! revoker in beside it), or find the mark set and take itself for reentrant.

use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::HashSet;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::OnceLock;

/// No thread has entered yet: the first one gets the bias.
const FRESH: u64 = 0;
/// No owner: everyone takes the shared path.
const UNBIASED: u64 = u64::MAX;
/// A revoker is waiting for the owner to leave.
const REVOKING: u64 = u64::MAX - 1;
/// The key of a thread that has not needed one yet. No owner is ever this, so such a thread
/// is never let in as the owner before it takes a key of its own.
const UNASSIGNED: u64 = u64::MAX - 2;
/// An owner word is the owner's key shifted left by `EPOCH_BITS`, with its epoch below: the
/// owners of `EPOCHS` consecutive epochs mark themselves inside in flags of their own.
const EPOCH_BITS: u32 = 3;
const EPOCHS: usize = 1 << EPOCH_BITS;
const EPOCH_MASK: u64 = EPOCHS as u64 - 1;

/// The key in an owner word (FRESH, REVOKING and UNBIASED give no key a thread has).
#[inline(always)]
fn key_of(word: u64) -> u64 {
    word >> EPOCH_BITS
}

thread_local! {
    /// This thread's key: unique for the life of the process (never reused by a later thread).
    static THREAD_KEY: Cell<u64> = const { Cell::new(UNASSIGNED) };
    /// Takes the thread's key out of `RUNNING` when the thread ends.
    static ENDING: Ending = const { Ending };
}

/// The keys of the threads that have one and have not begun to end. A bias whose owner has
/// ended goes to the next thread that comes, as in a thread pool that replaces its threads:
/// its owner will never come back.
static RUNNING: Mutex<Option<HashSet<u64>>> = Mutex::new(None);

struct Ending;

impl Drop for Ending {
    fn drop(&mut self) {
        let key = THREAD_KEY.get();
        if let Some(running) = RUNNING.lock().as_mut() {
            running.remove(&key);
        }
    }
}

/// The calling thread's key: unique for the life of the process, so an owner that has ended
/// is never mistaken for a later thread (thread ids are reused; keys are not).
#[inline]
pub fn thread_key() -> u64 {
    match THREAD_KEY.get() {
        UNASSIGNED => assign_thread_key(),
        known => known,
    }
}

#[cold]
fn assign_thread_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let new = NEXT.fetch_add(1, Ordering::Relaxed);
    THREAD_KEY.set(new);
    // A thread whose thread-locals are gone already (a call from a destructor) never counts as
    // running: nothing would take its key out.
    if ENDING.try_with(|_| ()).is_ok() {
        RUNNING.lock().get_or_insert_with(HashSet::new).insert(new);
    }
    new
}

/// Whether the thread with `key` is still running (it has not begun to end).
pub fn thread_running(key: u64) -> bool {
    RUNNING.lock().as_ref().is_some_and(|running| running.contains(&key))
}

/// Shared state's owner thread, if it has one, and whether that owner is inside (see the
/// module's comment for the handshake with a revoker).
pub struct Bias {
    /// FRESH, the owner word (the owning thread's key and its epoch), REVOKING or UNBIASED.
    owner: AtomicU64,
    /// The owner of each epoch is inside (each written by that epoch's owner only).
    inside: [AtomicBool; EPOCHS],
    /// The epoch the next owner gets (modulo `EPOCHS`).
    next_epoch: AtomicU8,
}

/// The owner inside; it leaves when the guard drops. Not `Send`: only the owner may leave,
/// since only the owner's own flag keeps others out.
pub struct Inside<'a> {
    flag: &'a AtomicBool,
    _owner_thread: std::marker::PhantomData<*const ()>,
}

impl Drop for Inside<'_> {
    #[inline]
    fn drop(&mut self) {
        self.flag.store(false, Ordering::Release);
    }
}

impl Default for Bias {
    fn default() -> Self {
        Self::new()
    }
}

impl Bias {
    /// A bias no thread holds yet: the first to enter gets it.
    pub const fn new() -> Self {
        Bias { owner: AtomicU64::new(FRESH), inside: [const { AtomicBool::new(false) }; EPOCHS], next_epoch: AtomicU8::new(0) }
    }

    /// The owner word of a new owner, the thread with `key`: the next epoch.
    fn word_for(&self, key: u64) -> u64 {
        key << EPOCH_BITS | (u64::from(self.next_epoch.fetch_add(1, Ordering::Relaxed)) & EPOCH_MASK)
    }

    /// The inside flag of the owner of `word`.
    #[inline(always)]
    fn flag_of(&self, word: u64) -> &AtomicBool {
        &self.inside[(word & EPOCH_MASK) as usize]
    }

    /// Enters as the owner: Some when the calling thread holds the bias, or takes it because
    /// no thread has entered before. The owner entering again before it left (a reentrant
    /// call) panics: a second way in would alias the state the first one is changing.
    #[inline(always)]
    pub fn enter(&self) -> Option<Inside<'_>> {
        self.enter_claiming(|| true)
    }

    /// `enter`, where a fresh bias goes to the calling thread only if `may_claim()` says so
    /// (asked on that cold path only).
    #[inline(always)]
    pub fn enter_claiming(&self, may_claim: impl FnOnce() -> bool) -> Option<Inside<'_>> {
        // The key as it is, without assigning one: the owner's way in is then a load and a
        // compare, and a thread without a key matches no owner and takes the way below.
        let me = THREAD_KEY.with(Cell::get);
        let word = self.owner.load(Ordering::Relaxed);
        if key_of(word) != me {
            return self.enter_unowned(may_claim);
        }
        self.enter_as_owner(word)
    }

    /// `enter` by a thread that was not the owner when it looked: it may take a fresh bias.
    #[cold]
    #[inline(never)]
    fn enter_unowned(&self, may_claim: impl FnOnce() -> bool) -> Option<Inside<'_>> {
        let me = thread_key();
        let mut word = self.owner.load(Ordering::Relaxed);
        if word == FRESH && may_claim() {
            self.claim_fresh(me);
            word = self.owner.load(Ordering::Acquire);
        }
        if key_of(word) != me {
            return None;
        }
        self.enter_as_owner(word)
    }

    /// Enters as the owner of `word`, which the calling thread read as the owner word.
    #[inline(always)]
    fn enter_as_owner(&self, word: u64) -> Option<Inside<'_>> {
        let flag = self.flag_of(word);
        // Only this epoch's owner writes its flag, so the owner reading it set is inside already.
        if flag.load(Ordering::Relaxed) {
            reentered();
        }
        flag.store(true, Ordering::Relaxed);
        // The processor may still hold the store above when it loads `owner` below; a
        // revoker's membarrier makes one of the two visible to the other.
        compiler_fence(Ordering::SeqCst);
        if self.owner.load(Ordering::Acquire) == word {
            return Some(Inside { flag, _owner_thread: std::marker::PhantomData });
        }
        flag.store(false, Ordering::Release);
        None
    }

    #[cold]
    fn claim_fresh(&self, me: u64) {
        let claim = if barriers_available() { self.word_for(me) } else { UNBIASED };
        let _ = self.owner.compare_exchange(FRESH, claim, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Gives the bias up when the calling thread holds it and is not inside: from then on every
    /// thread takes the shared path, and none needs a membarrier to get in. For state its owner
    /// is done with (a stream it destroyed), which other threads will visit.
    pub fn relinquish(&self) {
        let word = self.owner.load(Ordering::Relaxed);
        if key_of(word) != THREAD_KEY.with(Cell::get) || self.flag_of(word).load(Ordering::Relaxed) {
            return;
        }
        // Release: what the owner wrote inside is seen by whoever reads UNBIASED and takes the
        // shared path. A revoker that got in first keeps its REVOKING (the exchange fails).
        let _ = self.owner.compare_exchange(word, UNBIASED, Ordering::Release, Ordering::Relaxed);
    }

    /// Whether the calling thread holds the bias now (for tests).
    pub fn is_mine(&self) -> bool {
        key_of(self.owner.load(Ordering::Relaxed)) == thread_key()
    }

    /// Takes the bias away from its owner, if another thread holds it, and runs `fold` once
    /// the owner is outside and cannot enter again (to move its state where the shared path
    /// sees it). Concurrent revokers wait for the one that does it. A fresh bias is closed
    /// too, so that the caller's shared path is safe. Returns whether a bias was revoked.
    pub fn revoke(&self, fold: impl FnOnce()) -> bool {
        self.revoke_owner(fold).is_some()
    }

    /// `revoke`, answering the key of the thread the bias was taken from (None: no thread held
    /// it).
    pub fn revoke_owner(&self, fold: impl FnOnce()) -> Option<u64> {
        let me = thread_key();
        let mut spins = 0;
        loop {
            match self.owner.load(Ordering::Acquire) {
                UNBIASED => return None,
                REVOKING => backoff(&mut spins),
                owner => {
                    if self.owner.compare_exchange(owner, REVOKING, Ordering::SeqCst, Ordering::Relaxed).is_err() {
                        continue;
                    }
                    if owner != FRESH && key_of(owner) != me {
                        super::barrier::heavy();
                        while self.flag_of(owner).load(Ordering::Acquire) {
                            backoff(&mut spins);
                        }
                    }
                    fold();
                    self.owner.store(UNBIASED, Ordering::Release);
                    return (owner != FRESH).then_some(key_of(owner));
                }
            }
        }
    }

    /// Takes every bias that `members` visits from its owner at once, with one membarrier for
    /// them all where `revoke` makes one each: for a family of locks that stops biasing. It
    /// never waits: a bias whose owner is inside stays with it (another revoker takes it later),
    /// as does one another revoker is taking, and the calling thread's own go without a
    /// barrier. The shared path stays safe throughout: until a bias is revoked, whoever wants
    /// in revokes it as usual.
    pub fn revoke_all(members: fn(&mut dyn FnMut(&'static Bias))) {
        if !barriers_available() {
            return; // no bias was ever given
        }
        let me = THREAD_KEY.with(Cell::get);
        let mut taken: Vec<(&'static Bias, u64)> = Vec::new();
        members(&mut |bias| loop {
            let word = bias.owner.load(Ordering::Acquire);
            let next = match word {
                UNBIASED | REVOKING => return,
                FRESH => UNBIASED,
                word if key_of(word) == me => return bias.relinquish(),
                _ => REVOKING,
            };
            if bias.owner.compare_exchange(word, next, Ordering::SeqCst, Ordering::Relaxed).is_ok() {
                if next == REVOKING {
                    taken.push((bias, word));
                }
                return;
            }
        });
        if taken.is_empty() {
            return;
        }
        // From here on either each owner sees REVOKING as it enters, or its mark shows.
        super::barrier::heavy();
        for (bias, word) in taken {
            let back = match bias.flag_of(word).load(Ordering::Acquire) {
                // Inside (or leaving after it saw REVOKING): its bias is as it was.
                true => word,
                false => UNBIASED,
            };
            bias.owner.store(back, Ordering::Release);
        }
    }

    /// After a `revoke_owner` that took the bias from a thread that has ended: the calling
    /// thread takes its place, unless another thread did meanwhile or no thread may be biased.
    /// Safe for a bias whose owner only ever writes its own state (the shared path never
    /// touches it), such as an adaptor's owned counters.
    pub fn take_over(&self) -> bool {
        barriers_available()
            && self.owner.compare_exchange(UNBIASED, self.word_for(thread_key()), Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Gives the bias to the calling thread.
    ///
    /// # Safety
    /// No other thread may use the state the bias guards until the caller gives the bias up
    /// (the caller holds the shared path's lock), and the bias must be unheld (revoked).
    pub unsafe fn give_to_me(&self) {
        if barriers_available() {
            self.owner.store(self.word_for(thread_key()), Ordering::Release);
        }
    }
}

#[cold]
#[inline(never)]
fn reentered() -> ! {
    panic!("a biased lock was entered again by the thread inside it (a reentrant call)")
}

/// Spins this many times before yielding the processor.
const SPINS_BEFORE_YIELD: u32 = 100;

/// Waits a little before a thread tries again for what another holds: spins first, for a
/// holder about to leave, then yields the processor, so that a holder that lost its own
/// gets to run. `spins` counts the tries so far.
pub fn backoff(spins: &mut u32) {
    if *spins < SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
        *spins += 1;
    } else {
        std::thread::yield_now();
    }
}

/// Whether this process may bias: it can make every running thread pass a barrier, and
/// `RMM_BIASED_LOCKS=0` does not turn biasing off.
pub fn barriers_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| std::env::var("RMM_BIASED_LOCKS").map_or(true, |v| v != "0") && super::barrier::available())
}

#[cfg(test)]
mod tests {
    use super::Bias;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// An owner that read the owner word and was descheduled before it marked itself inside,
    /// while the bias went to another owner that is inside now: it marks and clears a flag of
    /// its own, leaves the new owner's mark alone (a revoker still waits for that owner), and
    /// does not take itself for reentrant.
    #[test]
    fn a_descheduled_owner_never_touches_the_next_owners_mark() {
        if !super::barriers_available() {
            return; // no thread is ever biased
        }
        let bias = Bias::new();
        drop(bias.enter().expect("the first thread gets a fresh bias"));
        let stale = bias.owner.load(Ordering::Relaxed);
        bias.revoke(|| {});
        // SAFETY: no other thread uses the bias, and it was just revoked.
        unsafe { bias.give_to_me() };
        let current = bias.owner.load(Ordering::Relaxed);
        assert_ne!(current & super::EPOCH_MASK, stale & super::EPOCH_MASK, "a new owner gets the next epoch");
        let inside = bias.enter_as_owner(current).expect("the new owner enters");
        assert!(bias.enter_as_owner(stale).is_none(), "the descheduled owner is no longer the owner");
        assert!(bias.flag_of(current).load(Ordering::Relaxed), "the new owner's mark is gone");
        drop(inside);
        assert!(!bias.flag_of(current).load(Ordering::Relaxed));
    }

    /// An owner gives its bias up only when it is not inside; then a thread that wants in has
    /// no owner to take it from (no membarrier).
    #[test]
    fn an_owner_relinquishes_only_from_outside() {
        if !super::barriers_available() {
            return;
        }
        let bias = Bias::new();
        let inside = bias.enter().expect("the first thread gets a fresh bias");
        bias.relinquish();
        assert!(bias.is_mine(), "relinquished while inside");
        drop(inside);
        std::thread::scope(|scope| {
            scope.spawn(|| bias.relinquish());
        });
        assert!(bias.is_mine(), "another thread gave up a bias it does not hold");
        bias.relinquish();
        assert!(!bias.is_mine());
        assert!(bias.enter().is_none(), "a bias given up is not claimed again on the way in");
        assert_eq!(bias.revoke_owner(|| {}), None, "no owner left to revoke");
    }

    /// The owner counts with plain loads and stores; other threads revoke, fold the owner's
    /// count into the shared one and count atomically from then on. No increment is lost.
    #[test]
    fn revocation_folds_every_update_of_the_owner() {
        for _ in 0..20 {
            let bias = Bias::new();
            let owned = AtomicU64::new(0);
            let shared = AtomicU64::new(0);
            let count = |bias: &Bias| match bias.enter() {
                Some(_inside) => owned.store(owned.load(Ordering::Relaxed) + 1, Ordering::Relaxed),
                None => {
                    bias.revoke(|| {
                        shared.fetch_add(owned.swap(0, Ordering::Relaxed), Ordering::Relaxed);
                    });
                    shared.fetch_add(1, Ordering::Relaxed);
                }
            };
            std::thread::scope(|scope| {
                scope.spawn(|| (0..20_000).for_each(|_| count(&bias)));
                scope.spawn(|| {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    (0..20_000).for_each(|_| count(&bias));
                });
            });
            assert_eq!(owned.load(Ordering::Relaxed) + shared.load(Ordering::Relaxed), 40_000);
        }
    }
}
