//! What the expandable resource asks of the device over a log: replays an RMM CSV log against
//! a stack (default `expandable`) on a simulated device and prints, every N events, the live
//! bytes, the bytes held and the page source's activity (pages mapped, stitched, unmapped).
//!   RMM_SIM_DEVICES=1:80GiB cargo run --release --example replay_activity -- LOG.csv [SPEC] [N]

use rmm::ownership::spec::Spec;
use rmm::replay::{parse_log, replay_spec_observed, Options};

fn activity(value: &serde_json::Value) -> Option<serde_json::Value> {
    match value {
        serde_json::Value::Object(map) => map.get("activity").cloned().or_else(|| map.values().find_map(activity)),
        _ => None,
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: replay_activity LOG.csv [SPEC] [EVERY]")?;
    let spec = Spec::parse(args.get(2).map_or("expandable", String::as_str)).map_err(|e| e.to_string())?;
    let every: usize = args.get(3).map_or(Ok(1000), |n| n.parse()).map_err(|e| format!("{e}"))?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let events = parse_log(&text)?;
    let mut observe = |sample: &rmm::replay::Sample<'_>| {
        if sample.done.is_multiple_of(every) || sample.done == sample.steps {
            let held = sample.footprint_bytes().unwrap_or(0);
            let snapshot = sample.resource.snapshot();
            println!(
                "{:>7} live {:>8.1} MiB held {:>8.1} MiB {}",
                sample.done,
                sample.live_bytes as f64 / 1048576.0,
                held as f64 / 1048576.0,
                activity(&snapshot).map(|a| a.to_string()).unwrap_or_default()
            );
        }
    };
    let report = replay_spec_observed(&events, &spec, 1, &Options::default(), &mut observe)?;
    println!("{}", report.to_json());
    Ok(())
}
