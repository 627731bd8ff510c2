//! Sleep and wake on one simulated device, where a stream handle that names no stream is not
//! refused up front (a process of its own: the first setup decides the devices).

mod common;

use common::{allocate_on, asleep, free_on, last_message, over, races, setup_with};
use rmm::boundary::types::{cudaStream_t, RMM_SLEEP_KEEP};
use rmm::boundary::*;
use rmm::error::rmmError_t::*;
use std::ptr::null_mut;

#[test]
fn a_wake_whose_copy_fails_unmaps_nothing_before_the_device_is_done() {
    let _guard = setup_with("1:512MiB");
    let expandable = over(|h| rmmExpandableResourceCreate(h, 0));
    let (a, b) = (allocate_on(expandable, 256, null_mut()).unwrap(), allocate_on(expandable, 256, null_mut()).unwrap());
    // Stream-ordering races only: the made-up handle below reaches the copy (a wake's stream
    // must be live, as a cudaMemcpyAsync's), which the simulator reports as a stale handle.
    let ordering_races = || races().into_iter().filter(|report| report.contains("stream-ordering race")).collect::<Vec<_>>();
    let races_before = ordering_races().len();
    assert_eq!(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, null_mut()), RMM_SUCCESS);
    free_on(expandable, a, 256, null_mut());
    // A handle that names no stream: the copy back fails, the resource stays asleep.
    assert_ne!(rmmResourceWake(expandable, 0xdead_beef as cudaStream_t), RMM_SUCCESS);
    assert!(asleep(expandable));
    assert_eq!(ordering_races().len(), races_before, "{:?}", ordering_races());
    assert!(races().iter().any(|report| report.contains("stale stream handle") && report.contains("0xdeadbeef")), "{:?}", races());
    assert_eq!(rmmResourceWake(expandable, null_mut()), RMM_SUCCESS, "{}", last_message());
    free_on(expandable, b, 256, null_mut());
    assert_eq!(rmmResourceDestroy(expandable), RMM_SUCCESS);
}
