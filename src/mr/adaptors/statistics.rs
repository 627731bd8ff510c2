//! Statistics (RMM's `statistics_resource_adaptor`): current, peak and total bytes and
//! allocation counts, by atomics only, so threads never wait on each other here.
//!
//! Nested scopes (push/pop, as RMM's `push_counters`/`pop_counters`) cost the allocation path
//! nothing: the counters are cumulative, and a scope is the counters' values when it was
//! pushed plus the highest current value seen since. The innermost scope's figures are the
//! differences; popping merges a scope's peak into its parent's, as RMM does.

use super::Outer;
use crate::error::{Error, Result};
use crate::mr::{MemoryResource, Via};
use crate::platform::Stream;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
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

/// One figure: cumulative current and total, and the highest current since the innermost
/// scope began.
#[derive(Default)]
struct Counter {
    current: AtomicI64,
    total: AtomicI64,
    high: AtomicI64,
}

impl Counter {
    fn add(&self, amount: i64) {
        let now = self.current.fetch_add(amount, Ordering::Relaxed) + amount;
        self.total.fetch_add(amount, Ordering::Relaxed);
        // A plain load first: once the peak is reached, allocations skip the locked max.
        if now > self.high.load(Ordering::Relaxed) {
            self.high.fetch_max(now, Ordering::Relaxed);
        }
    }

    fn sub(&self, amount: i64) {
        self.current.fetch_sub(amount, Ordering::Relaxed);
    }
}

/// Where a scope began: the counters' current and total then, and the enclosing scope's
/// highest current at that moment.
#[derive(Clone, Copy)]
struct ScopeStart {
    current: i64,
    total: i64,
    enclosing_high: i64,
}

pub struct StatisticsAdaptor {
    outer: Outer,
    bytes: Counter,
    count: Counter,
    /// (bytes, count) starts of the pushed scopes, innermost last; the whole life of the
    /// adaptor is the scope below them all.
    scopes: Mutex<Vec<(ScopeStart, ScopeStart)>>,
}

const BASE: ScopeStart = ScopeStart { current: 0, total: 0, enclosing_high: 0 };

impl StatisticsAdaptor {
    pub fn new(upstream: Arc<dyn MemoryResource>) -> Arc<Self> {
        Outer::build(upstream, |outer| StatisticsAdaptor {
            outer,
            bytes: Counter::default(),
            count: Counter::default(),
            scopes: Mutex::new(Vec::new()),
        })
    }

    /// The innermost scope's figures.
    pub fn counts(&self) -> Counts {
        let scopes = self.scopes.lock();
        let (bytes_start, count_start) = scopes.last().copied().unwrap_or((BASE, BASE));
        Self::figures(&self.bytes, &self.count, bytes_start, count_start)
    }

    fn figures(bytes: &Counter, count: &Counter, bytes_start: ScopeStart, count_start: ScopeStart) -> Counts {
        let scope = |counter: &Counter, start: ScopeStart| {
            let current = counter.current.load(Ordering::Relaxed) - start.current;
            let peak = (counter.high.load(Ordering::Relaxed) - start.current).max(current).max(0);
            (current, peak, counter.total.load(Ordering::Relaxed) - start.total)
        };
        let (current_bytes, peak_bytes, total_bytes) = scope(bytes, bytes_start);
        let (current_count, peak_count, total_count) = scope(count, count_start);
        Counts { current_bytes, peak_bytes, total_bytes, current_count, peak_count, total_count }
    }

    /// Starts a nested scope whose figures begin at zero.
    pub fn push(&self) {
        let mut scopes = self.scopes.lock();
        let start = |counter: &Counter| {
            let current = counter.current.load(Ordering::Relaxed);
            let enclosing_high = counter.high.swap(current, Ordering::Relaxed);
            ScopeStart { current, total: counter.total.load(Ordering::Relaxed), enclosing_high }
        };
        scopes.push((start(&self.bytes), start(&self.count)));
    }

    /// Ends the innermost scope and returns its figures; its peak counts towards the enclosing
    /// scope's. Without a pushed scope: an error.
    pub fn pop(&self) -> Result<Counts> {
        let mut scopes = self.scopes.lock();
        let Some(&(bytes_start, count_start)) = scopes.last() else {
            return Err(Error::invalid("no statistics scope was pushed"));
        };
        let popped = Self::figures(&self.bytes, &self.count, bytes_start, count_start);
        scopes.pop();
        self.bytes.high.fetch_max(bytes_start.enclosing_high, Ordering::Relaxed);
        self.count.high.fetch_max(count_start.enclosing_high, Ordering::Relaxed);
        Ok(popped)
    }
}

impl MemoryResource for StatisticsAdaptor {
    fn allocate_via(&self, bytes: usize, stream: Stream, via: Via) -> Result<usize> {
        let ptr = self.outer.upstream.allocate_via(bytes, stream, via)?;
        self.bytes.add(bytes as i64);
        self.count.add(1);
        Ok(ptr)
    }

    fn deallocate_via(&self, ptr: usize, bytes: usize, stream: Stream, via: Via) -> Result<()> {
        self.outer.upstream.deallocate_via(ptr, bytes, stream, via)?;
        self.bytes.sub(bytes as i64);
        self.count.sub(1);
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
            "upstream": self.outer.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(outer);
}
