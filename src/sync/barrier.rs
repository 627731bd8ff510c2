//! The asymmetric half of a Dekker handshake: a full memory barrier on every processor that
//! runs a thread of this process (`membarrier(PRIVATE_EXPEDITED)` on Linux).
//!
//! A thread on a hot path writes a flag of its own with a plain store and then reads shared
//! state, with only a compiler fence between. Another thread, rarely, writes the shared state,
//! calls `heavy`, and then reads the flag: the barrier runs on the first thread's processor in
//! between, so either the first thread's read sees the write, or the second thread's read sees
//! the flag (as in userspace RCU and Folly's asymmetric fences). The hot path pays nothing for
//! it; `heavy` costs a system call and an interrupt on each processor running the process.
//!
//! Used by the biased locks (`bias`) and by per-thread caches that a publisher empties
//! (`thread_cache`).

use std::sync::OnceLock;

const MEMBARRIER_CMD_GLOBAL: libc::c_int = 1;
const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 8;
const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 16;

fn membarrier(command: libc::c_int) -> bool {
    // SAFETY: membarrier takes two integer arguments and touches no memory of ours.
    unsafe { libc::syscall(libc::SYS_membarrier, command, 0, 0) == 0 }
}

/// Whether `heavy` can be used: the kernel has membarrier, no seccomp filter refuses it, and
/// this process registered for the expedited command (once, on the first call).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
}

/// A full memory barrier on every processor that runs a thread of this process. Only for
/// callers that `available` said yes to; a forked child registers again, and the global
/// command is the last resort (slower, needs no registration).
pub fn heavy() {
    if membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)
        || (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) && membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED))
        || membarrier(MEMBARRIER_CMD_GLOBAL)
    {
        return;
    }
    // Going on without the barrier could let the two sides of a handshake miss each other; a
    // process in which membarrier worked once and then stopped working cannot go on safely.
    eprintln!("rmm: membarrier stopped working; aborting rather than risking a data race");
    std::process::abort();
}
