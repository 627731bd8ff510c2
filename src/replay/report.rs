//! Memory timeline reports: one self-contained HTML page (`rmm-replay report`,
//! `rmmTimelineReportWrite`) that shows what a logged program held over time.
//!
//! A log (the CSV of a logging adaptor, see `crate::log_format`) records allocations and frees,
//! not what the resource reserved from the device to serve them. [`build`] therefore replays
//! each log against a fresh stack (a [`Spec`]) on the current device, following the stack
//! after every call: bytes live, bytes the stack holds (its footprint), and at the log's peak
//! of live bytes, the stack's snapshot (segments and their free blocks) and the largest live
//! allocations. [`render`] writes the page: the figures as JSON inside it, drawn by its own
//! script on canvases, with no network use. Long logs are downsampled to a fixed number of
//! time buckets that keep each bucket's minimum and maximum, so peaks survive.

use crate::log_format::TimeOfDay;
use crate::replay::{self, Action, Event, Options, Sample, Spec};
use crate::units;
use serde_json::{json, Value};
use std::collections::HashMap;

/// The stack a report replays against unless told otherwise: `rmm-replay`'s first default.
const DEFAULT_SPEC: &str = "pool";

/// The page (`report/template.html`): its script and style inline, `/*REPORT-DATA*/` replaced
/// by the figures.
const TEMPLATE: &str = include_str!("report/template.html");
const DATA_PLACEHOLDER: &str = "/*REPORT-DATA*/";

/// Time buckets of a downsampled series: a few per pixel of a wide chart.
const BUCKETS: usize = 2000;
/// Series with at most this many points are embedded as they are.
const RAW_POINTS: usize = 2 * BUCKETS;
/// Rows of the table of the largest allocations alive at the peak.
const LARGEST: usize = 20;
/// Streams drawn one by one; the others are summed into one series.
const STREAMS_DRAWN: usize = 8;
/// Blocks drawn in the segment map; segments past this are drawn without their blocks.
const MAP_BLOCKS: usize = 20_000;

/// One log to report on, for one device.
pub struct LogFile {
    /// How the page names it (its path).
    name: String,
    events: Vec<Event>,
}

impl LogFile {
    /// Reads the events of `text` ([`replay::parse_log`]); errors name `name` and the line.
    pub fn parse(name: &str, text: &str) -> Result<LogFile, String> {
        let events = replay::parse_log(text).map_err(|e| format!("{name}: {e}"))?;
        Ok(LogFile { name: name.to_string(), events })
    }

    /// The most bytes the log's program held at once (its allocations less its frees).
    pub fn peak_live_bytes(&self) -> usize {
        let (mut live, mut now, mut peak) = (HashMap::new(), 0usize, 0usize);
        for event in &self.events {
            match event.action {
                replay::Action::Allocate => {
                    if let Some(old) = live.insert(event.pointer, event.size) {
                        now -= old;
                    }
                    now += event.size;
                    peak = peak.max(now);
                }
                replay::Action::Free => now -= live.remove(&event.pointer).unwrap_or(0),
                replay::Action::AllocateFailure => {}
            }
        }
        peak
    }
}

/// The report's figures for every log, as embedded in the page (see `template.html`).
pub struct Timeline {
    data: Value,
}

impl Timeline {
    /// The figures the page draws, as JSON.
    pub fn data(&self) -> &Value {
        &self.data
    }
}

/// Where the call sites of live allocations come from: the snapshot of a stack with a
/// tracking adaptor (`rmmResourceWriteSnapshot`), taken after the logged program ran.
/// Allocations alive at the peak that the log never frees after it are still live then, at the
/// same address: their call site is the one the tracking adaptor recorded.
pub struct CallSites {
    by_address: HashMap<usize, (usize, String)>,
}

impl CallSites {
    /// Reads the live allocations of every tracking adaptor in `snapshot`. Errors when it has
    /// no tracking adaptor.
    pub fn from_snapshot(snapshot: &Value) -> Result<CallSites, String> {
        fn walk(value: &Value, found: &mut bool, sites: &mut HashMap<usize, (usize, String)>) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::Array(outstanding)) = map.get("outstanding") {
                        *found = true;
                        for allocation in outstanding {
                            let address = allocation["address"].as_str().and_then(|a| a.strip_prefix("0x"));
                            let address = address.and_then(|a| usize::from_str_radix(a, 16).ok());
                            let size = allocation["size"].as_u64();
                            if let (Some(address), Some(size), Some(file)) = (address, size, allocation["file"].as_str()) {
                                let site = format!("{file}:{}", allocation["line"].as_u64().unwrap_or(0));
                                sites.insert(address, (size as usize, site));
                            }
                        }
                    }
                    map.values().for_each(|inner| walk(inner, found, sites));
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, found, sites)),
                _ => {}
            }
        }
        let (mut found, mut by_address) = (false, HashMap::new());
        walk(snapshot, &mut found, &mut by_address);
        if !found {
            return Err("the snapshot has no tracking adaptor (no \"outstanding\" allocations)".to_string());
        }
        Ok(CallSites { by_address })
    }

    fn site(&self, address: usize, size: usize) -> Option<&str> {
        self.by_address.get(&address).filter(|(tracked, _)| *tracked == size).map(|(_, site)| site.as_str())
    }
}

/// What a report replays against and with.
pub struct Settings<'a> {
    /// The stack each log is replayed against, fresh for each, on the current device.
    pub spec: &'a Spec,
    /// `allocate failure` events: replayed (the default, as `rmm-replay` does) or left out.
    pub options: &'a Options,
    /// Where the largest allocations at the peak were made, when known.
    pub call_sites: Option<&'a CallSites>,
}

/// The stack a report replays against unless told otherwise (`pool`).
pub fn default_spec() -> Spec {
    Spec::parse(DEFAULT_SPEC).expect("the default spec parses")
}

/// The report of a live process (`rmmTimelineReportWrite`): every logging adaptor is flushed,
/// and the log of the outermost one in `stack` is replayed against `spec` (None: the
/// default) on the current device; a tracking adaptor in `stack` names call sites. Errors:
/// no logging adaptor in `stack` or a bad spec (invalid argument), an unreadable log or an
/// unwritable page (I/O), a failed replay (internal).
pub fn write_live(stack: &dyn crate::resources::MemoryResource, spec: Option<&str>, html: &str) -> crate::Result<Timeline> {
    use crate::error::Error;
    fn logging_path(value: &Value) -> Option<&str> {
        match value.get("resource").and_then(Value::as_str) {
            Some("logging") => value.get("path").and_then(Value::as_str),
            _ => value.as_object()?.values().find_map(logging_path),
        }
    }
    let spec = match spec {
        Some(text) => Spec::parse(text)?,
        None => default_spec(),
    };
    crate::resources::adaptors::flush_all_logs();
    let snapshot = stack.snapshot();
    let path = logging_path(&snapshot)
        .ok_or_else(|| Error::invalid(format!("the {} stack has no logging adaptor, so there is no log to report on", stack.name())))?;
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io(format!("cannot read the log {path}: {e}")))?;
    let log = LogFile::parse(path, &text).map_err(Error::invalid)?;
    let call_sites = CallSites::from_snapshot(&snapshot).ok();
    let settings = Settings { spec: &spec, options: &Options::default(), call_sites: call_sites.as_ref() };
    let timeline =
        build(std::slice::from_ref(&log), &settings, &mut |_, _| {}).map_err(|e| Error::Internal(format!("replaying {path}: {e}")))?;
    std::fs::write(html, render(&timeline)).map_err(|e| Error::Io(format!("cannot write {html}: {e}")))?;
    Ok(timeline)
}

/// Replays every log against a fresh stack built from `settings.spec` and gathers the
/// figures. `progress` is called with events done and events in all logs, after every event
/// (callers throttle what they draw).
pub fn build(logs: &[LogFile], settings: &Settings<'_>, progress: &mut dyn FnMut(usize, usize)) -> Result<Timeline, String> {
    let platform = crate::platform::backend().map_err(|e| e.to_string())?;
    let device = platform.current_device().map_err(|e| e.to_string())?;
    let (_, device_bytes) = platform.mem_get_info(device).map_err(|e| e.to_string())?;
    let total: usize = logs.iter().map(|log| log.events.len()).sum();
    let mut done_before = 0;
    let mut devices = Vec::new();
    for (index, log) in logs.iter().enumerate() {
        let mut on_step = |done: usize| progress(done_before + done, total);
        let timeline = device_timeline(index, log, settings, &mut on_step).map_err(|e| format!("{}: {e}", log.name))?;
        devices.push(timeline);
        done_before += log.events.len();
        progress(done_before, total);
    }
    Ok(Timeline {
        data: json!({
            "spec": settings.spec.text(),
            "canonical_spec": settings.spec.canonical(),
            "call_sites": settings.call_sites.is_some(),
            "replayed_on": {
                "device": device,
                "simulated": platform.is_simulated(),
                "bytes": device_bytes,
                "text": units::exact(device_bytes),
            },
            "logs": devices,
        }),
    })
}

/// The page for `timeline`.
pub fn render(timeline: &Timeline) -> String {
    // Inside a <script> element only `</` could end it early; `<\/` is the same JSON string.
    let data = timeline.data.to_string().replace("</", "<\\/");
    TEMPLATE.replacen(DATA_PLACEHOLDER, &data, 1)
}

/// [`build`] and [`render`] to the file `html`.
pub fn write(logs: &[LogFile], settings: &Settings<'_>, html: &str, progress: &mut dyn FnMut(usize, usize)) -> Result<Timeline, String> {
    let timeline = build(logs, settings, progress)?;
    std::fs::write(html, render(&timeline)).map_err(|e| format!("cannot write {html}: {e}"))?;
    Ok(timeline)
}

/// The figures of one log.
fn device_timeline(index: usize, log: &LogFile, settings: &Settings<'_>, progress: &mut dyn FnMut(usize)) -> Result<Value, String> {
    let events = &log.events[..];
    let times = EventTimes::read(events);
    let event_of_line = {
        let mut map = vec![u32::MAX; events.last().map_or(0, |e| e.line + 1)];
        for (at, event) in events.iter().enumerate() {
            map[event.line] = at as u32;
        }
        map
    };
    let span = (times.at(0), times.at(events.len().saturating_sub(1)));
    let mut live = Downsampler::new(span);
    let mut reserved = Downsampler::new(span);
    let mut fragmentation = Downsampler::new(span);
    let mut streams: Vec<StreamSeries> = Vec::new();
    let mut live_at: HashMap<usize, usize> = HashMap::new(); // logged pointer -> event
    let mut peak: Option<Peak> = None;
    let mut peak_reserved = (0usize, 0.0f64);
    let mut failed_here = 0usize;
    let mut error = None;
    let mut observe = |sample: &Sample<'_>| {
        if error.is_some() {
            return;
        }
        let at = event_of_line[sample.line] as usize;
        let event = &events[at];
        let t = times.at(at);
        let footprint = match sample.footprint_bytes() {
            Ok(bytes) => bytes,
            Err(e) => {
                error = Some(e);
                return;
            }
        };
        if sample.stream >= streams.len() {
            streams.resize_with(sample.stream + 1, || StreamSeries::new(span));
        }
        let stream = &mut streams[sample.stream];
        stream.logged.get_or_insert((event.stream, event.thread));
        match (sample.action, sample.ok) {
            (Action::Allocate, true) => {
                live_at.insert(event.pointer, at);
                stream.bytes += sample.size;
                stream.series.push(t, stream.bytes as f64);
            }
            (Action::Allocate, false) => failed_here += 1,
            (Action::Free, true) => {
                live_at.remove(&event.pointer);
                stream.bytes -= sample.size;
                stream.series.push(t, stream.bytes as f64);
                if let Some(peak) = peak.as_mut() {
                    peak.freed_after.insert(event.pointer);
                }
            }
            _ => {}
        }
        live.push(t, sample.live_bytes as f64);
        reserved.push(t, footprint as f64);
        fragmentation.push(t, fraction_unused(sample.live_bytes, footprint));
        if footprint > peak_reserved.0 {
            peak_reserved = (footprint, t);
        }
        if sample.at_log_peak {
            peak = Some(Peak {
                at,
                t,
                live_bytes: sample.live_bytes,
                reserved_bytes: footprint,
                live: live_at.values().copied().collect(),
                snapshot: sample.resource.snapshot(),
                freed_after: Default::default(),
            });
        }
        progress(sample.done);
    };
    let report = replay::replay_spec_observed(events, settings.spec, 1, settings.options, &mut observe)?;
    if let Some(e) = error {
        return Err(e);
    }
    let streams = stream_series(streams);
    let peak_json = match &peak {
        None => Value::Null,
        Some(peak) => json!({
            "time": peak.t,
            "line": events[peak.at].line,
            "live_bytes": peak.live_bytes,
            "live_text": units::exact(peak.live_bytes),
            "reserved_bytes": peak.reserved_bytes,
            "reserved_text": units::exact(peak.reserved_bytes),
            "fragmentation": fraction_unused(peak.live_bytes, peak.reserved_bytes),
            "live_allocations": peak.live.len(),
            "largest": largest_at_peak(peak, events, &times, settings.call_sites),
            "segments": segments(&peak.snapshot),
        }),
    };
    Ok(json!({
        "index": index,
        "log": log.name,
        "events": events.len(),
        "allocate": events.iter().filter(|e| e.action == Action::Allocate).count(),
        "free": events.iter().filter(|e| e.action == Action::Free).count(),
        "allocate_failure": events.iter().filter(|e| e.action == Action::AllocateFailure).count(),
        "threads": report.threads,
        "time_unit": if times.seconds.is_some() { "s" } else { "event" },
        "start_time_of_day": times.first.map(|time| time.to_string()),
        "failed_here": failed_here,
        "skipped": report.skipped_unknown_frees + report.skipped_null,
        "footprint_source": match report.footprint_source {
            replay::FootprintSource::PoolSize => "pool_size",
            replay::FootprintSource::DeviceMemory => "device_memory",
        },
        "peak_reserved": { "bytes": peak_reserved.0, "text": units::exact(peak_reserved.0), "time": peak_reserved.1 },
        "peak": peak_json,
        "series": {
            "live": live.finish(),
            "reserved": reserved.finish(),
            "fragmentation": fragmentation.finish(),
        },
        "streams": streams,
    }))
}

/// 1 - live / reserved: the share of what the stack holds that nothing uses (0 when it holds
/// nothing).
fn fraction_unused(live: usize, reserved: usize) -> f64 {
    if reserved == 0 {
        0.0
    } else {
        (1.0 - live as f64 / reserved as f64).max(0.0)
    }
}

/// The state at the log's peak of live bytes.
struct Peak {
    /// The event of the peak.
    at: usize,
    t: f64,
    live_bytes: usize,
    reserved_bytes: usize,
    /// The events of the allocations live at the peak.
    live: Vec<usize>,
    snapshot: Value,
    /// Logged pointers freed after the peak: their allocations at the peak are gone by the
    /// end of the log, so a tracking snapshot taken then cannot name their call sites.
    freed_after: std::collections::HashSet<usize>,
}

fn largest_at_peak(peak: &Peak, events: &[Event], times: &EventTimes, call_sites: Option<&CallSites>) -> Value {
    let mut largest = peak.live.clone();
    largest.sort_by_key(|&at| (std::cmp::Reverse(events[at].size), at));
    largest.truncate(LARGEST);
    let rows: Vec<Value> = largest
        .into_iter()
        .map(|at| {
            let event = &events[at];
            let site = call_sites.filter(|_| !peak.freed_after.contains(&event.pointer)).and_then(|s| s.site(event.pointer, event.size));
            json!({
                "size": event.size,
                "size_text": units::exact(event.size),
                "line": event.line,
                "time": times.at(at),
                "thread": event.thread,
                "stream": stream_label(event.stream, event.thread),
                "pointer": format!("{:#x}", event.pointer),
                "site": site,
            })
        })
        .collect();
    rows.into()
}

/// How the page names a logged stream.
fn stream_label(stream: usize, thread: u64) -> String {
    match stream {
        0 | 1 => "default".to_string(),
        2 => format!("per-thread (thread {thread})"),
        handle => format!("{handle:#x}"),
    }
}

/// The segments (upstream chunks) of every pool-like resource in a snapshot, with their
/// blocks as [offset, size, used] relative to the segment's base.
fn segments(snapshot: &Value) -> Value {
    fn walk(value: &Value, path: &str, groups: &mut Vec<Value>, blocks_left: &mut usize) {
        match value {
            Value::Object(map) => {
                let path = match map.get("resource").and_then(Value::as_str) {
                    Some(name) if path.is_empty() => name.to_string(),
                    Some(name) => format!("{path} › {name}"),
                    None => path.to_string(),
                };
                if let Some(Value::Array(chunks)) = map.get("chunks") {
                    groups.push(segment_group(&path, map, chunks, blocks_left));
                }
                for (key, inner) in map {
                    if key != "chunks" {
                        walk(inner, &path, groups, blocks_left);
                    }
                }
            }
            Value::Array(items) => {
                for (at, item) in items.iter().enumerate() {
                    walk(item, &format!("{path} #{at}"), groups, blocks_left);
                }
            }
            _ => {}
        }
    }
    let mut groups = Vec::new();
    let mut blocks_left = MAP_BLOCKS;
    walk(snapshot, "", &mut groups, &mut blocks_left);
    groups.into()
}

fn segment_group(path: &str, figures: &serde_json::Map<String, Value>, chunks: &[Value], blocks_left: &mut usize) -> Value {
    let address = |value: &Value| value.as_str().and_then(|a| a.strip_prefix("0x")).and_then(|a| u64::from_str_radix(a, 16).ok());
    let mut free_blocks = 0usize;
    let segments: Vec<Value> = chunks
        .iter()
        .map(|chunk| {
            let base = address(&chunk["base"]).unwrap_or(0);
            let listed = chunk["blocks"].as_array().map_or(&[][..], Vec::as_slice);
            free_blocks += listed.iter().filter(|b| b["state"] == "free").count();
            let blocks: Value = if listed.len() <= *blocks_left {
                *blocks_left -= listed.len();
                listed
                    .iter()
                    .map(|b| json!([address(&b["address"]).unwrap_or(base) - base, b["size"], u8::from(b["state"] == "used")]))
                    .collect::<Vec<_>>()
                    .into()
            } else {
                Value::Null
            };
            json!({ "base": chunk["base"], "size": chunk["size"], "stream": chunk["stream"], "blocks": blocks })
        })
        .collect();
    json!({
        "resource": path,
        "reserved_bytes": figures.get("reserved_bytes"),
        "used_bytes": figures.get("used_bytes"),
        "free_bytes": figures.get("free_bytes"),
        "largest_free_block": figures.get("largest_free_block"),
        "free_blocks": free_blocks,
        "segments": segments,
    })
}

/// One stream's live bytes over the log.
struct StreamSeries {
    /// The logged stream handle and thread of its first event.
    logged: Option<(usize, u64)>,
    bytes: usize,
    series: Downsampler,
}

impl StreamSeries {
    fn new(span: (f64, f64)) -> StreamSeries {
        StreamSeries { logged: None, bytes: 0, series: Downsampler::new(span) }
    }
}

/// The streams with the highest peaks one by one, the others as one series (drawn as such).
fn stream_series(streams: Vec<StreamSeries>) -> Value {
    let mut streams: Vec<(String, Value, f64)> = streams
        .into_iter()
        .filter_map(|s| {
            let (stream, thread) = s.logged?;
            let series = s.series.finish();
            let peak = series["hi"].as_array().map_or(0.0, |hi| hi.iter().filter_map(Value::as_f64).fold(0.0, f64::max));
            Some((stream_label(stream, thread), series, peak))
        })
        .collect();
    streams.sort_by(|a, b| b.2.total_cmp(&a.2));
    let others = streams.len().saturating_sub(STREAMS_DRAWN);
    let rows: Vec<Value> = streams
        .into_iter()
        .take(STREAMS_DRAWN)
        .map(|(label, series, peak)| json!({ "label": label, "peak": peak, "series": series }))
        .collect();
    json!({ "drawn": rows, "not_drawn": others })
}

/// Event times from the log's Time column: seconds since the first event (RMM writes the
/// local time of day; a day boundary is crossed forwards). Without a time of day on every
/// event, the event's place in the log stands for its time.
struct EventTimes {
    seconds: Option<Vec<f64>>,
    first: Option<TimeOfDay>,
}

impl EventTimes {
    fn read(events: &[Event]) -> EventTimes {
        const DAY: u64 = 86_400_000_000;
        let Some(times) = events.iter().map(|event| event.time).collect::<Option<Vec<TimeOfDay>>>() else {
            return EventTimes { seconds: None, first: None };
        };
        let (mut day, mut previous) = (0u64, None::<u64>);
        let micros: Vec<u64> = times
            .iter()
            .map(|time| {
                let of_day = time.micros();
                if previous.is_some_and(|p| of_day + DAY / 2 < p) {
                    day += DAY;
                }
                previous = Some(of_day);
                of_day + day
            })
            .collect();
        let start = micros.first().copied().unwrap_or(0);
        // Lines of different threads may be a little out of time order: before the first is
        // negative.
        let seconds = micros.iter().map(|&m| (m as i64 - start as i64) as f64 / 1e6).collect();
        EventTimes { seconds: Some(seconds), first: times.first().copied() }
    }

    /// The time of the `at`-th event.
    fn at(&self, at: usize) -> f64 {
        match &self.seconds {
            Some(seconds) => seconds.get(at).copied().unwrap_or(0.0),
            None => at as f64,
        }
    }
}

/// A step series over time reduced to [`BUCKETS`] buckets of equal time, each with the lowest
/// and the highest value the series took in it (the value carried in from before counts), so
/// that peaks survive; a series of at most [`RAW_POINTS`] points is kept as it is. The time
/// of a bucket is the time of its first point.
struct Downsampler {
    start: f64,
    span: f64,
    /// Every point, until there are more than [`RAW_POINTS`].
    raw: Option<Vec<(f64, f64)>>,
    buckets: Vec<Bucket>,
    last: Option<f64>,
}

struct Bucket {
    index: usize,
    t: f64,
    low: f64,
    high: f64,
}

impl Downsampler {
    fn new((start, end): (f64, f64)) -> Downsampler {
        Downsampler { start, span: (end - start).max(f64::MIN_POSITIVE), raw: Some(Vec::new()), buckets: Vec::new(), last: None }
    }

    fn push(&mut self, t: f64, value: f64) {
        if let Some(raw) = self.raw.as_mut() {
            raw.push((t, value));
            if raw.len() <= RAW_POINTS {
                return;
            }
            for (t, value) in self.raw.take().expect("checked above") {
                self.fold(t, value);
            }
            return;
        }
        self.fold(t, value);
    }

    fn fold(&mut self, t: f64, value: f64) {
        let index = (((t - self.start) / self.span) * BUCKETS as f64).clamp(0.0, (BUCKETS - 1) as f64) as usize;
        match self.buckets.last_mut() {
            Some(bucket) if bucket.index == index => {
                bucket.low = bucket.low.min(value);
                bucket.high = bucket.high.max(value);
            }
            _ => {
                let carried = self.last.unwrap_or(value);
                self.buckets.push(Bucket { index, t, low: value.min(carried), high: value.max(carried) });
            }
        }
        self.last = Some(value);
    }

    fn finish(self) -> Value {
        match self.raw {
            Some(raw) => {
                let values: Vec<f64> = raw.iter().map(|p| p.1).collect();
                json!({ "t": raw.iter().map(|p| p.0).collect::<Vec<_>>(), "lo": values, "hi": values, "downsampled": false })
            }
            None => json!({
                "t": self.buckets.iter().map(|b| b.t).collect::<Vec<_>>(),
                "lo": self.buckets.iter().map(|b| b.low).collect::<Vec<_>>(),
                "hi": self.buckets.iter().map(|b| b.high).collect::<Vec<_>>(),
                "downsampled": true,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EventTimes;
    use crate::log_format::parse_log;

    /// Seconds since the first event: across midnight forwards, and below zero for a line a
    /// little earlier than the first (threads' lines are not quite in time order).
    #[test]
    fn event_times_cross_midnight_and_may_precede_the_first() {
        let log = "Thread,Time,Action,Pointer,Size,Stream\n\
                   1,23:59:59.500000,allocate,0x100,8,0\n\
                   2,23:59:59.250000,allocate,0x200,8,0\n\
                   1,00:00:00.750000,free,0x100,8,0\n";
        let times = EventTimes::read(&parse_log(log).unwrap());
        assert_eq!(times.seconds, Some(vec![0.0, -0.25, 1.25]));
        assert_eq!(times.first.map(|time| time.to_string()).as_deref(), Some("23:59:59.500000"));
        let untimed = EventTimes::read(&parse_log("Thread,Action,Pointer,Size,Stream\n1,allocate,0x100,8,0\n").unwrap());
        assert_eq!((untimed.at(0), untimed.seconds, untimed.first), (0.0, None, None));
    }
}
