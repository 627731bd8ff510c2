//! Configuration of the default per-device resources by one string (`RMM_ALLOC_CONF`).

use super::{boundary, copy_text, optional_str};
use crate::error::rmmError_t;
use crate::ownership::config::{self, AllocConf};
use std::ffi::c_char;

/// Sets up, from `conf` (NULL: the environment variable RMM_ALLOC_CONF; unset or empty: the
/// defaults), the resource stack each device gets on first use when the program has set
/// none: `resource:pool|arena|binning|cuda|cuda_async|managed|expandable` (default pool, over cuda;
/// expandable: `maximum_pool_size` bounds its reserved address range),
/// `initial_pool_size:4GiB` (default 0: grow on demand), `maximum_pool_size:60GiB` (default 0:
/// no limit), `log:/path.csv` (a logging adaptor; device N > 0 logs to `/path.csv.N`),
/// `stats:1|0` (a statistics adaptor, default 1), `report:1|0` (statistics and unfreed
/// allocations printed to stderr at exit, default 0), separated by commas. Devices that
/// already have a resource keep it. A string it cannot parse is RMM_ERROR_INVALID_ARGUMENT
/// (the message says why) and changes nothing.
#[no_mangle]
pub extern "C" fn rmmConfigure(conf: *const c_char) -> rmmError_t {
    boundary("rmmConfigure", || {
        let text = match optional_str(conf, "conf")? {
            Some(text) => text.to_string(),
            None => config::environment().unwrap_or_default(),
        };
        config::configure(AllocConf::parse(&text)?);
        Ok(())
    })
}

/// The report `report:1` prints at exit, now: for each device configured by `rmmConfigure`,
/// its resource, allocation statistics and unfreed allocations ("" unless `report:1`).
/// Copied with a NUL into `buffer` of `size` bytes; its length goes to `*length` unless NULL.
/// A NULL `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmGetReport(buffer: *mut c_char, size: usize, length: *mut usize) -> rmmError_t {
    boundary("rmmGetReport", || copy_text(&config::report(), buffer, size, length))
}
