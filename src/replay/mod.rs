//! Replays RMM allocation logs against a resource stack: the library half of `rmm-replay`
//! (`src/bin/rmm-replay.rs`); [`report`] draws a memory timeline page from a replay.
//!
//! The log is the CSV of RAPIDS RMM's `logging_resource_adaptor`, which our logging adaptor
//! writes too (the format: `crate::log_format`). [`parse_log`] reads it into [`Event`]s; the
//! replay ignores their times: file order is event order. [`Spec`] describes a resource stack
//! such as `statistics/pool:initial=1GiB/cuda`. [`replay`] performs the events in file order on
//! the calling thread against a resource, mapping logged pointers to the new ones and logged
//! streams to streams it creates, and measures time per operation, the peak footprint and
//! fragmentation; [`replay_spec`] does so `repeat` times, each against a fresh stack.

pub mod report;

use crate::platform::{backend, Stream};
use crate::resources::MemoryResource;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------------------------
// The log: its reader and its events are `log_format`'s, and the replay's input.

pub use crate::log_format::{parse_log, Action, Event};

// ---------------------------------------------------------------------------------------------
// Resource stacks: the stack-spec language of `RMM_ALLOC_CONF`, in `ownership::spec`.

pub use crate::ownership::spec::{Layer, Spec};

/// Builds `spec` on `device`, with the error as text.
fn build(spec: &Spec, device: i32) -> Result<Arc<dyn MemoryResource>, String> {
    spec.build_on(device).map_err(|e| e.reason())
}

// ---------------------------------------------------------------------------------------------
// Replay

/// One call the replay made to the resource (recorded when [`Options::record_sequence`] is
/// set): which log line it replays, that line's action, the size, the stream (0: the default
/// stream; i: the i-th stream the replay created, in order of first use in the log), which
/// allocation (numbered from 0 in the order the replay attempted them, `allocate failure`
/// events included) and whether the call succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Performed {
    /// The log line replayed.
    pub line: usize,
    /// That line's action.
    pub action: Action,
    /// Bytes asked for or freed.
    pub size: usize,
    /// 0: the default stream; i: the i-th stream the replay created.
    pub stream: usize,
    /// Which allocation, numbered in the order the replay attempted them.
    pub allocation: usize,
    /// Whether the call succeeded.
    pub ok: bool,
}

/// How to replay (the default: every event, no sequence kept).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep the sequence of calls made, in [`Report::sequence`].
    pub record_sequence: bool,
    /// Leave `allocate failure` events out. Replayed on a device with more free memory than
    /// the logged one had, they succeed, and a pool keeps what it grew for them: its peak
    /// footprint then says more about the failed request than about the workload.
    pub skip_failure_events: bool,
}

/// Free memory of the pool-like levels of a stack (pools, arenas, fixed-size bins) at one
/// moment: the free bytes they hold, the largest free block among them, and fragmentation =
/// 1 - largest free block / free bytes (0: all free memory is one block).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fragmentation {
    /// Free bytes held by the pool-like levels together.
    pub free_bytes: usize,
    /// The largest free block among them.
    pub largest_free_block: usize,
    /// 1 - largest free block / free bytes.
    pub fragmentation: f64,
}

impl Fragmentation {
    /// Reads the figures of every pool-like resource in a snapshot (upstreams, bins and the
    /// arena's global arena included); None when the stack has none.
    pub fn from_snapshot(snapshot: &Value) -> Option<Fragmentation> {
        fn walk(value: &Value, free: &mut usize, largest: &mut usize, found: &mut bool) {
            match value {
                Value::Object(map) => {
                    if let (Some(f), Some(l)) =
                        (map.get("free_bytes").and_then(Value::as_u64), map.get("largest_free_block").and_then(Value::as_u64))
                    {
                        *found = true;
                        *free += f as usize;
                        *largest = (*largest).max(l as usize);
                    }
                    for (key, inner) in map {
                        if key != "chunks" {
                            walk(inner, free, largest, found);
                        }
                    }
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, free, largest, found)),
                _ => {}
            }
        }
        let (mut free, mut largest, mut found) = (0, 0, false);
        walk(snapshot, &mut free, &mut largest, &mut found);
        found.then(|| Fragmentation {
            free_bytes: free,
            largest_free_block: largest,
            fragmentation: if free == 0 { 0.0 } else { 1.0 - largest as f64 / free as f64 },
        })
    }

    fn to_json(self) -> Value {
        json!({ "free_bytes": self.free_bytes, "largest_free_block": self.largest_free_block, "fragmentation": self.fragmentation })
    }
}

/// Where the peak footprint comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FootprintSource {
    /// The resource's `pool_size()`: bytes it holds from its upstream.
    PoolSize,
    /// The resource keeps no pool figure (`cuda`, `cuda_async`, `binning`): device memory in
    /// use (`cuMemGetInfo`) above what was in use before the replay. On a real GPU this counts
    /// other processes' allocations too.
    DeviceMemory,
}

/// The best and the median of the repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stat {
    /// The lowest.
    pub best: f64,
    /// The median (of an even count, the mean of the middle two).
    pub median: f64,
}

impl Stat {
    fn of(mut samples: Vec<f64>) -> Stat {
        if samples.is_empty() {
            return Stat::default();
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let median = if n % 2 == 1 { samples[n / 2] } else { (samples[n / 2 - 1] + samples[n / 2]) / 2.0 };
        Stat { best: samples[0], median }
    }

    fn to_json(self) -> Value {
        json!({ "best": self.best, "median": self.median })
    }
}

/// Times of the resource's calls. Each call is timed alone (so the replay's own bookkeeping is
/// not counted), and the cost of reading the clock is subtracted.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timing {
    /// Repetitions the statistics are over.
    pub repeats: usize,
    /// Mean ns per successful allocation.
    pub alloc_ns: Stat,
    /// Mean ns per free.
    pub free_ns: Stat,
    /// Mean ns per call, allocations and frees together.
    pub op_ns: Stat,
    /// Milliseconds of the whole replay loop, bookkeeping included, snapshots excluded.
    pub wall_ms: Stat,
    /// What reading the clock around a call costs, subtracted from the means.
    pub timer_overhead_ns: f64,
}

/// What a replay found: counts of what it did and skipped, the footprint and fragmentation of
/// the stack, and the times of its calls (see `docs/src/replay.md` for how to read them).
#[derive(Debug, Clone)]
pub struct Report {
    /// The spec replayed against, or the resource's name.
    pub resource: String,
    /// The device replayed on.
    pub device: i32,
    /// Whether that device is simulated (`RMM_SIM_DEVICES`).
    pub simulated: bool,
    /// Events in the log.
    pub events: usize,
    /// Distinct threads in the log (the replay runs on one thread, in file order).
    pub threads: usize,
    /// Streams the replay created: one per distinct non-default stream of the log.
    pub streams: usize,
    /// `allocate` events replayed with success.
    pub allocations: usize,
    /// Frees replayed.
    pub frees: usize,
    /// `allocate` events that failed in the replay (the logged program's succeeded).
    pub failed_allocations: usize,
    /// The first of those: its line and error.
    pub first_failure: Option<String>,
    /// `allocate failure` events (each replayed as an allocation expected to fail).
    pub expected_failures: usize,
    /// Those that failed again (the others succeeded and were freed at once; what a pool grew
    /// for them stays in its footprint).
    pub expected_failures_reproduced: usize,
    /// `allocate failure` events left out ([`Options::skip_failure_events`]).
    pub skipped_failure_events: usize,
    /// Frees of pointers the log never allocated (the log started late): skipped.
    pub skipped_unknown_frees: usize,
    /// Frees of allocations that failed in the replay: skipped.
    pub skipped_frees_of_failed: usize,
    /// Zero-byte allocations (NULL without a call, as in the C API), their frees, and frees of
    /// `(nil)`: skipped.
    pub skipped_null: usize,
    /// Frees whose size differs from the allocation's (the allocation's size is used).
    pub size_mismatches: usize,
    /// Allocations the log never frees: freed after the measurements.
    pub unfreed: usize,
    /// The most bytes live at once (sum of requested sizes).
    pub peak_live_bytes: usize,
    /// The most bytes the stack held at once, sampled after every allocation.
    pub peak_footprint_bytes: usize,
    /// What the footprint is measured from.
    pub footprint_source: FootprintSource,
    /// At the log's peak of live bytes (None: the stack has no pool-like level).
    pub fragmentation_at_peak: Option<Fragmentation>,
    /// At the end, before freeing what the log never frees.
    pub fragmentation_at_end: Option<Fragmentation>,
    /// The times of the calls, over the repetitions.
    pub timing: Timing,
    /// The calls made, when [`Options::record_sequence`] asked for them (first repetition).
    pub sequence: Option<Vec<Performed>>,
}

impl Report {
    /// Peak footprint / peak live bytes: 1.0 means not a byte more than the program asked for.
    pub fn footprint_ratio(&self) -> Option<f64> {
        (self.peak_live_bytes > 0).then(|| self.peak_footprint_bytes as f64 / self.peak_live_bytes as f64)
    }

    /// The report as `rmm-replay --json` prints it for one stack.
    pub fn to_json(&self) -> Value {
        let t = &self.timing;
        json!({
            "resource": self.resource,
            "device": self.device,
            "simulated": self.simulated,
            "events": self.events,
            "threads": self.threads,
            "streams": self.streams,
            "replayed_on_one_thread_in_file_order": true,
            "allocations": self.allocations,
            "frees": self.frees,
            "failed_allocations": self.failed_allocations,
            "first_failure": self.first_failure,
            "expected_failures": self.expected_failures,
            "expected_failures_reproduced": self.expected_failures_reproduced,
            "skipped_unknown_frees": self.skipped_unknown_frees,
            "skipped_frees_of_failed": self.skipped_frees_of_failed,
            "skipped_null": self.skipped_null,
            "skipped_failure_events": self.skipped_failure_events,
            "size_mismatches": self.size_mismatches,
            "unfreed": self.unfreed,
            "peak_live_bytes": self.peak_live_bytes,
            "peak_footprint_bytes": self.peak_footprint_bytes,
            "footprint_source": match self.footprint_source {
                FootprintSource::PoolSize => "pool_size",
                FootprintSource::DeviceMemory => "device_memory",
            },
            "footprint_ratio": self.footprint_ratio(),
            "fragmentation_at_peak": self.fragmentation_at_peak.map(Fragmentation::to_json),
            "fragmentation_at_end": self.fragmentation_at_end.map(Fragmentation::to_json),
            "timing": {
                "repeats": t.repeats,
                "ns_per_allocation": t.alloc_ns.to_json(),
                "ns_per_free": t.free_ns.to_json(),
                "ns_per_operation": t.op_ns.to_json(),
                "wall_ms": t.wall_ms.to_json(),
                "timer_overhead_ns": t.timer_overhead_ns,
            },
        })
    }
}

/// What the replay does for one event, worked out once from the log.
#[derive(Debug, Clone, Copy)]
enum Step {
    Allocate {
        line: usize,
        size: usize,
        stream: usize,
        slot: usize,
    },
    /// An `allocate failure` event: an allocation expected to fail.
    Attempt {
        line: usize,
        size: usize,
        stream: usize,
    },
    Free {
        line: usize,
        size: usize,
        stream: usize,
        slot: usize,
    },
}

/// The log worked out: pointers to slots, streams to indices, what to skip.
struct Plan {
    steps: Vec<Step>,
    slots: usize,
    /// Streams to create (index 0, the default stream, is not created).
    created_streams: usize,
    /// The step after which the log has the most bytes live.
    peak_step: Option<usize>,
    events: usize,
    threads: usize,
    skipped_unknown_frees: usize,
    skipped_null: usize,
    skipped_failure_events: usize,
    size_mismatches: usize,
}

/// What a logged stream other than 0 and 1 (the legacy default stream, and
/// `cudaStreamLegacy`, the same stream: index 0) stands for, before it gets an index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum StreamKey {
    /// 2 (`cudaStreamPerThread`): one stream per logged thread.
    PerThread(u64),
    Handle(usize),
}

impl Plan {
    fn new(events: &[Event], options: &Options) -> Plan {
        enum Live {
            Slot(usize, usize),
            ZeroBytes,
        }
        let mut plan = Plan {
            steps: Vec::with_capacity(events.len()),
            slots: 0,
            created_streams: 0,
            peak_step: None,
            events: events.len(),
            threads: events.iter().map(|e| e.thread).collect::<HashSet<_>>().len(),
            skipped_unknown_frees: 0,
            skipped_null: 0,
            skipped_failure_events: 0,
            size_mismatches: 0,
        };
        let mut streams: HashMap<StreamKey, usize> = HashMap::new();
        let mut stream_index = |event: &Event| {
            let key = match event.stream {
                0 | 1 => return 0,
                2 => StreamKey::PerThread(event.thread),
                handle => StreamKey::Handle(handle),
            };
            let next = streams.len() + 1;
            *streams.entry(key).or_insert(next)
        };
        let mut live: HashMap<usize, Live> = HashMap::new();
        let (mut live_bytes, mut peak_bytes) = (0usize, 0usize);
        for event in events {
            let line = event.line;
            match event.action {
                Action::Allocate if event.size == 0 => {
                    plan.skipped_null += 1;
                    if event.pointer != 0 {
                        live.insert(event.pointer, Live::ZeroBytes);
                    }
                }
                Action::Allocate => {
                    let slot = plan.slots;
                    plan.slots += 1;
                    // A logged pointer handed out again without a free in between (a log that
                    // lost lines): the earlier allocation is never freed, like one the log
                    // never frees.
                    if event.pointer != 0 {
                        live.insert(event.pointer, Live::Slot(slot, event.size));
                    }
                    live_bytes += event.size;
                    plan.steps.push(Step::Allocate { line, size: event.size, stream: stream_index(event), slot });
                    if live_bytes > peak_bytes {
                        peak_bytes = live_bytes;
                        plan.peak_step = Some(plan.steps.len() - 1);
                    }
                }
                Action::AllocateFailure if options.skip_failure_events => plan.skipped_failure_events += 1,
                Action::AllocateFailure if event.size == 0 => plan.skipped_null += 1,
                Action::AllocateFailure => plan.steps.push(Step::Attempt { line, size: event.size, stream: stream_index(event) }),
                Action::Free if event.pointer == 0 => plan.skipped_null += 1,
                Action::Free => match live.remove(&event.pointer) {
                    None => plan.skipped_unknown_frees += 1,
                    Some(Live::ZeroBytes) => plan.skipped_null += 1,
                    Some(Live::Slot(slot, size)) => {
                        if size != event.size {
                            plan.size_mismatches += 1;
                        }
                        live_bytes -= size;
                        plan.steps.push(Step::Free { line, size, stream: stream_index(event), slot });
                    }
                },
            }
        }
        plan.created_streams = streams.len();
        plan
    }
}

/// What reading the clock around a call costs: the median of empty timed intervals.
fn timer_overhead_ns() -> f64 {
    let mut samples: Vec<f64> = (0..2001)
        .map(|_| {
            let start = Instant::now();
            start.elapsed().as_nanos() as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Device memory in use on `device`.
fn device_used(device: i32) -> Result<usize, String> {
    let (free, total) = backend().and_then(|b| b.mem_get_info(device)).map_err(|e| e.to_string())?;
    Ok(total.saturating_sub(free))
}

/// One replay of a plan: the report of its first repetition plus the raw times.
struct Pass {
    report: Report,
    alloc_ns: f64,
    free_ns: f64,
    op_ns: f64,
    wall_ms: f64,
}

/// What a replay shows its observer after each step (see [`replay_spec_observed`]): the call
/// made (the log line it replays, that line's action, the size, the stream as in
/// [`Performed`], and whether it was made and succeeded: a free of an allocation that failed
/// here is not made; an `allocate failure` event that succeeds here is freed at once), the
/// bytes live after it, how far the replay is, and the stack.
pub struct Sample<'a> {
    /// The log line replayed.
    pub line: usize,
    /// That line's action.
    pub action: Action,
    /// Bytes asked for or freed.
    pub size: usize,
    /// The stream, as in [`Performed`].
    pub stream: usize,
    /// Whether the call was made and succeeded.
    pub ok: bool,
    /// Bytes live after the step (requested sizes of the allocations that succeeded here).
    pub live_bytes: usize,
    /// True after the step at which the log first has its most bytes live.
    pub at_log_peak: bool,
    /// Steps done, this one included, of `steps` per repetition.
    pub done: usize,
    /// Steps per repetition.
    pub steps: usize,
    /// Which repetition of [`replay_spec_observed`] this is, from 0.
    pub repetition: usize,
    /// The stack replayed against (for its snapshot).
    pub resource: &'a Arc<dyn MemoryResource>,
    footprint: &'a dyn Fn() -> Result<usize, String>,
}

impl Sample<'_> {
    /// The stack's footprint now, measured as for [`Report::peak_footprint_bytes`].
    pub fn footprint_bytes(&self) -> Result<usize, String> {
        (self.footprint)()
    }
}

/// Called after every step of a replay.
pub type Observer<'o> = dyn FnMut(&Sample<'_>) + 'o;

fn run(
    plan: &Plan,
    resource: &Arc<dyn MemoryResource>,
    options: &Options,
    device_baseline: Option<usize>,
    overhead: f64,
    observer: Option<(&mut Observer<'_>, usize)>,
) -> Result<Pass, String> {
    let device = resource.device();
    let mut streams = vec![Stream::DEFAULT];
    let mut result = Ok(());
    for _ in 0..plan.created_streams {
        match crate::resources::streams::create(device) {
            Ok(stream) => streams.push(stream),
            Err(e) => {
                result = Err(format!("creating a stream on device {device}: {e}"));
                break;
            }
        }
    }
    let pass = result.and_then(|()| run_on_streams(plan, resource, options, &streams, device_baseline, overhead, observer));
    for &stream in &streams[1..] {
        if let Err(e) = crate::resources::streams::destroy(stream) {
            log::warn!("destroying replay stream {:#x}: {e}", stream.0);
        }
    }
    pass
}

fn run_on_streams(
    plan: &Plan,
    resource: &Arc<dyn MemoryResource>,
    options: &Options,
    streams: &[Stream],
    device_baseline: Option<usize>,
    overhead: f64,
    mut observer: Option<(&mut Observer<'_>, usize)>,
) -> Result<Pass, String> {
    let platform = backend().map_err(|e| e.to_string())?;
    let device = resource.device();
    let footprint_source = match resource.pool_size() {
        Some(_) => FootprintSource::PoolSize,
        None => FootprintSource::DeviceMemory,
    };
    let baseline = match (footprint_source, device_baseline) {
        (FootprintSource::PoolSize, _) => 0,
        (FootprintSource::DeviceMemory, Some(baseline)) => baseline,
        (FootprintSource::DeviceMemory, None) => device_used(device)?,
    };
    let footprint = || -> Result<usize, String> {
        match resource.pool_size() {
            Some(bytes) => Ok(bytes),
            None => Ok(device_used(device)?.saturating_sub(baseline)),
        }
    };
    let mut report = Report {
        resource: resource.name().to_string(),
        device,
        simulated: platform.is_simulated(),
        events: plan.events,
        threads: plan.threads,
        streams: plan.created_streams,
        allocations: 0,
        frees: 0,
        failed_allocations: 0,
        first_failure: None,
        expected_failures: 0,
        expected_failures_reproduced: 0,
        skipped_unknown_frees: plan.skipped_unknown_frees,
        skipped_frees_of_failed: 0,
        skipped_null: plan.skipped_null,
        skipped_failure_events: plan.skipped_failure_events,
        size_mismatches: plan.size_mismatches,
        unfreed: 0,
        peak_live_bytes: 0,
        peak_footprint_bytes: footprint()?,
        footprint_source,
        fragmentation_at_peak: None,
        fragmentation_at_end: None,
        timing: Timing::default(),
        sequence: None,
    };
    let mut sequence: Vec<Performed> = Vec::new();
    // When recording: new pointer -> allocation number, to check which allocation a free frees.
    let mut numbers: HashMap<usize, usize> = HashMap::new();
    let mut attempts = 0usize;
    let mut ptrs = vec![0usize; plan.slots];
    let (mut alloc_ns, mut free_ns) = (0u128, 0u128);
    let mut live_bytes = 0usize;
    let mut excluded = Duration::ZERO;
    let started = Instant::now();
    let mut outcome: Result<(), String> = Ok(());
    for (at, step) in plan.steps.iter().enumerate() {
        // Whether this step's call was made and succeeded.
        let mut succeeded = false;
        match *step {
            Step::Allocate { line, size, stream, slot } => {
                let s = streams[stream];
                let start = Instant::now();
                let result = resource.allocate(size, s);
                let took = start.elapsed();
                let number = attempts;
                attempts += 1;
                match result {
                    Ok(ptr) => {
                        succeeded = true;
                        alloc_ns += took.as_nanos();
                        report.allocations += 1;
                        ptrs[slot] = ptr;
                        live_bytes += size;
                        report.peak_live_bytes = report.peak_live_bytes.max(live_bytes);
                        report.peak_footprint_bytes = report.peak_footprint_bytes.max(footprint()?);
                        if options.record_sequence {
                            numbers.insert(ptr, number);
                        }
                    }
                    Err(e) => {
                        report.failed_allocations += 1;
                        report.first_failure.get_or_insert_with(|| format!("line {line}: {size} bytes: {e}"));
                    }
                }
                if options.record_sequence {
                    let ok = ptrs[slot] != 0;
                    sequence.push(Performed { line, action: Action::Allocate, size, stream, allocation: number, ok });
                }
            }
            Step::Attempt { line, size, stream } => {
                let s = streams[stream];
                report.expected_failures += 1;
                let number = attempts;
                attempts += 1;
                let result = resource.allocate(size, s);
                if options.record_sequence {
                    let ok = result.is_ok();
                    sequence.push(Performed { line, action: Action::AllocateFailure, size, stream, allocation: number, ok });
                }
                match result {
                    Err(_) => report.expected_failures_reproduced += 1,
                    Ok(ptr) => {
                        succeeded = true;
                        // Not sampled: the logged program never held this memory. What a pool
                        // grew for it shows in the next sample.
                        if let Err(e) = resource.deallocate(ptr, size, s) {
                            outcome = Err(format!("line {line}: freeing {size} bytes failed: {e}"));
                            break;
                        }
                        if options.record_sequence {
                            sequence.push(Performed { line, action: Action::Free, size, stream, allocation: number, ok: true });
                        }
                    }
                }
            }
            Step::Free { line, size, stream, slot } => {
                let ptr = std::mem::take(&mut ptrs[slot]);
                if ptr == 0 {
                    report.skipped_frees_of_failed += 1;
                } else {
                    let s = streams[stream];
                    let start = Instant::now();
                    let result = resource.deallocate(ptr, size, s);
                    let took = start.elapsed();
                    if let Err(e) = result {
                        outcome = Err(format!("line {line}: freeing {size} bytes failed: {e}"));
                        break;
                    }
                    free_ns += took.as_nanos();
                    report.frees += 1;
                    live_bytes -= size;
                    succeeded = true;
                    if options.record_sequence {
                        let allocation = numbers.remove(&ptr).unwrap_or(usize::MAX);
                        sequence.push(Performed { line, action: Action::Free, size, stream, allocation, ok: true });
                    }
                }
            }
        }
        if plan.peak_step == Some(at) {
            let start = Instant::now();
            report.fragmentation_at_peak = Fragmentation::from_snapshot(&resource.snapshot());
            excluded += start.elapsed();
        }
        if let Some((observe, repetition)) = observer.as_mut() {
            let start = Instant::now();
            let (line, action, size, stream) = match *step {
                Step::Allocate { line, size, stream, .. } => (line, Action::Allocate, size, stream),
                Step::Attempt { line, size, stream } => (line, Action::AllocateFailure, size, stream),
                Step::Free { line, size, stream, .. } => (line, Action::Free, size, stream),
            };
            let sample = Sample {
                line,
                action,
                size,
                stream,
                ok: succeeded,
                live_bytes,
                at_log_peak: plan.peak_step == Some(at),
                done: at + 1,
                steps: plan.steps.len(),
                repetition: *repetition,
                resource,
                footprint: &footprint,
            };
            observe(&sample);
            excluded += start.elapsed();
        }
    }
    let wall = started.elapsed().saturating_sub(excluded);
    if outcome.is_ok() {
        report.fragmentation_at_end = Fragmentation::from_snapshot(&resource.snapshot());
    }
    // What the log never frees (or what a failed free left): freed now, on the default stream.
    let sizes = allocated_sizes(plan);
    for (slot, ptr) in ptrs.iter().enumerate() {
        if *ptr != 0 {
            report.unfreed += 1;
            if let Err(e) = resource.deallocate(*ptr, sizes[slot], Stream::DEFAULT) {
                outcome = outcome.and(Err(format!("freeing an allocation the log never frees: {e}")));
            }
        }
    }
    outcome?;
    let mean = |total: u128, count: usize| if count == 0 { 0.0 } else { (total as f64 / count as f64 - overhead).max(0.0) };
    let pass = Pass {
        alloc_ns: mean(alloc_ns, report.allocations),
        free_ns: mean(free_ns, report.frees),
        op_ns: mean(alloc_ns + free_ns, report.allocations + report.frees),
        wall_ms: wall.as_secs_f64() * 1e3,
        report: Report { sequence: options.record_sequence.then_some(sequence), ..report },
    };
    Ok(pass)
}

/// The requested size of each slot.
fn allocated_sizes(plan: &Plan) -> Vec<usize> {
    let mut sizes = vec![0; plan.slots];
    for step in &plan.steps {
        if let Step::Allocate { size, slot, .. } = *step {
            sizes[slot] = size;
        }
    }
    sizes
}

fn finish(passes: Vec<Pass>, overhead: f64) -> Report {
    let stat = |f: fn(&Pass) -> f64| Stat::of(passes.iter().map(f).collect());
    let timing = Timing {
        repeats: passes.len(),
        alloc_ns: stat(|p| p.alloc_ns),
        free_ns: stat(|p| p.free_ns),
        op_ns: stat(|p| p.op_ns),
        wall_ms: stat(|p| p.wall_ms),
        timer_overhead_ns: overhead,
    };
    let first = passes.into_iter().next().expect("at least one pass");
    Report { timing, ..first.report }
}

/// Replays `events` once, in file order on the calling thread, against `resource` (on its
/// device): every allocation and free of the log becomes the same call on `resource`, with
/// logged pointers mapped to the new ones and logged streams to streams created for the
/// replay (0 and 1: the default stream; 2, `cudaStreamPerThread`: one stream per logged
/// thread; any other value: one stream each), destroyed at the end. What the log never frees
/// is freed at the end, after the measurements. Errors: the device, or a free the resource
/// refused (a bug in the resource).
pub fn replay(events: &[Event], resource: &Arc<dyn MemoryResource>, options: &Options) -> Result<Report, String> {
    let plan = Plan::new(events, options);
    let overhead = timer_overhead_ns();
    let pass = run(&plan, resource, options, None, overhead, None)?;
    Ok(finish(vec![pass], overhead))
}

/// Replays `events` `repeat` times (at least once), each time against a fresh stack built
/// from `spec` on the current device and given back after. Counts, footprint and
/// fragmentation are the first repetition's; times are the best and the median over the
/// repetitions.
pub fn replay_spec(events: &[Event], spec: &Spec, repeat: usize, options: &Options) -> Result<Report, String> {
    replay_spec_observed(events, spec, repeat, options, &mut |_| {})
}

/// [`replay_spec`], calling `observer` after every step of every repetition: for a progress
/// bar, or to follow what the stack holds over the log (`rmm-replay report`).
pub fn replay_spec_observed(
    events: &[Event],
    spec: &Spec,
    repeat: usize,
    options: &Options,
    observer: &mut Observer<'_>,
) -> Result<Report, String> {
    let plan = Plan::new(events, options);
    let overhead = timer_overhead_ns();
    let device = backend().and_then(|b| b.current_device()).map_err(|e| e.to_string())?;
    let mut passes = Vec::new();
    for at in 0..repeat.max(1) {
        let baseline = device_used(device)?;
        let resource = build(spec, device)?;
        let options = if at == 0 { options.clone() } else { Options { record_sequence: false, ..options.clone() } };
        let pass = run(&plan, &resource, &options, Some(baseline), overhead, Some((&mut *observer, at)));
        drop(resource);
        passes.push(pass?);
    }
    let mut report = finish(passes, overhead);
    report.resource = spec.text().to_string();
    Ok(report)
}

/// The calls a replay of `events` against `resource` makes, in order.
pub fn replayed_sequence(events: &[Event], resource: &Arc<dyn MemoryResource>) -> Result<Vec<Performed>, String> {
    let report = replay(events, resource, &Options { record_sequence: true, ..Options::default() })?;
    Ok(report.sequence.unwrap_or_default())
}
