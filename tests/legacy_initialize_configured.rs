//! `rmmInitialize` on devices that have no resource yet, in a program that configured a pool as
//! the default (`rmmConfigure`, `RMM_ALLOC_CONF`): the configured default is not made only to
//! be replaced, so it can neither take memory while rmm is initialized, nor fail the call, nor
//! stay behind after a failure (issue 51). A program of its own: its devices start without
//! resources.

mod common;

use common::{last_message, legacy_options, setup_with};
use rmm::boundary::types::{CudaDefaultAllocation, PoolAllocation};
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use rmm::ownership::per_device;
use rmm::platform::{backend, MemoryKind};
use std::ptr::{null, null_mut};

const MIB: usize = 1 << 20;

fn used() -> Vec<usize> {
    let platform = backend().unwrap();
    (0..3)
        .map(|device| {
            let (free, total) = platform.mem_get_info(device).unwrap();
            total - free
        })
        .collect()
}

#[test]
fn initialize_makes_no_default_resource_it_replaces() {
    let _guard = setup_with("3:256MiB");
    assert_eq!(rmmConfigure(c"pool:initial=64MiB".as_ptr()), RMM_SUCCESS, "{}", last_message());
    let platform = backend().unwrap();
    // Device 1 has room for rmm's plain resource, not for the configured pool.
    let bytes = platform.mem_get_info(1).unwrap().0 - 32 * MIB;
    let filled = platform.allocate(1, MemoryKind::Device, bytes).unwrap();
    let before = used();
    assert_eq!(before, [0, bytes, 0]);

    // Device 2 cannot hold the pool asked for: out of memory, and no configured pool is left
    // on the devices before it.
    let device2 = platform.allocate(2, MemoryKind::Device, 250 * MIB).unwrap();
    assert_eq!(rmmInitialize(&legacy_options(PoolAllocation, 20 * MIB, 0, &[0, 2])), RMM_ERROR_OUT_OF_MEMORY);
    assert!(last_message().contains("device 2"), "{}", last_message());
    assert!(!rmmIsInitialized(null_mut()));
    assert_eq!(used(), [0, bytes, 250 * MIB], "memory left allocated by a failed rmmInitialize");
    platform.free(2, MemoryKind::Device, device2).unwrap();

    // Plain device memory needs nothing up front: the configured pools it replaces are not
    // made, not even where they would not fit.
    let status = rmmInitialize(&legacy_options(CudaDefaultAllocation, 0, 0, &[0, 1]));
    let message = last_message();
    assert_eq!(used(), before, "rmmInitialize ({status:?}: {message}) made the configured pools it replaced");
    assert_eq!(status, RMM_SUCCESS, "{message}");
    for device in [0, 1] {
        assert_eq!(per_device::get(device).unwrap().resource().name(), "cuda");
        let mut ptr = null_mut();
        assert_eq!(rmmSetDevice(device), RMM_SUCCESS);
        assert_eq!(rmmAlloc(&mut ptr, 4096, null_mut(), null(), 0), RMM_SUCCESS, "{}", last_message());
        assert_eq!(rmmFree(ptr, null_mut(), null(), 0), RMM_SUCCESS, "{}", last_message());
    }
    assert_eq!(rmmSetDevice(0), RMM_SUCCESS);
    assert_eq!(rmmFinalize(), RMM_SUCCESS, "{}", last_message());
    assert_eq!(used(), before);

    // After rmmFinalize a device gets its configured default at first use, as if rmmInitialize
    // had not been called.
    assert_eq!(per_device::get(0).unwrap().resource().name(), "pool");
    assert_eq!(used(), [64 * MIB, bytes, 0]);
    platform.free(1, MemoryKind::Device, filled).unwrap();
}
