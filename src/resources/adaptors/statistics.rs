//! Statistics (RMM's `statistics_resource_adaptor`): current, peak and total bytes and
//! allocation counts, without locks, so threads never wait on each other here.
//!
//! While one thread does all the allocating (the common case), it holds the adaptor's bias
//! (`platform::bias`) and counts with plain loads and stores. Once another thread allocates
//! or frees through the adaptor, the bias is revoked, the owner's figures are folded into the
//! shared ones, and every thread counts atomically from then on: the current bytes and count
//! share one 128-bit atomic, so each allocation and each free costs one atomic add, and peaks
//! stay exact (an allocation sees the exact current values it produced). Totals are current
//! plus what was freed, and what was freed is counted per thread, in cells only their own
//! thread writes: no atomic read-modify-write there. Any thread may read the figures at any
//! time without disturbing the owner.
//!
//! Nested scopes (push/pop, as RMM's `push_counters`/`pop_counters`) cost the allocation path
//! nothing: the counters are cumulative, and a scope is the counters' values when it was
//! pushed plus the highest current value seen since. The innermost scope's figures are the
//! differences; popping merges a scope's peak into its parent's, as RMM does.

use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::bias::Bias;
use crate::platform::Stream;
use crate::resources::MemoryResource;
use parking_lot::Mutex;
use portable_atomic::AtomicU128;
use std::cell::RefCell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Figures of one scope, as `rmmStatistics_t`. Current values can go below zero within a
/// scope that frees memory allocated before it was pushed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub current_bytes: i64,
    pub peak_bytes: i64,
    pub total_bytes: i64,
    pub current_count: i64,
    pub peak_count: i64,
    pub total_count: i64,
}

/// (bytes, count) packed as bytes << 64 | count. Both halves stay non-negative (a free always
/// follows its allocation), so adding and subtracting never carries between them.
fn packed(bytes: usize, count: u64) -> u128 {
    (bytes as u128) << 64 | count as u128
}

fn unpacked(value: u128) -> (i64, i64) {
    ((value >> 64) as i64, value as u64 as i64)
}

/// What one thread freed through one adaptor; written only by that thread.
#[derive(Default)]
struct FreedCell {
    bytes: AtomicU64,
    count: AtomicU64,
}

impl FreedCell {
    fn add(&self, bytes: usize) {
        // Single writer: a plain load and store, not a locked add.
        self.bytes.store(self.bytes.load(Ordering::Relaxed) + bytes as u64, Ordering::Relaxed);
        self.count.store(self.count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}

/// How many adaptors' cells a thread keeps at hand; a thread that comes back to an adaptor
/// it dropped from here gets a new cell (the old one still counts).
const CELLS_PER_THREAD: usize = 8;

thread_local! {
    static CELLS: RefCell<Vec<(u64, Arc<FreedCell>)>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Where a scope began: the current and total (bytes, count) then, and the enclosing scope's
/// highest current (bytes, count) at that moment.
#[derive(Clone, Copy, Default)]
struct ScopeStart {
    current: (i64, i64),
    total: (i64, i64),
    enclosing_high: (i64, i64),
}

/// What the owner of the bias counts: single writer, plain loads and stores.
#[derive(Default)]
struct Owned {
    current_bytes: AtomicI64,
    current_count: AtomicI64,
    total_bytes: AtomicI64,
    total_count: AtomicI64,
}

fn add(cell: &AtomicI64, value: i64) -> i64 {
    let now = cell.load(Ordering::Relaxed) + value;
    cell.store(now, Ordering::Relaxed);
    now
}

/// The fields every allocation and free touches come first, within one 128-byte block (two
/// cache lines the processor fetches together), so that the lines the pool's own work evicts
/// between calls cost the adaptor as few misses as possible.
#[repr(C, align(128))]
pub struct StatisticsAdaptor {
    upstream: Upstream,
    bias: Bias,
    owned: Owned,
    /// The highest current bytes and count since the innermost scope began.
    high_bytes: AtomicI64,
    high_count: AtomicI64,
    /// Counted atomically once the bias is revoked (the owner's live figures are folded in).
    current: AtomicU128,
    id: u64,
    freed: Mutex<Vec<Arc<FreedCell>>>,
    /// Starts of the pushed scopes, innermost last; the whole life of the adaptor is the
    /// scope below them all.
    scopes: Mutex<Vec<ScopeStart>>,
}

const _: () = assert!(std::mem::offset_of!(StatisticsAdaptor, high_count) + 8 <= 128);

impl StatisticsAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>) -> Arc<Self> {
        Arc::new(StatisticsAdaptor {
            upstream: Upstream::new(upstream),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            bias: Bias::new(),
            owned: Owned::default(),
            current: AtomicU128::new(0),
            high_bytes: AtomicI64::new(0),
            high_count: AtomicI64::new(0),
            freed: Mutex::new(Vec::new()),
            scopes: Mutex::new(Vec::new()),
        })
    }

    fn raise_high(high: &AtomicI64, now: i64) {
        // A plain load first: once the peak is reached, allocations skip the locked max.
        if now > high.load(Ordering::Relaxed) {
            high.fetch_max(now, Ordering::Relaxed);
        }
    }

    fn note_freed(&self, bytes: usize) {
        let counted = CELLS.try_with(|cells| {
            let Ok(mut cells) = cells.try_borrow_mut() else { return false };
            if let Some((_, cell)) = cells.iter().find(|(id, _)| *id == self.id) {
                cell.add(bytes);
                return true;
            }
            let cell = Arc::new(FreedCell::default());
            cell.add(bytes);
            self.freed.lock().push(cell.clone());
            if cells.len() == CELLS_PER_THREAD {
                cells.remove(0);
            }
            cells.push((self.id, cell));
            true
        });
        if counted != Ok(true) {
            // A thread whose thread-locals are gone (a free from a thread-local destructor):
            // a cell of its own for this one free.
            let cell = Arc::new(FreedCell::default());
            cell.add(bytes);
            self.freed.lock().push(cell);
        }
    }

    /// Lifetime (current, total) as ((bytes, count), (bytes, count)).
    fn lifetime(&self) -> ((i64, i64), (i64, i64)) {
        let shared = unpacked(self.current.load(Ordering::Relaxed));
        let owned = &self.owned;
        let owned_current = (owned.current_bytes.load(Ordering::Relaxed), owned.current_count.load(Ordering::Relaxed));
        let owned_total = (owned.total_bytes.load(Ordering::Relaxed), owned.total_count.load(Ordering::Relaxed));
        let freed = self.freed.lock().iter().fold((0i64, 0i64), |(b, c), cell| {
            (b + cell.bytes.load(Ordering::Relaxed) as i64, c + cell.count.load(Ordering::Relaxed) as i64)
        });
        let current = (shared.0 + owned_current.0, shared.1 + owned_current.1);
        (current, (shared.0 + freed.0 + owned_total.0, shared.1 + freed.1 + owned_total.1))
    }

    /// Ends the bias (if another thread holds it), moving the owner's live figures into the
    /// shared counter: blocks it allocated are freed on the shared path from now on.
    fn unbias(&self) {
        self.bias.revoke(|| {
            let owned = &self.owned;
            let (bytes, count) = (owned.current_bytes.swap(0, Ordering::Relaxed), owned.current_count.swap(0, Ordering::Relaxed));
            owned.total_bytes.fetch_sub(bytes, Ordering::Relaxed);
            owned.total_count.fetch_sub(count, Ordering::Relaxed);
            self.current.fetch_add(packed(bytes as usize, count as u64), Ordering::Relaxed);
        });
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
        let ptr = self.upstream.allocate(bytes, stream)?;
        if let Some(_inside) = self.bias.enter() {
            let owned = &self.owned;
            let now_bytes = add(&owned.current_bytes, bytes as i64);
            let now_count = add(&owned.current_count, 1);
            add(&owned.total_bytes, bytes as i64);
            add(&owned.total_count, 1);
            // The shared figures stay zero while the bias is held: the bias is never given back
            // once revoked, and nothing counts on the shared path before that.
            // A store only at a new peak: a running maximum is rarely exceeded, so the branch
            // predicts well. On an H200 host this beat unconditional stores on
            // random_allocations (8.9 against 10.5 ns added, medians of 30 interleaved samples).
            for (high, now) in [(&self.high_bytes, now_bytes), (&self.high_count, now_count)] {
                if now > high.load(Ordering::Relaxed) {
                    high.store(now, Ordering::Relaxed);
                }
            }
            return Ok(ptr);
        }
        self.unbias();
        let (now_bytes, now_count) = unpacked(self.current.fetch_add(packed(bytes, 1), Ordering::Relaxed).wrapping_add(packed(bytes, 1)));
        Self::raise_high(&self.high_bytes, now_bytes);
        Self::raise_high(&self.high_count, now_count);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate(ptr, bytes, stream)?;
        if let Some(_inside) = self.bias.enter() {
            add(&self.owned.current_bytes, -(bytes as i64));
            add(&self.owned.current_count, -1);
            return Ok(());
        }
        self.unbias();
        self.current.fetch_sub(packed(bytes, 1), Ordering::Relaxed);
        self.note_freed(bytes);
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
