//! Process exit: once `exit` has started, the CUDA driver may already be torn down, so
//! resources dropped from then on skip their driver calls. Tracking adaptors report their
//! leaks then, and logging adaptors write out what they buffered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

static EXITING: AtomicBool = AtomicBool::new(false);
static REGISTER: Once = Once::new();

extern "C" fn mark_exiting() {
    EXITING.store(true, Ordering::SeqCst);
    crate::mr::adaptors::at_process_exit();
    crate::alloc_conf::report_at_exit();
}

/// Registers the exit hook; called by the first C API call.
pub fn watch_process_exit() {
    REGISTER.call_once(|| crate::platform::at_exit(mark_exiting));
}

pub fn process_exiting() -> bool {
    EXITING.load(Ordering::Relaxed)
}
