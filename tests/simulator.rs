//! The simulator's stream-ordering race checker: a block freed on one stream and handed out on
//! another is a race unless an event wait or a synchronization orders the two.

use rmm::platform::sim::{RaceAction, SimDevices};
use rmm::platform::{MemoryKind, Stream};
use rmm::units::parse_size;

const BLOCK: usize = 4096;

fn devices() -> SimDevices {
    SimDevices::new(2, 1 << 30, RaceAction::Record)
}

#[test]
fn reuse_on_another_stream_without_an_ordering_edge_is_a_race() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_acquired(0, ptr, BLOCK, a);
    sim.note_released(0, ptr, BLOCK, a);
    sim.note_acquired(0, ptr, BLOCK, b);
    let races = sim.race_reports();
    assert_eq!(races.len(), 1, "{races:?}");
    assert!(races[0].contains("stream-ordering race"), "{}", races[0]);
}

#[test]
fn an_event_recorded_after_the_free_and_waited_on_orders_the_reuse() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    let event = sim.event_create(0).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.event_record(0, event, a).unwrap();
    sim.stream_wait_event(0, b, event).unwrap();
    sim.note_acquired(0, ptr, BLOCK, b);
    assert!(sim.race_reports().is_empty(), "{:?}", sim.race_reports());
}

#[test]
fn an_event_recorded_before_the_free_does_not_order_the_reuse() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    let event = sim.event_create(0).unwrap();
    sim.event_record(0, event, a).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.stream_wait_event(0, b, event).unwrap();
    sim.note_acquired(0, ptr, BLOCK, b);
    assert_eq!(sim.race_reports().len(), 1);
}

#[test]
fn host_synchronization_of_the_freeing_stream_orders_the_reuse() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.stream_synchronize(a).unwrap();
    sim.note_acquired(0, ptr, BLOCK, b);
    assert!(sim.race_reports().is_empty());
}

#[test]
fn reuse_on_the_same_stream_needs_no_edge() {
    let sim = devices();
    let a = sim.stream_create(0).unwrap();
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.note_acquired(0, ptr, BLOCK, a);
    assert!(sim.race_reports().is_empty());
}

#[test]
fn the_legacy_default_stream_orders_blocking_streams_both_ways() {
    let sim = devices();
    let a = sim.stream_create(0).unwrap();
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.note_acquired(0, ptr, BLOCK, Stream::DEFAULT);
    sim.note_released(0, ptr, BLOCK, Stream::DEFAULT);
    sim.note_acquired(0, ptr, BLOCK, a);
    assert!(sim.race_reports().is_empty(), "{:?}", sim.race_reports());
}

#[test]
fn only_the_unordered_part_of_a_split_block_is_reported() {
    let sim = devices();
    let (a, b, c) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    let event = sim.event_create(0).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.event_record(0, event, a).unwrap();
    sim.stream_wait_event(0, b, event).unwrap();
    sim.note_acquired(0, ptr, BLOCK / 2, b);
    assert!(sim.race_reports().is_empty());
    sim.note_acquired(0, ptr + BLOCK / 2, BLOCK / 2, c);
    let races = sim.race_reports();
    assert_eq!(races.len(), 1, "{races:?}");
    assert!(races[0].contains(&format!("{:#x}", ptr + BLOCK / 2)), "{}", races[0]);
}

#[test]
fn freeing_platform_memory_forgets_pending_releases() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.free(0, MemoryKind::Device, ptr).unwrap();
    let again = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_acquired(0, again, BLOCK, b);
    assert!(sim.race_reports().is_empty());
}

#[test]
fn capacity_is_enforced_per_device_and_returned_on_free() {
    let sim = SimDevices::new(2, 1 << 20, RaceAction::Record);
    let big = sim.allocate(0, MemoryKind::Device, 1 << 20).unwrap();
    assert!(matches!(sim.allocate(0, MemoryKind::Device, 256).map_err(rmm::Error::into_kind), Err(rmm::ErrorKind::OutOfMemory { .. })));
    let other = sim.allocate(1, MemoryKind::Device, 1 << 19).unwrap();
    assert_eq!(sim.mem_get_info(0).unwrap(), (0, 1 << 20));
    sim.free(0, MemoryKind::Device, big).unwrap();
    assert_eq!(sim.mem_get_info(0).unwrap(), (1 << 20, 1 << 20));
    assert!(sim.free(0, MemoryKind::Device, big).is_err(), "double free must be refused");
    assert!(sim.free(0, MemoryKind::Device, other).is_err(), "freeing device 1's memory as device 0's must be refused");
    sim.free(1, MemoryKind::Device, other).unwrap();
    assert!(matches!(
        sim.allocate(0, MemoryKind::Device, usize::MAX).map_err(rmm::Error::into_kind),
        Err(rmm::ErrorKind::OutOfMemory { .. })
    ));
}

#[test]
fn copies_move_bytes_and_address_ranges_find_the_allocation() {
    let sim = devices();
    let src = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    let dst = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    assert_eq!(src % 256, 0);
    assert_eq!(sim.address_range(0, src + 100).unwrap(), (src, BLOCK));
    assert!(sim.address_range(0, 8).is_err());
    assert!(sim.copy_async(0, dst, src, BLOCK + 1, Stream::DEFAULT).is_err(), "copies past the end are refused");
    sim.copy_async(0, dst, src, BLOCK, Stream::DEFAULT).unwrap();
}

#[test]
fn destroyed_streams_and_events_are_refused() {
    let sim = devices();
    let s = sim.stream_create(1).unwrap();
    let e = sim.event_create(1).unwrap();
    sim.stream_destroy(s).unwrap();
    sim.event_destroy(e).unwrap();
    assert!(sim.stream_synchronize(s).is_err());
    assert!(sim.stream_destroy(s).is_err());
    assert!(sim.event_record(0, e, Stream::DEFAULT).is_err());
    assert!(sim.stream_synchronize(Stream(0xdead_beef)).is_err());
}

#[test]
fn device_specs_parse() {
    assert_eq!(parse_size("8GiB"), Ok(8 << 30));
    assert_eq!(parse_size("512MiB"), Ok(512 << 20));
    assert_eq!(parse_size("4096"), Ok(4096));
    assert_eq!(parse_size("3 KB"), Ok(3000), "kB is 1000 bytes, KiB 1024");
    assert!(parse_size("lots").is_err());
    assert_eq!(SimDevices::from_spec("1:2GB").unwrap().mem_get_info(0).unwrap().1, 2_000_000_000);
    let refused = SimDevices::from_spec("1:8G").err().unwrap().to_string();
    assert!(refused.contains("8G is ambiguous: write 8GiB (8589934592 bytes) or 8GB"), "{refused}");
    assert_eq!(SimDevices::from_spec("2:1GiB").unwrap().device_count().unwrap(), 2);
    assert_eq!(SimDevices::from_spec("3").unwrap().mem_get_info(2).unwrap().1, 8 << 30);
    for bad in ["", "0", "x", "2:", "2:huge", "65"] {
        assert!(SimDevices::from_spec(bad).is_err(), "{bad:?} must be refused");
    }
}

/// Runs only as a child of `a_race_aborts_the_process_by_default`.
#[test]
#[ignore]
fn child_that_races_under_the_default_action() {
    let sim = SimDevices::from_spec("1").unwrap();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.note_acquired(0, ptr, BLOCK, b);
    unreachable!("the race above must abort the process");
}

#[test]
fn a_race_aborts_the_process_by_default() {
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_that_races_under_the_default_action", "--ignored", "--nocapture"])
        .env_remove("RMM_SIM_ON_RACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("stream-ordering race") && stderr.contains("aborting"), "{stderr}");
    assert!(!stderr.contains("must abort"), "{stderr}");
}

#[test]
fn device_synchronization_orders_reuse_after_frees_on_every_stream_of_the_device() {
    let sim = devices();
    let (a, b) = (sim.stream_create(0).unwrap(), sim.stream_create(0).unwrap());
    let other_device = sim.stream_create(1).unwrap();
    let ptr = sim.allocate(0, MemoryKind::Device, BLOCK).unwrap();
    sim.note_released(0, ptr, BLOCK, a);
    sim.device_synchronize(1).unwrap();
    sim.note_acquired(0, ptr, BLOCK / 2, b);
    assert_eq!(sim.race_reports().len(), 1, "synchronizing another device orders nothing here");
    let _ = other_device;
    sim.device_synchronize(0).unwrap();
    sim.note_acquired(0, ptr + BLOCK / 2, BLOCK / 2, b);
    assert_eq!(sim.race_reports().len(), 1);
}
