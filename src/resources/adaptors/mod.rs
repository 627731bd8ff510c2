//! Adaptors: resources over an upstream resource that add one concern each (statistics,
//! logging, limiting, tracking, a failure callback, alignment, prefetch). Frees reach them
//! because the ownership layer sends every free back down the stack it came up.

mod aligned;
mod block_records;
mod failure_callback;
mod limiting;
mod logging;
mod prefetch;
mod shards;
mod statistics;
mod tracking;
mod upstream;

pub use aligned::AlignedAdaptor;
pub use failure_callback::FailureCallbackAdaptor;
pub use limiting::LimitingAdaptor;
pub use logging::{LineSink, LoggingAdaptor};
pub use prefetch::PrefetchAdaptor;
pub use statistics::{Counts, StatisticsAdaptor};
pub use tracking::{OutstandingAllocation, TrackingAdaptor};

pub use upstream::Upstream;

/// The `MemoryResource` methods an adaptor answers from its upstream (in field `$upstream`).
#[macro_export]
#[doc(hidden)]
macro_rules! adaptor_forwarding_methods {
    ($upstream:ident) => {
        fn device(&self) -> i32 {
            self.$upstream.device()
        }

        fn release(&self) -> $crate::error::Result<usize> {
            self.$upstream.release()
        }

        fn set_release_threshold(&self, bytes: usize) -> $crate::error::Result<()> {
            self.$upstream.set_release_threshold(bytes)
        }

        fn pool_size(&self) -> Option<usize> {
            self.$upstream.pool_size()
        }

        fn pool_free(&self) -> Option<usize> {
            self.$upstream.pool_free()
        }

        fn footprint(&self) -> Option<$crate::resources::Footprint> {
            self.$upstream.footprint()
        }

        fn for_each_upstream(&self, visit: &mut dyn FnMut(&dyn $crate::resources::MemoryResource)) {
            visit(&*self.$upstream)
        }

        fn hands_out_driver_allocations(&self) -> bool {
            self.$upstream.hands_out_driver_allocations()
        }

        fn orders_by_stream(&self) -> bool {
            self.$upstream.orders_by_stream()
        }
    };
}

pub use logging::flush_all_logs;
pub use tracking::report_all_leaks;

/// The adaptors of a process-wide list still alive, for what runs at exit. None where the
/// list's lock stays taken: in a forked child whose parent's thread held it at the fork, no
/// one will let it go.
fn alive_at_exit<T>(list: &parking_lot::Mutex<Vec<std::sync::Weak<T>>>) -> Option<Vec<std::sync::Arc<T>>> {
    let list = list.try_lock_for(std::time::Duration::from_millis(100))?;
    Some(list.iter().filter_map(std::sync::Weak::upgrade).collect())
}
