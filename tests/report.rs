//! `rmm::replay::report` (`rmm-replay report`) on a simulated device: the figures embedded in the page
//! against the same figures worked out from the log here, and against a stack driven by hand.

mod common;

use common::{setup_with, Rng};
use rmm::platform::Stream;
use rmm::replay::report::{self, CallSites, LogFile, Settings};
use rmm::replay::{replay_spec, Options, Spec};
use rmm::resources::adaptors::{LoggingAdaptor, TrackingAdaptor};
use rmm::resources::{DirectResource, MemoryResource, PoolResource};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};

fn setup() -> MutexGuard<'static, ()> {
    setup_with("1:64GiB")
}

/// One logged event, as the generator below writes it.
struct Logged {
    allocate: bool,
    pointer: usize,
    size: usize,
    stream: usize,
    micros: u64,
}

const SIZES: [usize; 6] = [256, 1000, 4096, 65536, 1 << 20, 3 << 20];

/// A random log: allocations of `sizes` on `streams` streams, frees of random live ones,
/// an event every 1..=50 µs from 23:59:59 on (so the log crosses midnight).
fn random_log(seed: u64, events: usize, streams: usize, sizes: &[usize]) -> Vec<Logged> {
    let mut rng = Rng::new(seed);
    let (mut live, mut log, mut next, mut micros) = (Vec::<(usize, usize, usize)>::new(), Vec::new(), 0x7f00_0000_0000usize, 0u64);
    for _ in 0..events {
        micros += 1 + rng.below(50);
        if !live.is_empty() && rng.chance(45) {
            let (pointer, size, stream) = live.swap_remove(rng.below(live.len() as u64) as usize);
            log.push(Logged { allocate: false, pointer, size, stream, micros });
        } else {
            let size = *rng.pick(sizes);
            let stream = [0, 0x55d0_c2a3_b4c0, 0x55d0_c2a3_c010][rng.below(streams as u64) as usize];
            live.push((next, size, stream));
            log.push(Logged { allocate: true, pointer: next, size, stream, micros });
            next += size + 512;
        }
    }
    log
}

fn csv(log: &[Logged], with_time: bool) -> String {
    let mut text = String::from(if with_time { "Thread,Time,Action,Pointer,Size,Stream\n" } else { "Thread,Action,Pointer,Size,Stream\n" });
    for e in log {
        let of_day = 86_399_000_000 + e.micros; // 23:59:59 plus
        let micros = of_day % 86_400_000_000;
        let time = format!(
            "{:02}:{:02}:{:02}.{:06}",
            micros / 3_600_000_000,
            micros / 60_000_000 % 60,
            micros / 1_000_000 % 60,
            micros % 1_000_000
        );
        let action = if e.allocate { "allocate" } else { "free" };
        let stream = if e.stream == 0 { "0".to_string() } else { format!("{:#x}", e.stream) };
        match with_time {
            true => text += &format!("7,{time},{action},{:#x},{},{stream}\n", e.pointer, e.size),
            false => text += &format!("7,{action},{:#x},{},{stream}\n", e.pointer, e.size),
        }
    }
    text
}

/// The figures of a log worked out directly: the peak of live bytes, the index of the first
/// event that reaches it, and the allocations live then (event indices).
struct Expected {
    peak: usize,
    at: usize,
    live: Vec<usize>,
}

fn expected(log: &[Logged]) -> Expected {
    let (mut live, mut bytes, mut best) = (HashMap::new(), 0usize, Expected { peak: 0, at: 0, live: Vec::new() });
    for (at, e) in log.iter().enumerate() {
        if e.allocate {
            live.insert(e.pointer, at);
            bytes += e.size;
        } else {
            live.remove(&e.pointer);
            bytes -= e.size;
        }
        if bytes > best.peak {
            best = Expected { peak: bytes, at, live: live.values().copied().collect() };
        }
    }
    best
}

fn settings<'a>(spec: &'a Spec, options: &'a Options, call_sites: Option<&'a CallSites>) -> Settings<'a> {
    Settings { spec, options, call_sites }
}

/// The figures embedded in the page, read back from the HTML.
fn embedded(html: &str) -> Value {
    let start = html.find("id=\"report-data\">").expect("the data element") + "id=\"report-data\">".len();
    let end = start + html[start..].find("</script>").expect("the end of the data");
    serde_json::from_str(&html[start..end]).expect("the embedded data is JSON")
}

fn page(logs: &[(&str, String)], spec: &str, call_sites: Option<&CallSites>) -> (String, Value) {
    let logs: Vec<LogFile> = logs.iter().map(|(name, text)| LogFile::parse(name, text).unwrap()).collect();
    let spec = Spec::parse(spec).unwrap();
    let options = Options::default();
    let timeline = report::build(&logs, &settings(&spec, &options, call_sites), &mut |_, _| {}).unwrap();
    let html = report::render(&timeline);
    let data = embedded(&html);
    assert_eq!(data["logs"][0]["peak"]["live_bytes"], timeline.data()["logs"][0]["peak"]["live_bytes"]);
    (html, data)
}

/// What the log says, and the figures of its section of the page.
fn report_of(log: &[Logged], spec: &str) -> (Expected, Value) {
    let (_, data) = page(&[("log.csv", csv(log, true))], spec, None);
    (expected(log), data["logs"][0].clone())
}

#[test]
fn the_page_shows_the_logs_peak_and_largest_allocations() {
    let _guard = setup();
    let log = random_log(11, 3000, 3, &SIZES);
    let (want, figures) = report_of(&log, "pool");
    let peak = &figures["peak"];
    assert_eq!(peak["live_bytes"].as_u64(), Some(want.peak as u64));
    assert_eq!(peak["line"].as_u64(), Some(want.at as u64 + 2), "line 1 is the header");
    let seconds = (log[want.at].micros - log[0].micros) as f64 / 1e6;
    assert!((peak["time"].as_f64().unwrap() - seconds).abs() < 1e-6, "peak at {} s, expected {seconds} s (across midnight)", peak["time"]);
    assert_eq!(peak["live_allocations"].as_u64(), Some(want.live.len() as u64));
    let mut largest = want.live.clone();
    largest.sort_by_key(|&at| (std::cmp::Reverse(log[at].size), at));
    let shown: Vec<(u64, u64)> =
        peak["largest"].as_array().unwrap().iter().map(|a| (a["size"].as_u64().unwrap(), a["line"].as_u64().unwrap())).collect();
    let wanted: Vec<(u64, u64)> = largest.iter().take(20).map(|&at| (log[at].size as u64, at as u64 + 2)).collect();
    assert_eq!(shown, wanted);
    assert_eq!(figures["events"].as_u64(), Some(log.len() as u64));
    assert_eq!(figures["time_unit"], "s");
    // The series: never above the peak, and reaching it.
    let live_max = figures["series"]["live"]["hi"].as_array().unwrap().iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    assert_eq!(live_max, want.peak as f64);
    // Per stream: each series ends at that stream's bytes live at the end of the log.
    let mut at_end: HashMap<String, usize> = HashMap::new();
    for e in &log {
        let label = if e.stream == 0 { "default".to_string() } else { format!("{:#x}", e.stream) };
        let bytes = at_end.entry(label).or_default();
        if e.allocate {
            *bytes += e.size
        } else {
            *bytes -= e.size
        }
    }
    let drawn = figures["streams"]["drawn"].as_array().unwrap();
    assert_eq!(drawn.len(), 3);
    for stream in drawn {
        let series = stream["series"]["hi"].as_array().unwrap();
        assert_eq!(series.last().and_then(Value::as_f64), Some(at_end[stream["label"].as_str().unwrap()] as f64), "{}", stream["label"]);
    }
}

#[test]
fn reserved_at_the_peak_is_what_the_stack_holds_there() {
    let _guard = setup();
    let log = random_log(12, 2000, 1, &SIZES);
    let (want, figures) = report_of(&log, "pool");
    // The same calls on a pool built by hand, up to the peak.
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 0).unwrap());
    let mut pointers = HashMap::new();
    for e in &log[..=want.at] {
        if e.allocate {
            pointers.insert(e.pointer, pool.allocate(e.size, Stream::DEFAULT).unwrap());
        } else {
            pool.deallocate(pointers.remove(&e.pointer).unwrap(), e.size, Stream::DEFAULT).unwrap();
        }
    }
    let reserved = pool.pool_size().unwrap();
    for (&logged, &ptr) in &pointers {
        let size = log.iter().find(|e| e.pointer == logged).unwrap().size;
        pool.deallocate(ptr, size, Stream::DEFAULT).unwrap();
    }
    assert!(reserved >= want.peak);
    assert_eq!(figures["peak"]["reserved_bytes"].as_u64(), Some(reserved as u64));
    // The most reserved is the replay's peak footprint.
    let events = rmm::replay::parse_log(&csv(&log, true)).unwrap();
    let replayed = replay_spec(&events, &Spec::parse("pool").unwrap(), 1, &Options::default()).unwrap();
    assert_eq!(figures["peak_reserved"]["bytes"].as_u64(), Some(replayed.peak_footprint_bytes as u64));
    // Segments at the peak: the pool's chunks, adding up to what it reserved.
    let groups = figures["peak"]["segments"].as_array().unwrap();
    assert_eq!(groups.len(), 1);
    let segments = groups[0]["segments"].as_array().unwrap();
    assert_eq!(segments.iter().map(|s| s["size"].as_u64().unwrap()).sum::<u64>(), reserved as u64);
    let used: u64 =
        segments.iter().flat_map(|s| s["blocks"].as_array().unwrap()).filter(|b| b[2] == 1).map(|b| b[1].as_u64().unwrap()).sum();
    assert!(used >= want.peak as u64, "used blocks cover the live bytes ({used} < {})", want.peak);
    let fragmentation = figures["peak"]["fragmentation"].as_f64().unwrap();
    assert!((fragmentation - (1.0 - want.peak as f64 / reserved as f64)).abs() < 1e-12);
}

#[test]
fn long_logs_are_downsampled_without_losing_the_peak() {
    let _guard = setup();
    let mut log = random_log(13, 40_000, 2, &SIZES[..4]);
    // One short spike in the middle: 1 GiB allocated and freed by the next event.
    let (spike_at, micros) = (20_000, log[20_000].micros);
    log.insert(spike_at, Logged { allocate: true, pointer: 0x10_0000_0000_0000, size: 1 << 30, stream: 0, micros });
    log.insert(spike_at + 1, Logged { allocate: false, pointer: 0x10_0000_0000_0000, size: 1 << 30, stream: 0, micros: micros + 1 });
    let want = expected(&log);
    assert_eq!(want.at, spike_at);
    let (html, data) = page(&[("long.csv", csv(&log, true))], "pool", None);
    let live = &data["logs"][0]["series"]["live"];
    assert_eq!(live["downsampled"], true);
    assert!(live["t"].as_array().unwrap().len() <= 2000);
    let max = live["hi"].as_array().unwrap().iter().filter_map(Value::as_f64).fold(0.0, f64::max);
    assert_eq!(max, want.peak as f64, "the spike survives downsampling");
    assert!(html.len() < 1 << 20, "the page stays small: {} bytes", html.len());
}

#[test]
fn without_a_time_column_the_axis_is_the_events_place() {
    let _guard = setup();
    let log = random_log(14, 500, 2, &SIZES);
    let want = expected(&log);
    let (_, data) = page(&[("untimed.csv", csv(&log, false))], "arena", None);
    let figures = &data["logs"][0];
    assert_eq!(figures["time_unit"], "event");
    assert_eq!(figures["peak"]["time"].as_f64(), Some(want.at as f64));
}

#[test]
fn one_section_per_log_and_per_device() {
    let _guard = setup();
    let (first, second) = (random_log(15, 400, 1, &SIZES), random_log(16, 600, 2, &SIZES));
    let (_, data) = page(&[("device0.csv", csv(&first, true)), ("device1.csv", csv(&second, true))], "binning/pool", None);
    let logs = data["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 2);
    for (figures, (log, name)) in logs.iter().zip([(&first, "device0.csv"), (&second, "device1.csv")]) {
        assert_eq!(figures["log"], name);
        assert_eq!(figures["peak"]["live_bytes"].as_u64(), Some(expected(log).peak as u64));
    }
    assert_eq!(data["spec"], "binning/pool");
}

#[test]
fn call_sites_come_from_a_tracking_snapshot_for_allocations_still_live() {
    let _guard = setup();
    let dir = std::env::temp_dir().join(format!("rmm-report-sites-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sites.csv");
    let tracking = TrackingAdaptor::new(Arc::new(PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 0).unwrap()), false);
    let logging = LoggingAdaptor::new(tracking.clone(), Some(path.to_str().unwrap())).unwrap();
    let file = c"solver.cu";
    let at = |line: u32, size: usize| rmm::sync::call_site::with(file.as_ptr(), line, || logging.allocate(size, Stream::DEFAULT)).unwrap();
    let kept = at(10, 8 << 20);
    let freed_later = at(20, 4 << 20);
    let small = at(30, 1 << 20);
    logging.deallocate(freed_later, 4 << 20, Stream::DEFAULT).unwrap();
    logging.deallocate(small, 1 << 20, Stream::DEFAULT).unwrap();
    let reused = at(40, 4 << 20); // perhaps at freed_later's address: a different allocation
    logging.flush().unwrap();
    let sites = CallSites::from_snapshot(&logging.snapshot()).unwrap();
    let (html, data) = page(&[("sites.csv", std::fs::read_to_string(&path).unwrap())], "pool", Some(&sites));
    let largest = data["logs"][0]["peak"]["largest"].as_array().unwrap();
    let site_of = |size: u64| largest.iter().find(|a| a["size"].as_u64() == Some(size)).map(|a| a["site"].clone()).unwrap();
    assert_eq!(site_of(8 << 20), "solver.cu:10");
    assert_eq!(site_of(4 << 20), Value::Null, "freed after the peak: the snapshot's record is someone else's");
    assert_eq!(site_of(1 << 20), Value::Null, "freed after the peak");
    assert_eq!(data["call_sites"], true);
    assert!(html.contains("solver.cu:10"));
    logging.deallocate(kept, 8 << 20, Stream::DEFAULT).unwrap();
    logging.deallocate(reused, 4 << 20, Stream::DEFAULT).unwrap();
    assert!(CallSites::from_snapshot(&serde_json::json!({ "resource": "pool" })).is_err(), "no tracking adaptor");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_page_loads_nothing_and_its_data_cannot_end_the_script() {
    let _guard = setup();
    let log = random_log(17, 300, 1, &SIZES);
    let (html, data) = page(&[("</script><script>alert(1)</script>.csv", csv(&log, true))], "pool", None);
    assert_eq!(data["logs"][0]["log"], "</script><script>alert(1)</script>.csv");
    assert_eq!(html.matches("</script>").count(), 2, "the data element's end and the drawing script's");
    for external in ["http://", "https://", "src=", "href=", "@import", "url("] {
        assert!(!html.contains(external), "the page refers to {external}");
    }
    assert!(html.contains("Content-Security-Policy\" content=\"default-src 'none'"));
}

#[test]
fn rmm_replay_report_writes_the_page_and_draws_no_progress_off_a_terminal() {
    let _guard = setup();
    let dir = std::env::temp_dir().join(format!("rmm-report-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = random_log(18, 5000, 2, &SIZES);
    std::fs::write(dir.join("log.csv"), csv(&log, true)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmm-replay"))
        .args(["report", "--resource", "arena", "-o"])
        .arg(dir.join("page.html"))
        .arg(dir.join("log.csv"))
        .env("RMM_SIM_DEVICES", "1:64GiB")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains('\r') && !stderr.contains("[#"), "no progress bar when stderr is no terminal: {stderr:?}");
    let data = embedded(&std::fs::read_to_string(dir.join("page.html")).unwrap());
    assert_eq!(data["logs"][0]["peak"]["live_bytes"].as_u64(), Some(expected(&log).peak as u64));
    assert_eq!(data["spec"], "arena");
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_rmm-replay"))
        .args(["report", "-o", "x.html", "-r", "pool", "-r", "arena", "l.csv"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("one --resource"));
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_rmm-replay")).args(["report", "l.csv"]).output().unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no output file given"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rmm_replay_report_needs_no_gpu() {
    let _guard = setup();
    let dir = std::env::temp_dir().join(format!("rmm-report-nogpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = random_log(7, 2000, 1, &SIZES);
    std::fs::write(dir.join("log.csv"), csv(&log, true)).unwrap();
    // As on a laptop: no RMM_SIM_DEVICES (and, in CI, no driver).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rmm-replay"))
        .args(["report", "-o"])
        .arg(dir.join("page.html"))
        .arg(dir.join("log.csv"))
        .env_remove("RMM_SIM_DEVICES")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let data = embedded(&std::fs::read_to_string(dir.join("page.html")).unwrap());
    assert_eq!(data["logs"][0]["peak"]["live_bytes"].as_u64(), Some(expected(&log).peak as u64));
    std::fs::remove_dir_all(&dir).unwrap();
}
