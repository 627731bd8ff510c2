//! Statistics (RMM's `statistics_resource_adaptor`): current, peak and total bytes and
//! allocation counts, without locks, so threads never wait on each other here.
//!
//! While one thread does all the allocating (the common case), it holds the adaptor's bias
//! (`sync::bias`) and counts with plain loads and stores. Once another thread allocates
//! or frees through the adaptor, the bias is revoked, the owner's live figures are folded into
//! shared ones, and from then on each thread counts in a shard of its own, which only it
//! writes: no atomic read-modify-write and no shared cache line on the allocation path, so
//! eight threads cost what one does. Readers add the shards up, so current and total figures
//! are exact whenever the threads have returned.
//!
//! The peak needs the sum at each allocation, which no thread has at hand. Each shard
//! publishes its current figures into a shared sum, but only now and then, and always at most
//! what it has: what it holds back stays between 0 and PUBLISH_BYTES (and 0 and
//! PUBLISH_COUNT allocations). When a change would take it out of that range, the shard
//! publishes (one atomic add) so as to hold back half of it. The shared sum is thus never
//! above the true one, and short of it by less than the ranges' width per thread. An
//! allocation estimates the sum as "shared sum + what its own shard holds back" and raises the
//! peak to that. So the peak is never above the true peak, is exact while one thread
//! allocates, and otherwise falls short by less than PUBLISH_BYTES and PUBLISH_COUNT for each
//! other thread using the adaptor at the time. Threads touch shared lines only to publish and
//! at new peaks, so a steady workload, however many threads run it, shares almost nothing.
//!
//! Nested scopes (push/pop, as RMM's `push_counters`/`pop_counters`) cost the allocation path
//! nothing: the counters are cumulative, and a scope is the counters' values when it was
//! pushed plus the highest current value seen since. The innermost scope's figures are the
//! differences; popping merges a scope's peak into its parent's, as RMM does.

use super::shards::{self, Shard, Shards};
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use crate::sync::bias::{thread_key, thread_running, Bias};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Figures of one scope, as `rmmStatistics_t`. Current values can go below zero within a
/// scope that frees memory allocated before it was pushed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Bytes allocated and not yet freed (as asked for, not rounded).
    pub current_bytes: i64,
    /// The most `current_bytes` has been (see the module comment for how far it can fall short
    /// while several threads allocate).
    pub peak_bytes: i64,
    /// Bytes allocated in all, freed or not.
    pub total_bytes: i64,
    /// Allocations not yet freed.
    pub current_count: i64,
    /// The most `current_count` has been.
    pub peak_count: i64,
    /// Allocations made in all.
    pub total_count: i64,
}

fn add(cell: &AtomicI64, value: i64) -> i64 {
    let now = cell.load(Ordering::Relaxed) + value;
    cell.store(now, Ordering::Relaxed);
    now
}

/// Current and total figures. In a shard, or the bias owner's, a single writer updates them
/// with plain loads and stores (`add`); in `StatisticsAdaptor::folded`, any thread with atomic
/// adds.
#[derive(Default)]
struct Figures {
    current_bytes: AtomicI64,
    current_count: AtomicI64,
    total_bytes: AtomicI64,
    total_count: AtomicI64,
}

impl Figures {
    fn current(&self) -> (i64, i64) {
        (self.current_bytes.load(Ordering::Relaxed), self.current_count.load(Ordering::Relaxed))
    }
    fn total(&self) -> (i64, i64) {
        (self.total_bytes.load(Ordering::Relaxed), self.total_count.load(Ordering::Relaxed))
    }
}

/// The sum of what the shards have published of their current figures.
#[derive(Default)]
struct Published {
    bytes: AtomicI64,
    count: AtomicI64,
}

impl Published {
    /// Adds to the sum; returns the sum after it.
    fn add(&self, bytes: i64, count: i64) -> (i64, i64) {
        (self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes, self.count.fetch_add(count, Ordering::Relaxed) + count)
    }
}

/// One thread's figures for one adaptor, and how much of its current figures it holds back from
/// `Published`; written only by that thread.
#[derive(Default)]
struct StatisticsShard {
    figures: Figures,
    unpublished_bytes: AtomicI64,
    unpublished_count: AtomicI64,
    /// Counts on the shared path by this shard's thread since its last look at `shard_writer`.
    calls: AtomicU32,
    /// Looks in a row that found no other thread had looked since this thread's last one.
    alone: AtomicU32,
}

/// How many of its counts on the shared path a thread makes between two looks at whether
/// another thread counted there meanwhile: a look writes a line every thread reads, so threads
/// that share the adaptor must not look often.
const COUNTS_PER_LOOK: u32 = 256;

/// Counts in a row on the shared path after which a thread takes the bias (counted in looks of
/// `COUNTS_PER_LOOK`, the first look starting the streak)...
const FIRST_STREAK: u32 = 1024;
/// ...doubling each time the bias is taken from a thread still running, up to this.
const LONGEST_STREAK: u32 = 1 << 20;

impl StatisticsShard {
    /// Adds a change to what the shard holds back, publishing when it leaves its range.
    /// Returns what the shard holds back after it.
    fn hold_back(&self, published: &Published, bytes: i64, count: i64) -> (i64, i64) {
        (
            hold_back(&self.unpublished_bytes, &published.bytes, bytes, PUBLISH_BYTES),
            hold_back(&self.unpublished_count, &published.count, count, PUBLISH_COUNT),
        )
    }
}

/// Adds `change` to what `held` holds back from `published`; outside 0..=`range`, publishes so
/// as to hold back half the range.
fn hold_back(held: &AtomicI64, published: &AtomicI64, change: i64, range: i64) -> i64 {
    let now = add(held, change);
    if (0..=range).contains(&now) {
        return now;
    }
    // The shared sum first: after a free it goes down before anything else changes.
    published.fetch_add(now - range / 2, Ordering::Relaxed);
    held.store(range / 2, Ordering::Relaxed);
    range / 2
}

impl Shard for StatisticsShard {
    type Shared = Published;
    /// A shard whose thread has gone publishes all it held back, so that the peak's shortfall
    /// stays bounded by the threads at work.
    fn retire(&self, published: &Published) {
        published.add(self.unpublished_bytes.swap(0, Ordering::Relaxed), self.unpublished_count.swap(0, Ordering::Relaxed));
    }
}

thread_local! {
    static SHARDS: shards::Local<StatisticsShard> = const { std::cell::RefCell::new(Vec::new()) };
}

/// How far a thread's unpublished growth may go before it publishes it.
const PUBLISH_BYTES: i64 = 4 << 20;
const PUBLISH_COUNT: i64 = 64;

/// Where a scope began: the current and total (bytes, count) then, and the enclosing scope's
/// highest current (bytes, count) at that moment.
#[derive(Clone, Copy, Default)]
struct ScopeStart {
    current: (i64, i64),
    total: (i64, i64),
    enclosing_high: (i64, i64),
}

/// The fields every allocation and free touches come first, within one 128-byte block (two
/// cache lines the processor fetches together), so that the lines the pool's own work evicts
/// between calls cost the adaptor as few misses as possible.
#[repr(C, align(128))]
pub struct StatisticsAdaptor {
    upstream: Upstream,
    bias: Bias,
    /// The bias owner's figures.
    owned: Figures,
    /// The highest current bytes and count since the innermost scope began (exact under the
    /// bias; see the module's note otherwise).
    high_bytes: AtomicI64,
    high_count: AtomicI64,
    /// What the other figures came to when the bias owner took the bias over from a thread
    /// that had ended (0 before): what its own figures add to for the peaks.
    base_bytes: AtomicI64,
    base_count: AtomicI64,
    /// Each thread's figures once the bias is gone, and the sum they have published.
    shards: Shards<StatisticsShard>,
    /// The thread that looked last (see `COUNTS_PER_LOOK`), and the streak after which a thread
    /// that counts on the shared path with no other thread looking between takes the bias.
    shard_writer: AtomicU64,
    streak_needed: AtomicU32,
    /// What the bias owner had live when the bias went, and what threads count without a
    /// shard (from thread-local destructors).
    folded: Figures,
    /// Starts of the pushed scopes, innermost last; the whole life of the adaptor is the
    /// scope below them all.
    scopes: Mutex<Vec<ScopeStart>>,
}

const _: () = assert!(std::mem::offset_of!(StatisticsAdaptor, base_count) + 8 <= 128);

impl StatisticsAdaptor {
    /// The most by which the peak can fall short per other thread, (bytes, allocations):
    /// PUBLISH_BYTES and PUBLISH_COUNT, which rmm.h states and the threaded tests check.
    pub fn peak_shortfall_per_thread() -> (i64, i64) {
        (PUBLISH_BYTES, PUBLISH_COUNT)
    }

    /// An adaptor over `upstream` with one scope, whose figures start at zero.
    pub fn new(upstream: Arc<dyn MemoryResource>) -> Arc<Self> {
        Arc::new(StatisticsAdaptor {
            upstream: Upstream::new(upstream),
            bias: Bias::new(),
            owned: Figures::default(),
            high_bytes: AtomicI64::new(0),
            high_count: AtomicI64::new(0),
            base_bytes: AtomicI64::new(0),
            base_count: AtomicI64::new(0),
            shards: Shards::new(Published::default(), &SHARDS),
            shard_writer: AtomicU64::new(0),
            streak_needed: AtomicU32::new(FIRST_STREAK),
            folded: Figures::default(),
            scopes: Mutex::new(Vec::new()),
        })
    }

    fn raise_high(high: &AtomicI64, now: i64) {
        // A plain load first: once the peak is reached, allocations skip the locked max.
        if now > high.load(Ordering::Relaxed) {
            high.fetch_max(now, Ordering::Relaxed);
        }
    }

    /// Counts an allocation (`count` 1) or a free (`count` -1 and `bytes` negative) in this
    /// thread's shard: the path once the bias is gone, out of line so that the biased path
    /// stays small enough for the upstream's fast path to be inlined into it.
    #[inline(never)]
    fn count_in_shard(&self, bytes: i64, count: i64) {
        if self.unbias() {
            if let Some(_inside) = self.bias.enter() {
                self.count_owned(bytes, count);
                return;
            }
        }
        let published = &*self.shards.shared;
        let mut streak_done = false;
        let sum = self.shards.with(|shard| {
            add(&shard.figures.current_bytes, bytes);
            add(&shard.figures.current_count, count);
            if count > 0 {
                add(&shard.figures.total_bytes, bytes);
                add(&shard.figures.total_count, count);
            }
            let held = shard.hold_back(published, bytes, count);
            streak_done = self.lengthen_streak(shard);
            // Never above the true sum: the other shards hold back nothing negative.
            (published.bytes.load(Ordering::Relaxed) + held.0, published.count.load(Ordering::Relaxed) + held.1)
        });
        if streak_done {
            self.take_bias();
        }
        let sum = sum.unwrap_or_else(|| {
            // No shard on this thread (its thread-locals are gone): count in `folded`.
            let folded = &self.folded;
            folded.current_bytes.fetch_add(bytes, Ordering::Relaxed);
            folded.current_count.fetch_add(count, Ordering::Relaxed);
            if count > 0 {
                folded.total_bytes.fetch_add(bytes, Ordering::Relaxed);
                folded.total_count.fetch_add(count, Ordering::Relaxed);
            }
            published.add(bytes, count)
        });
        if count > 0 {
            Self::raise_high(&self.high_bytes, sum.0);
            Self::raise_high(&self.high_count, sum.1);
        }
    }

    /// Lifetime (current, total) as ((bytes, count), (bytes, count)).
    fn lifetime(&self) -> ((i64, i64), (i64, i64)) {
        let mut current = (0, 0);
        let mut total = (0, 0);
        let mut count_in = |figures: &Figures| {
            let (c, t) = (figures.current(), figures.total());
            current = (current.0 + c.0, current.1 + c.1);
            total = (total.0 + t.0, total.1 + t.1);
        };
        count_in(&self.owned);
        count_in(&self.folded);
        self.shards.for_each(|shard| count_in(&shard.figures));
        (current, total)
    }

    /// Ends the bias (if another thread holds it), moving the owner's live figures into the
    /// shared ones: blocks it allocated are freed through shards from now on. When the owner
    /// has ended (a thread pool replaced it), the calling thread takes the bias in its place:
    /// then true.
    fn unbias(&self) -> bool {
        let revoked = self.bias.revoke_owner(|| {
            let owned = &self.owned;
            let (bytes, count) = (owned.current_bytes.swap(0, Ordering::Relaxed), owned.current_count.swap(0, Ordering::Relaxed));
            self.folded.current_bytes.fetch_add(bytes, Ordering::Relaxed);
            self.folded.current_count.fetch_add(count, Ordering::Relaxed);
            self.shards.shared.add(bytes, count);
        });
        match revoked {
            None => false,
            Some(owner) if thread_running(owner) => {
                // Threads share the adaptor: the next one waits for a longer streak.
                let needed = self.streak_needed.load(Ordering::Relaxed);
                self.streak_needed.store(needed.saturating_mul(2).min(LONGEST_STREAK), Ordering::Relaxed);
                false
            }
            Some(_) => self.take_bias(),
        }
    }

    /// Counts one more count on the shared path by the calling thread, in its `shard`;
    /// whether it has counted alone long enough now to take the bias.
    fn lengthen_streak(&self, shard: &StatisticsShard) -> bool {
        let calls = shard.calls.load(Ordering::Relaxed) + 1;
        if calls < COUNTS_PER_LOOK {
            shard.calls.store(calls, Ordering::Relaxed);
            return false;
        }
        shard.calls.store(0, Ordering::Relaxed);
        let me = thread_key();
        let alone = match self.shard_writer.swap(me, Ordering::Relaxed) == me {
            true => shard.alone.load(Ordering::Relaxed) + 1,
            false => 0,
        };
        let done = alone * COUNTS_PER_LOOK >= self.streak_needed.load(Ordering::Relaxed);
        shard.alone.store(if done { 0 } else { alone }, Ordering::Relaxed);
        done
    }

    /// Takes the unheld bias for the calling thread; whether it did. The owner's figures are
    /// zero (a revocation folded them); the rest is what they add to, and other threads count
    /// only after taking the bias away again, so it stays that while this thread holds it.
    fn take_bias(&self) -> bool {
        if !self.bias.take_over() {
            return false;
        }
        let ((bytes, count), _) = self.lifetime();
        self.base_bytes.store(bytes, Ordering::Relaxed);
        self.base_count.store(count, Ordering::Relaxed);
        true
    }

    /// Counts an allocation or a free in the bias owner's figures (the caller is inside).
    #[inline(always)]
    fn count_owned(&self, bytes: i64, count: i64) {
        let owned = &self.owned;
        let now_bytes = add(&owned.current_bytes, bytes) + self.base_bytes.load(Ordering::Relaxed);
        let now_count = add(&owned.current_count, count) + self.base_count.load(Ordering::Relaxed);
        if count < 0 {
            return;
        }
        add(&owned.total_bytes, bytes);
        add(&owned.total_count, count);
        // Nothing counts on the shared path while the bias is held (another thread takes it
        // away first): the owner's figures and the base are the whole.
        // A store only at a new peak: a running maximum is rarely exceeded, so the branch
        // predicts well. On an H200 host this beat unconditional stores on
        // random_allocations (8.9 against 10.5 ns added, medians of 30 interleaved samples).
        for (high, now) in [(&self.high_bytes, now_bytes), (&self.high_count, now_count)] {
            if now > high.load(Ordering::Relaxed) {
                high.store(now, Ordering::Relaxed);
            }
        }
    }

    /// Runs `f` with no owner counting meanwhile (scopes move the peaks).
    fn exclusively<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.bias.enter() {
            Some(_inside) => f(),
            None => {
                self.unbias();
                f()
            }
        }
    }

    fn figures(&self, start: ScopeStart) -> Counts {
        let (current, total) = self.lifetime();
        let high = (self.high_bytes.load(Ordering::Relaxed), self.high_count.load(Ordering::Relaxed));
        let now = (current.0 - start.current.0, current.1 - start.current.1);
        Counts {
            current_bytes: now.0,
            peak_bytes: (high.0 - start.current.0).max(now.0).max(0),
            total_bytes: total.0 - start.total.0,
            current_count: now.1,
            peak_count: (high.1 - start.current.1).max(now.1).max(0),
            total_count: total.1 - start.total.1,
        }
    }

    /// Whether the calling thread counts with the bias (for tests).
    pub fn biased_to_me(&self) -> bool {
        self.bias.is_mine()
    }

    /// The innermost scope's figures.
    pub fn counts(&self) -> Counts {
        let scopes = self.scopes.lock();
        self.figures(scopes.last().copied().unwrap_or_default())
    }

    /// Starts a nested scope whose figures begin at zero.
    pub fn push(&self) {
        self.exclusively(|| {
            let mut scopes = self.scopes.lock();
            let (current, total) = self.lifetime();
            let enclosing_high = (self.high_bytes.swap(current.0, Ordering::Relaxed), self.high_count.swap(current.1, Ordering::Relaxed));
            scopes.push(ScopeStart { current, total, enclosing_high });
        })
    }

    /// Ends the innermost scope and returns its figures; its peak counts towards the enclosing
    /// scope's. Without a pushed scope: an error.
    pub fn pop(&self) -> Result<Counts> {
        self.exclusively(|| {
            let mut scopes = self.scopes.lock();
            let Some(&start) = scopes.last() else {
                return Err(Error::invalid("no statistics scope was pushed"));
            };
            let popped = self.figures(start);
            scopes.pop();
            self.high_bytes.fetch_max(start.enclosing_high.0, Ordering::Relaxed);
            self.high_count.fetch_max(start.enclosing_high.1, Ordering::Relaxed);
            Ok(popped)
        })
    }
}

impl MemoryResource for StatisticsAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        let ptr = self.upstream.allocate_aligned(bytes, alignment, stream)?;
        if let Some(_inside) = self.bias.enter() {
            self.count_owned(bytes as i64, 1);
            return Ok(ptr);
        }
        self.count_in_shard(bytes as i64, 1);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate_aligned(ptr, bytes, alignment, stream)?;
        if let Some(_inside) = self.bias.enter() {
            add(&self.owned.current_bytes, -(bytes as i64));
            add(&self.owned.current_count, -1);
            return Ok(());
        }
        self.count_in_shard(-(bytes as i64), -1);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "statistics"
    }

    fn snapshot(&self) -> serde_json::Value {
        let c = self.counts();
        serde_json::json!({
            "resource": self.name(),
            "device": self.device(),
            "current_bytes": c.current_bytes, "peak_bytes": c.peak_bytes, "total_bytes": c.total_bytes,
            "current_count": c.current_count, "peak_count": c.peak_count, "total_count": c.total_count,
            "upstream": self.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
