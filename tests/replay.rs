//! `rmm::replay` (the library half of `rmm-replay`) on a simulated device: parsing RMM logs
//! in our format and RAPIDS variants, resource specs, and replays: counts, skipped frees,
//! expected failures, stream mapping, and the property that a log replays to the sequence of
//! calls it records (for random logs of our own writing and for logs of the logging adaptor).

mod common;

use common::{races, setup_with, Rng};
use rmm::log_format::{Lines, TimeOfDay, COLUMNS};
use rmm::platform::{backend, Stream};
use rmm::replay::{
    parse_log, replay, replay_spec, replayed_sequence, Action, Event, FootprintSource, Fragmentation, Options, Performed, Spec,
};
use rmm::resources::adaptors::{LoggingAdaptor, StatisticsAdaptor};
use rmm::resources::{DirectResource, MemoryResource, PoolResource};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, MutexGuard};

const RAPIDS_SAMPLE: &str = include_str!("data/rapids_sample.log");
const REORDERED: &str = include_str!("data/reordered_columns.log");

/// One simulated device of 1 GiB: `allocate failure` events of more than that fail again.
fn setup() -> MutexGuard<'static, ()> {
    setup_with("1:1GiB")
}

fn spec(text: &str) -> Spec {
    Spec::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

fn error_of<T>(result: Result<T, String>) -> String {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing

#[test]
fn parses_our_format() {
    let log = "Thread,Time,Action,Pointer,Size,Stream\n\
               4031547,14:03:07.123456,allocate,0x7f3a40000000,1024,0\n\
               4031547,14:03:07.123470,free,0x7f3a40000000,1024,0\n\
               4031548,14:03:07.123480,allocate failure,(nil),99999999999,0x55d0c2a3b4c0\n";
    let events = parse_log(log).unwrap();
    let time = |text: &str| Some(TimeOfDay::parse(text).unwrap());
    assert_eq!(time("14:03:07.123456").unwrap().micros(), ((14 * 60 + 3) * 60 + 7) * 1_000_000 + 123_456);
    assert_eq!(
        events,
        vec![
            Event {
                line: 2,
                thread: 4031547,
                time: time("14:03:07.123456"),
                action: Action::Allocate,
                pointer: 0x7f3a40000000,
                size: 1024,
                stream: 0
            },
            Event {
                line: 3,
                thread: 4031547,
                time: time("14:03:07.123470"),
                action: Action::Free,
                pointer: 0x7f3a40000000,
                size: 1024,
                stream: 0
            },
            Event {
                line: 4,
                thread: 4031548,
                time: time("14:03:07.123480"),
                action: Action::AllocateFailure,
                pointer: 0,
                size: 99999999999,
                stream: 0x55d0c2a3b4c0
            },
        ]
    );
    assert_eq!(parse_log("Thread,Time,Action,Pointer,Size,Stream\n").unwrap(), vec![], "a header alone");
}

#[test]
fn parses_rapids_variants() {
    // Reordered columns, extra columns, spaces around the action, (nil), a decimal stream,
    // blank lines, times in another format or missing.
    let events = parse_log(REORDERED).unwrap();
    let summary: Vec<_> = events.iter().map(|e| (e.line, e.thread, e.action, e.pointer, e.size, e.stream)).collect();
    assert!(events.iter().all(|e| e.time.is_none()), "times that are no time of day are left out, not refused");
    assert_eq!(
        summary,
        vec![
            (3, 7, Action::Allocate, 0x7f0000000000, 1024, 0),
            (4, 8, Action::Allocate, 0x7f0000000400, 2048, 140000000000000),
            (5, 7, Action::Free, 0x7f0000000000, 1024, 0),
            (6, 8, Action::AllocateFailure, 0, 100, 140000000000000),
            (7, 7, Action::Allocate, 0, 0, 0),
            (8, 8, Action::Free, 0x7f0000000400, 2048, 140000000000000),
        ]
    );

    // CRLF line ends, a byte order mark, null pointers written as 0 and 0x0, upper-case hex,
    // a header in other case, and no Thread, Time or Stream column at all.
    let events = parse_log("\u{feff}action,SIZE,pointer\r\nallocate,10,0X7F00\r\nfree,10,0x7f00\r\nfree,1,0\r\nfree,1,0x0\r\n").unwrap();
    assert_eq!(
        events.iter().map(|e| (e.pointer, e.thread, e.stream)).collect::<Vec<_>>(),
        [(0x7f00, 0, 0), (0x7f00, 0, 0), (0, 0, 0), (0, 0, 0)]
    );

    // No header: RMM's six columns in RMM's order; thread ids that are not numbers are told
    // apart all the same.
    let events = parse_log("1,t,allocate,0x100,8,0x5\nthread-a,t,allocate,0x200,8,5\nthread-b,t,free,0x100,8,0x5\n").unwrap();
    assert_eq!(events.len(), 3);
    assert_eq!(events[1].stream, 5, "a decimal stream");
    assert_ne!(events[1].thread, events[2].thread);
    assert_eq!(events[0].line, 1);
}

#[test]
fn parse_errors_name_the_line() {
    let header = "Thread,Time,Action,Pointer,Size,Stream\n";
    let cases = [
        (format!("{header}1,t,allocate,0x100,8,0\n\n1,t,reallocate,0x100,8,0\n"), "line 4: unknown action \"reallocate\""),
        (format!("{header}1,t,allocate,0x100,8,0\n1,t,allocate,0x200,8 bytes,0\n"), "line 3: size \"8 bytes\" is not a decimal"),
        (format!("{header}1,t,allocate,0x100,-8,0\n"), "line 2: size \"-8\""),
        (format!("{header}1,t,allocate,7f00,8,0\n"), "line 2: pointer \"7f00\""),
        (format!("{header}1,t,allocate,0x100,8,stream0\n"), "line 2: stream \"stream0\""),
        (format!("{header}1,t,allocate,0x100,8\n"), "line 2: 5 fields where the header needs at least 6"),
        ("Thread,Time,Action,Pointer,Stream\n1,t,allocate,0x100,0\n".to_string(), "line 1: the header has no Size column"),
        ("hello world\n".to_string(), "line 1: no header"),
        ("\n  \n".to_string(), "the log is empty"),
    ];
    for (log, expected) in cases {
        let e = error_of(parse_log(&log));
        assert!(e.contains(expected), "{log:?}: {e:?} does not say {expected:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Specs

// The spec language itself is tested in `rmm::ownership::spec`; here, that a spec builds.

#[test]
fn building_a_stack_reports_the_resources_refusal() {
    let _guard = setup();
    let build = |text: &str| spec(text).build_on(0).map_err(|e| e.to_string());
    let e = error_of(build("aligned:alignment=100"));
    assert!(e.contains("alignment 100 must be a power of two"), "{e}");
    let e = error_of(build("pool:initial=2GiB"));
    assert!(e.contains("pool:initial=2GiB: building pool"), "{e}");
    let resource = build("statistics/binning/pool").unwrap();
    assert_eq!(resource.name(), "statistics");
}

// ---------------------------------------------------------------------------------------------
// Replays

/// Counts a faithful replay of `events` must reach, worked out from the log alone.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    allocations: usize,
    frees: usize,
    expected_failures: usize,
    unknown_frees: usize,
    unfreed: usize,
    peak_live: usize,
    threads: usize,
    streams: usize,
}

fn expected(events: &[Event]) -> Expected {
    let mut e = Expected::default();
    let mut live: HashMap<usize, usize> = HashMap::new();
    let (mut bytes, mut streams, mut threads) = (0, HashSet::new(), HashSet::new());
    for event in events {
        threads.insert(event.thread);
        match event.action {
            Action::Allocate => {
                e.allocations += 1;
                live.insert(event.pointer, event.size);
                bytes += event.size;
                e.peak_live = e.peak_live.max(bytes);
            }
            Action::AllocateFailure => e.expected_failures += 1,
            Action::Free => match live.remove(&event.pointer) {
                Some(size) => {
                    e.frees += 1;
                    bytes -= size;
                }
                None => {
                    e.unknown_frees += 1;
                    continue;
                }
            },
        }
        if event.stream != 0 {
            streams.insert(event.stream);
        }
    }
    e.unfreed = live.len();
    e.threads = threads.len();
    e.streams = streams.len();
    e
}

#[test]
fn replays_the_sample_against_each_kind_of_stack() {
    let _guard = setup();
    let events = parse_log(RAPIDS_SAMPLE).unwrap();
    let want = expected(&events);
    assert_eq!((want.unknown_frees, want.expected_failures, want.threads, want.streams), (1, 1, 2, 2));
    let device_free = || backend().unwrap().mem_get_info(0).unwrap().0;
    let free_before = device_free();
    for text in
        ["pool", "binning", "binning/pool", "arena", "cuda", "managed", "cuda_async", "statistics/limiting:limit=1GiB/pool:maximum=512MiB"]
    {
        let report = replay_spec(&events, &spec(text), 1, &Options::default()).unwrap_or_else(|e| panic!("{text}: {e}"));
        let got = Expected {
            allocations: report.allocations,
            frees: report.frees,
            expected_failures: report.expected_failures,
            unknown_frees: report.skipped_unknown_frees,
            unfreed: report.unfreed,
            peak_live: report.peak_live_bytes,
            threads: report.threads,
            streams: report.streams,
        };
        assert_eq!(got, want, "{text}");
        assert_eq!(report.resource, text);
        assert_eq!(report.events, events.len());
        assert_eq!((report.failed_allocations, report.first_failure.as_deref()), (0, None), "{text}");
        assert_eq!(report.expected_failures_reproduced, 1, "{text}: 93 GB fail on a 1 GiB device");
        assert_eq!((report.skipped_frees_of_failed, report.skipped_null, report.size_mismatches), (0, 0, 0));
        assert!(report.peak_footprint_bytes >= report.peak_live_bytes, "{text}: {report:?}");
        assert!(report.footprint_ratio().unwrap() >= 1.0);
        // A binning resource reports no pool size (its bins and upstream have theirs).
        let pooled = !matches!(text, "cuda" | "managed" | "cuda_async") && !text.starts_with("binning");
        let source = if pooled { FootprintSource::PoolSize } else { FootprintSource::DeviceMemory };
        assert_eq!(report.footprint_source, source, "{text}");
        if matches!(text, "cuda" | "managed" | "cuda_async") {
            // Simulated device memory is exactly what is asked for.
            assert_eq!(report.peak_footprint_bytes, report.peak_live_bytes, "{text}");
            assert_eq!((report.fragmentation_at_peak, report.fragmentation_at_end), (None, None), "{text}: no pool");
        } else {
            let at_peak = report.fragmentation_at_peak.unwrap_or_else(|| panic!("{text}: fragmentation at the peak"));
            let at_end = report.fragmentation_at_end.unwrap();
            for f in [at_peak, at_end] {
                assert!((0.0..=1.0).contains(&f.fragmentation) && f.largest_free_block <= f.free_bytes, "{text}: {f:?}");
            }
        }
        let t = report.timing;
        assert_eq!(t.repeats, 1);
        assert!(t.alloc_ns.median > 0.0 && t.free_ns.median > 0.0 && t.wall_ms.median > 0.0, "{text}: {t:?}");
        assert!(report.to_json()["timing"]["ns_per_operation"]["median"].as_f64().is_some());
        assert_eq!(device_free(), free_before, "{text}: every byte came back when the stack was dropped");
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn repeats_report_the_best_and_the_median() {
    let _guard = setup();
    let events = parse_log(RAPIDS_SAMPLE).unwrap();
    let report = replay_spec(&events, &spec("pool"), 3, &Options::default()).unwrap();
    let t = report.timing;
    assert_eq!(t.repeats, 3);
    for stat in [t.alloc_ns, t.free_ns, t.op_ns, t.wall_ms] {
        assert!(stat.best <= stat.median, "{t:?}");
    }
    assert_eq!(report.allocations, expected(&events).allocations, "counts are the first repetition's");
}

#[test]
fn replay_frees_everything_it_allocated() {
    let _guard = setup();
    let pool = Arc::new(PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 0).unwrap());
    let stats = StatisticsAdaptor::new(pool.clone());
    let resource: Arc<dyn MemoryResource> = stats.clone();
    let events = parse_log(RAPIDS_SAMPLE).unwrap();
    let report = replay(&events, &resource, &Options::default()).unwrap();
    assert_eq!(report.resource, "statistics");
    assert_eq!(report.unfreed, expected(&events).unfreed);
    let counts = stats.counts();
    assert_eq!((counts.current_bytes, counts.current_count), (0, 0));
    assert_eq!(counts.total_count as usize, report.allocations, "the failed attempt is not counted");
    assert_eq!(counts.peak_bytes as usize, report.peak_live_bytes);
    assert_eq!(report.peak_footprint_bytes, pool.usage().reserved.max(report.peak_footprint_bytes));
    pool.check_invariants().unwrap();
    // Replaying twice on the same resource works: nothing of the first replay is left.
    let again = replay(&events, &resource, &Options::default()).unwrap();
    assert_eq!(again.allocations, report.allocations);
    assert!(races().is_empty(), "{:?}", races());
}

fn recording() -> Options {
    Options { record_sequence: true, ..Options::default() }
}

fn log(lines: &[&str]) -> Vec<Event> {
    parse_log(&format!("Thread,Time,Action,Pointer,Size,Stream\n{}\n", lines.join("\n"))).unwrap()
}

fn sequence(events: &[Event], text: &str) -> Vec<Performed> {
    replay_spec(events, &spec(text), 1, &recording()).unwrap().sequence.unwrap()
}

#[test]
fn skips_and_counts_frees_of_unknown_pointers() {
    let _guard = setup();
    let events = log(&[
        "1,t,free,0x5000,64,0", // allocated before the log started
        "1,t,allocate,0x1000,64,0",
        "1,t,free,0x1000,64,0",
        "1,t,free,0x1000,64,0",    // a second free of the same pointer: unknown by now
        "1,t,free,(nil),0,0",      // free(NULL)
        "1,t,allocate,0x2000,0,0", // zero bytes: NULL without a call
        "1,t,free,0x2000,0,0",
        "1,t,allocate,0x3000,100,0",
        "1,t,free,0x3000,60,0", // the size differs: the allocation's is used
    ]);
    let report = replay_spec(&events, &spec("pool"), 1, &recording()).unwrap();
    assert_eq!((report.allocations, report.frees), (2, 2));
    assert_eq!((report.skipped_unknown_frees, report.skipped_null, report.size_mismatches), (2, 3, 1));
    let seq = report.sequence.unwrap();
    assert_eq!(
        seq.iter().map(|p| (p.line, p.action, p.size)).collect::<Vec<_>>(),
        [(3, Action::Allocate, 64), (4, Action::Free, 64), (9, Action::Allocate, 100), (10, Action::Free, 100),]
    );
}

#[test]
fn replays_allocate_failure_events_as_attempts() {
    let _guard = setup();
    let events = log(&[
        "1,t,allocate,0x1000,4096,0",
        "1,t,allocate failure,(nil),1099511627776,0x77", // 1 TiB: fails again
        "1,t,allocate failure,(nil),1024,0x77",          // fits now: allocated and freed at once
        "1,t,free,0x1000,4096,0",
    ]);
    for text in ["pool", "cuda", "arena", "binning"] {
        let report = replay_spec(&events, &spec(text), 1, &recording()).unwrap();
        assert_eq!((report.expected_failures, report.expected_failures_reproduced), (2, 1), "{text}");
        assert_eq!((report.allocations, report.frees, report.failed_allocations), (1, 1, 0), "{text}");
        assert_eq!(report.peak_live_bytes, 4096, "{text}: attempts are not live bytes of the log");
        if text == "cuda" {
            assert_eq!(report.peak_footprint_bytes, 4096, "an attempt freed at once is not sampled");
        }
        let seq: Vec<_> = report.sequence.unwrap().iter().map(|p| (p.action, p.size, p.stream, p.allocation, p.ok)).collect();
        assert_eq!(
            seq,
            [
                (Action::Allocate, 4096, 0, 0, true),
                (Action::AllocateFailure, 1 << 40, 1, 1, false),
                (Action::AllocateFailure, 1024, 1, 2, true),
                (Action::Free, 1024, 1, 2, true),
                (Action::Free, 4096, 0, 0, true),
            ],
            "{text}"
        );
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn allocate_failure_events_can_be_left_out() {
    let _guard = setup();
    let events = log(&["1,t,allocate,0x1000,4096,0", "1,t,allocate failure,(nil),1024,0x77", "1,t,free,0x1000,4096,0"]);
    let options = Options { skip_failure_events: true, ..recording() };
    let report = replay_spec(&events, &spec("pool"), 1, &options).unwrap();
    assert_eq!((report.expected_failures, report.skipped_failure_events, report.streams), (0, 1, 0));
    let seq: Vec<_> = report.sequence.unwrap().iter().map(|p| (p.action, p.size)).collect();
    assert_eq!(seq, [(Action::Allocate, 4096), (Action::Free, 4096)]);
}

#[test]
fn counts_allocations_that_fail_where_the_log_succeeded() {
    let _guard = setup();
    let events = log(&[
        "1,t,allocate,0x1000,1024,0",
        "1,t,allocate,0x2000,2097152,0", // 2 MiB: over the fixed block size
        "1,t,free,0x2000,2097152,0",
        "1,t,free,0x1000,1024,0",
    ]);
    let report = replay_spec(&events, &spec("fixed_size:block=1MiB"), 1, &Options::default()).unwrap();
    assert_eq!((report.allocations, report.failed_allocations, report.frees, report.skipped_frees_of_failed), (1, 1, 1, 1));
    let first = report.first_failure.unwrap();
    assert!(first.starts_with("line 3: 2097152 bytes:") && first.contains("exceed the fixed_size resource's block size"), "{first}");
    let report = replay_spec(&events, &spec("limiting:limit=1MiB/pool"), 1, &Options::default()).unwrap();
    assert_eq!((report.allocations, report.failed_allocations, report.skipped_frees_of_failed), (1, 1, 1));
}

#[test]
fn maps_logged_streams_to_created_streams() {
    let _guard = setup();
    let events = log(&[
        "1,t,allocate,0x1000,256,0x7f0010", // stream index 1
        "1,t,allocate,0x2000,256,0x7f0020", // 2
        "1,t,allocate,0x3000,256,0",        // the default stream
        "1,t,allocate,0x4000,256,0x1",      // cudaStreamLegacy: the default stream
        "1,t,allocate,0x5000,256,0x2",      // cudaStreamPerThread of thread 1: 3
        "2,t,allocate,0x6000,256,0x2",      // cudaStreamPerThread of thread 2: 4
        "2,t,allocate,0x7000,256,8323088",  // 0x7f0010 in decimal: 1
        "2,t,free,0x1000,256,0x7f0020",     // freed on another stream than its own: 2
        "2,t,free,0x2000,256,0",
        "1,t,free,0x5000,256,0x2",      // 3
        "9,t,free,0x9999,256,0x7f0099", // skipped: creates no stream
    ]);
    let report = replay_spec(&events, &spec("pool"), 1, &recording()).unwrap();
    assert_eq!((report.streams, report.threads), (4, 3));
    let streams: Vec<_> = report.sequence.unwrap().iter().map(|p| p.stream).collect();
    assert_eq!(streams, [1, 2, 0, 0, 3, 4, 1, 2, 0, 3]);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn fragmentation_covers_every_pool_of_the_stack() {
    let snapshot = serde_json::json!({
        "resource": "binning",
        "bins": [
            { "allocation_size": 256, "bin": { "free_bytes": 1024, "largest_free_block": 256, "chunks": [{ "free_bytes": 1u64 << 40, "largest_free_block": 1u64 << 40 }] } },
            { "allocation_size": 512, "bin": { "free_bytes": 0, "largest_free_block": 0 } },
        ],
        "upstream": { "resource": "pool", "free_bytes": 3072, "largest_free_block": 2048, "upstream": { "resource": "cuda" } },
    });
    let f = Fragmentation::from_snapshot(&snapshot).unwrap();
    assert_eq!((f.free_bytes, f.largest_free_block), (4096, 2048));
    assert!((f.fragmentation - 0.5).abs() < 1e-12);
    assert_eq!(Fragmentation::from_snapshot(&serde_json::json!({ "resource": "cuda" })), None);
}

// ---------------------------------------------------------------------------------------------
// A log replays to the sequence it records

/// Writes a random log in RMM's format, and the calls a faithful replay makes for it: several
/// threads and streams (0, cudaStreamLegacy, cudaStreamPerThread and handles), logged
/// addresses reused after their free, frees of pointers the log never allocated, zero-byte
/// allocations and allocation failures.
fn random_log(seed: u64, events: usize) -> (String, Vec<Performed>) {
    let mut rng = Rng(seed);
    let mut text = String::from("Thread,Time,Action,Pointer,Size,Stream\n");
    let mut expected = Vec::new();
    let threads = [4031547u64, 4031551, 4031560];
    let handles = [0usize, 0, 1, 2, 0x55d0c2a3b4c0, 0x55d0c2a3c010, 0x55d0c2b00000];
    let mut stream_index: HashMap<(usize, u64), usize> = HashMap::new();
    let mut index_of = |stream: usize, thread: u64| match stream {
        0 | 1 => 0,
        2 => {
            let next = stream_index.len() + 1;
            *stream_index.entry((2, thread)).or_insert(next)
        }
        handle => {
            let next = stream_index.len() + 1;
            *stream_index.entry((handle, 0)).or_insert(next)
        }
    };
    // Logged address -> (allocation number, size); None: a zero-byte allocation.
    let mut live: Vec<(usize, Option<(usize, usize)>)> = Vec::new();
    let mut free_addresses: Vec<usize> = Vec::new();
    let (mut next_address, mut attempts, mut live_bytes) = (0x7f3a_4000_0000usize, 0, 0);
    for n in 0..events {
        let line = n + 2;
        let thread = threads[rng.below(3) as usize];
        let stream = handles[rng.below(handles.len() as u64) as usize];
        let time = format!("14:{:02}:{:02}.{:06}", n / 3600 % 60, n / 60 % 60, rng.below(1_000_000));
        let logged_stream = if stream == 0 { "0".to_string() } else { format!("{stream:#x}") };
        let roll = rng.below(100);
        if roll < 2 {
            // A free of a pointer allocated before the log started: skipped.
            text += &format!("{thread},{time},free,{:#x},512,{logged_stream}\n", 0x6000_0000_0000usize + n * 256);
        } else if roll < 4 {
            let size = (1usize << 40) + rng.below(1 << 20) as usize;
            text += &format!("{thread},{time},allocate failure,(nil),{size},{logged_stream}\n");
            let stream = index_of(stream, thread);
            expected.push(Performed { line, action: Action::AllocateFailure, size, stream, allocation: attempts, ok: false });
            attempts += 1;
        } else if roll < 55 && live_bytes < (64 << 20) || live.is_empty() {
            let size = if rng.below(50) == 0 { 0 } else { rng.log_uniform(20) };
            let address = free_addresses.pop().unwrap_or_else(|| {
                next_address += 1 << 21;
                next_address
            });
            text += &format!("{thread},{time},allocate,{address:#x},{size},{logged_stream}\n");
            if size == 0 {
                live.push((address, None));
            } else {
                let stream = index_of(stream, thread);
                expected.push(Performed { line, action: Action::Allocate, size, stream, allocation: attempts, ok: true });
                live.push((address, Some((attempts, size))));
                attempts += 1;
                live_bytes += size;
            }
        } else {
            let (address, allocation) = live.swap_remove(rng.below(live.len() as u64) as usize);
            free_addresses.push(address);
            let size = allocation.map_or(0, |(_, size)| size);
            text += &format!("{thread},{time},free,{address:#x},{size},{logged_stream}\n");
            if let Some((allocation, size)) = allocation {
                let stream = index_of(stream, thread);
                expected.push(Performed { line, action: Action::Free, size, stream, allocation, ok: true });
                live_bytes -= size;
            }
        }
    }
    (text, expected)
}

#[test]
fn a_random_log_replays_to_the_sequence_it_records() {
    let _guard = setup();
    for seed in 1..=3u64 {
        let (text, want) = random_log(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), 1500);
        let events = parse_log(&text).unwrap();
        assert_eq!(events.len(), 1500);
        for stack in ["pool", "cuda", "arena", "binning/pool"] {
            let got = sequence(&events, stack);
            assert_eq!(got.len(), want.len(), "seed {seed}, {stack}");
            if let Some(at) = got.iter().zip(&want).position(|(g, w)| g != w) {
                panic!("seed {seed}, {stack}: call {at} is {:?}, the log says {:?}", got[at], want[at]);
            }
        }
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_log_written_by_the_logging_adaptor_replays_to_the_same_sequence() {
    let _guard = setup();
    let platform = backend().unwrap();
    let path = std::env::temp_dir().join(format!("rmm-replay-test-{}.csv", std::process::id()));
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 0).unwrap());
    let logging = LoggingAdaptor::new(pool, Some(path.to_str().unwrap())).unwrap();
    let streams = [Stream::DEFAULT, platform.stream_create(0).unwrap(), platform.stream_create(0).unwrap()];
    // Streams get replay indices in order of first use.
    let mut index: HashMap<Stream, usize> = HashMap::from([(Stream::DEFAULT, 0)]);
    let mut want = Vec::new();
    let mut live: Vec<(usize, usize, usize)> = Vec::new(); // (ptr, size, allocation)
    let mut rng = Rng(42);
    let mut attempts = 0;
    for n in 0..600 {
        let stream = streams[rng.below(3) as usize];
        let next = index.len();
        let stream_index = *index.entry(stream).or_insert(next);
        let line = n + 2;
        if n % 97 == 50 {
            let size = 1usize << 41;
            assert!(logging.allocate(size, stream).is_err());
            want.push(Performed { line, action: Action::AllocateFailure, size, stream: stream_index, allocation: attempts, ok: false });
            attempts += 1;
        } else if live.is_empty() || rng.below(100) < 55 {
            let size = rng.log_uniform(22);
            let ptr = logging.allocate(size, stream).unwrap();
            want.push(Performed { line, action: Action::Allocate, size, stream: stream_index, allocation: attempts, ok: true });
            live.push((ptr, size, attempts));
            attempts += 1;
        } else {
            let (ptr, size, allocation) = live.swap_remove(rng.below(live.len() as u64) as usize);
            logging.deallocate(ptr, size, stream).unwrap();
            want.push(Performed { line, action: Action::Free, size, stream: stream_index, allocation, ok: true });
        }
    }
    for (ptr, size, _) in live.drain(..) {
        // Freed after the last logged line we compare: the log goes on, the replay does too.
        logging.deallocate(ptr, size, Stream::DEFAULT).unwrap();
    }
    logging.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    drop(logging);
    let _ = std::fs::remove_file(&path);
    let events = parse_log(&text).unwrap();
    assert!(events.iter().all(|e| e.thread == events[0].thread && e.thread != 0));
    // Every line reads back as it was written: written again from its event, the log is the
    // same bytes, times of day included.
    let mut rewritten = format!("{COLUMNS}\n").into_bytes();
    let mut lines = Lines::new(1 << 12);
    for e in &events {
        if !lines.has_room_for_a_line() {
            lines.write_out(&mut rewritten, &mut None);
        }
        lines.push(e.thread, e.time.expect("the adaptor writes a time of day"), e.action, e.pointer, e.size, e.stream);
    }
    lines.write_out(&mut rewritten, &mut None);
    assert_eq!(String::from_utf8(rewritten).unwrap(), text);
    for stack in ["pool", "cuda", "statistics/arena"] {
        let got = sequence(&events, stack);
        assert_eq!(&got[..want.len()], &want[..], "{stack}");
        assert!(got[want.len()..].iter().all(|p| p.action == Action::Free), "{stack}");
    }
    for stream in &streams[1..] {
        platform.stream_destroy(*stream).unwrap();
    }
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn replayed_sequence_on_a_given_resource() {
    let _guard = setup();
    let (text, want) = random_log(7, 300);
    let events = parse_log(&text).unwrap();
    let resource: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(0).unwrap());
    assert_eq!(replayed_sequence(&events, &resource).unwrap(), want);
}

// ---------------------------------------------------------------------------------------------
// The command line

fn rmm_replay(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmm-replay"))
        .args(args)
        .env("RMM_SIM_DEVICES", "1:16GiB")
        .env_remove("RMM_SIM_ON_RACE")
        .output()
        .unwrap();
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

#[test]
fn the_command_line_tool() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/rapids_sample.log");
    let (code, out, err) = rmm_replay(&["--json", "--repeat", "2", "-r", "pool", "--resource=arena:size=64MiB", sample]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["repeat"], 2);
    assert_eq!(json["device"]["simulated"], true);
    let results = json["results"].as_array().unwrap();
    assert_eq!(results.iter().map(|r| r["spec"].as_str().unwrap()).collect::<Vec<_>>(), ["pool", "arena:size=64MiB"]);
    for r in results {
        assert_eq!(r["skipped_unknown_frees"], 1);
        assert_eq!(r["expected_failures_reproduced"], 1);
        assert_eq!(r["timing"]["repeats"], 2);
    }

    let (code, out, err) = rmm_replay(&["--skip-failures", "--json", "-r", "cuda", sample]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["results"][0]["skipped_failure_events"], 1);
    assert_eq!(json["results"][0]["expected_failures"], 0);

    let (code, out, err) = rmm_replay(&[sample]);
    assert_eq!(code, 0, "{err}");
    for row in ["pool ", "binning/pool ", "arena ", "cuda_async "] {
        assert!(out.lines().any(|l| l.starts_with(row)), "no {row:?} row in\n{out}");
    }

    let (code, out, _) = rmm_replay(&["--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("RESOURCE SPECS") && out.contains("one thread"), "{out}");
    // The layers come from the kinds registry: required keys bare, optional ones bracketed.
    for item in ["limiting:limit,", "tracking[:stacks],", "pool[:initial,maximum],", "fixed_size[:block,prealloc]"] {
        assert!(out.contains(item), "the help does not list {item:?}:\n{out}");
    }

    let bad = std::env::temp_dir().join(format!("rmm-replay-bad-{}.csv", std::process::id()));
    std::fs::write(&bad, "Thread,Time,Action,Pointer,Size,Stream\n1,t,allocate,0x100,8,0\n1,t,resize,0x100,8,0\n").unwrap();
    let failures = [
        (vec!["-r", "slab", sample], "at column 1 (\"slab\"): unknown layer \"slab\""),
        (vec!["/nonexistent/log.csv"], "/nonexistent/log.csv: cannot read it: No such file"),
        (vec![bad.to_str().unwrap()], "line 3: unknown action \"resize\""),
        (vec![], "no log file given"),
        (vec!["--repeat", "0", sample], "--repeat \"0\""),
        (vec!["--frobnicate", sample], "unknown option"),
        (vec![sample, sample], "one log at a time"),
    ];
    for (args, expected) in failures {
        let (code, _, err) = rmm_replay(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err:?} does not say {expected:?}");
    }
    let _ = std::fs::remove_file(&bad);

    // A stack the device cannot build: a row that says so, and exit status 1.
    let (code, out, _) = rmm_replay(&["-r", "pool", "-r", "pool:initial=32GiB", sample]);
    assert_eq!(code, 1);
    assert!(out.contains("pool:initial=32GiB: building pool"), "{out}");
}
