//! `rmm-replay`: replays an RMM allocation log against resource stacks and reports time per
//! operation, peak footprint and fragmentation (see `--help`, and `rmm::replay`);
//! `rmm-replay report` writes a memory timeline page (see `rmm::replay::report`).

use rmm::error::ErrorKind;
use rmm::replay::report::{self, CallSites, LogFile, Settings};
use rmm::replay::{self, Action, Event, FootprintSource, Options, Report, Spec};
use rmm::resources::kinds::{Role, KINDS};
use rmm::units;
use serde_json::json;
use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const DEFAULT_RESOURCES: [&str; 4] = ["pool", "binning/pool", "arena", "cuda_async"];

const HELP: &str = "\
rmm-replay: replays an RMM allocation log against resource stacks and reports time per
operation, peak footprint and fragmentation, so that you can pick a resource for a workload.

USAGE:
    rmm-replay [--resource SPEC]... [--repeat N] [--skip-failures] [--json] LOG.csv
    rmm-replay report [--resource SPEC] [--sites SNAPSHOT.json] [--skip-failures] -o OUT.html LOG.csv...
                      (a memory timeline page: rmm-replay report --help)

ARGUMENTS:
    LOG.csv    The CSV log of a logging resource adaptor (RAPIDS RMM's or rmm-rs's; `-`: stdin):
                   Thread,Time,Action,Pointer,Size,Stream
                   4031547,14:03:07.123456,allocate,0x7f3a40000000,1024,0
                   4031547,14:03:07.123470,free,0x7f3a40000000,1024,0
                   4031547,14:03:07.123480,allocate failure,(nil),99999999999,0x55d0c2a3b4c0
               Columns are found by name, in any order; others are ignored. Actions: allocate,
               free, allocate failure. Pointers: 0x... hex or (nil); streams: 0, 0x... or
               decimal. Time is ignored: the order of the lines is the order of the events.

OPTIONS:
    -r, --resource SPEC   A resource stack to replay against (see RESOURCE SPECS); give several
                          to compare them, one table row each. Default: pool, binning/pool,
                          arena, cuda_async.
    -n, --repeat N        Replay N times per stack, each time against a fresh stack. The table
                          shows the median time of the N, --json the best and the median.
                          Default: 1.
        --skip-failures   Leave out `allocate failure` events (see below).
        --json            Print JSON instead of a table.
    -h, --help            Print this text.

RESOURCE SPECS:
    The stack-spec language of RMM_ALLOC_CONF and rmmResourceCreateFromSpec (the grammar,
    every layer and its defaults: docs/src/configuration.md). Layers from the outermost to
    the device, separated by '/', or by '+' when a value holds a '/' (a log path):
        statistics/binning:min=8,max=20/pool:initial=1GiB,maximum=8GiB/cuda
        logging:path=/tmp/replayed.csv+pool
    Each layer is NAME or NAME:KEY=VALUE,KEY=VALUE; a stack that does not end in a device
    resource ends in cuda. Sizes: 4096, 64KiB, 512MiB, 8GiB.
{layers}

THE TABLE:
    ops            calls replayed: allocations and frees
    ns/alloc       mean time inside the resource per allocation, ns/free per free, ns/op per
                   call; each call is timed alone (the replay's bookkeeping is not counted) and
                   the cost of reading the clock is subtracted
    peak live      the most bytes live at once (sizes as requested)
    peak reserved  the most bytes the stack held at once, sampled after every allocation: the
                   resource's pool size, or, marked *, for stacks that report none (cuda,
                   cuda_async, binning), device memory in use above what was in use before;
                   on a GPU other processes' allocations count in that figure too
    ratio          peak reserved / peak live
    frag@peak      fragmentation of the stack's pools (1 - largest free block / free bytes,
    frag@end       over every pool, bin and arena: 0 when free memory is one block) at the
                   moment the log has the most bytes live, and at the end; - : no pool
    failed         allocations that failed here where the logged program's succeeded
    exp.fail       `allocate failure` events that failed again here / all of them

HOW THE LOG IS REPLAYED:
    In file order, on one thread, whatever threads the log names (they are counted).
    Pointers: each logged pointer stands for the allocation that returned it until its free.
    Streams: 0 and 1 are the default stream; 2 (cudaStreamPerThread) is one stream per logged
    thread; every other value is one stream created for the replay (destroyed at the end).
    Skipped and counted: frees of pointers the log never allocated (a log that started late),
    frees of allocations that failed here, zero-byte allocations and frees of (nil). What the
    log never frees is freed after the measurements.
    An `allocate failure` event is an allocation expected to fail. On a device with more free
    memory than the logged one had, it succeeds and is freed at once, but a pool keeps what it
    grew for it, which then shows in peak reserved (a note says so): --skip-failures leaves
    these events out.

DEVICE:
    The current CUDA device (device 0); libcuda.so.1 is loaded at run time. With
    RMM_SIM_DEVICES=N:BYTES (e.g. RMM_SIM_DEVICES=1:16GiB), a simulated device instead, with
    host memory standing in for device memory; it aborts on a stream-ordering race.

PROGRESS:
    On a terminal, a progress bar on stderr while the replays run; none otherwise.

EXIT STATUS:
    0  every replay ran
    1  a replay failed (no device, a resource could not be built, a free was refused)
    2  bad command line, unreadable log, a log line that does not parse, a bad spec
";

/// The layers a spec takes, by role, each with its keys (`name:required[,optional]`), as the
/// kinds registry lists them, wrapped to the help's width.
fn layers_help() -> String {
    const WIDTH: usize = 90;
    let indent = " ".repeat(24);
    let mut help = String::new();
    for (role, label) in [(Role::Device, "device resources"), (Role::Suballocator, "suballocators"), (Role::Adaptor, "adaptors")] {
        let kinds = KINDS.iter().filter(|kind| kind.role == role && kind.build.is_some());
        let items: Vec<String> = kinds
            .map(|kind| {
                let names = |required: bool| kind.keys.iter().filter(move |key| key.default.is_none() == required).map(|key| key.name);
                let (required, optional) = (names(true).collect::<Vec<_>>().join(","), names(false).collect::<Vec<_>>().join(","));
                let mut item = kind.name.to_string();
                if !required.is_empty() {
                    item += &format!(":{required}");
                }
                if !optional.is_empty() {
                    item += &format!("[{}{optional}]", if required.is_empty() { ":" } else { "," });
                }
                item
            })
            .collect();
        // Lines break after a comma or before a bracket.
        let text = items.join(", ");
        let mut pieces: Vec<&str> = Vec::new();
        let mut start = 0;
        for (at, c) in text.char_indices() {
            if c == '[' && at > start {
                pieces.push(&text[start..at]);
                start = at;
            } else if c == ',' && !text[..at].ends_with('[') {
                pieces.push(&text[start..=at]);
                start = at + 1;
            }
        }
        pieces.push(&text[start..]);
        let mut line = format!("      {label:<18}");
        for piece in pieces {
            if line.len() + piece.len() > WIDTH && line.len() > indent.len() {
                help += line.trim_end();
                help.push('\n');
                line = indent.clone();
            }
            line += if line.len() == indent.len() { piece.trim_start() } else { piece };
        }
        help += &line;
        help.push('\n');
    }
    help
}

const REPORT_HELP: &str = "\
rmm-replay report: writes a memory timeline of allocation logs as one HTML page that any
browser opens offline (its script and figures are inside it; it loads nothing).

USAGE:
    rmm-replay report [--resource SPEC] [--sites SNAPSHOT.json] [--skip-failures] -o OUT.html LOG.csv...

ARGUMENTS:
    LOG.csv    Logs as `rmm-replay` reads them (`-`: stdin), one per device: a logging adaptor
               logs one device's resource, so a program on several devices writes one log each.
               Each gets its own section, in the order given.

OPTIONS:
    -o, --output FILE     Where to write the page (required).
    -r, --resource SPEC   The stack to replay each log against (see rmm-replay --help). The log
                          records allocations and frees, not what the resource reserved from the
                          device, so each log is replayed against a fresh stack on the current
                          device, which is followed after every call. Default: pool.
        --sites FILE      A snapshot (rmmResourceWriteSnapshot) of the logged program's stack with
                          a tracking adaptor, taken when the log ends: allocations alive at the peak
                          and never freed after it get the call sites it recorded. RMM's CSV has no
                          call sites; without this the page says so.
        --skip-failures   Leave out `allocate failure` events (see rmm-replay --help).
    -h, --help            Print this text.

THE PAGE, per log:
    bytes live (requested sizes) and reserved (the stack's footprint: its pool size, or device
    memory in use above the start for stacks without one) over time, the peak of live bytes
    marked; live bytes per stream; fragmentation over time, 1 - live / reserved; the largest
    allocations alive at the peak; a map of the stack's segments and their free blocks at the
    peak. Time is the log's Time column (seconds from its first event), or the event's place in
    the log when a line has none. Series of more than 4000 points are drawn from 2000 time
    buckets that keep each bucket's lowest and highest value, so peaks stay visible.

PROGRESS:
    On a terminal, a progress bar on stderr while the logs replay; none otherwise.

DEVICE:
    As rmm-replay: the current CUDA device, or RMM_SIM_DEVICES=N:BYTES for a simulated one.
    Where there is no CUDA driver and RMM_SIM_DEVICES is unset, a simulated device of twice the
    logs' peak (at least 1 GiB): the page needs no GPU.

EXIT STATUS:
    0  the page was written
    1  a replay failed (no device, a resource could not be built, a free was refused), or the
       page could not be written
    2  bad command line, unreadable log or snapshot, a log line that does not parse, a bad spec
";

struct Args {
    specs: Vec<Spec>,
    repeat: usize,
    skip_failures: bool,
    json: bool,
    log: String,
}

enum Parsed {
    Run(Args),
    Help,
}

/// The arguments of a command line as flags with their values: `--flag=value`, `--flag value`
/// or `-f value`.
struct Flags<I>(I);

impl<I: Iterator<Item = String>> Flags<I> {
    /// The next argument, its flag (what comes before `=` in `--flag=value`, else the whole
    /// argument) and the value given with it.
    fn next(&mut self) -> Option<(String, String, Option<String>)> {
        let arg = self.0.next()?;
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_string(), Some(value.to_string())),
            _ => (arg.clone(), None),
        };
        Some((arg, flag, inline))
    }

    /// The value of the flag `name`: the one given with it, else the next argument.
    fn value(&mut self, inline: &Option<String>, name: &str) -> Result<String, String> {
        match inline {
            Some(value) => Ok(value.clone()),
            None => self.0.next().ok_or_else(|| format!("{name} needs a value")),
        }
    }
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let mut specs = Vec::new();
    let (mut repeat, mut skip_failures, mut json, mut log) = (1, false, false, None);
    let mut flags = Flags(args);
    while let Some((arg, flag, inline)) = flags.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-r" | "--resource" => specs.push(parse_spec(&flags.value(&inline, "--resource")?)?),
            "-n" | "--repeat" => {
                let text = flags.value(&inline, "--repeat")?;
                repeat = text
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| format!("--repeat {text:?}: expected a whole number of at least 1"))?;
            }
            "--json" if inline.is_none() => json = true,
            "--skip-failures" if inline.is_none() => skip_failures = true,
            "-" => log = replace_log(log, arg)?,
            other if other.starts_with('-') => return Err(format!("unknown option {arg:?}")),
            _ => log = replace_log(log, arg)?,
        }
    }
    let log = log.ok_or("no log file given")?;
    if specs.is_empty() {
        specs = DEFAULT_RESOURCES.iter().map(|s| parse_spec(s)).collect::<Result<_, _>>()?;
    }
    Ok(Parsed::Run(Args { specs, repeat, skip_failures, json, log }))
}

/// A `--resource` spec, or the parser's message (which points at the bad text).
fn parse_spec(text: &str) -> Result<Spec, String> {
    Spec::parse(text).map_err(|e| match e.into_kind() {
        ErrorKind::InvalidArgument(message) => message,
        other => rmm::Error::from(other).to_string(),
    })
}

struct ReportArgs {
    spec: Spec,
    sites: Option<String>,
    skip_failures: bool,
    output: String,
    logs: Vec<String>,
}

fn parse_report_args(args: impl Iterator<Item = String>) -> Result<Option<ReportArgs>, String> {
    let (mut spec, mut sites, mut skip_failures, mut output, mut logs) = (None, None, false, None, Vec::new());
    let mut flags = Flags(args);
    while let Some((arg, flag, inline)) = flags.next() {
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "-r" | "--resource" if spec.is_some() => return Err("report: one --resource (the page follows one stack)".to_string()),
            "-r" | "--resource" => spec = Some(parse_spec(&flags.value(&inline, "--resource")?)?),
            "-o" | "--output" => output = Some(flags.value(&inline, "--output")?),
            "--sites" => sites = Some(flags.value(&inline, "--sites")?),
            "--skip-failures" if inline.is_none() => skip_failures = true,
            "-" => logs.push(arg),
            other if other.starts_with('-') => return Err(format!("report: unknown option {arg:?}")),
            _ => logs.push(arg),
        }
    }
    if logs.is_empty() {
        return Err("report: no log file given".to_string());
    }
    if logs.iter().filter(|log| *log == "-").count() > 1 {
        return Err("report: stdin (-) given twice".to_string());
    }
    let output = output.ok_or("report: no output file given (-o OUT.html)")?;
    let spec = match spec {
        Some(spec) => spec,
        None => report::default_spec(),
    };
    Ok(Some(ReportArgs { spec, sites, skip_failures, output, logs }))
}

fn replace_log(previous: Option<String>, log: String) -> Result<Option<String>, String> {
    match previous {
        Some(previous) => Err(format!("one log at a time ({previous:?} and {log:?} given)")),
        None => Ok(Some(log)),
    }
}

fn read_log(path: &str) -> Result<String, String> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| format!("reading the log from stdin: {e}"))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("report") {
        args.next();
        return main_report(args);
    }
    let args = match parse_args(args) {
        Ok(Parsed::Run(args)) => args,
        Ok(Parsed::Help) => {
            print!("{}", HELP.replace("{layers}\n", &layers_help()));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "rmm-replay: {e}\nusage: rmm-replay [--resource SPEC]... [--repeat N] [--skip-failures] [--json] LOG.csv (--help for more)"
            );
            return ExitCode::from(2);
        }
    };
    let events = match read_log(&args.log).and_then(|text| replay::parse_log(&text)) {
        Ok(events) => events,
        Err(e) => {
            eprintln!("rmm-replay: {}: {e}", args.log);
            return ExitCode::from(2);
        }
    };
    let device = match device() {
        Ok(device) => device,
        Err(e) => {
            eprintln!("rmm-replay: {e}");
            return ExitCode::from(1);
        }
    };
    let options = Options { skip_failure_events: args.skip_failures, ..Options::default() };
    let mut progress = ProgressBar::on_terminal("replaying");
    let runs = args.specs.len() * args.repeat;
    let results: Vec<(String, Result<Report, String>)> = args
        .specs
        .iter()
        .enumerate()
        .map(|(at, spec)| {
            let mut observe = |sample: &replay::Sample<'_>| {
                let run = at * args.repeat + sample.repetition;
                progress.show(run * sample.steps + sample.done, runs * sample.steps);
            };
            (spec.text().to_string(), replay::replay_spec_observed(&events, spec, args.repeat, &options, &mut observe))
        })
        .collect();
    progress.clear();
    if args.json {
        print_json(&args, &events, &device, &results);
    } else {
        print_table(&args, &events, &device, &results);
    }
    match results.iter().all(|(_, r)| r.is_ok()) {
        true => ExitCode::SUCCESS,
        false => ExitCode::from(1),
    }
}

fn main_report(args: impl Iterator<Item = String>) -> ExitCode {
    let usage = |e: String| {
        eprintln!("rmm-replay: {e}\nusage: rmm-replay report [--resource SPEC] [--sites SNAPSHOT.json] [--skip-failures] -o OUT.html LOG.csv... (--help for more)");
        ExitCode::from(2)
    };
    let args = match parse_report_args(args) {
        Ok(Some(args)) => args,
        Ok(None) => {
            print!("{REPORT_HELP}");
            return ExitCode::SUCCESS;
        }
        Err(e) => return usage(e),
    };
    let mut logs = Vec::new();
    for name in &args.logs {
        match read_log(name).map_err(|e| format!("{name}: {e}")).and_then(|text| LogFile::parse(name, &text)) {
            Ok(log) => logs.push(log),
            Err(e) => {
                eprintln!("rmm-replay: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let sites = match args.sites.as_deref().map(read_call_sites).transpose() {
        Ok(sites) => sites,
        Err(e) => {
            eprintln!("rmm-replay: {e}");
            return ExitCode::from(2);
        }
    };
    // The page only reads logs: without a GPU (or RMM_SIM_DEVICES) the replay that learns what
    // the stack reserves runs on a simulated device large enough for the logs' peaks.
    if std::env::var_os("RMM_SIM_DEVICES").is_none() && !rmm::platform::driver_loads() {
        let peak = logs.iter().map(LogFile::peak_live_bytes).max().unwrap_or(0);
        let capacity = peak.saturating_mul(2).max(1 << 30);
        std::env::set_var("RMM_SIM_DEVICES", format!("1:{capacity}"));
        eprintln!("rmm-replay: no CUDA driver here; replaying on a simulated device of {}", rmm::units::exact(capacity));
    }
    let options = Options { skip_failure_events: args.skip_failures, ..Options::default() };
    let settings = Settings { spec: &args.spec, options: &options, call_sites: sites.as_ref() };
    let mut progress = ProgressBar::on_terminal("report");
    let written = report::write(&logs, &settings, &args.output, &mut |done, total| progress.show(done, total));
    progress.clear();
    match written {
        Ok(_) => {
            eprintln!("rmm-replay: wrote {}", args.output);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rmm-replay: {e}");
            ExitCode::from(1)
        }
    }
}

fn read_call_sites(path: &str) -> Result<CallSites, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: cannot read it: {e}"))?;
    let snapshot = serde_json::from_str(&text).map_err(|e| format!("{path}: not a JSON snapshot: {e}"))?;
    CallSites::from_snapshot(&snapshot).map_err(|e| format!("{path}: {e}"))
}

/// A progress bar on stderr, drawn only when stderr is a terminal, at most ten times a second.
struct ProgressBar {
    label: &'static str,
    on_terminal: bool,
    drawn: Option<Instant>,
    permille: usize,
}

impl ProgressBar {
    const WIDTH: usize = 30;
    const EVERY: Duration = Duration::from_millis(100);

    fn on_terminal(label: &'static str) -> ProgressBar {
        ProgressBar { label, on_terminal: std::io::stderr().is_terminal(), drawn: None, permille: usize::MAX }
    }

    fn show(&mut self, done: usize, total: usize) {
        if !self.on_terminal || total == 0 {
            return;
        }
        let permille = (done.min(total) as u128 * 1000 / total as u128) as usize;
        if permille == self.permille || self.drawn.is_some_and(|at| at.elapsed() < Self::EVERY) {
            return;
        }
        self.permille = permille;
        self.drawn = Some(Instant::now());
        let filled = permille * Self::WIDTH / 1000;
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(Self::WIDTH - filled));
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r{} [{bar}] {:>5.1}% {done}/{total} events", self.label, permille as f64 / 10.0);
        let _ = stderr.flush();
    }

    /// Erases the bar, so what follows starts on a clean line.
    fn clear(&mut self) {
        if self.drawn.take().is_some() {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

struct Device {
    id: i32,
    simulated: bool,
    total: usize,
}

fn device() -> Result<Device, String> {
    let platform = rmm::platform::backend().map_err(|e| e.to_string())?;
    let id = platform.current_device().map_err(|e| e.to_string())?;
    let (_, total) = platform.mem_get_info(id).map_err(|e| e.to_string())?;
    Ok(Device { id, simulated: platform.is_simulated(), total })
}

impl Device {
    fn describe(&self) -> String {
        let kind = if self.simulated { "simulated device" } else { "CUDA device" };
        format!("{kind} {} ({})", self.id, units::approximate(self.total as i64))
    }
}

fn count(events: &[Event], action: Action) -> usize {
    events.iter().filter(|e| e.action == action).count()
}

fn threads(events: &[Event]) -> usize {
    events.iter().map(|e| e.thread).collect::<std::collections::HashSet<_>>().len()
}

fn print_json(args: &Args, events: &[Event], device: &Device, results: &[(String, Result<Report, String>)]) {
    let results: Vec<_> = results
        .iter()
        .map(|(spec, result)| match result {
            Ok(report) => {
                let mut value = report.to_json();
                value["spec"] = spec.as_str().into();
                value
            }
            Err(e) => json!({ "resource": spec, "spec": spec, "error": e }),
        })
        .collect();
    let out = json!({
        "log": args.log,
        "events": events.len(),
        "allocate": count(events, Action::Allocate),
        "free": count(events, Action::Free),
        "allocate_failure": count(events, Action::AllocateFailure),
        "threads": threads(events),
        "replayed_on_one_thread_in_file_order": true,
        "device": { "id": device.id, "simulated": device.simulated, "total_bytes": device.total },
        "repeat": args.repeat,
        "results": results,
    });
    println!("{}", serde_json::to_string_pretty(&out).expect("JSON values print"));
}

fn ns(value: f64, count: usize) -> String {
    if count == 0 {
        "-".to_string()
    } else {
        format!("{value:.0}")
    }
}

fn fraction(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.2}"))
}

fn print_table(args: &Args, events: &[Event], device: &Device, results: &[(String, Result<Report, String>)]) {
    let streams = results.iter().find_map(|(_, r)| r.as_ref().ok().map(|r| r.streams));
    println!(
        "{}: {} events ({} allocate, {} free, {} allocate failure), {} thread{}{}",
        args.log,
        events.len(),
        count(events, Action::Allocate),
        count(events, Action::Free),
        count(events, Action::AllocateFailure),
        threads(events),
        if threads(events) == 1 { "" } else { "s" },
        streams.map_or(String::new(), |s| format!(", {s} non-default stream{}", if s == 1 { "" } else { "s" })),
    );
    println!(
        "replayed in file order on one thread, on {}; {}",
        device.describe(),
        match args.repeat {
            1 => "one run per resource".to_string(),
            n => format!("median of {n} runs per resource, each on a fresh stack"),
        }
    );
    let header = [
        "resource",
        "ops",
        "ns/alloc",
        "ns/free",
        "ns/op",
        "peak live",
        "peak reserved",
        "ratio",
        "frag@peak",
        "frag@end",
        "failed",
        "exp.fail",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    let mut notes = Vec::new();
    for (spec, result) in results {
        match result {
            Ok(r) => {
                let t = &r.timing;
                let reserved = match r.footprint_source {
                    FootprintSource::PoolSize => units::approximate(r.peak_footprint_bytes as i64),
                    FootprintSource::DeviceMemory => format!("{}*", units::approximate(r.peak_footprint_bytes as i64)),
                };
                rows.push(vec![
                    spec.clone(),
                    (r.allocations + r.frees).to_string(),
                    ns(t.alloc_ns.median, r.allocations),
                    ns(t.free_ns.median, r.frees),
                    ns(t.op_ns.median, r.allocations + r.frees),
                    units::approximate(r.peak_live_bytes as i64),
                    reserved,
                    fraction(r.footprint_ratio()),
                    fraction(r.fragmentation_at_peak.map(|f| f.fragmentation)),
                    fraction(r.fragmentation_at_end.map(|f| f.fragmentation)),
                    r.failed_allocations.to_string(),
                    format!("{}/{}", r.expected_failures_reproduced, r.expected_failures),
                ]);
                if r.expected_failures_reproduced < r.expected_failures {
                    notes.push(format!(
                        "{spec}: {} of {} `allocate failure` events succeeded here; peak reserved includes what \
                         the stack grew for them (--skip-failures leaves them out)",
                        r.expected_failures - r.expected_failures_reproduced,
                        r.expected_failures
                    ));
                }
                if let Some(first) = &r.first_failure {
                    notes.push(format!("{spec}: {} allocation(s) failed; the first at {first}", r.failed_allocations));
                }
            }
            Err(e) => {
                let mut row = vec![spec.clone(), "error".to_string()];
                row.resize(header.len(), String::new());
                rows.push(row);
                notes.push(format!("{spec}: {e}"));
            }
        }
    }
    let widths: Vec<usize> = (0..header.len()).map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0)).collect();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| match c {
                0 => format!("{cell:<w$}", w = widths[c]),
                _ => format!("{cell:>w$}", w = widths[c]),
            })
            .collect();
        println!("{}", cells.join("  ").trim_end());
    }
    if results.iter().any(|(_, r)| matches!(r, Ok(r) if r.footprint_source == FootprintSource::DeviceMemory)) {
        println!("* device memory in use above the start: the stack reports no pool size");
    }
    if let Some(r) = results.iter().find_map(|(_, r)| r.as_ref().ok()) {
        let skipped = [
            (r.skipped_unknown_frees, "frees of pointers the log never allocated"),
            (r.skipped_null, "zero-byte allocations and frees of (nil)"),
            (r.skipped_failure_events, "`allocate failure` events left out"),
            (r.size_mismatches, "frees whose size differs from the allocation's (the allocation's is used)"),
            (r.unfreed, "allocations the log never frees (freed after the measurements)"),
        ];
        for (n, what) in skipped {
            if n > 0 {
                println!("{n} {what}");
            }
        }
    }
    for note in notes {
        println!("{note}");
    }
}
