//! Adaptors over an upstream handle: statistics, logging, limiting, tracking, failure
//! callback, aligned, prefetch. Each keeps its own reference to its upstream; the caller owns
//! the new handle (`rmmResourceDestroy`).

use super::handles::{self, rmmResource_t};
use super::suballocators::create_over;
use super::types::{cudaStream_t, CallbackArgument};
use super::{boundary, copy_text, non_null, optional_str, write_out};
use crate::error::{rmmError_t, Error, Result};
use crate::resources::adaptors::{
    Counts, FailureCallbackAdaptor, LimitingAdaptor, LineSink, LoggingAdaptor, StatisticsAdaptor, TrackingAdaptor,
};
use crate::resources::kinds::{self, Place, Value};
use crate::resources::MemoryResource;
use std::any::Any;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The adaptor of type `A` behind `resource`, or an error naming what it is instead.
fn adaptor<A: MemoryResource, T>(resource: rmmResource_t, what: &str, f: impl FnOnce(&A) -> Result<T>) -> Result<T> {
    handles::with(resource, |stack| {
        let resource = stack.resource();
        let adaptor = (resource as &dyn Any)
            .downcast_ref::<A>()
            .ok_or_else(|| Error::invalid(format!("resource is a {} resource, not a {what}", resource.name())))?;
        f(adaptor)
    })
}

/// Allocation figures of a statistics adaptor's innermost scope, as RMM's
/// `statistics_resource_adaptor` counts them: bytes as requested, allocations as calls.
/// Current values can be negative within a scope that frees memory allocated before it.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
#[allow(non_camel_case_types)]
pub struct rmmStatistics_t {
    /// Bytes allocated and not yet freed (in the scope: since it was pushed).
    pub current_bytes: i64,
    /// The most `current_bytes` has been.
    pub peak_bytes: i64,
    /// Bytes of every allocation ever made, freed or not.
    pub total_bytes: i64,
    /// Allocations made and not yet freed.
    pub current_count: i64,
    /// The most `current_count` has been.
    pub peak_count: i64,
    /// Allocations ever made.
    pub total_count: i64,
}

impl From<Counts> for rmmStatistics_t {
    fn from(c: Counts) -> Self {
        rmmStatistics_t {
            current_bytes: c.current_bytes,
            peak_bytes: c.peak_bytes,
            total_bytes: c.total_bytes,
            current_count: c.current_count,
            peak_count: c.peak_count,
            total_count: c.total_count,
        }
    }
}

/// Creates a statistics adaptor over `upstream`: current, peak and total bytes and
/// allocation counts of what goes through it. Threads never wait here: each counts in a shard
/// of its own. Current and total figures are exact once the threads using it have returned.
/// The peak is never above the true peak and is exact while one thread uses the adaptor; with
/// several at once it can fall short by less than 4 MiB and 64 allocations per other thread.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
/// RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL); creating it takes no memory.
#[no_mangle]
pub extern "C" fn rmmStatisticsAdaptorCreate(resource: *mut rmmResource_t, upstream: rmmResource_t) -> rmmError_t {
    create_over("rmmStatisticsAdaptorCreate", resource, upstream, |upstream| kinds::build("statistics", [], &Place::over(upstream)))
}

/// Writes the figures of the innermost scope of a statistics adaptor to `*counts`.
/// A resource that is not a statistics adaptor: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmStatisticsAdaptorGetCounts(resource: rmmResource_t, counts: *mut rmmStatistics_t) -> rmmError_t {
    boundary("rmmStatisticsAdaptorGetCounts", || {
        non_null(counts, "counts")?;
        let figures = adaptor(resource, "statistics adaptor", |stats: &StatisticsAdaptor| Ok(stats.counts()))?;
        write_out(counts, "counts", figures.into())
    })
}

/// Starts a nested scope: the figures start again from zero until the matching pop.
/// A resource that is not a statistics adaptor: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmStatisticsAdaptorPushCounters(resource: rmmResource_t) -> rmmError_t {
    boundary("rmmStatisticsAdaptorPushCounters", || {
        adaptor(resource, "statistics adaptor", |stats: &StatisticsAdaptor| {
            stats.push();
            Ok(())
        })
    })
}

/// Ends the innermost scope and writes its figures to `*popped` unless it is NULL; its peak
/// counts towards the enclosing scope's, as in RMM. Without a pushed scope:
/// RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmStatisticsAdaptorPopCounters(resource: rmmResource_t, popped: *mut rmmStatistics_t) -> rmmError_t {
    boundary("rmmStatisticsAdaptorPopCounters", || {
        let figures = adaptor(resource, "statistics adaptor", |stats: &StatisticsAdaptor| stats.pop())?;
        if !popped.is_null() {
            write_out(popped, "popped", figures.into())?;
        }
        Ok(())
    })
}

/// Creates a logging adaptor over `upstream` that writes one CSV line per allocation and free
/// to `path` (created or truncated now), in RAPIDS RMM's format
/// (`Thread,Time,Action,Pointer,Size,Stream`). A NULL `path` uses the file the environment
/// variable RMM_LOG_FILE names; with neither, RMM_ERROR_INVALID_ARGUMENT. A file that cannot
/// be created is RMM_ERROR_IO. Lines are buffered: `rmmLoggingAdaptorFlush` and destroying the
/// adaptor write them out.
#[no_mangle]
pub extern "C" fn rmmLoggingAdaptorCreate(resource: *mut rmmResource_t, upstream: rmmResource_t, path: *const c_char) -> rmmError_t {
    create_over("rmmLoggingAdaptorCreate", resource, upstream, |upstream| {
        let path = optional_str(path, "path")?.map(str::to_string);
        kinds::build("logging", [("path", Value::Path(path))], &Place::over(upstream))
    })
}

/// Writes every buffered line of a logging adaptor to its file and flushes the file.
/// RMM_ERROR_IO if a write failed since the last flush.
#[no_mangle]
pub extern "C" fn rmmLoggingAdaptorFlush(resource: rmmResource_t) -> rmmError_t {
    boundary("rmmLoggingAdaptorFlush", || adaptor(resource, "logging adaptor", |log: &LoggingAdaptor| log.flush()))
}

/// Receives one line of a logging adaptor's log (`rmmLoggingAdaptorCreateWithSink`): `length`
/// bytes, NUL-terminated, without the end-of-line, valid during the call only. Returns 0, or
/// anything else when the line could not be written (the next `rmmLoggingAdaptorFlush` is then
/// RMM_ERROR_IO).
#[allow(non_camel_case_types)]
pub type rmmLogLineCallback_t = Option<extern "C" fn(line: *const c_char, length: usize, user_data: *mut c_void) -> c_int>;

/// The C caller's line callback, and the release it asked for once the adaptor is gone.
struct CallbackSink {
    line: extern "C" fn(*const c_char, usize, *mut c_void) -> c_int,
    release: super::resources::rmmReleaseCallback_t,
    user_data: CallbackArgument,
    /// Whether the release runs when this goes: only once the adaptor was handed out.
    armed: Arc<AtomicBool>,
    text: Vec<u8>,
}

impl LineSink for CallbackSink {
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        self.text.clear();
        self.text.extend_from_slice(line.as_bytes());
        self.text.push(0);
        match (self.line)(self.text.as_ptr() as *const c_char, line.len(), self.user_data.get()) {
            0 => Ok(()),
            code => Err(std::io::Error::other(format!("the line callback returned {code}"))),
        }
    }
}

impl Drop for CallbackSink {
    fn drop(&mut self) {
        if let (true, Some(release)) = (self.armed.load(Ordering::Acquire), self.release) {
            release(self.user_data.get());
        }
    }
}

/// Creates a logging adaptor over `upstream` that hands its log, line by line, to
/// `line(text, length, user_data)` instead of writing a file: the CSV header
/// (`Thread,Time,Action,Pointer,Size,Stream`) first, on the calling thread before this returns,
/// then one line per allocation and free, in RAPIDS RMM's format, as `rmmLoggingAdaptorCreate`
/// writes them. Lines are buffered as there: later lines are delivered on rmm-rs's writer
/// thread, in order, one call at a time (never two at once), when buffers fill,
/// by `rmmLoggingAdaptorFlush` (whose return means every line logged before it was delivered)
/// and when the adaptor goes. The callbacks must not unwind or longjmp out, nor allocate
/// through this adaptor. `release(user_data)`, when not NULL, is called once after the last
/// line, when the adaptor itself goes (after its last handle and every resource over it), so
/// `user_data` may be freed there; it is not called when creation fails, and at process exit
/// it may not run. `line` NULL: RMM_ERROR_INVALID_ARGUMENT; the header refused (`line`
/// returned non-zero): RMM_ERROR_IO.
#[no_mangle]
pub extern "C" fn rmmLoggingAdaptorCreateWithSink(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    line: rmmLogLineCallback_t,
    release: super::resources::rmmReleaseCallback_t,
    user_data: *mut c_void,
) -> rmmError_t {
    boundary("rmmLoggingAdaptorCreateWithSink", || {
        non_null(resource, "resource")?;
        let line = line.ok_or_else(|| Error::invalid("line is NULL"))?;
        let upstream = handles::get(upstream)?;
        let armed = Arc::new(AtomicBool::new(false));
        let sink = CallbackSink { line, release, user_data: CallbackArgument(user_data), armed: armed.clone(), text: Vec::new() };
        let adaptor = LoggingAdaptor::with_sink(upstream, Box::new(sink))?;
        armed.store(true, Ordering::Release);
        let kept = adaptor.clone();
        match handles::create(adaptor) {
            Ok(handle) => write_out(resource, "resource", handle),
            Err(error) => {
                // Creation failed: the caller keeps `user_data`.
                armed.store(false, Ordering::Release);
                drop(kept);
                Err(error)
            }
        }
    })
}

/// Creates a limiting adaptor over `upstream`: an allocation that would take the bytes
/// allocated through it (each rounded up to 256) past `limit` is RMM_ERROR_OUT_OF_MEMORY,
/// with the limit in the message. A `limit` of 0 is RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLimitingAdaptorCreate(resource: *mut rmmResource_t, upstream: rmmResource_t, limit: usize) -> rmmError_t {
    create_over("rmmLimitingAdaptorCreate", resource, upstream, |upstream| {
        kinds::build("limiting", [("limit", Value::Size(limit))], &Place::over(upstream))
    })
}

/// Writes the bytes a limiting adaptor counts as allocated to `*bytes`.
/// A resource that is not a limiting adaptor: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmLimitingAdaptorGetAllocatedBytes(resource: rmmResource_t, bytes: *mut usize) -> rmmError_t {
    boundary("rmmLimitingAdaptorGetAllocatedBytes", || {
        non_null(bytes, "bytes")?;
        let allocated = adaptor(resource, "limiting adaptor", |limiting: &LimitingAdaptor| Ok(limiting.allocated_bytes()))?;
        write_out(bytes, "bytes", allocated)
    })
}

/// One outstanding allocation of a tracking adaptor.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct rmmAllocationRecord_t {
    /// The allocation's address.
    pub ptr: *mut c_void,
    /// The bytes it was asked for.
    pub size: usize,
    /// The stream it was allocated on.
    pub stream: cudaStream_t,
    /// The OS id of the allocating thread.
    pub thread: u64,
    /// The `RMM_ALLOC` call site (line 0 and file "" when unknown); a long file name keeps its
    /// end.
    pub line: u32,
    /// The call site's file name, NUL-terminated.
    pub file: [c_char; 256],
}

/// Creates a tracking adaptor over `upstream`: it records every outstanding allocation with
/// size, stream, thread, the `RMM_ALLOC` call site and, when `capture_stacks` is true, a
/// backtrace (slow: for debugging). Leaks are reported to the log (stderr) at `rmmFinalize`, at
/// process exit and when the adaptor is destroyed.
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
/// RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL).
#[no_mangle]
pub extern "C" fn rmmTrackingAdaptorCreate(resource: *mut rmmResource_t, upstream: rmmResource_t, capture_stacks: bool) -> rmmError_t {
    create_over("rmmTrackingAdaptorCreate", resource, upstream, |upstream| {
        kinds::build("tracking", [("stacks", Value::Flag(capture_stacks))], &Place::over(upstream))
    })
}

/// Lists the outstanding allocations of a tracking adaptor, by address: writes how many there
/// are to `*count` and the first `capacity` of them to `records` (which may be NULL when
/// `capacity` is 0).
/// A resource that is not a tracking adaptor, or `records` NULL with `capacity` above 0:
/// RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmTrackingAdaptorGetOutstanding(
    resource: rmmResource_t,
    records: *mut rmmAllocationRecord_t,
    capacity: usize,
    count: *mut usize,
) -> rmmError_t {
    boundary("rmmTrackingAdaptorGetOutstanding", || {
        non_null(count, "count")?;
        if records.is_null() && capacity > 0 {
            return Err(Error::invalid("records is NULL but capacity is not 0"));
        }
        let outstanding = adaptor(resource, "tracking adaptor", |tracking: &TrackingAdaptor| Ok(tracking.outstanding()))?;
        for (at, allocation) in outstanding.iter().take(capacity).enumerate() {
            let mut file = [0 as c_char; 256];
            let name = allocation.file.unwrap_or("").as_bytes();
            let kept = &name[name.len().saturating_sub(file.len() - 1)..];
            for (slot, byte) in file.iter_mut().zip(kept) {
                *slot = *byte as c_char;
            }
            let record = rmmAllocationRecord_t {
                ptr: allocation.ptr as *mut c_void,
                size: allocation.size,
                stream: allocation.stream as cudaStream_t,
                thread: allocation.thread,
                line: allocation.line,
                file,
            };
            // SAFETY: `records` is non-NULL (capacity > 0) and the caller promises `capacity`
            // writable records; `at < capacity`.
            unsafe { records.add(at).write(record) };
        }
        write_out(count, "count", outstanding.len())
    })
}

/// The leak report of a tracking adaptor, as text (empty when nothing is outstanding), copied
/// with a NUL into `buffer` of `size` bytes; its length goes to `*length` unless NULL. A NULL
/// `buffer` only asks for the length; a buffer too small is RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmTrackingAdaptorGetReport(resource: rmmResource_t, buffer: *mut c_char, size: usize, length: *mut usize) -> rmmError_t {
    boundary("rmmTrackingAdaptorGetReport", || {
        let report = adaptor(resource, "tracking adaptor", |tracking: &TrackingAdaptor| Ok(tracking.report("now")))?;
        copy_text(&report, buffer, size, length)
    })
}

/// The stack captured when the outstanding allocation at `ptr` was made through a tracking
/// adaptor created with `capture_stacks` (one frame a line), copied with a NUL into `buffer`
/// of `size` bytes; its length goes to `*length` unless NULL ("" when the adaptor captures no
/// stacks). A NULL `buffer` only asks for the length; a buffer too small, a resource that is
/// not a tracking adaptor or a `ptr` that is not outstanding there: RMM_ERROR_INVALID_ARGUMENT.
#[no_mangle]
pub extern "C" fn rmmTrackingAdaptorGetStack(
    resource: rmmResource_t,
    ptr: *mut c_void,
    buffer: *mut c_char,
    size: usize,
    length: *mut usize,
) -> rmmError_t {
    boundary("rmmTrackingAdaptorGetStack", || {
        let stack = adaptor(resource, "tracking adaptor", |tracking: &TrackingAdaptor| {
            tracking
                .stack(ptr as usize)
                .ok_or_else(|| Error::invalid(format!("{ptr:p} is not an outstanding allocation of this tracking adaptor")))
        })?;
        copy_text(&stack.unwrap_or_default(), buffer, size, length)
    })
}

/// Called when an allocation fails for lack of memory, with the bytes asked for and the `arg`
/// given at creation; returning true retries the allocation.
#[allow(non_camel_case_types)]
pub type rmmFailureCallback_t = Option<extern "C" fn(bytes: usize, arg: *mut c_void) -> bool>;

/// Creates a failure-callback adaptor over `upstream`: when an allocation fails with
/// RMM_ERROR_OUT_OF_MEMORY, it calls `callback(bytes, arg)` and tries again for as long as the
/// callback returns true (to spill or drop caches first). `callback` may not be NULL; it runs
/// on the allocating thread and must not allocate through this adaptor.
#[no_mangle]
pub extern "C" fn rmmFailureCallbackAdaptorCreate(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    callback: rmmFailureCallback_t,
    arg: *mut c_void,
) -> rmmError_t {
    create_over("rmmFailureCallbackAdaptorCreate", resource, upstream, |upstream| {
        let callback = callback.ok_or_else(|| Error::invalid("callback is NULL"))?;
        let arg = CallbackArgument(arg);
        Ok(FailureCallbackAdaptor::new(upstream, Box::new(move |bytes| callback(bytes, arg.get()))))
    })
}

/// Creates an aligned adaptor over `upstream`: allocations of at least `threshold` bytes are
/// aligned to `alignment` (a power of two; below 256 it is 256); smaller ones pass through. Over a
/// pool or an expandable resource the pool places each block at an aligned address itself
/// (it holds the block at its own size); over any other resource the adaptor allocates
/// `alignment - 256` bytes more and hands out the aligned address inside, as RMM does. A free
/// with another size than the allocation's is refused (`RMM_ERROR_INVALID_ARGUMENT`).
#[no_mangle]
pub extern "C" fn rmmAlignedAdaptorCreate(
    resource: *mut rmmResource_t,
    upstream: rmmResource_t,
    alignment: usize,
    threshold: usize,
) -> rmmError_t {
    create_over("rmmAlignedAdaptorCreate", resource, upstream, |upstream| {
        let values = [("alignment", Value::Size(alignment)), ("threshold", Value::Size(threshold))];
        kinds::build("aligned", values, &Place::over(upstream))
    })
}

/// Creates a prefetch adaptor over `upstream`: each allocation of managed memory is migrated
/// to the device in the order of its stream before it is handed out (other memory as is).
/// Errors: only the general ones (RMM_ERROR_INVALID_HANDLE for `upstream`,
/// RMM_ERROR_INVALID_ARGUMENT when `resource` is NULL).
#[no_mangle]
pub extern "C" fn rmmPrefetchAdaptorCreate(resource: *mut rmmResource_t, upstream: rmmResource_t) -> rmmError_t {
    create_over("rmmPrefetchAdaptorCreate", resource, upstream, |upstream| kinds::build("prefetch", [], &Place::over(upstream)))
}
