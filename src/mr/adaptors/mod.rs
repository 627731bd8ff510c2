//! Adaptors: resources over an upstream resource that add one concern each (statistics,
//! logging, limiting, tracking, a failure callback, alignment, prefetch). Each is numbered as
//! an outer resource (`via`), so blocks of pools beneath it remember it and `rmmFree` routes
//! their frees through it.

mod aligned;
mod failure_callback;
mod limiting;
mod logging;
mod prefetch;
mod statistics;
mod tracking;
mod upstream;

pub use aligned::AlignedAdaptor;
pub use failure_callback::FailureCallbackAdaptor;
pub use limiting::LimitingAdaptor;
pub use logging::LoggingAdaptor;
pub use prefetch::PrefetchAdaptor;
pub use statistics::{Counts, StatisticsAdaptor};
pub use tracking::{OutstandingAllocation, TrackingAdaptor};

use super::via::{self, Via};
use super::MemoryResource;
use std::sync::Arc;
pub use upstream::Upstream;

/// What every adaptor holds: its upstream and its outer-resource number.
pub struct Outer {
    pub upstream: Upstream,
    pub via: Via,
}

impl Outer {
    /// Builds an adaptor that knows its own number, registered so that frees of its blocks
    /// find it (and it lives while they are live; `via::collect` lets go of it after).
    pub fn build<A: MemoryResource>(upstream: Arc<dyn MemoryResource>, make: impl FnOnce(Outer) -> A) -> Arc<A> {
        // Adaptors the Rust API dropped since (the C API collects when handles go).
        via::collect();
        let via = via::reserve();
        let adaptor = Arc::new(make(Outer { upstream: Upstream::new(upstream), via }));
        via::register(via, adaptor.clone());
        adaptor
    }
}

/// Allocations live through an adaptor that keeps no figures of its own.
#[derive(Default)]
pub struct LiveCount(std::sync::atomic::AtomicUsize);

impl LiveCount {
    pub fn allocated<T>(&self, result: crate::error::Result<T>) -> crate::error::Result<T> {
        if result.is_ok() {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }

    pub fn freed(&self, result: crate::error::Result<()>) -> crate::error::Result<()> {
        if result.is_ok() {
            self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        result
    }

    pub fn any(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed) > 0
    }
}

/// The `MemoryResource` methods an adaptor answers from its upstream, with `allocate` and
/// `deallocate` going through `allocate_via`/`deallocate_via` under the adaptor's own number.
#[macro_export]
#[doc(hidden)]
macro_rules! adaptor_forwarding_methods {
    ($outer:ident) => {
        fn allocate(&self, bytes: usize, stream: $crate::platform::Stream) -> $crate::error::Result<usize> {
            self.allocate_via(bytes, stream, self.$outer.via)
        }

        fn deallocate(&self, ptr: usize, bytes: usize, stream: $crate::platform::Stream) -> $crate::error::Result<()> {
            self.deallocate_via(ptr, bytes, stream, self.$outer.via)
        }

        fn device(&self) -> i32 {
            self.$outer.upstream.device()
        }

        fn release(&self) -> $crate::error::Result<usize> {
            self.$outer.upstream.release()
        }

        fn pool_size(&self) -> Option<usize> {
            self.$outer.upstream.pool_size()
        }

        fn pool_free(&self) -> Option<usize> {
            self.$outer.upstream.pool_free()
        }

        fn tracks_allocations(&self) -> bool {
            self.$outer.upstream.tracks_allocations()
        }

        fn suballocation_depth(&self) -> usize {
            self.$outer.upstream.suballocation_depth()
        }

        fn outer_via(&self) -> Option<$crate::mr::Via> {
            Some(self.$outer.via)
        }
    };
}

/// Called when the process exits: leak reports of tracking adaptors, and every logging
/// adaptor's buffered lines written out.
pub fn at_process_exit() {
    tracking::report_all("at process exit");
    logging::flush_all();
}

/// Called by `rmmFinalize`: leak reports of tracking adaptors.
pub fn at_finalize() {
    tracking::report_all("at rmmFinalize");
}
