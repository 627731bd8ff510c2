//! Shared by the suballocator tests: simulated devices, a seeded RNG, and a workload that
//! checks every allocation against a shadow model and a byte pattern.

#![allow(dead_code)]

use rmm::platform::{backend, simulator, Stream};
use rmm::resources::MemoryResource;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

pub fn setup() -> MutexGuard<'static, ()> {
    setup_with("2:512MiB")
}

/// Simulated devices as `spec` says (the first call in a test program decides), race
/// checking in counting mode, device 0 current; tests that touch process-wide state take
/// turns through the returned guard.
pub fn setup_with(spec: &str) -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    std::env::set_var("RMM_SIM_DEVICES", spec);
    configure_legacy_api();
    std::env::set_var("RMM_SIM_ON_RACE", "count");
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    backend().expect("simulated devices").set_device(0).unwrap();
    guard
}

/// These programs use the legacy calls (`rmmAlloc`, `rmmGetInfo`) without `rmmInitialize`,
/// which legacy RMM refuses unless the program configured rmm: `RMM_ALLOC_CONF` does, with
/// the stack an unconfigured device gets anyway (cuda, no adaptors).
pub fn configure_legacy_api() {
    std::env::set_var("RMM_ALLOC_CONF", "resource:cuda,stats:0");
}

/// The driver calls the simulated devices have counted so far.
pub fn driver_calls() -> rmm::platform::sim::DriverCalls {
    simulator().expect("simulated").driver_calls()
}

/// The driver calls made since `before` (a `driver_calls()` reading).
pub fn driver_calls_since(before: rmm::platform::sim::DriverCalls) -> rmm::platform::sim::DriverCalls {
    let after = driver_calls();
    rmm::platform::sim::DriverCalls {
        stream_identity: after.stream_identity - before.stream_identity,
        event_record: after.event_record - before.event_record,
        stream_wait_event: after.stream_wait_event - before.stream_wait_event,
        host_wait: after.host_wait - before.host_wait,
    }
}

/// Forks: the child runs `child` (rmm's calls only) and leaves at once with _exit, status 0
/// if it answered true (1 if false or it panicked); the parent waits for it, 30 s at the most
/// (then kills it), and checks that it succeeded.
pub fn in_forked_child(child: impl FnOnce() -> bool) {
    // SAFETY: the child only runs `child` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(false);
        // SAFETY: leaves the child at once, running no destructor or exit hook of the parent's.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut status = 0;
    // SAFETY: waits for the child just forked, without blocking.
    while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
        if std::time::Instant::now() > deadline {
            // SAFETY: the child is ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the forked child hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child status {status:#x}");
}

pub fn races() -> Vec<String> {
    simulator().expect("simulated").race_reports()
}

/// xorshift64*: deterministic, dependency-free randomness.
pub struct Rng(pub u64);
impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Below `n` (0 for 0 and 1).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    /// Log-uniform in [1, 2^max_log2].
    pub fn log_uniform(&mut self, max_log2: u32) -> usize {
        let bits = self.below(max_log2 as u64 + 1) as u32;
        1 + (self.next() as usize & ((1usize << bits) - 1))
    }
}

/// The message of the calling thread's last failed C API call.
pub fn last_message() -> String {
    // SAFETY: rmmGetLastErrorMessage returns a NUL-terminated string the library owns.
    unsafe { std::ffi::CStr::from_ptr(rmm::boundary::rmmGetLastErrorMessage()) }.to_string_lossy().into_owned()
}

/// The handle a C API create call makes, which must succeed.
pub fn over(
    create: impl FnOnce(*mut rmm::boundary::handles::rmmResource_t) -> rmm::error::rmmError_t,
) -> rmm::boundary::handles::rmmResource_t {
    let mut handle = std::ptr::null_mut();
    assert_eq!(create(&mut handle), rmm::error::rmmError_t::RMM_SUCCESS, "{}", last_message());
    handle
}

/// `rmmResourceAllocate`: the address, or the code it answered.
pub fn allocate_on(
    resource: rmm::boundary::handles::rmmResource_t,
    bytes: usize,
    stream: rmm::boundary::types::cudaStream_t,
) -> Result<usize, rmm::error::rmmError_t> {
    let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
    match rmm::boundary::rmmResourceAllocate(resource, &mut ptr, bytes, stream) {
        rmm::error::rmmError_t::RMM_SUCCESS => Ok(ptr as usize),
        error => Err(error),
    }
}

/// `rmmResourceDeallocate`, which must succeed.
pub fn free_on(resource: rmm::boundary::handles::rmmResource_t, ptr: usize, bytes: usize, stream: rmm::boundary::types::cudaStream_t) {
    let status = rmm::boundary::rmmResourceDeallocate(resource, ptr as *mut std::ffi::c_void, bytes, stream);
    assert_eq!(status, rmm::error::rmmError_t::RMM_SUCCESS, "{}", last_message());
}

/// Whether `resource` (or an expandable resource under it) sleeps (`rmmResourceIsAsleep`).
pub fn asleep(resource: rmm::boundary::handles::rmmResource_t) -> bool {
    let mut answer = -1;
    assert_eq!(rmm::boundary::rmmResourceIsAsleep(resource, &mut answer), rmm::error::rmmError_t::RMM_SUCCESS, "{}", last_message());
    answer == 1
}

/// `rmmInitialize`'s options for `devices` (the rest of the list zero).
pub fn legacy_options(mode: u32, initial: usize, maximum: usize, devices: &[i32]) -> rmm::boundary::types::rmmOptions_t {
    let mut ids = [0; rmm::boundary::types::RMM_MAX_DEVICES];
    ids[..devices.len()].copy_from_slice(devices);
    rmm::boundary::types::rmmOptions_t {
        allocation_mode: mode,
        initial_pool_size: initial,
        enable_logging: false,
        devices: rmm::boundary::types::rmmDeviceList_t { count: devices.len() as i32, ids },
        maximum_pool_size: maximum,
    }
}

/// Bytes the current device has in use (simulated devices count every platform allocation).
pub fn device_used() -> usize {
    let platform = backend().expect("simulated devices");
    let (free, total) = platform.mem_get_info(platform.current_device().unwrap()).unwrap();
    total - free
}

/// Fills `[ptr, ptr+len)` of simulated device memory (host memory) with a tag.
pub fn stamp(ptr: usize, len: usize, tag: u8) {
    // SAFETY: simulated device memory is host memory of at least `len` bytes at `ptr`.
    unsafe { std::ptr::write_bytes(ptr as *mut u8, tag, len) };
}

pub fn stamped(ptr: usize, len: usize, tag: u8) -> bool {
    // SAFETY: as in `stamp`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr as *const u8, len) };
    bytes.iter().all(|&b| b == tag)
}

pub struct Live {
    pub size: usize,
    pub stream: Stream,
    pub tag: u8,
}

/// Random allocations and frees on several streams against a shadow model: no overlap,
/// 256-byte alignment, contents intact, invariants after every operation.
pub fn shadow_workload(
    resource: &Arc<dyn MemoryResource>,
    check: &dyn Fn() -> Result<(), String>,
    streams: &[Stream],
    max_log2: u32,
    live_limit: usize,
    seed: u64,
    steps: usize,
) -> usize {
    let mut rng = Rng(seed);
    let mut live: BTreeMap<usize, Live> = BTreeMap::new();
    let mut live_bytes = 0;
    let mut refused = 0;
    for step in 0..steps {
        let allocate = live.is_empty() || (live_bytes < live_limit && rng.below(100) < 55);
        if allocate {
            let size = rng.log_uniform(max_log2);
            let stream = streams[rng.below(streams.len() as u64) as usize];
            match resource.allocate(size, stream) {
                Ok(ptr) => {
                    assert_eq!(ptr % 256, 0, "step {step}: alignment");
                    if let Some((&prev, l)) = live.range(..ptr + size).next_back() {
                        assert!(prev + l.size <= ptr, "step {step}: {ptr:#x}+{size} overlaps {prev:#x}+{}", l.size);
                    }
                    let tag = (step % 251) as u8 + 1;
                    stamp(ptr, size, tag);
                    live.insert(ptr, Live { size, stream, tag });
                    live_bytes += size;
                }
                Err(e) if e.is_out_of_memory() => refused += 1,
                Err(e) => panic!("step {step}: {e}"),
            }
        } else {
            let nth = rng.below(live.len() as u64) as usize;
            let ptr = *live.keys().nth(nth).unwrap();
            let l = live.remove(&ptr).unwrap();
            assert!(stamped(ptr, l.size, l.tag), "step {step}: contents of {ptr:#x} were overwritten");
            let stream = if rng.below(10) < 7 { l.stream } else { streams[rng.below(streams.len() as u64) as usize] };
            resource.deallocate(ptr, l.size, stream).unwrap_or_else(|e| panic!("step {step}: {e}"));
            live_bytes -= l.size;
        }
        check().unwrap_or_else(|e| panic!("step {step}: {e}"));
    }
    for (ptr, l) in live {
        assert!(stamped(ptr, l.size, l.tag));
        resource.deallocate(ptr, l.size, l.stream).unwrap();
    }
    check().unwrap();
    refused
}
