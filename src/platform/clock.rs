//! The wall clock for log lines, cheaper than `clock_gettime` per call.
//!
//! A logging adaptor stamps two lines per allocate+free, and `clock_gettime` costs 20-30 ns
//! even through the vDSO. Where the processor's time-stamp counter runs at a constant rate
//! (x86-64 with `constant_tsc` and `nonstop_tsc`), each thread reads the real clock at most
//! once per millisecond of counter ticks and extrapolates in between with the counter's rate,
//! which is measured over the whole life of the process (so it only gets more exact). The
//! error stays within a few microseconds of `clock_gettime`. Elsewhere every call reads the
//! real clock.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since the Unix epoch, from the system's real-time clock.
fn system_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Nanoseconds since the Unix epoch (the real-time clock, extrapolated between readings).
#[inline]
pub fn wall_clock_ns() -> u64 {
    match counter() {
        Some(ticks) => extrapolated(ticks),
        None => system_ns(),
    }
}

#[cfg(target_arch = "x86_64")]
fn counter() -> Option<u64> {
    static CONSTANT_RATE: OnceLock<bool> = OnceLock::new();
    let constant = *CONSTANT_RATE.get_or_init(|| {
        std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
            info.lines().find(|line| line.starts_with("flags")).is_some_and(|flags| {
                let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
                has("constant_tsc") && has("nonstop_tsc")
            })
        }) && std::env::var("RMM_LOG_CLOCK").map_or(true, |v| v != "system")
    });
    // SAFETY: rdtsc reads the time-stamp counter; it has no memory effects, and every x86-64
    // processor has it.
    constant.then(|| unsafe { core::arch::x86_64::_rdtsc() })
}

#[cfg(not(target_arch = "x86_64"))]
fn counter() -> Option<u64> {
    None
}

/// The first reading of the process: (ticks, ns).
static FIRST: OnceLock<(u64, u64)> = OnceLock::new();
/// The counter's rate as ns per tick in 2^-32 units (0 until a millisecond has passed since
/// the first reading).
static NS_PER_TICK: AtomicU64 = AtomicU64::new(0);

/// How long a thread extrapolates before reading the real clock again.
const EXTRAPOLATE_NS: u64 = 1_000_000;

thread_local! {
    /// This thread's last real reading (ticks, ns) and the ticks after which it reads again.
    static LAST: Cell<(u64, u64, u64)> = const { Cell::new((0, 0, 0)) };
}

fn extrapolated(ticks: u64) -> u64 {
    let (at_ticks, at_ns, until) = LAST.get();
    let rate = NS_PER_TICK.load(Ordering::Relaxed);
    if rate != 0 && ticks >= at_ticks && ticks < until {
        return at_ns + (((ticks - at_ticks) as u128 * rate as u128) >> 32) as u64;
    }
    let ns = system_ns();
    let rate = calibrate(ticks, ns);
    let until = if rate == 0 { 0 } else { ticks + ((EXTRAPOLATE_NS as u128) << 32).div_ceil(rate as u128) as u64 };
    LAST.set((ticks, ns, until));
    ns
}

/// Refines the rate with a new (ticks, ns) reading against the first one; returns it.
fn calibrate(ticks: u64, ns: u64) -> u64 {
    let &(first_ticks, first_ns) = FIRST.get_or_init(|| (ticks, ns));
    if ticks > first_ticks && ns >= first_ns + EXTRAPOLATE_NS {
        let rate = (((ns - first_ns) as u128) << 32) / (ticks - first_ticks) as u128;
        NS_PER_TICK.store(rate.min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }
    NS_PER_TICK.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::{system_ns, wall_clock_ns};

    /// Over a few milliseconds of readings, the extrapolated clock stays within 50 us of the
    /// system clock and never runs backwards on one thread by more than that.
    #[test]
    fn follows_the_system_clock() {
        let start = std::time::Instant::now();
        let mut last = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            let before = system_ns();
            let ours = wall_clock_ns();
            let after = system_ns();
            assert!(ours + 50_000 >= before && ours <= after + 50_000, "{ours} outside [{before}, {after}] by over 50 us");
            assert!(ours + 50_000 >= last, "went back from {last} to {ours}");
            last = ours;
        }
    }
}
