//! The expandable resource on simulated devices (their model of the virtual-memory API, with
//! the race checker on): blocks on several streams, memory back to the device when released,
//! adaptors over it, and out of memory.

mod common;

use common::{allocate_on, device_used, free_on, over, races, setup_with, stamp, stamped};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::{cudaStream_t, rmmExpandableOptions_t, rmmFootprint_t};
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ffi::c_void;
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

#[test]
fn blocks_move_between_streams_in_order_and_memory_goes_back_when_released() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, expandable));
    let (mut a, mut b) = (null_mut(), null_mut());
    assert_eq!(rmmStreamCreate(&mut a), RMM_SUCCESS);
    assert_eq!(rmmStreamCreate(&mut b), RMM_SUCCESS);

    let sizes = [3000, 5 * MIB, 700 * 1024, 17 * MIB, 256];
    let mut live: Vec<(usize, usize, u8)> = Vec::new();
    for (i, &size) in sizes.iter().cycle().take(40).enumerate() {
        let stream = if i % 2 == 0 { a } else { b };
        let ptr = allocate_on(stats, size, stream).unwrap();
        stamp(ptr, size.min(4096), i as u8);
        live.push((ptr, size, i as u8));
        if i % 3 == 2 {
            // Freed on one stream, the block may come back on the other: in order only.
            let (ptr, size, tag) = live.remove(i % live.len());
            assert!(stamped(ptr, size.min(4096), tag));
            free_on(stats, ptr, size, if i % 2 == 0 { b } else { a });
        }
    }
    assert!(device_used() > before);
    for (ptr, size, tag) in live.drain(..) {
        assert!(stamped(ptr, size.min(4096), tag), "a live block was overwritten");
        free_on(stats, ptr, size, a);
    }
    let mut released = 0;
    assert_eq!(rmmResourceRelease(stats, &mut released), RMM_SUCCESS);
    assert!(released > 0);
    assert_eq!(device_used(), before, "released chunks are unmapped and their memory is the device's again");
    // And it grows again after the release.
    let again = allocate_on(stats, 20 * MIB, a).unwrap();
    free_on(stats, again, 20 * MIB, a);

    assert_eq!(rmmStreamDestroy(a), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(b), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(stats), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(device_used(), before, "a destroyed resource keeps nothing mapped");
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn out_of_memory_releases_what_the_device_keeps_free_then_is_reported() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    // A pool that keeps 192 MiB free: the expandable resource gets it back from it.
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 0, 0));
    let held = allocate_on(pool, 192 * MIB, null_mut()).unwrap();
    free_on(pool, held, 192 * MIB, null_mut());
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let big = allocate_on(expandable, 200 * MIB, null_mut()).expect("the pool's free chunk is released for it");
    stamp(big, 4096, 0x77);
    // More than the device has left: out of memory, with the live block untouched.
    assert_eq!(allocate_on(expandable, 100 * MIB, null_mut()), Err(RMM_ERROR_OUT_OF_MEMORY));
    assert!(stamped(big, 4096, 0x77));
    free_on(expandable, big, 200 * MIB, null_mut());
    // Everything freed: the whole device can be had again, through the same resource.
    let whole = allocate_on(expandable, 240 * MIB, null_mut()).expect("the device's memory after everything was freed");
    free_on(expandable, whole, 240 * MIB, null_mut());
    for handle in [expandable, pool, cuda] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before);
    // A maximum bounds what it reserves.
    let bounded = over(|h| rmmExpandableResourceCreate(h, 8 * MIB));
    assert_eq!(allocate_on(bounded, 16 * MIB, null_mut()), Err(RMM_ERROR_OUT_OF_MEMORY));
    let fits = allocate_on(bounded, 8 * MIB, null_mut()).unwrap();
    free_on(bounded, fits, 8 * MIB, null_mut());
    assert_eq!(rmmResourceDestroy(bounded), RMM_SUCCESS);
}

fn footprint(resource: rmmResource_t) -> rmmFootprint_t {
    let mut figures = rmmFootprint_t::default();
    assert_eq!(rmmResourceGetFootprint(resource, &mut figures), RMM_SUCCESS);
    figures
}

fn with_options(options: &rmmExpandableOptions_t) -> rmmResource_t {
    over(|h| rmmExpandableResourceCreateWithOptions(h, options))
}

fn options() -> rmmExpandableOptions_t {
    rmmExpandableOptions_t {
        initial_size: 0,
        maximum_size: 0,
        release_free_pages: 0,
        release_threshold: 0,
        page_size: 0,
        peers: std::ptr::null(),
        num_peers: 0,
    }
}

#[test]
fn a_chunk_grows_in_place_by_what_the_request_needs_beyond_its_free_end() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, expandable));
    let small = allocate_on(stats, MIB, null_mut()).unwrap();
    assert_eq!(footprint(stats).reserved_bytes, 2 * MIB, "one page");
    // 1 MiB is free at the chunk's end: 3 MiB more need one page more, not a new chunk.
    let large = allocate_on(stats, 3 * MIB, null_mut()).unwrap();
    assert_eq!(large, small + MIB, "the block spans the chunk's old end");
    let figures = footprint(stats);
    assert_eq!((figures.reserved_bytes, figures.live_bytes, figures.largest_free_block), (4 * MIB, 4 * MIB, 0));
    assert_eq!(figures.fragmentation, 0.0);
    assert_eq!(device_used(), before + 4 * MIB, "only what is mapped is the device's memory in use");
    let mut length = 0;
    assert_eq!(rmmResourceGetSnapshot(stats, null_mut(), 0, &mut length), RMM_SUCCESS);
    let mut text = vec![0u8; length + 1];
    assert_eq!(rmmResourceGetSnapshot(stats, text.as_mut_ptr().cast(), text.len(), null_mut()), RMM_SUCCESS);
    let snapshot: serde_json::Value = serde_json::from_slice(&text[..length]).unwrap();
    let pool = &snapshot["upstream"]["large"];
    assert_eq!(pool["chunks"].as_array().unwrap().len(), 1, "{snapshot}");
    assert_eq!(pool["upstream"]["mapped"].as_array().unwrap().len(), 1, "one mapped range: {snapshot}");
    assert_eq!(pool["upstream"]["mapped_bytes"], 4 * MIB);
    free_on(stats, small, MIB, null_mut());
    let figures = footprint(stats);
    assert_eq!((figures.live_bytes, figures.peak_live_bytes, figures.peak_reserved_bytes), (3 * MIB, 4 * MIB, 4 * MIB));
    assert!((figures.fragmentation - 0.25).abs() < 1e-12, "1 MiB of 4 not in use: {}", figures.fragmentation);
    free_on(stats, large, 3 * MIB, null_mut());
    for handle in [stats, expandable] {
        assert_eq!(rmmResourceDestroy(handle), RMM_SUCCESS);
    }
    assert_eq!(device_used(), before);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn free_pages_above_the_release_threshold_go_back_once_their_stream_has_passed() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let stream = new_stream();
    let expandable = with_options(&rmmExpandableOptions_t { release_free_pages: 1, release_threshold: 4 * MIB, ..options() });
    let first = allocate_on(expandable, MIB, stream).unwrap();
    let blocks: Vec<usize> = (0..4).map(|_| allocate_on(expandable, 5 * MIB, stream).unwrap()).collect();
    assert_eq!(footprint(expandable).reserved_bytes, 22 * MIB);
    stamp(first, 4096, 0x3c);
    for &block in blocks.iter().rev() {
        free_on(expandable, block, 5 * MIB, stream);
    }
    // Free pages at the chunk's end were unmapped while more than 4 MiB was mapped, and went
    // back while more than 4 MiB was held: the page under the block still in use stays
    // mapped, and one more page is kept unmapped for the next growth.
    assert_eq!(footprint(expandable).reserved_bytes, 4 * MIB);
    assert_eq!(snapshot_of(expandable)["large"]["upstream"]["mapped_bytes"], 2 * MIB);
    assert_eq!(device_used(), before + 4 * MIB);
    assert!(stamped(first, 4096, 0x3c), "the block in use keeps its memory");
    // It grows again, in place.
    let again = allocate_on(expandable, 9 * MIB, stream).unwrap();
    assert_eq!(again, first + MIB);
    free_on(expandable, again, 9 * MIB, stream);
    free_on(expandable, first, MIB, stream);
    assert!(footprint(expandable).reserved_bytes <= 4 * MIB);
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert_eq!(device_used(), before);
    assert!(races().is_empty(), "{:?}", races());

    // The initial size stays mapped whatever the threshold.
    let keeps_initial = with_options(&rmmExpandableOptions_t { release_free_pages: 1, initial_size: 4 * MIB, ..options() });
    let first = allocate_on(keeps_initial, MIB, null_mut()).unwrap();
    let block = allocate_on(keeps_initial, 12 * MIB, null_mut()).unwrap();
    free_on(keeps_initial, block, 12 * MIB, null_mut());
    free_on(keeps_initial, first, MIB, null_mut());
    assert_eq!(footprint(keeps_initial).reserved_bytes, 4 * MIB, "freed pages beyond the initial size went back");
    assert_eq!(rmmResourceDestroy(keeps_initial), RMM_SUCCESS);

    // Without release_free_pages everything stays mapped until released.
    let keeping = with_options(&options());
    let block = allocate_on(keeping, 20 * MIB, null_mut()).unwrap();
    free_on(keeping, block, 20 * MIB, null_mut());
    assert_eq!(footprint(keeping).reserved_bytes, 20 * MIB);
    assert_eq!(rmmResourceDestroy(keeping), RMM_SUCCESS);
}

#[test]
fn options_are_checked_and_peers_get_access() {
    let _guard = setup_with("2:256MiB");
    let peers = [1];
    let shared = with_options(&rmmExpandableOptions_t { peers: peers.as_ptr(), num_peers: 1, initial_size: 4 * MIB, ..options() });
    assert_eq!(footprint(shared).reserved_bytes, 4 * MIB, "the initial size is mapped at creation");
    let block = allocate_on(shared, 3 * MIB, null_mut()).unwrap();
    stamp(block, 4096, 0x11);
    assert!(stamped(block, 4096, 0x11));
    free_on(shared, block, 3 * MIB, null_mut());
    assert_eq!(rmmResourceDestroy(shared), RMM_SUCCESS);
    let larger_pages = with_options(&rmmExpandableOptions_t { page_size: 4 * MIB, ..options() });
    let block = allocate_on(larger_pages, MIB, null_mut()).unwrap();
    assert_eq!(footprint(larger_pages).reserved_bytes, 4 * MIB, "one page of 4 MiB");
    free_on(larger_pages, block, MIB, null_mut());
    assert_eq!(rmmResourceDestroy(larger_pages), RMM_SUCCESS);
    // The default page grows with the maximum: 1/4096 of it, up to 20 MiB.
    for (maximum, page) in [(256 * MIB, 2 * MIB), (16 << 30, 4 * MIB), (80 << 30, 20 * MIB), (141 << 30, 20 * MIB)] {
        let resource = with_options(&rmmExpandableOptions_t { maximum_size: maximum, ..options() });
        assert_eq!(snapshot_of(resource)["large"]["upstream"]["page_size"], page, "a maximum of {maximum} bytes");
        assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    }

    let mut handle: rmmResource_t = null_mut();
    let bad_page = rmmExpandableOptions_t { page_size: 3 * MIB, ..options() };
    assert_eq!(rmmExpandableResourceCreateWithOptions(&mut handle, &bad_page), RMM_ERROR_INVALID_ARGUMENT);
    assert!(common::last_message().contains("granularity"), "{}", common::last_message());
    let missing_peers = rmmExpandableOptions_t { num_peers: 1, ..options() };
    assert_eq!(rmmExpandableResourceCreateWithOptions(&mut handle, &missing_peers), RMM_ERROR_INVALID_ARGUMENT);
    let no_such_peer = [7];
    let bad_peer = rmmExpandableOptions_t { peers: no_such_peer.as_ptr(), num_peers: 1, ..options() };
    assert_ne!(rmmExpandableResourceCreateWithOptions(&mut handle, &bad_peer), RMM_SUCCESS);
    assert_eq!(rmmExpandableResourceCreateWithOptions(&mut handle, std::ptr::null()), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmExpandableResourceCreateWithOptions(null_mut(), &options()), RMM_ERROR_INVALID_ARGUMENT);
    assert!(handle.is_null(), "no handle on failure");
    let mut figures = rmmFootprint_t::default();
    let mut cuda: rmmResource_t = null_mut();
    assert_eq!(rmmCudaResourceCreate(&mut cuda), RMM_SUCCESS);
    assert_eq!(rmmResourceGetFootprint(cuda, null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmResourceGetFootprint(null_mut(), &mut figures), RMM_ERROR_INVALID_HANDLE);
    let direct = allocate_on(cuda, 3 * MIB, null_mut()).unwrap();
    assert_eq!(footprint(cuda).reserved_bytes, 3 * MIB, "a direct resource holds what it hands out");
    free_on(cuda, direct, 3 * MIB, null_mut());
    let figures = footprint(cuda);
    assert_eq!((figures.live_bytes, figures.peak_live_bytes), (0, 3 * MIB));
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
}

fn new_stream() -> cudaStream_t {
    let mut stream = null_mut();
    assert_eq!(rmmStreamCreate(&mut stream), RMM_SUCCESS);
    stream
}

fn sim_stream(stream: cudaStream_t) -> rmm::platform::Stream {
    rmm::boundary::types::stream_of(stream)
}

fn accessible(at: usize, size: usize) -> bool {
    rmm::platform::simulator().unwrap().vmm_is_accessible(at, size)
}

/// Releases what `expandable` keeps after everything was freed, checks that the device has
/// every page back, and destroys it.
fn give_everything_back(expandable: rmmResource_t, before: usize) {
    let mut released = 0;
    assert_eq!(rmmResourceRelease(expandable, &mut released), RMM_SUCCESS);
    assert_eq!(device_used(), before, "everything freed and released: every page went back");
    assert_eq!(footprint(expandable).reserved_bytes, 0);
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
}

/// `count` blocks of `size` allocated in turn on `stream`, each stamped with its index.
fn stamped_blocks(resource: rmmResource_t, count: usize, size: usize, stream: cudaStream_t) -> Vec<usize> {
    (0..count)
        .map(|tag| {
            let block = allocate_on(resource, size, stream).unwrap();
            stamp(block, size, tag as u8);
            block
        })
        .collect()
}

/// Frees every other block of `blocks` (the odd ones), leaving holes between live blocks.
fn free_every_other(resource: rmmResource_t, blocks: &[usize], size: usize, stream: cudaStream_t) {
    for &block in blocks.iter().skip(1).step_by(2) {
        free_on(resource, block, size, stream);
    }
}

/// The even blocks, still live, hold the index each was stamped with.
fn assert_live_blocks_intact(blocks: &[usize], size: usize) {
    for (tag, &block) in blocks.iter().enumerate().step_by(2) {
        assert!(stamped(block, size, tag as u8), "live block {tag} was overwritten");
    }
}

fn snapshot_of(resource: rmmResource_t) -> serde_json::Value {
    let mut length = 0;
    assert_eq!(rmmResourceGetSnapshot(resource, null_mut(), 0, &mut length), RMM_SUCCESS);
    let mut text = vec![0u8; length + 1];
    assert_eq!(rmmResourceGetSnapshot(resource, text.as_mut_ptr().cast(), text.len(), null_mut()), RMM_SUCCESS);
    serde_json::from_slice(&text[..length]).unwrap()
}

#[test]
fn a_hole_in_the_middle_of_a_chunk_is_unmapped_once_its_stream_has_passed_and_not_before() {
    let _guard = setup_with("2:256MiB");
    let simulator = rmm::platform::simulator().unwrap();
    let before = device_used();
    let stream = new_stream();
    let expandable = with_options(&rmmExpandableOptions_t { release_free_pages: 1, ..options() });
    // One chunk: [first: 1 MiB][hole: 8 MiB][last: 512 KiB][tiny: 256 KiB][256 KiB free] (blocks
    // below 256 KiB would come from the small blocks' part).
    let first = allocate_on(expandable, MIB, stream).unwrap();
    let hole = allocate_on(expandable, 8 * MIB, stream).unwrap();
    let last = allocate_on(expandable, MIB / 2, stream).unwrap();
    let tiny = allocate_on(expandable, MIB / 4, stream).unwrap();
    assert_eq!(first % (2 * MIB), 0, "a chunk starts on a page");
    assert_eq!((hole, last), (first + MIB, first + 9 * MIB));
    assert_eq!(device_used(), before + 10 * MIB);
    stamp(first, MIB, 0x21);
    stamp(last, MIB / 2, 0x22);

    // The stream is still running work enqueued before the free: the hole's three whole
    // pages are cut from the chunk but stay mapped.
    simulator.stream_hold(sim_stream(stream)).unwrap();
    free_on(expandable, hole, 8 * MIB, stream);
    assert!(accessible(first + 2 * MIB, 6 * MIB), "unmapped under a kernel that may still use it");
    assert_eq!(device_used(), before + 10 * MIB);
    assert_eq!(footprint(expandable).reserved_bytes, 10 * MIB, "held until the device has the pages back");

    // Once the stream has passed the free, the next free gives them back, without waiting.
    simulator.stream_finish_held(sim_stream(stream)).unwrap();
    free_on(expandable, tiny, MIB / 4, stream);
    assert!(!accessible(first + 2 * MIB, 2 * MIB), "the hole's pages are unmapped");
    assert!(accessible(first, 2 * MIB) && accessible(first + 8 * MIB, 2 * MIB), "pages with live bytes stay");
    assert_eq!(device_used(), before + 4 * MIB);
    assert_eq!(footprint(expandable).reserved_bytes, 4 * MIB);
    assert!(stamped(first, MIB, 0x21) && stamped(last, MIB / 2, 0x22), "live blocks keep their contents");
    let snapshot = snapshot_of(expandable);
    assert_eq!(snapshot["large"]["chunks"].as_array().unwrap().len(), 2, "the chunk was cut in two: {snapshot}");
    assert_eq!(snapshot["large"]["upstream"]["mapped"].as_array().unwrap().len(), 2, "{snapshot}");

    // A block over the hole's address range is mapped again before it is handed out.
    let again = allocate_on(expandable, 7 * MIB, stream).unwrap();
    stamp(again, 7 * MIB, 0x23);
    assert!(stamped(first, MIB, 0x21) && stamped(last, MIB / 2, 0x22));
    for (ptr, size) in [(again, 7 * MIB), (first, MIB), (last, MIB / 2)] {
        free_on(expandable, ptr, size, stream);
    }
    assert_eq!(device_used(), before, "everything freed: every page went back");
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}

/// Blocks below 256 KiB come from a part of their own in pages of the granularity, whatever
/// the page size of the rest: small blocks never pin a large page. Frees find their part by
/// address, the maximum bounds both parts together, and the figures add both up.
#[test]
fn small_blocks_come_from_pages_of_their_own_within_one_maximum() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = with_options(&rmmExpandableOptions_t { page_size: 8 * MIB, maximum_size: 16 * MIB, ..options() });
    let large = allocate_on(expandable, MIB, null_mut()).unwrap();
    assert_eq!(device_used(), before + 8 * MIB, "one large page");
    let small: Vec<usize> = (0..4).map(|_| allocate_on(expandable, 64 << 10, null_mut()).unwrap()).collect();
    assert_eq!(device_used(), before + 10 * MIB, "the small blocks share one page of 2 MiB");
    let snapshot = snapshot_of(expandable);
    assert_eq!(snapshot["small_blocks_below"], 256 << 10);
    assert_eq!(
        (&snapshot["small"]["upstream"]["page_size"], &snapshot["large"]["upstream"]["page_size"]),
        (&(2 * MIB).into(), &(8 * MIB).into())
    );
    assert_eq!(snapshot["small"]["chunks"][0]["blocks"].as_array().unwrap().len(), 5, "four blocks and the free rest: {snapshot}");
    assert_eq!(snapshot["activity"]["pages_created"], 2, "both parts' pages: {snapshot}");
    let figures = footprint(expandable);
    assert_eq!((figures.reserved_bytes, figures.peak_reserved_bytes, figures.live_bytes), (10 * MIB, 10 * MIB, MIB + 4 * (64 << 10)));
    for (tag, &block) in small.iter().enumerate() {
        stamp(block, 64 << 10, tag as u8);
    }

    // 8 MiB more need another large page: 18 MiB held, past the maximum over both parts.
    assert_eq!(allocate_on(expandable, 8 * MIB, null_mut()), Err(RMM_ERROR_OUT_OF_MEMORY));
    assert!(common::last_message().contains("maximum"), "{}", common::last_message());
    // A free of a small block with a large block's size goes to the small part, which refuses
    // it: the block stays live and is not handed out again.
    assert_eq!(rmmResourceDeallocate(expandable, small[0] as *mut c_void, MIB, null_mut()), RMM_ERROR_INVALID_ARGUMENT);
    let another = allocate_on(expandable, 64 << 10, null_mut()).unwrap();
    assert!(!small.contains(&another), "a refused free hands nothing out twice");
    for (tag, &block) in small.iter().enumerate() {
        assert!(stamped(block, 64 << 10, tag as u8), "small block {tag} was overwritten");
        free_on(expandable, block, 64 << 10, null_mut());
    }
    free_on(expandable, another, 64 << 10, null_mut());
    free_on(expandable, large, MIB, null_mut());
    give_everything_back(expandable, before);
    assert!(races().is_empty(), "{:?}", races());
}

/// A hole's pages went back, cutting its chunk in two. A request larger than the gap but
/// within the free end before it, the gap and the free start after it maps just the gap,
/// where growing a chunk's end by what the request needs would map more.
#[test]
fn a_request_that_fits_across_an_unmapped_gap_maps_the_gap_and_joins_the_chunk_again() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = with_options(&rmmExpandableOptions_t { release_free_pages: 1, ..options() });
    // One chunk: [first: 1 MiB][hole: 8 MiB][last: 512 KiB][tiny: 256 KiB][256 KiB free] (blocks
    // below 256 KiB would come from the small blocks' part).
    let first = allocate_on(expandable, MIB, null_mut()).unwrap();
    let hole = allocate_on(expandable, 8 * MIB, null_mut()).unwrap();
    let last = allocate_on(expandable, MIB / 2, null_mut()).unwrap();
    let tiny = allocate_on(expandable, MIB / 4, null_mut()).unwrap();
    stamp(first, MIB, 0x31);
    stamp(last, MIB / 2, 0x32);
    free_on(expandable, hole, 8 * MIB, null_mut());
    assert_eq!(device_used(), before + 4 * MIB, "the hole's three whole pages went back");
    assert_eq!(snapshot_of(expandable)["large"]["chunks"].as_array().unwrap().len(), 2);

    // 1 MiB free before the 6 MiB gap, 1 MiB free after it: 7.5 MiB fit across.
    let across = allocate_on(expandable, 15 * MIB / 2, null_mut()).unwrap();
    assert_eq!(across, hole, "the block starts at the first part's free end");
    assert_eq!(device_used(), before + 10 * MIB, "only the gap's three pages were mapped");
    let snapshot = snapshot_of(expandable);
    assert_eq!(snapshot["large"]["chunks"].as_array().unwrap().len(), 1, "the two parts are one chunk again: {snapshot}");
    stamp(across, 15 * MIB / 2, 0x33);
    assert!(stamped(first, MIB, 0x31) && stamped(last, MIB / 2, 0x32), "live blocks keep their contents");
    for (ptr, size) in [(across, 15 * MIB / 2), (first, MIB), (last, MIB / 2), (tiny, MIB / 4)] {
        free_on(expandable, ptr, size, null_mut());
    }
    assert_eq!(device_used(), before, "everything freed: every page went back");
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn a_request_no_mapped_range_fits_is_stitched_from_the_pages_of_holes_before_new_ones_are_made() {
    let _guard = setup_with("2:256MiB");
    let before = device_used();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let blocks = stamped_blocks(expandable, 8, 4 * MIB, null_mut());
    assert_eq!(device_used(), before + 32 * MIB);
    free_every_other(expandable, &blocks, 4 * MIB, null_mut());
    // 16 MiB free, none of it in one block large enough: 12 MiB are served by the pages of
    // the three holes in the middle, mapped after the free end of the chunk.
    let large = allocate_on(expandable, 12 * MIB, null_mut()).unwrap();
    assert_eq!(large, blocks[7], "it starts at the chunk's free end");
    assert_eq!(device_used(), before + 32 * MIB, "no new physical memory");
    stamp(large, 12 * MIB, 0xEE);
    assert_live_blocks_intact(&blocks, 4 * MIB);
    let figures = footprint(expandable);
    assert_eq!((figures.reserved_bytes, figures.peak_reserved_bytes), (32 * MIB, 32 * MIB), "mapped and kept pages are held");
    let snapshot = snapshot_of(expandable);
    assert_eq!(snapshot["large"]["upstream"]["kept_unmapped_pages"], 2, "one hole's pages are kept for the next growth: {snapshot}");
    assert_eq!(snapshot["large"]["upstream"]["mapped_bytes"], 28 * MIB, "{snapshot}");
    let activity = &snapshot["activity"];
    let count = |name: &str| activity[name].as_u64().unwrap();
    assert_eq!(
        [count("pages_created"), count("pages_mapped"), count("pages_unmapped"), count("pages_mapped_lent")],
        [16, 20, 6, 0],
        "16 pages made, the three holes' 6 unmapped and 4 of them mapped again: {activity}"
    );
    // The kept pages serve the next growth too.
    let more = allocate_on(expandable, 4 * MIB, null_mut()).unwrap();
    assert_eq!(device_used(), before + 32 * MIB);

    // Everything freed: everything goes back on release.
    free_on(expandable, more, 4 * MIB, null_mut());
    free_on(expandable, large, 12 * MIB, null_mut());
    for &block in blocks.iter().step_by(2) {
        free_on(expandable, block, 4 * MIB, null_mut());
    }
    assert_eq!(footprint(expandable).reserved_bytes, 32 * MIB, "the freed pages are held until released");
    give_everything_back(expandable, before);
    assert!(races().is_empty(), "{:?}", races());
}

/// A training step frees and allocates on one busy stream: the growth cannot unmap the holes
/// yet, and maps their physical pages again at once (the same stream's later work is ordered
/// after their earlier use) instead of creating new ones; the old addresses go once the
/// stream has passed.
#[test]
fn growth_on_a_busy_stream_maps_its_own_holes_pages_again_at_once() {
    let _guard = setup_with("2:256MiB");
    let simulator = rmm::platform::simulator().unwrap();
    let before = device_used();
    let stream = new_stream();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let blocks = stamped_blocks(expandable, 8, 4 * MIB, stream);
    simulator.stream_hold(sim_stream(stream)).unwrap();
    free_every_other(expandable, &blocks, 4 * MIB, stream);
    // 16 MiB free in four holes, the last at the chunk's end: 12 MiB there need 8 MiB more,
    // mapped from the pages of two holes.
    let large = allocate_on(expandable, 12 * MIB, stream).unwrap();
    assert_eq!(large, blocks[7]);
    assert_eq!(device_used(), before + 32 * MIB, "no new physical memory while the stream is busy");
    let mapped = |resource| snapshot_of(resource)["large"]["upstream"]["mapped_bytes"].as_u64().unwrap() as usize;
    assert_eq!(mapped(expandable), 40 * MIB, "the holes stay mapped while the stream may still use them");
    assert_eq!(footprint(expandable).reserved_bytes, 32 * MIB, "a page mapped twice is held once");
    assert_eq!(snapshot_of(expandable)["large"]["upstream"]["activity"]["pages_mapped_lent"], 4, "two holes' pages, lent");
    simulator.stream_finish_held(sim_stream(stream)).unwrap();
    stamp(large, 12 * MIB, 0xEE);
    assert_live_blocks_intact(&blocks, 4 * MIB);
    // The next free finds the stream past its frees: the holes' old addresses are unmapped.
    free_on(expandable, blocks[0], 4 * MIB, stream);
    assert!(mapped(expandable) <= 32 * MIB, "the old addresses of lent pages are unmapped: {} bytes mapped", mapped(expandable));
    assert_eq!(device_used(), before + 32 * MIB);
    assert!(stamped(large, 12 * MIB, 0xEE));
    free_on(expandable, large, 12 * MIB, stream);
    for &block in blocks.iter().skip(2).step_by(2) {
        free_on(expandable, block, 4 * MIB, stream);
    }
    give_everything_back(expandable, before);
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}

#[test]
fn out_of_memory_takes_the_pages_of_holes_once_their_stream_has_passed() {
    let _guard = setup_with("2:256MiB");
    let simulator = rmm::platform::simulator().unwrap();
    let before = device_used();
    let stream = new_stream();
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let mut blocks = Vec::new();
    while let Ok(block) = allocate_on(expandable, 8 * MIB, stream) {
        stamp(block, 8 * MIB, blocks.len() as u8);
        blocks.push(block);
    }
    assert!(blocks.len() >= 20, "the device filled up: {} blocks", blocks.len());
    assert!(device_used() + 8 * MIB > 256 * MIB);
    // Holes of 8 MiB between live blocks; the stream still runs work from before the frees,
    // so growth cannot unmap them yet and the device has nothing left: out of memory
    // waits for the stream, unmaps the holes and maps their pages for the request.
    free_every_other(expandable, &blocks, 8 * MIB, stream);
    simulator.stream_hold(sim_stream(stream)).unwrap();
    let large = allocate_on(expandable, 24 * MIB, stream).expect("served from the holes' pages");
    stamp(large, 24 * MIB, 0xAB);
    assert_live_blocks_intact(&blocks, 8 * MIB);
    free_on(expandable, large, 24 * MIB, stream);
    for &block in blocks.iter().step_by(2) {
        free_on(expandable, block, 8 * MIB, stream);
    }
    give_everything_back(expandable, before);
    assert_eq!(rmmStreamDestroy(stream), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}

fn platform() -> &'static rmm::platform::Backend {
    rmm::platform::backend().unwrap()
}

/// A copy of `bytes` on a stream of device 1, from `src` to `dst`.
fn copy_on_device_1(dst: usize, src: usize, bytes: usize) -> rmm::Result<()> {
    let stream = platform().stream_create(1).unwrap();
    let copied = platform().copy_async(1, dst, src, bytes, stream);
    platform().stream_synchronize(stream).unwrap();
    platform().stream_destroy(stream).unwrap();
    copied
}

fn set_access_calls(resource: rmmResource_t) -> u64 {
    snapshot_of(resource)["activity"]["set_access_calls"].as_u64().unwrap()
}

/// Every mapping of device 0's expandable resource is accessible from device 1 when device 1
/// can reach device 0, so a copy on device 1 reads and writes it as it would cudaMalloc memory
/// with peer access (a model of PyTorch's `x.to("cuda:1")`); where the devices do not reach
/// each other the copy is refused as on a GPU ("invalid argument"), and a peer granted later
/// gets access to what is mapped and to what is mapped after.
#[test]
fn mappings_are_accessible_from_every_device_that_reaches_the_owner_and_from_peers_granted_later() {
    let _guard = setup_with("2:256MiB");
    let simulator = rmm::platform::simulator().unwrap();
    let before = device_used();
    let on_device_1 = platform().allocate(1, rmm::platform::MemoryKind::Device, 3 * MIB).unwrap();

    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    assert_eq!(snapshot_of(expandable)["large"]["upstream"]["access"], serde_json::json!([0, 1]));
    let (large, small) = (allocate_on(expandable, 3 * MIB, null_mut()).unwrap(), allocate_on(expandable, 4096, null_mut()).unwrap());
    assert!(simulator.vmm_accessible_from(large, 3 * MIB, 1) && simulator.vmm_accessible_from(small, 4096, 1));
    stamp(large, 3 * MIB, 0x21);
    copy_on_device_1(on_device_1, large, 3 * MIB).unwrap();
    assert!(stamped(on_device_1, 3 * MIB, 0x21), "device 1 read device 0's pages");
    stamp(on_device_1, MIB, 0x43);
    copy_on_device_1(small, on_device_1, 4096).unwrap();
    assert!(stamped(small, 4096, 0x43), "device 1 wrote device 0's small pages");
    let calls = set_access_calls(expandable);
    assert_eq!(calls, 2, "one cuMemSetAccess per map, for both devices at once");
    free_on(expandable, large, 3 * MIB, null_mut());
    free_on(expandable, small, 4096, null_mut());
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);

    // Devices that do not reach each other: the owner alone has access, and a copy on the
    // other is refused; granting access is refused too while the peer cannot reach it.
    simulator.set_peer_access(false);
    let apart = over(|h| rmmExpandableResourceCreate(h, 0));
    let block = allocate_on(apart, 5 * MIB, null_mut()).unwrap();
    assert!(!simulator.vmm_accessible_from(block, 5 * MIB, 1) && simulator.vmm_accessible_from(block, 5 * MIB, 0));
    let refused = copy_on_device_1(on_device_1, block, MIB).unwrap_err();
    assert!(refused.to_string().contains("access for device 1"), "{refused}");
    assert_eq!(rmmExpandableResourceGrantPeerAccess(apart, 1), RMM_ERROR_INVALID_ARGUMENT);
    assert!(common::last_message().contains("cannot reach"), "{}", common::last_message());

    // The peer becomes reachable (a model of peer access enabled later): granted, it reaches
    // what is mapped, through the adaptors over the resource, and every later growth.
    simulator.set_peer_access(true);
    let stats = over(|h| rmmStatisticsAdaptorCreate(h, apart));
    let calls = set_access_calls(apart);
    assert_eq!(rmmExpandableResourceGrantPeerAccess(stats, 1), RMM_SUCCESS, "{}", common::last_message());
    assert_eq!(set_access_calls(apart), calls + 1, "one call for the one mapped range");
    assert_eq!(rmmExpandableResourceGrantPeerAccess(apart, 1), RMM_SUCCESS, "again: nothing to do");
    assert_eq!(set_access_calls(apart), calls + 1);
    stamp(block, MIB, 0x65);
    copy_on_device_1(on_device_1, block, MIB).unwrap();
    assert!(stamped(on_device_1, MIB, 0x65));
    let grown = allocate_on(apart, 40 * MIB, null_mut()).unwrap();
    assert!(simulator.vmm_accessible_from(grown, 40 * MIB, 1), "a later map includes the granted peer");
    assert_eq!(snapshot_of(apart)["large"]["upstream"]["access"], serde_json::json!([0, 1]));

    assert_eq!(rmmExpandableResourceGrantPeerAccess(apart, 7), RMM_ERROR_INVALID_ARGUMENT, "no device 7");
    assert_eq!(rmmExpandableResourceGrantPeerAccess(null_mut(), 1), RMM_ERROR_INVALID_HANDLE);
    let cuda = over(|h| rmmCudaResourceCreate(h));
    assert_eq!(rmmExpandableResourceGrantPeerAccess(cuda, 1), RMM_ERROR_NOT_SUPPORTED);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
    free_on(apart, block, 5 * MIB, null_mut());
    free_on(apart, grown, 40 * MIB, null_mut());
    assert_eq!(rmmResourceDestroy(stats), RMM_SUCCESS);
    platform().free(1, rmm::platform::MemoryKind::Device, on_device_1).unwrap();
    give_everything_back(apart, before);
    assert!(races().is_empty(), "{:?}", races());
}

/// A grant while other threads map and unmap pages: every range mapped once the grant has
/// returned is accessible from the peer, whether it was mapped before the grant, while the
/// grant ran (the map sees the new peer when it records its pages) or after it.
#[test]
fn a_peer_granted_while_other_threads_map_reaches_every_mapped_range() {
    let _guard = setup_with("2:256MiB");
    let simulator = rmm::platform::simulator().unwrap();
    simulator.set_peer_access(false);
    let resource = with_options(&rmmExpandableOptions_t { release_free_pages: 1, release_threshold: 0, ..options() });
    let address = resource as usize;

    // A map whose cuMemSetAccess is slow: the grant comes while it runs, before the map has
    // recorded its pages, so only the map itself can give the peer access to them.
    simulator.delay_set_access(std::time::Duration::from_millis(150));
    let slow = std::thread::spawn(move || allocate_on(address as rmmResource_t, 5 * MIB, null_mut()).unwrap());
    std::thread::sleep(std::time::Duration::from_millis(50));
    simulator.set_peer_access(true);
    simulator.delay_set_access(std::time::Duration::ZERO);
    assert_eq!(rmmExpandableResourceGrantPeerAccess(resource, 1), RMM_SUCCESS, "{}", common::last_message());
    let during = slow.join().unwrap();
    assert!(simulator.vmm_accessible_from(during, 5 * MIB, 1), "mapped while the grant ran: it has the peer's access too");
    free_on(resource, during, 5 * MIB, null_mut());

    // Then many maps and unmaps on four threads around another grant.
    simulator.set_peer_access(false);
    let resource = with_options(&rmmExpandableOptions_t { release_free_pages: 1, release_threshold: 0, ..options() });
    let first = address as rmmResource_t;
    let address = resource as usize;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let resource = address as rmmResource_t;
                let stream = new_stream();
                let mut rounds = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || rounds < 20 {
                    let bytes = (1 + (worker + rounds) % 5) * 3 * MIB;
                    let block = allocate_on(resource, bytes, stream).unwrap();
                    free_on(resource, block, bytes, stream);
                    assert_eq!(rmmStreamSynchronize(stream), RMM_SUCCESS);
                    rounds += 1;
                }
                // One block stays mapped past the grant.
                let kept = allocate_on(resource, 5 * MIB, stream).unwrap();
                (stream as usize, kept)
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(20));
    simulator.set_peer_access(true);
    assert_eq!(rmmExpandableResourceGrantPeerAccess(resource, 1), RMM_SUCCESS, "{}", common::last_message());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let kept: Vec<(usize, usize)> = workers.into_iter().map(|worker| worker.join().unwrap()).collect();
    let snapshot = snapshot_of(resource);
    let mut checked = 0;
    for part in ["small", "large"] {
        for range in snapshot[part]["upstream"]["mapped"].as_array().unwrap() {
            checked += 1;
            let base = usize::from_str_radix(range["base"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            let size = range["size"].as_u64().unwrap() as usize;
            assert!(simulator.vmm_accessible_from(base, size, 1), "{part} range {base:#x} (+{size}) has no access for device 1");
        }
    }
    assert!(checked >= 1, "the kept blocks are mapped");
    for (stream, block) in kept {
        assert!(simulator.vmm_accessible_from(block, 5 * MIB, 1));
        free_on(resource, block, 5 * MIB, stream as cudaStream_t);
        assert_eq!(rmmStreamDestroy(stream as cudaStream_t), RMM_SUCCESS);
    }
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(first), RMM_SUCCESS);
    assert!(races().is_empty(), "{:?}", races());
}
