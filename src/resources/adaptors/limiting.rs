//! Limiting (RMM's `limiting_resource_adaptor`): refuses allocations that would take the
//! bytes it has handed out past a limit. Sizes count rounded up to the 256-byte alignment, as
//! RMM counts them.
//!
//! The limit is a budget. Each thread takes budget from it in slices and keeps what it has
//! not used as credit in a shard of its own; an allocation spends credit, a free adds to the
//! freeing thread's credit, and a thread gives back what it holds above two slices. Threads
//! thus touch the shared budget only once a slice, not on each allocation. What is taken from
//! the budget, handed out or held as credit, never exceeds the limit, so neither does what is
//! handed out, not even for a moment. An allocation that finds too little budget takes back
//! every thread's credit before it refuses, so nothing is refused while the limit has room.

use super::shards::{self, Shard, Shards};
use super::Upstream;
use crate::error::{Error, Result};
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use crate::units;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Budget a thread holds and has not spent.
#[derive(Default)]
struct Credit {
    bytes: AtomicUsize,
}

impl Shard for Credit {
    /// The budget taken from the limit: handed out, or held as credit.
    type Shared = AtomicUsize;
    fn retire(&self, taken: &AtomicUsize) {
        taken.fetch_sub(self.bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
    }
}

thread_local! {
    static CREDITS: shards::Local<Credit> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most a thread takes from the budget at once, beyond what an allocation needs.
const MAX_SLICE: usize = 4 << 20;

/// Refuses allocations beyond a limit on the bytes handed out through it (see the module
/// comment).
pub struct LimitingAdaptor {
    upstream: Upstream,
    limit: usize,
    /// limit / 256, between 256 bytes and MAX_SLICE: all threads' credit together stays a
    /// small part of the limit.
    slice: usize,
    credits: Shards<Credit>,
}

fn counted(bytes: usize) -> usize {
    bytes.saturating_add(ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT
}

impl LimitingAdaptor {
    /// An adaptor over `upstream` that hands out at most `limit` bytes (counted in 256-byte
    /// units) at once; a limit of 0 is `InvalidArgument`.
    pub fn new(upstream: Arc<dyn MemoryResource>, limit: usize) -> Result<Arc<Self>> {
        if limit == 0 {
            return Err(Error::invalid("a limit of 0 bytes would refuse every allocation"));
        }
        let slice = counted((limit / 256).clamp(ALIGNMENT, MAX_SLICE));
        Ok(Arc::new(LimitingAdaptor {
            upstream: Upstream::new(upstream),
            limit,
            slice,
            credits: Shards::new(AtomicUsize::new(0), &CREDITS),
        }))
    }

    /// What is handed out (exact when no thread is allocating or freeing through it).
    pub fn allocated_bytes(&self) -> usize {
        let taken = self.credits.shared.load(Ordering::Relaxed);
        let mut credit = 0;
        self.credits.for_each(|c| credit += c.bytes.load(Ordering::Relaxed));
        taken.saturating_sub(credit)
    }

    /// The limit in bytes, as given to `new`.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `bytes` from the shared budget if the limit has room for them.
    fn take(&self, bytes: usize) -> bool {
        let within = |taken: usize| taken.checked_add(bytes).filter(|&after| after <= self.limit);
        self.credits.shared.fetch_update(Ordering::Relaxed, Ordering::Relaxed, within).is_ok()
    }

    /// Budget for an allocation of `size` counted bytes: this thread's credit, or the shared
    /// budget (with a slice more as credit while the limit has room), or, last, every
    /// thread's credit taken back. Err: the bytes handed out, which leave no room.
    fn spend(&self, size: usize) -> std::result::Result<(), usize> {
        let spend_credit =
            |credit: &Credit| credit.bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(size)).is_ok();
        if self.credits.with(spend_credit) == Some(true) {
            return Ok(());
        }
        let with_slice = size.saturating_add(self.slice);
        if self.take(with_slice) {
            let kept = self.credits.with(|credit| credit.bytes.fetch_add(self.slice, Ordering::Relaxed));
            if kept.is_none() {
                self.credits.shared.fetch_sub(self.slice, Ordering::Relaxed);
            }
            return Ok(());
        }
        if self.take(size) {
            return Ok(());
        }
        self.credits.for_each(|credit| {
            self.credits.shared.fetch_sub(credit.bytes.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        });
        if self.take(size) {
            return Ok(());
        }
        Err(self.allocated_bytes())
    }

    /// Gives back `size` counted bytes: to this thread's credit, which returns what it holds
    /// above two slices to the shared budget.
    fn give_back(&self, size: usize) {
        let shared = &self.credits.shared;
        let kept = self.credits.with(|credit| {
            if credit.bytes.fetch_add(size, Ordering::Relaxed) + size > 2 * self.slice {
                // Another thread may take the credit back meanwhile: give back what is there.
                let trimmed = credit.bytes.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| (c > self.slice).then_some(self.slice));
                if let Ok(before) = trimmed {
                    shared.fetch_sub(before - self.slice, Ordering::Relaxed);
                }
            }
        });
        if kept.is_none() {
            shared.fetch_sub(size, Ordering::Relaxed);
        }
    }
}

impl MemoryResource for LimitingAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        let size = counted(bytes);
        if let Err(before) = self.spend(size) {
            return Err(Error::out_of_memory(
                bytes,
                format!(
                    "the limiting adaptor of device {} would exceed its limit of {} ({} allocated)",
                    self.device(),
                    units::exact(self.limit),
                    units::exact(before)
                ),
            ));
        }
        self.upstream.allocate_aligned(bytes, alignment, stream).inspect_err(|_| self.give_back(size))
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate_aligned(ptr, bytes, alignment, stream)?;
        self.give_back(counted(bytes));
        Ok(())
    }

    fn name(&self) -> &'static str {
        "limiting"
    }

    fn snapshot(&self) -> serde_json::Value {
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "limit": self.limit,
            "allocated_bytes": self.allocated_bytes(), "upstream": self.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
