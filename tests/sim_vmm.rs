//! The simulated devices' model of the CUDA virtual-memory API: what a resource built on
//! cuMemAddressReserve/cuMemCreate/cuMemMap/cuMemSetAccess/cuMemUnmap/cuMemRelease can rely
//! on, and the misuse the driver refuses.

mod common;

use common::{setup_with, stamp, stamped};
use rmm::error::ErrorKind;
use rmm::platform::{backend, simulator};

const MIB: usize = 1 << 20;

fn device_used() -> usize {
    let (free, total) = backend().unwrap().mem_get_info(0).unwrap();
    total - free
}

#[test]
fn physical_memory_maps_into_reserved_ranges_and_goes_back_when_released_and_unmapped() {
    let _guard = setup_with("1:64MiB");
    let platform = backend().unwrap();
    let granule = platform.vmm_granularity(0).unwrap();
    assert_eq!(granule, 2 * MIB);
    let used = device_used();

    // A reservation costs the device nothing; physical memory does.
    let range = platform.vmm_reserve(16 * granule).unwrap();
    assert_eq!(range % granule, 0);
    assert_eq!(device_used(), used);
    let first = platform.vmm_create(0, 2 * granule, 0).unwrap();
    let second = platform.vmm_create(0, granule, 0).unwrap();
    assert_eq!(device_used(), used + 3 * granule);

    // Mapped back to back and made accessible, the two are one contiguous range.
    platform.vmm_map(range, 2 * granule, first).unwrap();
    platform.vmm_map(range + 2 * granule, granule, second).unwrap();
    assert!(!simulator().unwrap().vmm_is_accessible(range, 3 * granule), "maps start inaccessible");
    platform.vmm_set_access(range, 3 * granule, &[0]).unwrap();
    stamp(range, 3 * granule, 0x5A);

    // Stitching: the same physical memory mapped at another address shows the same bytes.
    let other = platform.vmm_reserve(4 * granule).unwrap();
    platform.vmm_map(other + granule, granule, second).unwrap();
    platform.vmm_set_access(other + granule, granule, &[0]).unwrap();
    assert!(stamped(other + granule, granule, 0x5A));
    stamp(other + granule, 64, 0x11);
    assert!(stamped(range + 2 * granule, 64, 0x11));

    // Released while mapped: the memory stays until its last map goes.
    platform.vmm_release(second).unwrap();
    assert_eq!(device_used(), used + 3 * granule);
    platform.vmm_unmap(range + 2 * granule, granule).unwrap();
    assert_eq!(device_used(), used + 3 * granule, "still mapped at the other address");
    platform.vmm_unmap(other + granule, granule).unwrap();
    assert_eq!(device_used(), used + 2 * granule);
    assert!(stamped(range, 2 * granule, 0x5A), "the other map keeps its contents");

    platform.vmm_unmap(range, 2 * granule).unwrap();
    platform.vmm_release(first).unwrap();
    assert_eq!(device_used(), used);
    platform.vmm_free_reservation(range, 16 * granule).unwrap();
    platform.vmm_free_reservation(other, 4 * granule).unwrap();
}

#[test]
fn misuse_the_driver_refuses_is_refused_and_out_of_memory_is_reported() {
    let _guard = setup_with("1:64MiB");
    let platform = backend().unwrap();
    let granule = platform.vmm_granularity(0).unwrap();
    let invalid = |result: rmm::Result<()>, what: &str| {
        let error = result.expect_err(what);
        assert!(matches!(error.kind(), ErrorKind::InvalidArgument(_)), "{what}: {error}");
    };
    let range = platform.vmm_reserve(4 * granule).unwrap();
    let handle = platform.vmm_create(0, granule, 0).unwrap();
    assert!(platform.vmm_reserve(granule + 1).is_err(), "a reservation that is not a multiple of the granularity");
    assert!(platform.vmm_create(0, 100, 0).is_err(), "physical memory that is not a multiple of the granularity");
    invalid(platform.vmm_map(range + 4 * granule, granule, handle), "a map past the reservation");
    invalid(platform.vmm_map(range, 2 * granule, handle), "a map larger than the physical memory");
    platform.vmm_map(range, granule, handle).unwrap();
    invalid(platform.vmm_map(range, granule, handle), "a map over another map");
    invalid(platform.vmm_set_access(range, 2 * granule, &[0]), "access to a range not wholly mapped");
    invalid(platform.vmm_unmap(range + granule, granule), "an unmap of nothing mapped");
    invalid(platform.vmm_free_reservation(range, 4 * granule), "freeing a reservation with a map in it");
    platform.vmm_release(handle).unwrap();
    invalid(platform.vmm_release(handle), "a double release");
    platform.vmm_unmap(range, granule).unwrap();
    invalid(platform.vmm_map(range, granule, handle), "mapping released memory");
    platform.vmm_free_reservation(range, 4 * granule).unwrap();

    // Physical memory beyond the device's capacity is out of memory, and nothing is kept.
    let used = device_used();
    let refused = platform.vmm_create(0, 64 * MIB + granule, 0).unwrap_err();
    assert!(refused.is_out_of_memory(), "{refused}");
    assert_eq!(device_used(), used);
}

#[test]
fn unmapping_memory_a_stream_freed_before_the_host_waited_for_it_is_a_race() {
    let _guard = setup_with("1:64MiB");
    let platform = backend().unwrap();
    let simulator = simulator().unwrap();
    let granule = platform.vmm_granularity(0).unwrap();
    let stream = platform.stream_create(0).unwrap();
    let range = platform.vmm_reserve(2 * granule).unwrap();
    let map = |at: usize| {
        let physical = platform.vmm_create(0, granule, 0).unwrap();
        platform.vmm_map(at, granule, physical).unwrap();
        platform.vmm_set_access(at, granule, &[0]).unwrap();
        platform.vmm_release(physical).unwrap();
    };
    map(range);
    map(range + granule);
    let races_before = common::races().len();

    // Freed on the stream, unmapped with no wait: work before the free may still use it.
    rmm::platform::note_released(0, range + 4096, 4096, stream);
    platform.vmm_unmap(range, granule).unwrap();
    let races = common::races();
    assert_eq!(races.len(), races_before + 1, "{races:?}");
    assert!(races.last().unwrap().contains("unmapped before the host waited"), "{races:?}");

    // Held work keeps an event after it from completing until the host waits for it.
    rmm::platform::note_released(0, range + granule, 4096, stream);
    simulator.stream_hold(stream).unwrap();
    let event = platform.event_create(0).unwrap();
    platform.event_record(0, event, stream).unwrap();
    assert!(!platform.event_query(event).unwrap(), "the stream still runs held work");
    simulator.stream_finish_held(stream).unwrap();
    assert!(platform.event_query(event).unwrap());
    platform.vmm_unmap(range + granule, granule).unwrap();
    assert_eq!(common::races().len(), races_before + 1, "unmapped after the host saw the stream pass the free");
    platform.event_destroy(event).unwrap();
    platform.stream_destroy(stream).unwrap();
    platform.vmm_free_reservation(range, 2 * granule).unwrap();
}

/// Physical memory created exportable gives a file descriptor that imports as a handle of
/// its own over the same memory (what another process maps); memory created without a handle
/// type cannot be exported, a descriptor that is not simulated physical memory does not
/// import, and fabric handles are not offered.
#[test]
fn exportable_memory_imports_as_the_same_memory_and_nothing_else_does() {
    let _guard = setup_with("1:64MiB");
    let platform = backend().unwrap();
    let granule = platform.vmm_granularity(0).unwrap();
    let posix = rmm::platform::exportable_as::POSIX_FILE_DESCRIPTOR;
    assert_eq!(platform.vmm_exportable_types(0).unwrap(), posix);
    let used = device_used();
    let range = platform.vmm_reserve(4 * granule).unwrap();
    let exported = platform.vmm_create(0, 2 * granule, posix).unwrap();
    platform.vmm_map(range, 2 * granule, exported).unwrap();
    platform.vmm_set_access(range, 2 * granule, &[0]).unwrap();
    stamp(range, 2 * granule, 0x3C);

    let fd = platform.vmm_export(exported).unwrap();
    let imported = platform.vmm_import(std::os::fd::AsFd::as_fd(&fd), 0).unwrap();
    drop(fd);
    assert_ne!(imported, exported, "an import is a handle of its own");
    let other = platform.vmm_reserve(2 * granule).unwrap();
    platform.vmm_map(other, 2 * granule, imported).unwrap();
    platform.vmm_set_access(other, 2 * granule, &[0]).unwrap();
    assert!(stamped(other, 2 * granule, 0x3C), "the import maps the exported bytes");
    stamp(other, 64, 0x77);
    assert!(stamped(range, 64, 0x77), "and writes through it reach the exporter's map");
    assert_eq!(device_used(), used + 2 * granule, "an import is no new memory");

    // The exporter lets go of its memory: the import keeps it alive until unmapped. (The
    // simulator counts physical memory in the process that created it until that process
    // releases it; a GPU keeps it in use while any process maps it.)
    platform.vmm_unmap(range, 2 * granule).unwrap();
    platform.vmm_release(exported).unwrap();
    assert_eq!(device_used(), used);
    assert!(stamped(other + 64, 2 * granule - 64, 0x3C), "the importer's map still shows the bytes");
    platform.vmm_unmap(other, 2 * granule).unwrap();
    platform.vmm_release(imported).unwrap();

    let private = platform.vmm_create(0, granule, 0).unwrap();
    let refused = platform.vmm_export(private).unwrap_err();
    assert!(matches!(refused.kind(), ErrorKind::InvalidArgument(_)) && refused.to_string().contains("requestedHandleTypes"), "{refused}");
    platform.vmm_release(private).unwrap();
    let file = std::fs::File::open("/proc/self/exe").unwrap();
    let refused = platform.vmm_import(std::os::fd::AsFd::as_fd(&file), 0).unwrap_err();
    assert!(refused.to_string().contains("not simulated physical memory"), "{refused}");
    let fabric = platform.vmm_create(0, granule, rmm::platform::exportable_as::FABRIC).unwrap_err();
    assert!(matches!(fabric.kind(), ErrorKind::NotSupported(_)), "{fabric}");
    platform.vmm_free_reservation(range, 4 * granule).unwrap();
    platform.vmm_free_reservation(other, 2 * granule).unwrap();
    assert_eq!(device_used(), used);
}
