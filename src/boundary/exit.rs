//! Process exit, in one place: what rmm does when the process exits (the exit hook is
//! registered by the first C API call). Resources ask `platform::process_exiting` and skip
//! their driver calls from then on.

/// Registers the exit hook once.
pub fn watch_process_exit() {
    static REGISTER: std::sync::Once = std::sync::Once::new();
    REGISTER.call_once(|| crate::platform::at_exit(at_process_exit));
}

/// Every logging adaptor's buffered lines written out, tracking adaptors' leaks reported, and
/// the `RMM_ALLOC_CONF` report (`report:1`) printed.
fn at_process_exit() {
    crate::resources::adaptors::report_all_leaks("at process exit");
    crate::resources::adaptors::flush_all_logs();
    let report = crate::ownership::config::report();
    if !report.is_empty() {
        eprint!("{report}");
    }
}
