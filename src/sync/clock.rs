//! The wall clock for log lines, cheaper than `clock_gettime` per call.
//!
//! A logging adaptor stamps two lines per allocate+free, and `clock_gettime` costs 20-30 ns
//! even through the vDSO. Where the processor's time-stamp counter runs at a constant rate
//! (x86-64 with `constant_tsc` and `nonstop_tsc`), each thread reads the real clock at most
//! once per millisecond of counter ticks and extrapolates in between with the counter's rate,
//! which is measured over the whole life of the process (so it only gets more exact). The
//! error stays within a few microseconds of `clock_gettime`. Elsewhere every call reads the
//! real clock.
//!
//! Where the kernel itself keeps time with that counter (clock source `tsc`), it has checked
//! that the processors' counters agree: a reading that follows another through memory (a lock
//! handed over, a block freed on one thread and allocated on another) is never the smaller.
//! There the counter, read in program order (`OrderedCounter`), both orders events across
//! threads and dates them: a reading of both clocks now and then (an `Anchor`) converts the
//! readings near it to wall-clock time later, off the thread that took them.

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

/// Whether the time-stamp counter runs at one rate, also in sleep states, and may stand in
/// for the system clock (`RMM_LOG_CLOCK=system` says no).
fn constant_rate() -> bool {
    static CONSTANT_RATE: OnceLock<bool> = OnceLock::new();
    *CONSTANT_RATE.get_or_init(|| {
        cfg!(target_arch = "x86_64")
            && std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
                info.lines().find(|line| line.starts_with("flags")).is_some_and(|flags| {
                    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
                    has("constant_tsc") && has("nonstop_tsc")
                })
            })
            && std::env::var("RMM_LOG_CLOCK").map_or(true, |v| v != "system")
    })
}

#[cfg(target_arch = "x86_64")]
fn counter() -> Option<u64> {
    // SAFETY: rdtsc reads the time-stamp counter; it has no memory effects, and every x86-64
    // processor has it.
    constant_rate().then(|| unsafe { core::arch::x86_64::_rdtsc() })
}

#[cfg(not(target_arch = "x86_64"))]
fn counter() -> Option<u64> {
    None
}

/// The time-stamp counter where it orders events across threads (see the module's comment).
#[derive(Debug, Clone, Copy)]
pub struct OrderedCounter(());

/// A reading of the counter and of the system clock, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The counter's reading.
    pub ticks: u64,
    /// The system clock's reading (nanoseconds since the Unix epoch) at the same moment.
    pub ns: u64,
}

impl OrderedCounter {
    /// Some where the counter runs at a constant rate and the kernel keeps time with it.
    pub fn get() -> Option<Self> {
        static TRUSTED: OnceLock<bool> = OnceLock::new();
        let trusted = *TRUSTED.get_or_init(|| {
            constant_rate()
                && std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                    .is_ok_and(|source| source.trim() == "tsc")
        });
        trusted.then_some(OrderedCounter(()))
    }

    /// The counter, read once every earlier instruction has completed: a reading that follows
    /// another in program order, or through memory (what an earlier load saw), is the larger.
    /// Later instructions may start before it (a later store still becomes visible after it).
    #[inline(always)]
    pub fn read(self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: lfence and rdtsc have no memory effects; every x86-64 processor has both.
        unsafe {
            core::arch::x86_64::_mm_lfence();
            core::arch::x86_64::_rdtsc()
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("an ordered counter is only made on x86-64")
    }

    /// The counter, read without waiting for earlier instructions: it may be read before an
    /// earlier load completes, or before an earlier reading. Only the caller's own ordering
    /// makes such readings comparable (see the logging adaptor's sole buffer).
    #[inline(always)]
    pub fn read_unfenced(self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: rdtsc has no memory effects; every x86-64 processor has it.
        unsafe {
            core::arch::x86_64::_rdtsc()
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("an ordered counter is only made on x86-64")
    }

    /// As `read`, and before any later instruction begins (a bound read before loads that
    /// must not see what was done after it).
    #[inline]
    pub fn read_before_later(self) -> u64 {
        let ticks = self.read();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: lfence has no memory effects.
        unsafe {
            core::arch::x86_64::_mm_lfence()
        };
        ticks
    }

    /// Both clocks now; refines the counter's measured rate.
    pub fn anchor(self) -> Anchor {
        let (ticks, ns) = paired(|| self.read());
        calibrate(ticks, ns);
        Anchor { ticks, ns }
    }

    /// The counter's rate, ns per tick in 2^-32 units, measured over at least a millisecond
    /// (waits for the first millisecond of the process's readings to pass).
    pub fn rate(self) -> u64 {
        loop {
            let (ticks, ns) = paired(|| self.read());
            let rate = calibrate(ticks, ns);
            if rate != 0 {
                return rate;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

impl Anchor {
    /// The wall-clock time, ns since the Unix epoch, of the counter reading `ticks`, taken
    /// near this anchor, at `rate` (from `OrderedCounter::rate`).
    pub fn wall_ns(&self, ticks: u64, rate: u64) -> u64 {
        let scaled = |ticks: u64| ((ticks as u128 * rate as u128) >> 32) as u64;
        if ticks >= self.ticks {
            self.ns + scaled(ticks - self.ticks)
        } else {
            self.ns.saturating_sub(scaled(self.ticks - ticks))
        }
    }
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

/// Both clocks read together: the counter between two readings of the system clock, the
/// closest pair of a few tries. A thread preempted between the two readings would pair a
/// counter reading with a time microseconds or more later, which skews every rate measured
/// from it (the first pair's for the whole process) and every time dated through it.
fn paired(read_counter: impl Fn() -> u64) -> (u64, u64) {
    let (mut ticks, mut ns, mut gap) = (0, 0, u64::MAX);
    for _ in 0..8 {
        let before = system_ns();
        let now = read_counter();
        let after = system_ns().max(before);
        if after - before < gap {
            (ticks, ns, gap) = (now, before + (after - before) / 2, after - before);
        }
        if gap <= 1_000 {
            break;
        }
    }
    (ticks, ns)
}

/// Refines the rate with a new (ticks, ns) reading against the first one; returns it.
fn calibrate(ticks: u64, ns: u64) -> u64 {
    let &(first_ticks, first_ns) = FIRST.get_or_init(|| paired(|| counter().unwrap_or(ticks)));
    if ticks > first_ticks && ns >= first_ns + EXTRAPOLATE_NS {
        let rate = (((ns - first_ns) as u128) << 32) / (ticks - first_ticks) as u128;
        NS_PER_TICK.store(rate.min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }
    NS_PER_TICK.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::{system_ns, wall_clock_ns, Anchor, OrderedCounter};

    /// Readings converted through an anchor taken up to a few milliseconds away land between
    /// the system clock's readings around them, within a few microseconds.
    #[test]
    fn counter_readings_convert_to_wall_clock_time() {
        let Some(counter) = OrderedCounter::get() else { return };
        let rate = counter.rate();
        let anchor = counter.anchor();
        let start = std::time::Instant::now();
        let mut readings = 0;
        while start.elapsed() < std::time::Duration::from_millis(5) {
            let before = system_ns();
            let ticks = counter.read();
            let after = system_ns();
            let ns = anchor.wall_ns(ticks, rate);
            assert!(ns + 5_000 >= before && ns <= after + 5_000, "{ns} outside [{before}, {after}] by over 5 us");
            readings += 1;
        }
        assert!(readings > 100);
        // Readings before the anchor count back from it.
        let later = Anchor { ticks: anchor.ticks + 1_000_000, ns: 0 };
        assert_eq!(later.wall_ns(anchor.ticks, rate), 0);
        let later = Anchor { ticks: anchor.ticks + (1 << 32), ns: 1 << 40 };
        assert_eq!(later.wall_ns(anchor.ticks, rate), (1 << 40) - rate);
    }

    /// A reading that follows another through memory, on another thread, is never the smaller.
    #[test]
    fn counter_readings_handed_between_threads_increase() {
        let Some(counter) = OrderedCounter::get() else { return };
        let (to_other, from_main) = std::sync::mpsc::sync_channel::<u64>(0);
        let (to_main, from_other) = std::sync::mpsc::sync_channel::<u64>(0);
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for sent in from_main {
                    let now = counter.read();
                    assert!(now > sent, "read {now} after {sent} was sent");
                    to_main.send(counter.read()).unwrap();
                }
            });
            for _ in 0..2_000 {
                to_other.send(counter.read()).unwrap();
                let sent = from_other.recv().unwrap();
                let now = counter.read();
                assert!(now > sent, "read {now} after {sent} was sent");
            }
            drop(to_other);
        });
    }

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
