//! The default resource stack of each device, from one spec (`RMM_ALLOC_CONF`,
//! `rmmConfigure`; the language is `spec`'s). A device gets its stack on first use: the one
//! `rmmConfigure` set up, else the one `RMM_ALLOC_CONF` names (read at that first use, by
//! linked and preloaded programs alike), else `DEFAULT_STACK`, RMM's plain `cuda` resource.
//! Asking rmm-rs to configure itself with nothing said (`rmmConfigure(NULL)` or `""`, which the
//! preload library and the Python module do) sets up `POOLED_DEFAULT`.
//!
//! A spec that starts with `report` prints each device's statistics and unfreed allocations
//! to stderr at exit.

use super::spec::{Built, Options, Spec, DEFAULT_STACK};
use crate::error::{Error, ErrorKind, Result};
use crate::resources::MemoryResource;
use crate::units;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a program that asks rmm-rs to manage its memory and says nothing more gets: the
/// preload library and the Python module with `RMM_ALLOC_CONF` unset, and `rmmConfigure` with
/// NULL or "". A pool, as the `key:value` form has always defaulted to, with statistics for
/// the report and the Python module's figures: under the preload library, PyTorch with its
/// cache off and CuPy with its pool off step several times faster than with `cuda`
/// (docs/src/preload.md). `RMM_ALLOC_CONF=cuda` turns pooling off.
pub const POOLED_DEFAULT: &str = "statistics/pool";

/// The spec `text` stands for: empty text is `POOLED_DEFAULT`, and keywords alone
/// (`RMM_ALLOC_CONF=report`, `async_free`) are options of `POOLED_DEFAULT`: what a program that
/// only wants the report on the stack it gets anyway writes.
pub fn parse(text: &str) -> Result<Spec> {
    let text = text.trim();
    match text.is_empty() {
        true => Spec::parse(POOLED_DEFAULT),
        false if Options::keywords_only(text) => Spec::parse(&format!("{}/{POOLED_DEFAULT}", text.replace('+', "/"))),
        false => Spec::parse(text),
    }
}

struct State {
    spec: Spec,
    /// Each device's configured stack, as the exit report reads it.
    stacks: Vec<(i32, Built)>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);
/// The configured spec's `async_free`, read by every `rmmCudaFree` without the lock.
static ASYNC_FREE: AtomicBool = AtomicBool::new(false);

/// Makes `spec` the recipe for the default resources of devices that have none yet.
pub fn configure(spec: Spec) {
    use_options(spec.options());
    *STATE.lock() = Some(State { spec, stacks: Vec::new() });
}

/// What the configured spec's keywords say about frees (`async_free` and its bound) and about
/// streams (`registered_streams`).
fn use_options(options: Options) {
    super::cuda_free::configure(options.pending);
    ASYNC_FREE.store(options.async_free, Ordering::Relaxed);
    crate::platform::streams::set_registered_only(options.registered_streams);
}

/// Whether `rmmCudaFree` leaves the waiting for the device to the memory (`async_free`). Not
/// while a memory checker is attached (NVTX): there `cudaFree` waits, so that the pool's block
/// stops being a region of the checker's when `cudaFree` returns, and a kernel launched after it
/// that touches the block is reported, as it is without rmm-rs.
pub fn async_free() -> bool {
    ASYNC_FREE.load(Ordering::Relaxed) && !checked_by_a_tool()
}

fn checked_by_a_tool() -> bool {
    static SAID: std::sync::Once = std::sync::Once::new();
    let attached = crate::platform::nvtx::active();
    if attached {
        SAID.call_once(|| {
            log::info!("async_free: a memory checker is attached (NVTX): cudaFree waits for the device, as without async_free")
        });
    }
    attached
}

/// The environment variable that configures rmm.
pub const ENVIRONMENT: &str = "RMM_ALLOC_CONF";

/// What `RMM_ALLOC_CONF` says, when it is set to something.
pub fn environment() -> Option<String> {
    std::env::var(ENVIRONMENT).ok().filter(|text| !text.trim().is_empty())
}

/// Whether `configure` was called.
pub fn configured() -> bool {
    STATE.lock().is_some()
}

/// Configures rmm from `RMM_ALLOC_CONF` unless something configured it already; nothing
/// when the variable is unset or empty. A spec it cannot parse is an error naming the
/// variable, and is read again at the next call.
pub fn apply_environment() -> Result<()> {
    let mut state = STATE.lock();
    if state.is_some() {
        return Ok(());
    }
    if let Some(text) = environment() {
        let spec = parse(&text).map_err(|e| match e.into_kind() {
            ErrorKind::InvalidArgument(why) => Error::invalid(format!("{ENVIRONMENT}: {why}")),
            other => other.into(),
        })?;
        use_options(spec.options());
        *state = Some(State { spec, stacks: Vec::new() });
    }
    Ok(())
}

/// The default resource of `device`: the configured stack (`rmmConfigure`, else
/// `RMM_ALLOC_CONF`), else `DEFAULT_STACK`. With `async_free`, a bound the device cannot hold
/// (more than its memory) is refused here, at the device's first use, with the reason.
pub fn default_resource(device: i32) -> Result<Arc<dyn MemoryResource>> {
    apply_environment()?;
    let mut state = STATE.lock();
    let Some(state) = state.as_mut() else {
        return Spec::parse(DEFAULT_STACK)?.build_on(device);
    };
    if state.spec.options().async_free {
        super::cuda_free::bound(device).map_err(|e| match e.into_kind() {
            ErrorKind::InvalidArgument(why) => Error::invalid(format!("{}: {why}", state.spec.text())),
            other => other.into(),
        })?;
    }
    let built = state.spec.build_stack(device)?;
    let top = built.top.clone();
    state.stacks.push((device, built));
    Ok(top)
}

/// Where a pool's free memory is held, from its snapshot (`held_by`: each stream, lane and the
/// retired streams' chunks): a line for the most held free first, "" for resources that keep
/// no pool.
fn held_free(snapshot: &serde_json::Value) -> String {
    let Some(states) = snapshot["held_by"].as_array() else { return String::new() };
    let mut free: Vec<(u64, String)> = states
        .iter()
        .filter_map(|state| {
            let bytes = state["free_bytes"].as_u64().filter(|&bytes| bytes > 0)?;
            let lane = state["lane"].as_u64().unwrap_or(0);
            let stream = match &state["stream"] {
                serde_json::Value::String(name) => name.clone(),
                id => format!("stream {id}"),
            };
            Some((bytes, if lane == 0 { stream } else { format!("{stream} lane {lane}") }))
        })
        .collect();
    if free.is_empty() {
        return String::new();
    }
    free.sort_by_key(|entry| std::cmp::Reverse(entry.0));
    let shown: Vec<String> = free.iter().take(4).map(|(bytes, by)| format!("{by} {}", units::approximate(*bytes as i64))).collect();
    let more = free.len().saturating_sub(shown.len());
    format!(
        "    free but held: {}{}\n",
        shown.join(", "),
        if more > 0 { format!(" and {more} more streams or lanes") } else { String::new() }
    )
}

/// A line for a sleeping expandable resource (`rmmDeviceSleep`), from its snapshot: its mode,
/// the address space whose pages sleep and the bytes kept on the host; "" while awake.
fn asleep(snapshot: &serde_json::Value) -> String {
    let Some(mode) = snapshot["asleep"].as_str() else { return String::new() };
    let bytes = |key: &str| units::approximate(snapshot[key].as_u64().unwrap_or(0) as i64);
    format!(
        "    asleep ({mode}): {} of blocks without device memory, {} kept on the host\n",
        bytes("asleep_bytes"),
        bytes("kept_on_host_bytes")
    )
}

/// The `report` text: per configured device, what went through its stack, what is still
/// allocated, where the free memory it holds sits and what waits for the device ("" when
/// reporting is off).
pub fn report() -> String {
    let state = STATE.lock();
    let Some(state) = state.as_ref().filter(|state| state.spec.report()) else { return String::new() };
    let mut text = format!("rmm-rs report (process {}):\n", std::process::id());
    for (device, stack) in &state.stacks {
        let name = stack.base.name();
        text += &format!("  device {device}: {name} resource");
        if let Some(f) = stack.base.footprint() {
            text += &format!(
                ", {} reserved from the device (peak {}), {} in use (peak {}), largest free block {}",
                units::approximate(f.reserved as i64),
                units::approximate(f.peak_reserved as i64),
                units::approximate(f.live as i64),
                units::approximate(f.peak_live as i64),
                units::approximate(f.largest_free_block as i64),
            );
            if let Some(fragmentation) = f.fragmentation() {
                text += &format!(", fragmentation {:.1}% (1 - in use / reserved)", fragmentation * 100.0);
            }
        }
        text += "\n";
        let snapshot = stack.base.snapshot();
        text += &held_free(&snapshot);
        text += &asleep(&snapshot);
        let spare = crate::resources::sleep::spare_host_copy_bytes(*device);
        if spare > 0 {
            text += &format!(
                "    {} of pinned host memory kept for the next keep-mode sleep (rmmDeviceRelease gives it back)\n",
                units::approximate(spare as i64)
            );
        }
        if let Some(statistics) = &stack.statistics {
            let c = statistics.counts();
            text += &format!(
                "    {} allocations, {} in all; peak {} in {} allocations; {} in {} allocations live now\n",
                c.total_count,
                units::approximate(c.total_bytes),
                units::approximate(c.peak_bytes),
                c.peak_count,
                units::approximate(c.current_bytes),
                c.current_count
            );
        }
        if let Some(tracking) = &stack.tracking {
            let leaks = tracking.report("at exit");
            if !leaks.is_empty() {
                text += &leaks.lines().map(|line| format!("    {line}\n")).collect::<String>();
            }
        }
    }
    if state.stacks.is_empty() {
        text += "  no device allocated through rmm\n";
    }
    if state.spec.options().async_free {
        let devices = crate::platform::backend().and_then(|platform| platform.device_count()).unwrap_or(0);
        for device in 0..devices {
            let pending = super::cuda_free::pending_frees(device);
            if let Some(bound) = pending.bound {
                text += &format!(
                    "  device {device}: {} frees waiting for the device ({}; async_free's bound {})\n",
                    pending.count,
                    units::approximate(pending.bytes as i64),
                    units::approximate(bound as i64)
                );
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_alone_apply_to_the_pooled_default() {
        let pooled = parse("").unwrap();
        for text in [
            "report",
            " report ",
            "async_free",
            "report/async_free",
            "report+async_free",
            "async_free:pending=5%",
            "report/async_free:pending=1GiB",
        ] {
            let spec = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(spec.layers(), pooled.layers(), "{text:?}");
            assert_eq!(spec.report(), text.contains("report"), "{text:?}");
        }
        assert!(parse("report/pool").unwrap().report());
        assert!(parse("report/bogus").is_err(), "a stack after the keywords is still checked");
        assert_eq!(parse("async_free:pending=1GiB").unwrap().options().pending, crate::ownership::spec::PendingBound::Bytes(1 << 30));
        assert!(parse("async_free:pending=0").is_err(), "a bound alone is still checked");
        // As the preload bench passes it in RMM_ALLOC_CONF.
        let bounded = parse("async_free:pending=2%/statistics/pool").unwrap();
        assert_eq!(bounded.canonical(), "async_free:pending=2%/statistics/pool:initial=0,maximum=0/cuda");
        // The key:value form, not keywords: `async_free:1` is async_free with the default bound.
        assert!(parse("async_free:1").unwrap().options().async_free);
        assert_eq!(parse("async_free:1").unwrap().layers(), parse("stats:1").unwrap().layers());
    }
}
