//! Pools that a memory checker attached through NVTX (compute-sanitizer) can see into, on
//! simulated devices: a fake injection tool (tests/data/fake_nvtx_tool.c, built here with
//! `cc`) stands in for the sanitizer. It is named in NVTX_INJECTION64_PATH before rmm-rs first
//! looks (so this is a test program of its own), records the heaps and regions rmm-rs
//! registers and counts every breach of the rules the sanitizer's guide states.
//!
//! After every operation of each workload (pool, arena, fixed-size, binning): the
//! tool saw no malformed call (nor overlapping heaps or regions); every live block is a
//! registered region of exactly the bytes asked for, inside a registered heap, and every region
//! is a live block: freed blocks are unregistered, and a chunk a suballocator takes from a pool
//! under it is no region while it holds it (its blocks are regions of the pool's heap). After
//! release, no heap is left: chunks that go upstream unregister theirs. Memory that is no whole
//! allocation of the driver's (the expandable resource's, the driver's pools') is never a heap.
//! Without the variable, nothing is registered at all (a child process).

mod common;

use common::{setup, Rng};
use rmm::platform::{backend, Stream};
use rmm::resources::adaptors::{AlignedAdaptor, StatisticsAdaptor};
use rmm::resources::{
    expandable_resource, ArenaResource, AsyncResource, BinningResource, DirectResource, ExpandableOptions, FixedSizeResource,
    MemoryResource, PoolResource,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, c_uint, c_ulong, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

const MIB: usize = 1 << 20;
/// Names the fake tool's library to the child process of `nothing_is_registered_without_the_variable`.
const CHILD_VARIABLE: &str = "RMM_TEST_FAKE_NVTX_CHILD";

/// The fake tool's query functions (see tests/data/fake_nvtx_tool.c).
struct FakeTool {
    errors: unsafe extern "C" fn(*mut c_char, usize) -> c_ulong,
    heaps: unsafe extern "C" fn(*mut usize, usize) -> usize,
    regions: unsafe extern "C" fn(*mut usize, usize) -> usize,
    heap_name: unsafe extern "C" fn(usize, *mut c_char, usize) -> c_int,
    count: unsafe extern "C" fn(c_uint) -> c_ulong,
    domain_name: unsafe extern "C" fn(*mut c_char, usize),
}

/// What the tool holds registered now.
struct Seen {
    /// (base, size) of each live heap.
    heaps: Vec<(usize, usize)>,
    /// (address, size, base of its heap) of each live region.
    regions: Vec<(usize, usize, usize)>,
}

/// Builds the fake tool (once per process) into the cargo target's scratch folder.
fn build_tool() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fake_nvtx_tool.c");
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("fake_nvtx_tool-{}.so", std::process::id()));
            let status = std::process::Command::new("cc")
                .args(["-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
                .arg(&out)
                .arg(&source)
                .arg("-lpthread")
                .status()
                .expect("cc runs (a C compiler builds the fake NVTX tool)");
            assert!(status.success(), "the fake NVTX tool does not build");
            out
        })
        .clone()
}

/// The fake tool's queries, from the library at `path` (the same instance rmm-rs loaded, if
/// it loaded it: dlopen answers the loaded library again).
fn open_tool(path: &Path) -> FakeTool {
    let path = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the library stays loaded for the process.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
    assert!(!handle.is_null(), "the fake NVTX tool loads");
    let symbol = |name: &CStr| {
        // SAFETY: `handle` is a loaded library; `name` is NUL-terminated.
        let address = unsafe { libc::dlsym(handle, name.as_ptr()) } as usize;
        assert_ne!(address, 0, "the fake NVTX tool exports {name:?}");
        address
    };
    // SAFETY (each transmute): the fake tool exports these functions with these signatures.
    unsafe {
        FakeTool {
            errors: std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_char, usize) -> c_ulong>(symbol(c"fake_nvtx_errors")),
            heaps: std::mem::transmute::<usize, unsafe extern "C" fn(*mut usize, usize) -> usize>(symbol(c"fake_nvtx_heaps")),
            regions: std::mem::transmute::<usize, unsafe extern "C" fn(*mut usize, usize) -> usize>(symbol(c"fake_nvtx_regions")),
            heap_name: std::mem::transmute::<usize, unsafe extern "C" fn(usize, *mut c_char, usize) -> c_int>(symbol(
                c"fake_nvtx_heap_name",
            )),
            count: std::mem::transmute::<usize, unsafe extern "C" fn(c_uint) -> c_ulong>(symbol(c"fake_nvtx_count")),
            domain_name: std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_char, usize)>(symbol(c"fake_nvtx_domain_name")),
        }
    }
}

/// The fake tool, named in NVTX_INJECTION64_PATH before rmm-rs first looks for a tool: every
/// test calls this before it makes a resource.
fn tool() -> &'static FakeTool {
    static TOOL: OnceLock<FakeTool> = OnceLock::new();
    TOOL.get_or_init(|| {
        let path = build_tool();
        // The slots as compute-sanitizer fills them, unless a test asks for NVTX's numbering.
        if std::env::var_os(SLOTS_FROM_ZERO).is_none() {
            std::env::set_var(SLOTS_FROM_ZERO, "1");
        }
        std::env::set_var(rmm::platform::nvtx::INJECTION_VARIABLE, &path);
        open_tool(&path)
    })
}

fn text(fill: impl FnOnce(*mut c_char, usize)) -> String {
    let mut buffer = [0 as c_char; 256];
    fill(buffer.as_mut_ptr(), buffer.len());
    // SAFETY: the fake tool writes a NUL-terminated string into the buffer (snprintf).
    unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned()
}

impl FakeTool {
    fn seen(&self) -> Seen {
        let mut heaps = vec![0usize; 2 * 4096];
        // SAFETY: room for 4096 pairs.
        let n = unsafe { (self.heaps)(heaps.as_mut_ptr(), 4096) };
        assert!(n <= 4096);
        let mut regions = vec![0usize; 3 * 65536];
        // SAFETY: room for 65536 triples.
        let m = unsafe { (self.regions)(regions.as_mut_ptr(), 65536) };
        assert!(m <= 65536);
        Seen {
            heaps: heaps.chunks(2).take(n).map(|h| (h[0], h[1])).collect(),
            regions: regions.chunks(3).take(m).map(|r| (r[0], r[1], r[2])).collect(),
        }
    }

    fn errors(&self) -> (c_ulong, String) {
        let mut n = 0;
        // SAFETY: the buffer `text` passes is writable for its length.
        let message = text(|out, len| n = unsafe { (self.errors)(out, len) });
        (n, message)
    }

    fn count(&self, id: u32) -> c_ulong {
        // SAFETY: any id is answered.
        unsafe { (self.count)(id) }
    }

    fn heap_name(&self, base: usize) -> Option<String> {
        let mut found = 0;
        // SAFETY: the buffer `text` passes is writable for its length.
        let name = text(|out, len| found = unsafe { (self.heap_name)(base, out, len) });
        (found != 0).then_some(name)
    }

    fn domain_name(&self) -> String {
        // SAFETY: the buffer `text` passes is writable for its length.
        text(|out, len| unsafe { (self.domain_name)(out, len) })
    }

    /// The registrations match `live` (address -> bytes asked for) exactly; see the module
    /// comment.
    fn check(&self, live: &BTreeMap<usize, (usize, Stream)>, context: &str) {
        let (errors, first) = self.errors();
        assert_eq!(errors, 0, "{context}: the tool saw {errors} breaches, the first: {first}");
        assert_eq!(self.count(8), 0, "{context}: regions left in a heap when it was unregistered");
        let seen = self.seen();
        let regions: HashMap<usize, usize> = seen.regions.iter().map(|&(addr, size, _)| (addr, size)).collect();
        for &(addr, size, heap_base) in &seen.regions {
            let heap = seen.heaps.iter().find(|&&(base, _)| base == heap_base);
            let &(base, heap_size) = heap.unwrap_or_else(|| panic!("{context}: region {addr:#x} has no live heap"));
            assert!(addr >= base && addr + size <= base + heap_size, "{context}: region {addr:#x}+{size} outside its heap");
            let bytes = live.get(&addr).unwrap_or_else(|| panic!("{context}: region {addr:#x}+{size} is no live block")).0;
            assert_eq!(size, bytes, "{context}: the region of {addr:#x} is not the bytes asked for");
        }
        for (&ptr, &(bytes, _)) in live {
            assert_eq!(regions.get(&ptr), Some(&bytes), "{context}: live block {ptr:#x} of {bytes} bytes is not a region of its size");
        }
    }

    /// Nothing registered: every block freed and every chunk back upstream.
    fn check_empty(&self, context: &str) {
        self.check(&BTreeMap::new(), context);
        let seen = self.seen();
        assert!(seen.regions.is_empty(), "{context}: regions left: {:x?}", seen.regions);
        assert!(seen.heaps.is_empty(), "{context}: heaps left: {:x?}", seen.heaps);
    }
}

fn streams() -> Vec<Stream> {
    vec![Stream::DEFAULT, Stream::PER_THREAD, backend().unwrap().stream_create(0).unwrap()]
}

/// Random allocations (1 byte to 2^`max_log2`) and frees on several streams, each checked
/// against the tool; the blocks still live at the end are returned.
fn churn(
    resource: &dyn MemoryResource,
    live: &mut BTreeMap<usize, (usize, Stream)>,
    streams: &[Stream],
    (max_log2, steps, seed): (u32, usize, u64),
    context: &str,
) {
    let tool = tool();
    let mut rng = Rng::new(seed);
    for step in 0..steps {
        if live.is_empty() || rng.chance(55) {
            let bytes = rng.log_uniform(max_log2);
            let stream = *rng.pick(streams);
            match resource.allocate(bytes, stream) {
                Ok(ptr) => {
                    live.insert(ptr, (bytes, stream));
                }
                Err(e) if e.is_out_of_memory() => {}
                Err(e) => panic!("{context}, step {step}: {e}"),
            }
        } else {
            let nth = rng.below(live.len() as u64) as usize;
            let ptr = *live.keys().nth(nth).unwrap();
            let (bytes, stream) = live.remove(&ptr).unwrap();
            let stream = if rng.chance(70) { stream } else { *rng.pick(streams) };
            resource.deallocate(ptr, bytes, stream).unwrap_or_else(|e| panic!("{context}, step {step}: {e}"));
        }
        tool.check(live, &format!("{context}, step {step}"));
    }
}

fn free_all(resource: &dyn MemoryResource, live: &mut BTreeMap<usize, (usize, Stream)>, context: &str) {
    for (ptr, (bytes, stream)) in std::mem::take(live) {
        resource.deallocate(ptr, bytes, stream).unwrap();
    }
    tool().check(live, context);
}

/// Frees every live block through the first of `stack`, releases each resource (the first
/// first), then drops them: nothing stays registered.
fn wind_down(stack: Vec<Arc<dyn MemoryResource>>, live: &mut BTreeMap<usize, (usize, Stream)>, context: &str) {
    free_all(&*stack[0], live, &format!("{context}, all freed"));
    for resource in &stack {
        resource.release().unwrap();
    }
    tool().check_empty(&format!("{context}, released"));
    drop(stack);
    tool().check_empty(&format!("{context}, dropped"));
}

fn cuda() -> Arc<dyn MemoryResource> {
    Arc::new(DirectResource::cuda(0).unwrap())
}

#[test]
fn pool_blocks_are_regions_of_the_bytes_asked_for_and_chunks_heaps_until_released() {
    let tool = tool();
    let _guard = setup();
    let pool = Arc::new(PoolResource::new(cuda(), 0, 96 * MIB).unwrap());
    let mut live = BTreeMap::new();

    // A block of 1000 bytes is a region of 1000 bytes (not the 1024 the block takes), and an
    // aligned block cut out of a larger one is a region where it starts.
    let aligned = pool.allocate_aligned(3000, 1 << 16, Stream::DEFAULT).unwrap();
    assert_eq!(aligned % (1 << 16), 0);
    live.insert(aligned, (3000, Stream::DEFAULT));
    let odd = pool.allocate(1000, Stream::DEFAULT).unwrap();
    live.insert(odd, (1000, Stream::DEFAULT));
    tool.check(&live, "pool, first blocks");
    let heaps = tool.seen().heaps;
    assert!(!heaps.is_empty());
    assert_eq!(tool.heap_name(heaps[0].0).as_deref(), Some("rmm-rs pool (device 0)"));
    assert_eq!(tool.domain_name(), "rmm-rs", "the calls go to the domain rmm-rs made");
    assert_eq!(tool.count(9), 3, "the core and the Mem extension were both initialized");
    assert!(rmm::platform::nvtx::active());

    churn(&*pool, &mut live, &streams(), (20, 1500, 3), "pool");
    free_all(&*pool, &mut live, "pool, all freed");
    assert!(!tool.seen().heaps.is_empty(), "free chunks stay heaps while the pool keeps them");
    pool.release().unwrap();
    assert_eq!(pool.pool_size(), Some(0));
    tool.check_empty("pool, released");

    // Chunks a pool still holds when it goes are unregistered as they go upstream.
    let block = pool.allocate(5000, Stream::DEFAULT).unwrap();
    pool.deallocate(block, 5000, Stream::DEFAULT).unwrap();
    assert!(!tool.seen().heaps.is_empty());
    drop(pool);
    tool.check_empty("pool, dropped");
}

#[test]
fn arena_blocks_are_regions_of_its_global_arenas_chunks() {
    let tool = tool();
    let _guard = setup();
    let arena: Arc<dyn MemoryResource> = Arc::new(ArenaResource::new(cuda(), 64 * MIB).unwrap());
    let mut live = BTreeMap::new();
    churn(&*arena, &mut live, &streams(), (20, 1500, 5), "arena");
    // The per-thread arenas' superblocks are no heaps: their blocks are regions of the global
    // arena's chunks.
    let heaps = tool.seen().heaps;
    assert!(!heaps.is_empty() && heaps.iter().all(|&(base, _)| tool.heap_name(base).as_deref() == Some("rmm-rs pool (device 0)")));
    wind_down(vec![arena], &mut live, "arena");
}

#[test]
fn fixed_size_and_binning_blocks_are_regions_of_the_bytes_asked_for() {
    let tool = tool();
    let _guard = setup();
    let fixed: Arc<dyn MemoryResource> = Arc::new(FixedSizeResource::new(cuda(), 4000, 16).unwrap());
    let mut live = BTreeMap::new();
    churn(&*fixed, &mut live, &streams(), (12, 800, 7), "fixed_size");
    wind_down(vec![fixed], &mut live, "fixed_size");

    // Bins of 256 B to 16 KiB over a pool: their blocks, like the larger ones the pool serves,
    // are regions of the pool's chunks.
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(cuda(), 0, 0).unwrap());
    let binning: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(pool.clone(), 8, 14).unwrap());
    churn(&*binning, &mut live, &streams(), (18, 1500, 9), "binning");
    let heaps = tool.seen().heaps;
    assert!(!heaps.is_empty() && heaps.iter().all(|&(base, _)| tool.heap_name(base).as_deref() == Some("rmm-rs pool (device 0)")));
    wind_down(vec![binning, pool], &mut live, "binning");
}

/// Memory that is no whole allocation of the driver's (mapped pages, blocks of the driver's
/// stream-ordered pool, blocks an aligned adaptor may offset) is no heap to compute-sanitizer,
/// which counts the attempt as an error: the expandable resource, and cores over such memory,
/// register nothing. A pool over a statistics adaptor over the driver registers as over the
/// driver.
#[test]
fn memory_that_is_no_whole_driver_allocation_is_never_a_heap() {
    let tool = tool();
    let _guard = setup();
    let options = ExpandableOptions { maximum_size: 128 * MIB, release_threshold: 0, ..ExpandableOptions::default() };
    let expandable: Arc<dyn MemoryResource> = Arc::new(expandable_resource(0, &options).unwrap());
    let over_expandable: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(expandable.clone(), 8, 16).unwrap());
    let driver_pool: Arc<dyn MemoryResource> = Arc::new(AsyncResource::new(0, 0, usize::MAX, 0).unwrap());
    let over_driver_pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(driver_pool.clone(), 0, 0).unwrap());
    let aligned: Arc<dyn MemoryResource> = AlignedAdaptor::new(cuda(), 4096, 0).unwrap();
    let over_aligned: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(aligned.clone(), 0, 0).unwrap());
    for (name, stack) in [
        ("expandable", vec![expandable.clone()]),
        ("binning over expandable", vec![over_expandable, expandable]),
        ("pool over cuda_async", vec![over_driver_pool, driver_pool]),
        ("pool over aligned", vec![over_aligned, aligned]),
    ] {
        let mut live = BTreeMap::new();
        let mut rng = Rng::new(11);
        for step in 0..400 {
            if live.is_empty() || rng.chance(55) {
                let bytes = rng.log_uniform(22);
                if let Ok(ptr) = stack[0].allocate(bytes, Stream::DEFAULT) {
                    live.insert(ptr, (bytes, Stream::DEFAULT));
                }
            } else {
                let ptr = *live.keys().nth(rng.below(live.len() as u64) as usize).unwrap();
                let (bytes, stream) = live.remove(&ptr).unwrap();
                stack[0].deallocate(ptr, bytes, stream).unwrap();
            }
            let seen = tool.seen();
            assert!(seen.heaps.is_empty() && seen.regions.is_empty(), "{name}, step {step}: registered {:x?}", seen.heaps);
        }
        assert_eq!(tool.errors().0, 0, "{name}: {}", tool.errors().1);
        wind_down(stack, &mut live, name);
    }

    let counted: Arc<dyn MemoryResource> = StatisticsAdaptor::new(cuda());
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(counted.clone(), 0, 0).unwrap());
    let mut live = BTreeMap::new();
    churn(&*pool, &mut live, &streams(), (20, 300, 13), "pool over statistics");
    assert!(!tool.seen().heaps.is_empty(), "a statistics adaptor hands out the driver's allocations");
    wind_down(vec![pool, counted], &mut live, "pool over statistics");
}

/// Threads on their own streams and a shared one, over bins over a pool: the regions of the
/// bins' blocks stay exact while the pool's chunks come and go.
#[test]
fn threads_over_bins_over_a_pool_keep_registrations_exact() {
    let tool = tool();
    let _guard = setup();
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(cuda(), 0, 0).unwrap());
    let binning: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(pool.clone(), 8, 16).unwrap());
    let shared = backend().unwrap().stream_create(0).unwrap();
    let workers: Vec<_> = (0..4u64)
        .map(|t| {
            let binning = binning.clone();
            std::thread::spawn(move || {
                let own = backend().unwrap().stream_create(0).unwrap();
                let streams = [own, if t % 2 == 0 { shared } else { own }];
                let mut rng = Rng::new(100 + t);
                let mut live: Vec<(usize, usize, Stream)> = Vec::new();
                for _ in 0..600 {
                    if live.is_empty() || rng.chance(55) {
                        let bytes = rng.log_uniform(21);
                        let stream = *rng.pick(&streams);
                        if let Ok(ptr) = binning.allocate(bytes, stream) {
                            live.push((ptr, bytes, stream));
                        }
                    } else {
                        let (ptr, bytes, stream) = live.swap_remove(rng.below(live.len() as u64) as usize);
                        binning.deallocate(ptr, bytes, stream).unwrap();
                    }
                }
                live
            })
        })
        .collect();
    let mut live = BTreeMap::new();
    for worker in workers {
        live.extend(worker.join().unwrap().into_iter().map(|(ptr, bytes, stream)| (ptr, (bytes, stream))));
    }
    tool.check(&live, "threads, joined");
    wind_down(vec![binning, pool], &mut live, "threads");
}

/// `async_free` leaves a freed block in use until the device passes the free; with a checker
/// attached `cudaFree` waits instead, so the block stops being a region when `cudaFree` returns
/// and a kernel launched after it that touches the block is reported (as without rmm-rs).
#[test]
fn with_a_checker_attached_cuda_free_unregisters_before_it_returns_even_with_async_free() {
    let tool = tool();
    let _guard = setup();
    rmm::ownership::config::configure(rmm::ownership::spec::Spec::parse("async_free/pool").unwrap());
    assert!(!rmm::ownership::config::async_free(), "async_free stays off while a checker is attached");
    let ptr = rmm::ownership::cuda_free::allocate(1000).unwrap();
    assert!(tool.seen().regions.iter().any(|&(addr, size, _)| addr == ptr && size == 1000));
    rmm::ownership::cuda_free::free(ptr).unwrap();
    assert!(tool.seen().regions.iter().all(|&(addr, _, _)| addr != ptr), "the freed block is still a region");
    assert_eq!(rmm::ownership::cuda_free::pending(), 0);
    common::configure_legacy_api();
}

/// The fake tool's switch between the two numberings of the Mem extension's slots.
const SLOTS_FROM_ZERO: &str = "FAKE_NVTX_SLOTS_FROM_ZERO";

/// The pool's registrations with a tool that fills the slots as NVTX's headers number them
/// (every other test: as compute-sanitizer does), in a process of its own.
#[test]
fn a_tool_numbering_slots_as_the_headers_do_gets_the_same_calls() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "pool_blocks_are_regions_of_the_bytes_asked_for_and_chunks_heaps_until_released",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(SLOTS_FROM_ZERO, "0")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && report.contains("1 passed"), "the child failed:\n{report}");
}

/// Runs `child_without_the_variable` in a process of its own, without NVTX_INJECTION64_PATH.
#[test]
fn nothing_is_registered_without_the_variable() {
    let path = build_tool();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "child_without_the_variable", "--nocapture", "--test-threads=1"])
        .env_remove(rmm::platform::nvtx::INJECTION_VARIABLE)
        .env(CHILD_VARIABLE, &path)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && report.contains("1 passed"), "the child failed:\n{report}");
}

#[test]
#[ignore = "run by nothing_is_registered_without_the_variable, in a process of its own"]
fn child_without_the_variable() {
    let Some(path) = std::env::var_os(CHILD_VARIABLE) else { return };
    assert!(std::env::var_os(rmm::platform::nvtx::INJECTION_VARIABLE).is_none());
    let _guard = setup();
    let pool: Arc<dyn MemoryResource> = Arc::new(PoolResource::new(cuda(), 0, 0).unwrap());
    let arena = ArenaResource::new(cuda(), 16 * MIB).unwrap();
    let expandable = expandable_resource(0, &ExpandableOptions { release_threshold: 0, ..ExpandableOptions::default() }).unwrap();
    let mut live = BTreeMap::new();
    let mut rng = Rng::new(13);
    let resources: [&dyn MemoryResource; 3] = [&*pool, &arena, &expandable];
    for resource in resources {
        for _ in 0..200 {
            let bytes = rng.log_uniform(22);
            live.insert(resource.allocate(bytes, Stream::DEFAULT).unwrap(), (bytes, Stream::DEFAULT));
        }
        for (ptr, (bytes, stream)) in std::mem::take(&mut live) {
            resource.deallocate(ptr, bytes, stream).unwrap();
        }
        resource.release().unwrap();
    }
    assert!(!rmm::platform::nvtx::active(), "no tool without the variable");
    // rmm-rs never loaded the tool: loaded now, it has seen nothing.
    let tool = open_tool(Path::new(&path));
    assert_eq!(tool.count(9), 0, "no initialization");
    assert!((0..=8).all(|id| tool.count(id) == 0), "no call");
}
