//! Proof that the race checker guards the pool: with its cross-stream ordering edges removed,
//! handing a block freed on one stream to another is reported.

mod common;

use common::*;
use rmm::resources::{streams, DirectResource, MemoryResource, PoolResource};
use std::sync::Arc;

#[test]
fn the_checker_reports_a_pool_that_skips_the_ordering_edge() {
    let _guard = setup();
    // The other cases here inject races too, and the reports are the process's: only those
    // after this point are this case's.
    let earlier = races().len();
    // Streams whose handles rmm-rs trusts, so that memory moves between them by events (not by
    // a device synchronization, which would order everything).
    let (a, b) = (streams::create(0).unwrap(), streams::create(0).unwrap());
    let pool = PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 4 << 20).unwrap();
    // With the edges: stream b takes a's freed chunk safely.
    let first = pool.allocate(4 << 20, a).unwrap();
    pool.deallocate(first, 4 << 20, a).unwrap();
    let second = pool.allocate(4 << 20, b).unwrap();
    assert_eq!(first, second, "the only chunk moved from a to b");
    assert_eq!(races().len(), earlier, "{:?}", &races()[earlier..]);
    // Without them, the same move is a race.
    pool.deallocate(second, 4 << 20, b).unwrap();
    pool.inject_missing_ordering(true);
    let before = races().len();
    let third = pool.allocate(4 << 20, a).unwrap();
    assert_eq!(third, first);
    let reports = races();
    assert_eq!(reports.len(), before + 1, "{reports:?}");
    assert!(reports[before].contains("stream-ordering race"), "{}", reports[before]);
}

#[test]
fn the_checker_reports_memory_of_a_destroyed_stream_handed_on_without_its_events() {
    let _guard = setup();
    let pool = PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 4 << 20).unwrap();
    pool.inject_missing_ordering(true);
    // Freed on the stream, which is then destroyed: its state goes, and its chunk with it to
    // whichever stream takes it next, which skips waiting on the destroyed stream's event.
    let old = streams::create(0).unwrap();
    let first = pool.allocate(4 << 20, old).unwrap();
    pool.deallocate(first, 4 << 20, old).unwrap();
    streams::destroy(old).unwrap();
    assert_eq!(pool.usage().streams, 0);
    let before = races().len();
    let new = streams::create(0).unwrap();
    let second = pool.allocate(4 << 20, new).unwrap();
    assert_eq!(second, first);
    let reports = races();
    assert_eq!(reports.len(), before + 1, "{reports:?}");
    assert!(reports[before].contains("stream-ordering race"), "{}", reports[before]);
    pool.deallocate(second, 4 << 20, new).unwrap();
    streams::destroy(new).unwrap();
}

#[test]
fn the_checker_reports_memory_of_a_stream_destroyed_unannounced_handed_on_without_its_events() {
    let _guard = setup();
    let platform = rmm::platform::backend().unwrap();
    let pool = PoolResource::new(Arc::new(DirectResource::cuda(0).unwrap()), 0, 4 << 20).unwrap();
    pool.inject_missing_ordering(true);
    // A stream the library is never told of: freed on, then destroyed. The next stream made
    // gets its handle, which shows it gone; its chunk goes to that stream, which skips waiting
    // on the event the old stream's free recorded.
    let old = platform.stream_create(0).unwrap();
    let first = pool.allocate(4 << 20, old).unwrap();
    pool.deallocate(first, 4 << 20, old).unwrap();
    platform.stream_destroy(old).unwrap();
    let before = races().len();
    let new = platform.stream_create(0).unwrap();
    let second = pool.allocate(4 << 20, new).unwrap();
    assert_eq!(second, first);
    assert_eq!(pool.usage().streams, 1, "the old stream's state went: {:?}", pool.usage());
    let reports = races();
    assert_eq!(reports.len(), before + 1, "{reports:?}");
    assert!(reports[before].contains("stream-ordering race"), "{}", reports[before]);
    pool.deallocate(second, 4 << 20, new).unwrap();
    platform.stream_destroy(new).unwrap();
}
