//! Tracking (RMM's `tracking_resource_adaptor`): every outstanding allocation with its size,
//! stream, thread, the file and line of the `RMM_ALLOC` that made it and, when asked for, a
//! backtrace. Leaks are reported to the log at `rmmFinalize`, at process exit and when the
//! adaptor is destroyed, and on request.
//!
//! The records are `BlockRecords`, sharded by address window as the ownership records are. A
//! report takes every shard's lock, so it is exact at the moment it is taken.

use super::block_records::BlockRecords;
use super::Upstream;
use crate::error::Result;
use crate::platform::Stream;
use crate::resources::{MemoryResource, ALIGNMENT};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt::Write;
use std::num::NonZeroU32;
use std::sync::{Arc, Weak};

/// What is kept of a live allocation: its address is the key. 48 bytes, also as the map's
/// `Option` (the thread id's zero is its niche): every allocation writes one.
struct Record {
    size: usize,
    stream: usize,
    file: Option<&'static str>,
    backtrace: Option<Box<Stack>>,
    /// The OS thread id (never 0; Linux's are below 2^22).
    thread: NonZeroU32,
    line: u32,
}

const _: () = assert!(std::mem::size_of::<Option<Record>>() == 48);

/// A captured stack as text, behind a thin pointer (a record without one holds 8 bytes).
struct Stack(String);

impl Record {
    fn outstanding(&self, ptr: usize) -> OutstandingAllocation {
        OutstandingAllocation {
            ptr,
            size: self.size,
            stream: self.stream,
            thread: u64::from(self.thread.get()),
            file: self.file,
            line: self.line,
            backtrace: self.backtrace.as_ref().map(|stack| stack.0.clone()),
        }
    }
}

/// One live allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutstandingAllocation {
    /// The address handed out.
    pub ptr: usize,
    /// Bytes asked for.
    pub size: usize,
    /// The raw stream handle the allocation was made on.
    pub stream: usize,
    /// The operating-system id of the thread that allocated (as RMM's logs show it).
    pub thread: u64,
    /// The call site `RMM_ALLOC` passed, when there was one.
    pub file: Option<&'static str>,
    /// The call site's line (0 when there was no call site).
    pub line: u32,
    /// The allocating thread's stack as text, when the adaptor captures stacks.
    pub backtrace: Option<String>,
}

/// Records every allocation that passes through it until it is freed, to report leaks (see
/// the module comment); frees of pointers it did not record pass on untouched.
pub struct TrackingAdaptor {
    upstream: Upstream,
    capture_stacks: bool,
    live: BlockRecords<Record>,
    /// The process whose allocations these are: a child it forks inherits the records but
    /// did not make those allocations, so it reports none of them as its leaks.
    owning_process: crate::platform::Process,
}

static TRACKERS: Mutex<Vec<Weak<TrackingAdaptor>>> = Mutex::new(Vec::new());
static FILES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);

/// One copy of each file name for the life of the process (a program has a bounded number of
/// source files), so records refer to it without counting references across threads.
fn intern(file: &str) -> &'static str {
    let mut files = FILES.lock();
    let files = files.get_or_insert_with(HashSet::new);
    if let Some(known) = files.get(file) {
        return known;
    }
    let name: &'static str = Box::leak(file.into());
    files.insert(name);
    name
}

/// The file and line of the `RMM_ALLOC` in progress, the file's name shared. A thread mostly
/// allocates from the same few files, so it keeps the last name it saw: comparing the bytes
/// costs less than the global table's lock.
fn call_site() -> (Option<&'static str>, u32) {
    thread_local! {
        static LAST: std::cell::Cell<Option<&'static str>> = const { std::cell::Cell::new(None) };
    }
    let site = crate::sync::call_site::with_current(|file, line| {
        let cached = LAST.try_with(|last| match last.get() {
            Some(name) if name.as_bytes() == file.to_bytes() => name,
            _ => {
                let name = intern(&file.to_string_lossy());
                last.set(Some(name));
                name
            }
        });
        // A call from a thread-local destructor: no cache left on this thread.
        let file = cached.unwrap_or_else(|_| intern(&file.to_string_lossy()));
        (Some(file), line)
    });
    site.unwrap_or((None, 0))
}

/// The calling thread's stack, as text (out of line: the allocation path stays small).
#[cold]
#[inline(never)]
fn backtrace() -> Box<Stack> {
    Box::new(Stack(std::backtrace::Backtrace::force_capture().to_string()))
}

impl TrackingAdaptor {
    /// A tracker over `upstream` whose leaks are reported at `rmmFinalize` and at exit. With
    /// `capture_stacks`, each allocation also walks and formats the thread's stack, which costs
    /// far more than the allocation.
    pub fn new(upstream: Arc<dyn MemoryResource>, capture_stacks: bool) -> Arc<Self> {
        let adaptor = Self::new_unreported(upstream, capture_stacks);
        let mut trackers = TRACKERS.lock();
        trackers.retain(|weak| weak.strong_count() > 0);
        trackers.push(Arc::downgrade(&adaptor));
        adaptor
    }

    /// An adaptor whose leaks its owner reports (at `rmmFinalize` and exit it stays quiet).
    pub fn new_unreported(upstream: Arc<dyn MemoryResource>, capture_stacks: bool) -> Arc<Self> {
        Arc::new(TrackingAdaptor {
            upstream: Upstream::new(upstream),
            capture_stacks,
            live: BlockRecords::new(),
            owning_process: crate::platform::Process::current(),
        })
    }

    /// Every outstanding allocation, by address: exact at the moment it is taken, since every
    /// shard is locked until all are read.
    pub fn outstanding(&self) -> Vec<OutstandingAllocation> {
        let shards = self.live.lock_all();
        let mut all: Vec<_> = shards.iter().flat_map(|records| records.iter().map(|(&ptr, record)| record.outstanding(ptr))).collect();
        drop(shards);
        all.sort_by_key(|a| a.ptr);
        all
    }

    /// Bytes asked for by the allocations still outstanding, summed under every shard's lock.
    pub fn outstanding_bytes(&self) -> usize {
        let shards = self.live.lock_all();
        shards.iter().map(|records| records.values().map(|record| record.size).sum::<usize>()).sum()
    }

    /// The stack captured with the outstanding allocation at `ptr` (None where stacks are not
    /// captured); None outside, when `ptr` is not outstanding.
    pub fn stack(&self, ptr: usize) -> Option<Option<String>> {
        self.live.lock(ptr).get(&ptr).map(|record| record.backtrace.as_ref().map(|stack| stack.0.clone()))
    }

    /// A human-readable list of the outstanding allocations ("" when there are none).
    pub fn report(&self, when: &str) -> String {
        let outstanding = self.outstanding();
        if outstanding.is_empty() {
            return String::new();
        }
        let bytes: usize = outstanding.iter().map(|a| a.size).sum();
        let mut text = format!(
            "rmm tracking adaptor (device {}): {} allocation(s), {bytes} bytes, outstanding {when}:\n",
            self.device(),
            outstanding.len()
        );
        for a in &outstanding {
            let site = match &a.file {
                Some(file) => format!(" at {file}:{}", a.line),
                None => String::new(),
            };
            let _ = writeln!(text, "  {:#x}: {} bytes, stream {:#x}, thread {}{site}", a.ptr, a.size, a.stream, a.thread);
            if let Some(backtrace) = &a.backtrace {
                for frame in backtrace.lines() {
                    let _ = writeln!(text, "      {frame}");
                }
            }
        }
        text
    }

    fn warn_leaks(&self, when: &str) {
        if self.owning_process.forked_since() {
            return;
        }
        let report = self.report(when);
        if !report.is_empty() {
            log::warn!("{}", report.trim_end());
        }
    }
}

/// Reports the leaks of every live tracking adaptor to the log.
pub fn report_all_leaks(when: &str) {
    let Some(trackers) = super::alive_at_exit(&TRACKERS) else { return };
    for tracker in trackers {
        tracker.warn_leaks(when);
    }
}

impl Drop for TrackingAdaptor {
    fn drop(&mut self) {
        self.warn_leaks("when the adaptor was destroyed");
    }
}

impl MemoryResource for TrackingAdaptor {
    fn allocate(&self, bytes: usize, stream: Stream) -> Result<usize> {
        self.allocate_aligned(bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn allocate_aligned(&self, bytes: usize, alignment: usize, stream: Stream) -> Result<usize> {
        let ptr = self.upstream.allocate_aligned(bytes, alignment, stream)?;
        let (file, line) = call_site();
        let backtrace = self.capture_stacks.then(backtrace);
        let thread = NonZeroU32::new(crate::platform::os_thread_id() as u32).unwrap_or(NonZeroU32::MAX);
        let record = Record { size: bytes, stream: stream.0, file, backtrace, thread, line };
        self.live.lock(ptr).insert(ptr, record);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: usize, bytes: usize, stream: Stream) -> Result<()> {
        self.deallocate_aligned(ptr, bytes, ALIGNMENT, stream)
    }

    #[inline]
    fn deallocate_aligned(&self, ptr: usize, bytes: usize, alignment: usize, stream: Stream) -> Result<()> {
        self.upstream.deallocate_aligned(ptr, bytes, alignment, stream)?;
        self.live.lock(ptr).remove(&ptr);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "tracking"
    }

    fn snapshot(&self) -> serde_json::Value {
        let outstanding: Vec<_> = self
            .outstanding()
            .iter()
            .map(|a| {
                serde_json::json!({
                    "address": crate::resources::snapshot::address(a.ptr), "size": a.size,
                    "stream": crate::resources::snapshot::address(a.stream), "thread": a.thread,
                    "file": a.file, "line": a.line,
                })
            })
            .collect();
        serde_json::json!({
            "resource": self.name(), "device": self.device(), "outstanding": outstanding,
            "upstream": self.upstream.snapshot(),
        })
    }

    crate::adaptor_forwarding_methods!(upstream);
}
