//! One environment string configures the default per-device resources, in the spirit of
//! `PYTORCH_CUDA_ALLOC_CONF`: `RMM_ALLOC_CONF=resource:pool,initial_pool_size:4GiB,
//! maximum_pool_size:60GiB,log:/tmp/rmm.csv,stats:1,report:1`. `rmmConfigure` applies it (the
//! `LD_PRELOAD` shim calls it first thing); each device then gets its stack on first use:
//!
//!   (logging) -> (statistics) -> (tracking) -> resource -> cuda   (adaptors in parentheses when asked for)
//!
//! `report:1` prints each device's statistics and unfreed allocations to stderr at exit.

use crate::error::{Error, Result};
use crate::platform::sim::parse_size;
use crate::resources::adaptors::{LoggingAdaptor, StatisticsAdaptor, TrackingAdaptor};
use crate::resources::{
    expandable_resource, ArenaResource, AsyncResource, BinningResource, DirectResource, ExpandableOptions, MemoryResource, PoolResource,
};
use crate::units;
use parking_lot::Mutex;
use std::sync::Arc;

/// The base resource of each device's stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Base {
    Pool,
    Arena,
    Binning,
    Cuda,
    CudaAsync,
    Managed,
    Expandable,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocConf {
    pub base: Base,
    pub initial_pool_size: usize,
    /// 0: no limit.
    pub maximum_pool_size: usize,
    /// A CSV log of every allocation (device N > 0 writes to `<log>.N`).
    pub log: Option<String>,
    pub stats: bool,
    pub report: bool,
    /// The expandable resource's: free pages go back above this (usize::MAX: never).
    pub release_threshold: usize,
    /// The expandable resource's unit of mapping (0: the device's granularity).
    pub page_size: usize,
}

impl Default for AllocConf {
    /// What the preload uses with nothing set: a pool that grows on demand, with statistics.
    fn default() -> Self {
        AllocConf {
            base: Base::Pool,
            initial_pool_size: 0,
            maximum_pool_size: 0,
            log: None,
            stats: true,
            report: false,
            release_threshold: usize::MAX,
            page_size: 0,
        }
    }
}

fn flag(key: &str, value: &str) -> Result<bool> {
    match value {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Error::invalid(format!("{key}:{value}: expected 1 or 0"))),
    }
}

fn size(key: &str, value: &str) -> Result<usize> {
    parse_size(value).ok_or_else(|| Error::invalid(format!("{key}:{value}: not a size (e.g. 4GiB, 512MiB, 1048576)")))
}

impl AllocConf {
    /// Parses `key:value` pairs separated by commas; later keys win. Empty: the default.
    pub fn parse(text: &str) -> Result<Self> {
        let mut conf = AllocConf::default();
        for item in text.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let (key, value) = item
                .split_once(':')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| Error::invalid(format!("`{item}` is not key:value")))?;
            match key {
                "resource" | "backend" => {
                    conf.base = match value {
                        "pool" => Base::Pool,
                        "arena" => Base::Arena,
                        "binning" => Base::Binning,
                        "cuda" => Base::Cuda,
                        "cuda_async" | "async" => Base::CudaAsync,
                        "managed" => Base::Managed,
                        "expandable" => Base::Expandable,
                        other => {
                            return Err(Error::invalid(format!(
                                "resource:{other}: expected pool, arena, binning, cuda, cuda_async, managed or expandable"
                            )))
                        }
                    }
                }
                "initial_pool_size" => conf.initial_pool_size = size(key, value)?,
                "maximum_pool_size" => conf.maximum_pool_size = size(key, value)?,
                "log" => conf.log = (!value.is_empty()).then(|| value.to_string()),
                "stats" => conf.stats = flag(key, value)?,
                "report" => conf.report = flag(key, value)?,
                "release_threshold" => conf.release_threshold = size(key, value)?,
                "page_size" => conf.page_size = size(key, value)?,
                other => {
                    return Err(Error::invalid(format!(
                        "unknown key `{other}` (known: resource, initial_pool_size, maximum_pool_size, release_threshold, page_size, log, stats, report)"
                    )))
                }
            }
        }
        if conf.maximum_pool_size != 0 && conf.initial_pool_size > conf.maximum_pool_size {
            return Err(Error::invalid(format!(
                "initial_pool_size {} exceeds maximum_pool_size {}",
                conf.initial_pool_size, conf.maximum_pool_size
            )));
        }
        Ok(conf)
    }

    /// The stack of `device`.
    fn build(&self, device: i32) -> Result<Stack> {
        let cuda = || -> Result<Arc<dyn MemoryResource>> { Ok(Arc::new(DirectResource::cuda(device)?)) };
        let mut top: Arc<dyn MemoryResource> = match self.base {
            Base::Pool => Arc::new(PoolResource::new(cuda()?, self.initial_pool_size, self.maximum_pool_size)?),
            Base::Arena => Arc::new(ArenaResource::new(cuda()?, self.initial_pool_size)?),
            Base::Binning => {
                let pool = Arc::new(PoolResource::new(cuda()?, self.initial_pool_size, self.maximum_pool_size)?);
                Arc::new(BinningResource::new(pool, 8, 20)?)
            }
            Base::Cuda => cuda()?,
            Base::CudaAsync => {
                let threshold = if self.maximum_pool_size == 0 { usize::MAX } else { self.maximum_pool_size };
                Arc::new(AsyncResource::new(device, self.initial_pool_size, threshold, 0)?)
            }
            Base::Managed => Arc::new(DirectResource::managed(device)?),
            Base::Expandable => Arc::new(expandable_resource(
                device,
                &ExpandableOptions {
                    initial_size: self.initial_pool_size,
                    maximum_size: self.maximum_pool_size,
                    release_threshold: self.release_threshold,
                    page_size: self.page_size,
                    peers: Vec::new(),
                },
            )?),
        };
        let base = top.clone();
        let tracking = self.report.then(|| TrackingAdaptor::new_unreported(top.clone(), false));
        if let Some(tracking) = &tracking {
            top = tracking.clone();
        }
        let statistics = (self.stats || self.report).then(|| StatisticsAdaptor::new(top.clone()));
        if let Some(statistics) = &statistics {
            top = statistics.clone();
        }
        if let Some(path) = &self.log {
            let path = if device == 0 { path.clone() } else { format!("{path}.{device}") };
            top = LoggingAdaptor::new(top, Some(&path))?;
        }
        Ok(Stack { device, top, base, statistics, tracking })
    }
}

/// A device's configured stack and the adaptors the exit report reads.
struct Stack {
    device: i32,
    top: Arc<dyn MemoryResource>,
    base: Arc<dyn MemoryResource>,
    statistics: Option<Arc<StatisticsAdaptor>>,
    tracking: Option<Arc<TrackingAdaptor>>,
}

struct State {
    conf: AllocConf,
    stacks: Vec<Stack>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Makes `conf` the recipe for the default resources of devices that have none yet.
pub fn configure(conf: AllocConf) {
    *STATE.lock() = Some(State { conf, stacks: Vec::new() });
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

/// The configured default resource of `device`, if `configure` was called.
pub fn default_resource(device: i32) -> Option<Result<Arc<dyn MemoryResource>>> {
    let mut state = STATE.lock();
    let state = state.as_mut()?;
    Some(state.conf.build(device).map(|stack| {
        let top = stack.top.clone();
        state.stacks.push(stack);
        top
    }))
}

/// The `report:1` text: per configured device, what went through its stack and what is
/// still allocated ("" when reporting is off).
pub fn report() -> String {
    let state = STATE.lock();
    let Some(state) = state.as_ref().filter(|state| state.conf.report) else { return String::new() };
    let mut text = format!("rmm-rs report (process {}):\n", std::process::id());
    for stack in &state.stacks {
        let name = stack.base.name();
        text += &format!("  device {}: {name} resource", stack.device);
        if let Some(f) = stack.base.footprint() {
            text += &format!(
                ", {} reserved from the device (peak {}), {} in use (peak {}), largest free block {}, fragmentation {:.1}% (1 - in use / reserved)",
                units::approximate(f.reserved as i64),
                units::approximate(f.peak_reserved as i64),
                units::approximate(f.live as i64),
                units::approximate(f.peak_live as i64),
                units::approximate(f.largest_free_block as i64),
                f.fragmentation() * 100.0
            );
        }
        text += "\n";
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
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn parses_the_keys_and_refuses_what_it_does_not_know() {
        let conf =
            AllocConf::parse("resource:pool, initial_pool_size:4GiB,maximum_pool_size:60GiB,log:/tmp/rmm.csv,stats:1,report:1").unwrap();
        assert_eq!(
            conf,
            AllocConf {
                base: Base::Pool,
                initial_pool_size: 4 << 30,
                maximum_pool_size: 60 << 30,
                log: Some("/tmp/rmm.csv".into()),
                stats: true,
                report: true,
                ..AllocConf::default()
            }
        );
        let expandable = AllocConf::parse("resource:expandable,release_threshold:1GiB,page_size:20MiB").unwrap();
        assert_eq!((expandable.release_threshold, expandable.page_size), (1 << 30, 20 << 20));
        assert_eq!(AllocConf::parse("").unwrap(), AllocConf::default());
        assert_eq!(AllocConf::parse("resource:cuda_async,stats:0").unwrap().base, Base::CudaAsync);
        assert_eq!(AllocConf::parse("resource:expandable").unwrap().base, Base::Expandable);
        for bad in [
            "resource:bogus",
            "initial_pool_size:lots",
            "stats:maybe",
            "pool",
            "colour:blue",
            "initial_pool_size:2GiB,maximum_pool_size:1GiB",
        ] {
            let error = AllocConf::parse(bad).unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{bad}: {error}");
        }
    }
}
