//! Configuration of the default per-device resources by one string (`RMM_ALLOC_CONF`).

use super::{boundary, copy_text, optional_str};
use crate::error::rmmError_t;
use crate::ownership::config;
use std::ffi::c_char;

/// Sets up the resource stack each device gets on first use when the program has set none,
/// from the stack spec `conf` (NULL: the environment variable RMM_ALLOC_CONF; unset or empty,
/// or `conf` empty: `statistics/pool`, a pool with statistics, which is also what the preload
/// library and the Python module set up with nothing configured; `cuda` turns pooling off).
/// Without any configuration, a device's resource is `cuda`, RMM's plain device memory, as in
/// RMM. A spec names the layers from the
/// outermost to the device, e.g. `statistics/pool:initial=4GiB,maximum=60GiB/cuda`, and may
/// start with `report/` (each device's statistics and unfreed allocations printed to stderr
/// at exit) and `registered_streams/` (the program uses no stream rmm-rs did not make or was
/// not told of: any other handle is refused and never handed to the driver, see
/// `rmmStreamRegister`); the older `key:value` form
/// (`resource:pool,initial_pool_size:4GiB,log:/tmp/rmm.csv,stats:1,report:1`) still works.
/// The grammar, every layer and its defaults: docs/src/configuration.md. A log path holding
/// `{device}` is per device; without it, device N > 0 logs to `<path>.N`. Devices that already
/// have a resource keep it. Without a call, the first use of a device reads RMM_ALLOC_CONF
/// itself. A spec it cannot parse is RMM_ERROR_INVALID_ARGUMENT, with a message that quotes
/// the offending text and gives its column, and changes nothing.
#[no_mangle]
pub extern "C" fn rmmConfigure(conf: *const c_char) -> rmmError_t {
    boundary("rmmConfigure", || {
        let text = match optional_str(conf, "conf")? {
            Some(text) => text.to_string(),
            None => config::environment().unwrap_or_default(),
        };
        config::configure(config::parse(&text)?);
        Ok(())
    })
}

/// The report a `report` spec prints at exit, now: for each device configured by
/// `rmmConfigure` or RMM_ALLOC_CONF, its resource, allocation statistics and unfreed
/// allocations ("" unless the spec asked for a report).
/// Copied with a NUL into `buffer` of `size` bytes; its length goes to `*length` unless NULL.
/// A NULL `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmGetReport(buffer: *mut c_char, size: usize, length: *mut usize) -> rmmError_t {
    boundary("rmmGetReport", || copy_text(&config::report(), buffer, size, length))
}
