//! Configuration of the default per-device resources by one string (`RMM_ALLOC_CONF`).

use super::{boundary, copy_text, non_null, optional_str, write_out};
use crate::error::{rmmError_t, Error};
use crate::ownership::config;
use crate::units;
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

/// Reads the size `text` into `*bytes`, as rmm-rs reads every size (RMM_ALLOC_CONF, specs,
/// RMM_SIM_DEVICES, the Python package's sizes): a number of bytes, with a fraction or
/// without (`4096`, `1.5GiB`), then optionally a unit, in any case, after spaces or not: `B`;
/// `kB`, `MB`, `GB`, `TB`, `PB`, powers of 1000 (`1GB` is 10^9 bytes, as in SI and RAPIDS'
/// `parse_bytes`); `KiB`, `MiB`, `GiB`, `TiB`, `PiB`, powers of 1024 (`1GiB` is 2^30 bytes).
/// A fraction of a byte is dropped. A prefix letter alone (`4G`) is ambiguous and refused.
/// Neither `bytes` nor `text` may be NULL. Text that is not a size, or one above SIZE_MAX
/// bytes, is RMM_ERROR_INVALID_ARGUMENT with a message that quotes it and says why
/// (`"4G" is not a size: 4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000
/// bytes)`), and `*bytes` keeps its value.
#[no_mangle]
pub extern "C" fn rmmParseSize(bytes: *mut usize, text: *const c_char) -> rmmError_t {
    boundary("rmmParseSize", || {
        let bytes = non_null(bytes, "bytes")?;
        let text = optional_str(text, "text")?.ok_or_else(|| Error::invalid("text is NULL"))?;
        let size = units::parse_size(text).map_err(|why| Error::invalid(why.text(text)))?;
        write_out(bytes, "bytes", size)
    })
}
