//! The adaptors from Rust, on simulated devices: exact figures, routing of frees that name
//! no resource through the adaptor a block was allocated through, threads, bad input.

mod common;

use common::{races, setup, stamp, stamped, Rng};
use rmm::error::{Error, ErrorKind};
use rmm::ownership::{records, Expected, Holder, StackRef};
use rmm::platform::{backend, simulator, Stream};
use rmm::resources::adaptors::{
    AlignedAdaptor, Counts, FailureCallbackAdaptor, LimitingAdaptor, LoggingAdaptor, PrefetchAdaptor, StatisticsAdaptor, TrackingAdaptor,
};
use rmm::resources::{BinningResource, DirectResource, MemoryResource, PoolResource};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn cuda() -> Arc<dyn MemoryResource> {
    Arc::new(DirectResource::cuda(0).unwrap())
}

fn pool() -> Arc<PoolResource> {
    Arc::new(PoolResource::new(cuda(), 8 << 20, 0).unwrap())
}

const S: Stream = Stream::DEFAULT;

#[test]
fn statistics_count_bytes_and_allocations_with_nested_scopes() {
    let _guard = setup();
    let stats = StatisticsAdaptor::new(pool());
    let a = stats.allocate(1000, S).unwrap();
    let b = stats.allocate(3000, S).unwrap();
    stats.deallocate(a, 1000, S).unwrap();
    let expected = Counts { current_bytes: 3000, peak_bytes: 4000, total_bytes: 4000, current_count: 1, peak_count: 2, total_count: 2 };
    assert_eq!(stats.counts(), expected);

    stats.push();
    assert_eq!(stats.counts(), Counts::default(), "a new scope starts at zero");
    let c = stats.allocate(500, S).unwrap();
    stats.deallocate(b, 3000, S).unwrap(); // allocated before the scope: goes negative here
    let inner = Counts { current_bytes: -2500, peak_bytes: 500, total_bytes: 500, current_count: 0, peak_count: 1, total_count: 1 };
    assert_eq!(stats.counts(), inner);
    stats.push();
    let d = stats.allocate(10_000, S).unwrap();
    stats.deallocate(d, 10_000, S).unwrap();
    let innermost = stats.pop().unwrap();
    assert_eq!((innermost.peak_bytes, innermost.current_bytes, innermost.total_count), (10_000, 0, 1));
    // RMM's merge: the parent's peak is at least its value when the child began plus the
    // child's peak (500 - 3000 + 10000 = 7500 > 500).
    let middle = stats.pop().unwrap();
    assert_eq!(
        middle,
        Counts { current_bytes: -2500, peak_bytes: 7500, total_bytes: 10_500, current_count: 0, peak_count: 1, total_count: 2 }
    );
    // The outer scope: peak max(4000, 3000 + 7500), counts peak max(2, 1 + 1).
    assert_eq!(
        stats.counts(),
        Counts { current_bytes: 500, peak_bytes: 10_500, total_bytes: 14_500, current_count: 1, peak_count: 2, total_count: 4 }
    );
    assert!(matches!(stats.pop().map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))), "no scope left to pop");
    stats.deallocate(c, 500, S).unwrap();
    assert_eq!(stats.counts().current_bytes, 0);
}

#[test]
fn frees_that_name_no_resource_go_through_the_stack_the_block_came_up() {
    let _guard = setup();
    let pool = pool();
    let stats = StatisticsAdaptor::new(pool.clone());
    let outer = StackRef::new(stats.clone());
    let ptr = records::allocate(outer.stack(), 4096, S, Holder::Caller).unwrap();
    assert_eq!(stats.counts().current_count, 1);
    let found = records::find(ptr).expect("recorded");
    assert_eq!((found.size, found.holder), (4096, Holder::Caller));
    assert!(rmm::ownership::Stack::same(&found.stack, outer.stack()));
    drop(found);

    records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    assert_eq!(stats.counts().current_count, 0, "the free went through the adaptor");
    assert!(records::free(ptr, S, Expected::ANY_OF_CALLERS).is_err(), "double free refused");

    // A live block keeps its stack alive after every reference is dropped; its free goes
    // through the adaptor, which is then let go of.
    let ptr = records::allocate(outer.stack(), 4096, S, Holder::Caller).unwrap();
    let watch = Arc::downgrade(&stats);
    drop(outer);
    drop(stats);
    let alive = watch.upgrade().expect("kept alive by its live block");
    assert_eq!(alive.counts().current_count, 1);
    drop(alive);
    records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    assert!(watch.upgrade().is_none(), "let go of after its last block was freed");
    assert_eq!(pool.usage().free, pool.usage().reserved);
    assert!(races().is_empty());
}

#[test]
fn adaptors_stack_over_binning_and_route_by_size() {
    let _guard = setup();
    let binning: Arc<dyn MemoryResource> = Arc::new(BinningResource::new(pool(), 8, 16).unwrap());
    let stats = StatisticsAdaptor::new(binning);
    let limiting = LimitingAdaptor::new(stats.clone(), 1 << 30).unwrap();
    let outer = StackRef::new(limiting.clone());
    let sizes = [100, 300, 5000, 70_000, 1 << 20];
    let ptrs: Vec<usize> = sizes.iter().map(|&size| records::allocate(outer.stack(), size, S, Holder::Caller).unwrap()).collect();
    assert_eq!(stats.counts().current_bytes, sizes.iter().sum::<usize>() as i64);
    for ptr in ptrs {
        records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    }
    assert_eq!(stats.counts().current_bytes, 0);
    assert_eq!(limiting.allocated_bytes(), 0);
}

#[test]
fn statistics_and_limiting_under_eight_threads() {
    let _guard = setup();
    let pool = pool();
    let stats = StatisticsAdaptor::new(pool);
    let limit = 4 << 20;
    let limiting = LimitingAdaptor::new(stats.clone(), limit).unwrap();
    let outer = StackRef::new(limiting.clone());
    let refused = AtomicUsize::new(0);
    let made = AtomicUsize::new(0);
    // What the threads hold, counted after an allocation returns and before a free starts:
    // never more than the adaptor has handed out, so never more than the limit.
    let live = AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::channel::<(usize, usize)>();
    let receiver = std::sync::Mutex::new(receiver);
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            let (outer, sender, receiver, refused, made, limiting, live) =
                (&outer, sender.clone(), &receiver, &refused, &made, &limiting, &live);
            scope.spawn(move || {
                let mut rng = Rng(t + 1);
                for _ in 0..400 {
                    let size = 256 * (1 + rng.below(256) as usize);
                    match records::allocate(outer.stack(), size, S, Holder::Caller) {
                        Ok(ptr) => {
                            made.fetch_add(1, Ordering::Relaxed);
                            assert!(live.fetch_add(size, Ordering::SeqCst) + size <= limit, "more than the limit live");
                            assert!(limiting.allocated_bytes() <= limit);
                            sender.send((ptr, size)).unwrap();
                        }
                        Err(e) if e.is_out_of_memory() => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                    // Free something another thread allocated, now and then.
                    if rng.below(2) == 0 {
                        if let Ok((ptr, size)) = receiver.lock().unwrap().try_recv() {
                            live.fetch_sub(size, Ordering::SeqCst);
                            records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
                        }
                    }
                }
            });
        }
    });
    drop(sender);
    for (ptr, _) in receiver.into_inner().unwrap().try_iter() {
        records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    }
    let counts = stats.counts();
    assert_eq!((counts.current_bytes, counts.current_count), (0, 0));
    assert_eq!(counts.total_count as usize, made.load(Ordering::Relaxed));
    assert!(counts.peak_bytes as usize <= limit && counts.peak_bytes > 0);
    assert_eq!(limiting.allocated_bytes(), 0);
    assert!(refused.load(Ordering::Relaxed) > 0, "the 4 MiB limit was reached");
}

/// Eight threads hold their blocks at once: the peak the shards estimate is never above the
/// true peak and falls short of it by less than the publishing bound per other thread, and
/// current and total figures are exact once the threads are done.
#[test]
fn statistics_peak_under_eight_threads_is_within_the_stated_bound() {
    let _guard = setup();
    let stats = StatisticsAdaptor::new(pool());
    // A second thread first, so that all eight count in shards.
    std::thread::scope(|scope| {
        scope.spawn(|| stats.deallocate(stats.allocate(256, S).unwrap(), 256, S).unwrap());
    });
    let (threads, blocks, size) = (8usize, 150usize, 64usize << 10);
    let all_holding = std::sync::Barrier::new(threads);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let held: Vec<usize> = (0..blocks).map(|_| stats.allocate(size, S).unwrap()).collect();
                all_holding.wait();
                for ptr in held {
                    stats.deallocate(ptr, size, S).unwrap();
                }
            });
        }
    });
    let c = stats.counts();
    let (publish_bytes, publish_count) = StatisticsAdaptor::peak_shortfall_per_thread();
    let (true_bytes, true_count) = ((threads * blocks * size) as i64, (threads * blocks) as i64);
    assert_eq!((c.current_bytes, c.current_count), (0, 0));
    assert_eq!((c.total_bytes, c.total_count), (true_bytes + 256, true_count + 1));
    let others = (threads - 1) as i64;
    assert!(c.peak_bytes <= true_bytes && c.peak_bytes > true_bytes - others * publish_bytes, "{c:?}");
    assert!(c.peak_count <= true_count && c.peak_count > true_count - others * publish_count, "{c:?}");
}

/// rmm.h states the peak's bound in words; they must name the constants.
#[test]
fn the_header_states_the_statistics_peak_bound() {
    let (publish_bytes, publish_count) = StatisticsAdaptor::peak_shortfall_per_thread();
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/rmm.h")).unwrap();
    let stated = format!("less than {} MiB and {} allocations per other thread", publish_bytes >> 20, publish_count);
    assert!(header.replace("\n// ", " ").contains(&stated), "rmm.h should say: {stated}");
}

/// The statistics adaptor counts with plain stores while one thread allocates and goes over to
/// atomics when a second one does: figures stay exact across the change, including blocks
/// allocated before it and freed after it by the other thread.
#[test]
fn statistics_stay_exact_when_a_second_thread_arrives() {
    let _guard = setup();
    let stats = StatisticsAdaptor::new(pool());
    let first: Vec<usize> = (0..10).map(|_| stats.allocate(1000, S).unwrap()).collect();
    stats.deallocate(first[0], 1000, S).unwrap();
    let c = stats.counts();
    assert_eq!((c.current_bytes, c.current_count, c.peak_bytes, c.total_count), (9000, 9, 10_000, 10));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Frees what the first thread allocated, and allocates on top of it.
            for &ptr in &first[1..5] {
                stats.deallocate(ptr, 1000, S).unwrap();
            }
            let more: Vec<usize> = (0..8).map(|_| stats.allocate(2000, S).unwrap()).collect();
            let c = stats.counts();
            assert_eq!((c.current_bytes, c.current_count), (5000 + 16_000, 13));
            assert_eq!((c.peak_bytes, c.peak_count), (21_000, 13));
            for ptr in more {
                stats.deallocate(ptr, 2000, S).unwrap();
            }
        });
    });
    for &ptr in &first[5..] {
        stats.deallocate(ptr, 1000, S).unwrap();
    }
    let c = stats.counts();
    assert_eq!((c.current_bytes, c.current_count), (0, 0));
    assert_eq!((c.total_bytes, c.total_count), (10 * 1000 + 8 * 2000, 18));
    assert_eq!((c.peak_bytes, c.peak_count), (21_000, 13));
}

/// A thread pool that replaces its threads: each new thread takes the statistics' bias over
/// from the one that ended, and the figures stay exact, peaks included, across the owners.
#[test]
fn statistics_stay_exact_when_threads_replace_one_another() {
    let _guard = setup();
    let stats = StatisticsAdaptor::new(pool());
    let mut live: Vec<usize> = Vec::new();
    let mut peak = 0i64;
    for round in 0..6i64 {
        let on_thread = stats.clone();
        let mut held = std::mem::take(&mut live);
        // Each thread frees what the one before kept, allocates more, and keeps some.
        live = std::thread::spawn(move || {
            let stats = on_thread;
            let freed = held.len() / 2;
            for ptr in held.drain(..freed) {
                stats.deallocate(ptr, 4096, S).unwrap();
            }
            held.extend((0..(10 + round) as usize).map(|_| stats.allocate(4096, S).unwrap()));
            held
        })
        .join()
        .unwrap();
        peak = peak.max(live.len() as i64);
        let c = stats.counts();
        assert_eq!((c.current_bytes, c.current_count), (live.len() as i64 * 4096, live.len() as i64), "round {round}");
        assert_eq!((c.peak_bytes, c.peak_count), (peak * 4096, peak), "round {round}");
    }
    for ptr in live {
        stats.deallocate(ptr, 4096, S).unwrap();
    }
    let c = stats.counts();
    assert_eq!((c.current_bytes, c.current_count, c.total_count), (0, 0, (0..6).map(|r| 10 + r).sum::<i64>()));
}

/// A thread that counts on its own for a while takes the bias from one that still runs (after
/// a streak that doubles each time the bias is taken from a running thread), and the figures
/// stay exact.
#[test]
fn statistics_bias_moves_to_a_thread_that_counts_alone_for_a_while() {
    let _guard = setup();
    let stats = StatisticsAdaptor::new(pool());
    let kept = stats.allocate(4096, S).unwrap(); // this thread, which keeps running, gets the bias
    let biasing = platform_biases();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..2000 {
                stats.deallocate(stats.allocate(256, S).unwrap(), 256, S).unwrap();
            }
            assert_eq!(stats.biased_to_me(), biasing, "2000 pairs alone take the bias");
            let c = stats.counts();
            assert_eq!((c.current_bytes, c.current_count, c.total_count), (4096, 1, 2001));
        });
    });
    stats.deallocate(kept, 4096, S).unwrap();
    let c = stats.counts();
    assert_eq!((c.current_bytes, c.current_count, c.total_count, c.peak_bytes), (0, 0, 2001, 4096 + 256));
}

fn platform_biases() -> bool {
    rmm::sync::bias::barriers_available()
}

/// Budget another thread holds as credit is taken back before an allocation is refused: the
/// whole limit stays usable from any thread.
#[test]
fn limiting_takes_back_other_threads_credit_before_it_refuses() {
    let _guard = setup();
    let limit = 1 << 20;
    let limiting = LimitingAdaptor::new(cuda(), limit).unwrap();
    let (holding, done) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Leaves this thread with credit: what it freed, up to two slices.
            let blocks: Vec<usize> = (0..64).map(|_| limiting.allocate(4096, S).unwrap()).collect();
            for ptr in blocks {
                limiting.deallocate(ptr, 4096, S).unwrap();
            }
            holding.wait();
            done.wait();
        });
        holding.wait();
        let allocated_before = limiting.allocated_bytes();
        let all = limiting.allocate(limit, S);
        let over = all.as_ref().ok().map(|_| limiting.allocate(256, S));
        if let Ok(ptr) = all {
            limiting.deallocate(ptr, limit, S).unwrap();
        }
        done.wait();
        assert_eq!(allocated_before, 0);
        assert!(all.is_ok(), "the whole limit, with the other thread's credit taken back: {all:?}");
        assert!(over.unwrap().unwrap_err().is_out_of_memory());
    });
    assert_eq!(limiting.allocated_bytes(), 0);
}

#[test]
fn limiting_refuses_over_the_limit_with_the_limit_in_the_message() {
    let _guard = setup();
    assert!(matches!(LimitingAdaptor::new(cuda(), 0).map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))));
    let limiting = LimitingAdaptor::new(cuda(), 1000).unwrap();
    let a = limiting.allocate(700, S).unwrap(); // counts as 768
    assert_eq!(limiting.allocated_bytes(), 768);
    let refused = limiting.allocate(1, S).unwrap_err(); // 768 + 256 > 1000
    assert!(matches!(refused.kind(), ErrorKind::OutOfMemory { .. }) && refused.to_string().contains("1000"), "{refused}");
    assert_eq!(limiting.allocated_bytes(), 768, "a refused allocation is not counted");
    let b = limiting.allocate(200, S).unwrap_err();
    assert!(matches!(b.kind(), ErrorKind::OutOfMemory { .. }));
    limiting.deallocate(a, 700, S).unwrap();
    let c = limiting.allocate(1000, S).unwrap_err(); // 1024 > 1000
    assert!(matches!(c.kind(), ErrorKind::OutOfMemory { .. }));
    let d = limiting.allocate(768, S).unwrap();
    limiting.deallocate(d, 768, S).unwrap();
    assert_eq!(limiting.allocated_bytes(), 0);
}

#[test]
fn failure_callback_retries_while_it_returns_true() {
    let _guard = setup();
    let limiting = LimitingAdaptor::new(cuda(), 4096).unwrap();
    let held = limiting.allocate(4096, S).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let freer = {
        let (limiting, calls) = (limiting.clone(), calls.clone());
        move |bytes: usize| {
            // The first call spills the held block; later calls give up.
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            assert_eq!(bytes, if first { 1024 } else { 4096 });
            first && limiting.deallocate(held, 4096, S).is_ok()
        }
    };
    let adaptor = FailureCallbackAdaptor::new(limiting.clone(), Box::new(freer));
    let ptr = adaptor.allocate(1024, S).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!(matches!(adaptor.allocate(4096, S).map_err(Error::into_kind), Err(ErrorKind::OutOfMemory { .. })));
    assert_eq!(calls.load(Ordering::SeqCst), 2, "called again, declined, error returned");
    adaptor.deallocate(ptr, 1024, S).unwrap();
}

#[test]
fn tracking_lists_outstanding_allocations_with_call_sites() {
    let _guard = setup();
    let tracking = TrackingAdaptor::new(pool(), true);
    let outer = StackRef::new(tracking.clone());
    let file = c"kernel.cu";
    let ptr = rmm::sync::call_site::with(file.as_ptr(), 42, || records::allocate(outer.stack(), 5000, S, Holder::Caller)).unwrap();
    let other = records::allocate(outer.stack(), 100, S, Holder::Caller).unwrap();
    let outstanding = tracking.outstanding();
    assert_eq!(outstanding.len(), 2);
    let record = outstanding.iter().find(|a| a.ptr == ptr).unwrap();
    assert_eq!((record.size, record.line, record.file), (5000, 42, Some("kernel.cu")));
    assert!(record.backtrace.as_deref().is_some_and(|b| !b.is_empty()), "capture_stacks records a backtrace");
    assert_eq!(tracking.outstanding_bytes(), 5100);
    let report = tracking.report("now");
    assert!(report.contains("2 allocation(s), 5100 bytes") && report.contains("kernel.cu:42"), "{report}");
    records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    records::free(other, S, Expected::ANY_OF_CALLERS).unwrap();
    assert!(tracking.outstanding().is_empty());
    assert_eq!(tracking.report("now"), "");
}

/// A thread keeps the last file name it saw: alternating files, and a buffer that names
/// another file at the same address, must still be recorded as they were at each call.
#[test]
fn tracking_records_each_call_sites_own_file() {
    let _guard = setup();
    let tracking = TrackingAdaptor::new(pool(), false);
    let outer = StackRef::new(tracking.clone());
    let allocate_at = |file: *const std::ffi::c_char, line| {
        rmm::sync::call_site::with(file, line, || records::allocate(outer.stack(), 256, S, Holder::Caller)).unwrap()
    };
    let mut buffer = *b"first.cu\0";
    let mut expected = vec![
        (allocate_at(c"a.cu".as_ptr(), 1), "a.cu", 1),
        (allocate_at(c"b.cu".as_ptr(), 2), "b.cu", 2),
        (allocate_at(c"a.cu".as_ptr(), 3), "a.cu", 3),
        (allocate_at(buffer.as_ptr().cast(), 4), "first.cu", 4),
    ];
    buffer[..5].copy_from_slice(b"other");
    expected.push((allocate_at(buffer.as_ptr().cast(), 5), "other.cu", 5));
    expected.push((records::allocate(outer.stack(), 256, S, Holder::Caller).unwrap(), "", 0));
    let outstanding = tracking.outstanding();
    for (ptr, file, line) in &expected {
        let record = outstanding.iter().find(|a| a.ptr == *ptr).unwrap();
        assert_eq!((record.file.unwrap_or(""), record.line), (*file, *line));
    }
    for (ptr, ..) in expected {
        records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    }
}

#[test]
fn logging_writes_rmm_csv_from_many_threads() {
    let _guard = setup();
    let path = std::env::temp_dir().join(format!("rmm-log-{}.csv", std::process::id()));
    let logging = LoggingAdaptor::new(pool(), Some(path.to_str().unwrap())).unwrap();
    let outer = StackRef::new(logging.clone());
    let threads: Vec<u64> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let outer = &outer;
                scope.spawn(move || {
                    for i in 0..500 {
                        let size = 256 + 64 * ((t * 500 + i) % 50);
                        let ptr = records::allocate(outer.stack(), size, S, Holder::Caller).unwrap();
                        records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
                    }
                    rmm::platform::os_thread_id()
                })
            })
            .collect();
        threads.into_iter().map(|thread| thread.join().unwrap()).collect()
    });
    assert!(logging.allocate(1 << 40, S).is_err());
    logging.flush().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("Thread,Time,Action,Pointer,Size,Stream"));
    let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
    assert_eq!(rows.len(), 4001);
    let mut live = std::collections::HashSet::new();
    for row in &rows[..4000] {
        assert_eq!(row.len(), 6, "{row:?}");
        assert!(row[0].parse::<u64>().is_ok());
        assert!(row[1].len() == 15 && row[1].as_bytes()[2] == b':' && row[1].as_bytes()[8] == b'.', "{}", row[1]);
        assert_eq!(row[5], "0");
        // Lines of each block are in order: allocate before free.
        match row[2] {
            "allocate" => assert!(live.insert((row[0], row[3])), "{row:?}"),
            "free" => assert!(live.remove(&(row[0], row[3])), "{row:?}"),
            other => panic!("{other}"),
        }
    }
    assert_eq!(rows[4000][2..5], ["allocate failure", "(nil)", "1099511627776"]);
    // Each line shows the OS id of the thread that logged it: 1000 lines for each thread.
    for thread in threads {
        assert_eq!(rows[..4000].iter().filter(|row| row[0] == thread.to_string()).count(), 1000, "thread {thread}");
    }
    assert_eq!(rows[4000][0], rmm::platform::os_thread_id().to_string());
    drop(outer);
    let watch = Arc::downgrade(&logging);
    drop(logging);
    assert!(watch.upgrade().is_none(), "no live allocation: dropped, its file closed");
    std::fs::remove_file(&path).unwrap();

    assert!(matches!(LoggingAdaptor::new(cuda(), Some("/nonexistent-dir/log.csv")).map_err(Error::into_kind), Err(ErrorKind::Io(_))));
    std::env::remove_var("RMM_LOG_FILE");
    assert!(matches!(LoggingAdaptor::new(cuda(), None).map_err(Error::into_kind), Err(ErrorKind::InvalidArgument(_))));
}

/// The lines, frees and blocks left live of the log at `path`, whose every block is allocated
/// and freed in turn (asserted).
fn blocks_in_turn(path: &std::path::Path) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut live = std::collections::HashSet::new();
    let (mut rows, mut frees) = (0, 0);
    for line in text.lines().skip(1) {
        let row: Vec<&str> = line.split(',').collect();
        match row[2] {
            "allocate" => assert!(live.insert(row[3].to_string()), "{row:?} allocated while live"),
            "free" => {
                assert!(live.remove(row[3]), "{row:?} freed before it was allocated");
                frees += 1;
            }
            other => panic!("{other}"),
        }
        rows += 1;
    }
    (rows, frees, live.len())
}

/// Threads free what other threads allocated, while every thread logs into a buffer of its
/// own: in the file, each block's free still comes after its allocation, and a reused address
/// is allocated again only after it was freed.
#[test]
fn logging_keeps_each_block_s_free_after_its_allocation_across_threads() {
    let _guard = setup();
    let path = std::env::temp_dir().join(format!("rmm-log-cross-{}.csv", std::process::id()));
    let logging = LoggingAdaptor::new(pool(), Some(path.to_str().unwrap())).unwrap();
    let threads = 4;
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..threads).map(|_| std::sync::mpsc::channel::<(usize, usize)>()).unzip();
    std::thread::scope(|scope| {
        for (t, receiver) in receivers.into_iter().enumerate() {
            let (logging, next) = (&logging, senders[(t + 1) % threads].clone());
            scope.spawn(move || {
                for i in 0..700 {
                    let size = 256 * (1 + i % 7);
                    next.send((logging.allocate(size, S).unwrap(), size)).unwrap();
                    while let Ok((ptr, size)) = receiver.try_recv() {
                        logging.deallocate(ptr, size, S).unwrap();
                    }
                }
                drop(next);
                // What the previous thread still sends.
                for (ptr, size) in receiver.iter() {
                    logging.deallocate(ptr, size, S).unwrap();
                }
            });
        }
        drop(senders);
    });
    logging.flush().unwrap();
    let (rows, frees, live) = blocks_in_turn(&path);
    assert_eq!((rows, frees, live), (2 * threads * 700, threads * 700, 0));
    drop(logging);
    std::fs::remove_file(&path).unwrap();
}

/// The first thread to log reads the counter without the fence while it logs alone; another
/// thread's first event ends that, and once the other has been quiet for two anchor periods
/// (a few ms) the first takes it up again. Blocks go back and forth between the two threads
/// across each switch: in the file, every block is still allocated and freed in turn.
#[test]
fn logging_keeps_blocks_in_order_when_a_thread_starts_and_stops_logging_alone() {
    let _guard = setup();
    let path = std::env::temp_dir().join(format!("rmm-log-alone-{}.csv", std::process::id()));
    let logging = LoggingAdaptor::new(pool(), Some(path.to_str().unwrap())).unwrap();
    let counted = rmm::sync::clock::OrderedCounter::get().is_some();
    let (to_other, from_main) = std::sync::mpsc::channel::<usize>();
    let (to_main, from_other) = std::sync::mpsc::channel::<usize>();
    std::thread::scope(|scope| {
        let logging = &logging;
        scope.spawn(move || {
            for ptr in from_main {
                logging.deallocate(ptr, 256, S).unwrap();
                to_main.send(logging.allocate(256, S).unwrap()).unwrap();
            }
        });
        for round in 0..3 {
            // Numbered events (no counter to order them) have no fence to skip.
            let start = std::time::Instant::now();
            while counted && !logging.logs_alone() && start.elapsed() < std::time::Duration::from_secs(5) {
                logging.deallocate(logging.allocate(256, S).unwrap(), 256, S).unwrap();
            }
            assert_eq!(logging.logs_alone(), counted, "round {round}: the thread logging alone for long is the sole one");
            for _ in 0..300 {
                to_other.send(logging.allocate(256, S).unwrap()).unwrap();
                logging.deallocate(from_other.recv().unwrap(), 256, S).unwrap();
            }
            assert!(!logging.logs_alone(), "round {round}: another thread logged");
        }
        drop(to_other);
    });
    logging.flush().unwrap();
    let (_, frees, live) = blocks_in_turn(&path);
    assert!(frees >= 3 * 600 && live == 0, "{frees} frees, {live} blocks live");
    drop(logging);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn aligned_adaptor_aligns_large_allocations() {
    let _guard = setup();
    assert!(AlignedAdaptor::new(cuda(), 1000, 0).is_err());
    assert!(AlignedAdaptor::new(cuda(), 768, 0).is_err());
    let bumped = AlignedAdaptor::new(cuda(), 128, 0).expect("an alignment below 256 is 256");
    let small = bumped.allocate(1000, S).unwrap();
    assert_eq!(small % 256, 0);
    bumped.deallocate(small, 1000, S).unwrap();
    let aligned = AlignedAdaptor::new(pool(), 1 << 16, 1 << 20).unwrap();
    let outer = StackRef::new(aligned.clone());
    let mut ptrs = Vec::new();
    for i in 0..20 {
        let size = if i % 2 == 0 { (1 << 20) + 256 * i } else { 256 * i + 1 };
        let ptr = records::allocate(outer.stack(), size, S, Holder::Caller).unwrap();
        assert_eq!(ptr % if i % 2 == 0 { 1 << 16 } else { 256 }, 0);
        ptrs.push(ptr);
    }
    for ptr in ptrs {
        records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
    }
    assert!(aligned.deallocate(0x1000_0000, 1 << 20, S).is_err(), "a foreign pointer is refused");
}

/// Over a pool (or the expandable resource, whose parts are pools) the pool places aligned
/// blocks itself: the pool holds each block at its own size, with nothing padded, what lies
/// before an aligned block stays free for others, a wrong size or a second free is refused
/// and the block is still there. Over a resource that cannot align, the adaptor pads.
#[test]
fn aligned_blocks_over_a_pool_are_the_pools_own_with_nothing_padded() {
    let _guard = setup();
    let expandable = Arc::new(rmm::resources::expandable_resource(0, &Default::default()).unwrap());
    let upstreams: [(&str, Arc<dyn MemoryResource>); 3] =
        [("pool", Arc::new(PoolResource::new(cuda(), 0, 0).unwrap())), ("expandable", expandable), ("cuda", cuda())];
    for (name, upstream) in upstreams {
        let alignment = 1 << 16;
        let aligned = AlignedAdaptor::new(upstream.clone(), alignment, 0).unwrap();
        let mut rng = Rng(5);
        let mut live = Vec::new();
        for i in 0..200 {
            let size = 256 * (1 + rng.below(40) as usize) + i % 3;
            let ptr = aligned.allocate(size, S).unwrap();
            assert_eq!(ptr % alignment, 0, "{name}: {ptr:#x} is not aligned");
            stamp(ptr, size, i as u8);
            live.push((ptr, size, i as u8));
            if rng.below(3) == 0 {
                let (ptr, size, tag) = live.swap_remove(rng.below(live.len() as u64) as usize);
                assert!(stamped(ptr, size, tag), "{name}: {ptr:#x} was overwritten while live");
                aligned.deallocate(ptr, size, S).unwrap();
            }
        }
        let rounded: usize = live.iter().map(|&(_, size, _)| size.div_ceil(256) * 256).sum();
        if let Some(footprint) = upstream.footprint().filter(|_| name != "cuda") {
            assert_eq!(footprint.live, rounded, "{name}: the pool holds each block at its size, unpadded");
        }
        let (ptr, size, tag) = live.pop().unwrap();
        assert!(aligned.deallocate(ptr, size + 256, S).is_err(), "{name}: a wrong size is refused");
        assert!(aligned.deallocate(ptr + 256, size, S).is_err(), "{name}: an interior pointer is refused");
        assert!(stamped(ptr, size, tag), "{name}: a refused free leaves the block as it was");
        aligned.deallocate(ptr, size, S).unwrap();
        assert!(aligned.deallocate(ptr, size, S).is_err(), "{name}: a second free is refused");
        for (ptr, size, tag) in live {
            assert!(stamped(ptr, size, tag), "{name}: {ptr:#x} was overwritten while live");
            aligned.deallocate(ptr, size, S).unwrap();
        }
        // A block above the threshold freed with a size below it (which would pass through).
        let with_threshold = AlignedAdaptor::new(upstream.clone(), alignment, 4096).unwrap();
        let ptr = with_threshold.allocate(8192, S).unwrap();
        stamp(ptr, 8192, 7);
        assert!(with_threshold.deallocate(ptr, 100, S).is_err(), "{name}: a size below the threshold is refused");
        assert!(stamped(ptr, 8192, 7), "{name}: a refused free leaves the block as it was");
        with_threshold.deallocate(ptr, 8192, S).unwrap();
        if let Some(footprint) = upstream.footprint() {
            assert_eq!(footprint.live, 0, "{name}: every block went back");
        }
    }
}

/// Eight threads, each on a stream of its own, allocate through one aligned adaptor and free
/// blocks other threads allocated: every block is aligned and holds what its owner wrote, and
/// once all are freed the upstream has every byte back. Over a pool and the expandable
/// resource (blocks placed aligned by the pool, across streams) and over cuda (padded and
/// recorded).
#[test]
fn aligned_adaptor_keeps_its_blocks_exact_under_threads() {
    let _guard = setup();
    let expandable = Arc::new(rmm::resources::expandable_resource(0, &Default::default()).unwrap());
    let upstreams: [(&str, Arc<dyn MemoryResource>); 3] = [("pool", pool()), ("expandable", expandable), ("cuda", cuda())];
    for (name, upstream) in upstreams {
        let aligned = AlignedAdaptor::new(upstream.clone(), 1 << 12, 0).unwrap();
        let outer = StackRef::new(aligned.clone());
        let (sender, receiver) = std::sync::mpsc::channel::<(usize, usize, u8)>();
        let receiver = std::sync::Mutex::new(receiver);
        std::thread::scope(|scope| {
            for t in 0..8u64 {
                let (outer, sender, receiver) = (&outer, sender.clone(), &receiver);
                scope.spawn(move || {
                    let stream = backend().unwrap().stream_create(0).unwrap();
                    let mut rng = Rng(t + 11);
                    for i in 0..300 {
                        let size = 256 * (1 + rng.below(64) as usize);
                        let ptr = records::allocate(outer.stack(), size, stream, Holder::Caller).unwrap();
                        assert_eq!(ptr % (1 << 12), 0, "{name}: {ptr:#x} is not 4 KiB aligned");
                        let tag = (t as u8) << 4 | (i % 16) as u8;
                        stamp(ptr, size, tag);
                        sender.send((ptr, size, tag)).unwrap();
                        if rng.below(2) == 0 {
                            let taken = receiver.lock().unwrap().try_recv();
                            if let Ok((ptr, size, tag)) = taken {
                                assert!(stamped(ptr, size, tag), "{name}: {ptr:#x} was overwritten while live");
                                backend().unwrap().stream_synchronize(stream).unwrap();
                                records::free(ptr, stream, Expected::ANY_OF_CALLERS).unwrap();
                            }
                        }
                    }
                    backend().unwrap().stream_synchronize(stream).unwrap();
                });
            }
        });
        drop(sender);
        for (ptr, size, tag) in receiver.into_inner().unwrap().try_iter() {
            assert!(stamped(ptr, size, tag), "{name}: {ptr:#x} was overwritten while live");
            records::free(ptr, S, Expected::ANY_OF_CALLERS).unwrap();
        }
        assert_eq!(upstream.footprint().map(|footprint| footprint.live), Some(0), "{name}: every block went back");
        assert!(races().is_empty(), "{name}: {:?}", races());
    }
}

#[test]
fn prefetch_migrates_managed_allocations() {
    let _guard = setup();
    let before = simulator().unwrap().prefetched_bytes();
    let managed = PrefetchAdaptor::new(Arc::new(DirectResource::managed(0).unwrap()));
    let ptr = managed.allocate(1 << 16, S).unwrap();
    assert_eq!(simulator().unwrap().prefetched_bytes(), before + (1 << 16));
    managed.deallocate(ptr, 1 << 16, S).unwrap();
    let device = PrefetchAdaptor::new(cuda());
    let ptr = device.allocate(1 << 16, S).unwrap();
    assert_eq!(simulator().unwrap().prefetched_bytes(), before + (1 << 16), "device memory needs no migration");
    device.deallocate(ptr, 1 << 16, S).unwrap();
}

/// `rmmPrefetch`, RAPIDS' `rmm::prefetch` in C: managed memory migrates, other memory needs
/// none (success, nothing moved), a device that does not exist is refused.
#[test]
fn rmm_prefetch_migrates_managed_memory_and_leaves_the_rest() {
    use rmm::boundary::rmmPrefetch;
    use rmm::error::rmmError_t;
    let _guard = setup();
    let sim = simulator().unwrap();
    let before = sim.prefetched_bytes();
    let managed = DirectResource::managed(0).unwrap();
    let ptr = managed.allocate(1 << 16, S).unwrap();
    let null_stream = std::ptr::null_mut();
    assert_eq!(rmmPrefetch(ptr as *const std::ffi::c_void, 1 << 16, 0, null_stream), rmmError_t::RMM_SUCCESS);
    assert_eq!(sim.prefetched_bytes(), before + (1 << 16));
    let device = cuda();
    let on_device = device.allocate(4096, S).unwrap();
    assert_eq!(rmmPrefetch(on_device as *const std::ffi::c_void, 4096, 0, null_stream), rmmError_t::RMM_SUCCESS);
    assert_eq!(rmmPrefetch(std::ptr::null(), 4096, 0, null_stream), rmmError_t::RMM_SUCCESS);
    assert_eq!(rmmPrefetch(ptr as *const std::ffi::c_void, 0, 0, null_stream), rmmError_t::RMM_SUCCESS);
    assert_eq!(sim.prefetched_bytes(), before + (1 << 16), "nothing else moved");
    assert_eq!(rmmPrefetch(ptr as *const std::ffi::c_void, 1 << 16, -1, null_stream), rmmError_t::RMM_ERROR_INVALID_ARGUMENT);
    assert_eq!(rmmPrefetch(ptr as *const std::ffi::c_void, 1 << 16, 99, null_stream), rmmError_t::RMM_ERROR_INVALID_ARGUMENT);
    device.deallocate(on_device, 4096, S).unwrap();
    managed.deallocate(ptr, 1 << 16, S).unwrap();
}

#[test]
fn snapshot_describes_the_stack_and_every_block() {
    let _guard = setup();
    let pool = pool();
    let stats = StatisticsAdaptor::new(pool.clone());
    let stream = backend().unwrap().stream_create(0).unwrap();
    let a = stats.allocate(1000, S).unwrap();
    let b = stats.allocate(3 << 20, stream).unwrap();
    let snapshot = stats.snapshot();
    assert_eq!(snapshot["resource"], "statistics");
    assert_eq!(snapshot["current_bytes"], 1000 + (3 << 20));
    let pooled = &snapshot["upstream"];
    assert_eq!(pooled["resource"], "pool");
    assert_eq!(pooled["upstream"]["resource"], "cuda");
    let chunks = pooled["chunks"].as_array().unwrap();
    let reserved: u64 = chunks.iter().map(|c| c["size"].as_u64().unwrap()).sum();
    assert_eq!(pooled["reserved_bytes"].as_u64().unwrap(), reserved);
    let mut used = Vec::new();
    for chunk in chunks {
        let blocks = chunk["blocks"].as_array().unwrap();
        let covered: u64 = blocks.iter().map(|b| b["size"].as_u64().unwrap()).sum();
        assert_eq!(covered, chunk["size"].as_u64().unwrap(), "blocks tile their chunk");
        used.extend(
            blocks
                .iter()
                .filter(|b| b["state"] == "used")
                .map(|b| (b["address"].as_str().unwrap().to_string(), b["requested"].as_u64().unwrap())),
        );
    }
    used.sort();
    let mut expected = vec![(format!("{a:#x}"), 1000), (format!("{b:#x}"), 3 << 20)];
    expected.sort();
    assert_eq!(used, expected);
    let free = pooled["free_bytes"].as_u64().unwrap();
    let largest = pooled["largest_free_block"].as_u64().unwrap();
    let free_space_fragmentation = pooled["free_space_fragmentation"].as_f64().unwrap();
    assert!((free_space_fragmentation - (1.0 - largest as f64 / free as f64)).abs() < 1e-9);
    let (reserved, used) = (pooled["reserved_bytes"].as_u64().unwrap(), pooled["used_bytes"].as_u64().unwrap());
    assert_eq!(used, (1000u64.div_ceil(256) * 256) + (3 << 20), "two blocks in use, rounded to 256 bytes");
    assert!((pooled["fragmentation"].as_f64().unwrap() - (1.0 - used as f64 / reserved as f64)).abs() < 1e-9);
    assert!(pooled["peak_used_bytes"].as_u64().unwrap() >= used && pooled["peak_reserved_bytes"].as_u64().unwrap() >= reserved);
    assert!(chunks.iter().any(|c| c["stream"] == "default") && chunks.iter().any(|c| c["stream"].is_u64()));
    stats.deallocate(a, 1000, S).unwrap();
    stats.deallocate(b, 3 << 20, stream).unwrap();
    backend().unwrap().stream_destroy(stream).unwrap();
}

#[test]
fn adaptor_stack_over_a_pool_against_the_shadow_model() {
    let _guard = setup();
    let pool = pool();
    let stats = StatisticsAdaptor::new(pool.clone());
    let outer: Arc<dyn MemoryResource> = LimitingAdaptor::new(stats.clone(), 256 << 20).unwrap();
    let streams: Vec<Stream> = (0..3).map(|_| backend().unwrap().stream_create(0).unwrap()).chain([S]).collect();
    let check = || {
        pool.check_invariants()?;
        let counts = stats.counts();
        if counts.current_bytes < 0 || counts.current_count < 0 || counts.peak_bytes < counts.current_bytes {
            return Err(format!("inconsistent counts {counts:?}"));
        }
        Ok(())
    };
    for seed in 1..=4 {
        common::shadow_workload(&outer, &check, &streams, 22, 64 << 20, seed, 1500);
        assert_eq!(stats.counts().current_count, 0);
    }
    for stream in streams.into_iter().filter(|s| *s != S) {
        backend().unwrap().stream_destroy(stream).unwrap();
    }
    assert!(races().is_empty(), "{:?}", races());
}

/// Each kind a spec can name builds under its own name: the registry's name is the one
/// `rmmResourceGetName`, logs and snapshots give (the resource says it itself).
#[test]
fn every_registered_kind_builds_from_a_spec_under_its_registered_name() {
    use rmm::resources::kinds::{Role, Type, KINDS};
    let _guard = setup();
    let log = std::env::temp_dir().join(format!("rmm-kinds-{}.csv", std::process::id()));
    for kind in KINDS.iter().filter(|kind| kind.build.is_some()) {
        let values: Vec<String> = kind
            .keys
            .iter()
            .filter_map(|key| match (key.ty, &key.default) {
                (Type::Path, _) => Some(format!("{}={}", key.name, log.display())),
                (_, None) => Some(format!("{}=4KiB", key.name)),
                _ => None,
            })
            .collect();
        let layer = match values.is_empty() {
            true => kind.name.to_string(),
            false => format!("{}:{}", kind.name, values.join(",")),
        };
        // A device resource stands alone; the others go over cuda (prefetch over managed).
        let spec = match (kind.role, kind.name) {
            (Role::Device, _) => layer,
            (_, "prefetch") => format!("{layer}+managed"),
            _ => format!("{layer}+cuda"),
        };
        let built = match rmm::ownership::spec::Spec::parse(&spec).and_then(|spec| spec.build_on(0)) {
            // System memory needs pageable memory access, which simulated devices lack unless
            // RMM_SIM_PAGEABLE_MEMORY_ACCESS=on (tests/pool_resources.rs builds it there).
            Err(e) if matches!(e.kind(), ErrorKind::NotSupported(_)) && matches!(kind.name, "system" | "sam_headroom") => continue,
            built => built.unwrap_or_else(|e| panic!("{spec}: {e}")),
        };
        assert_eq!(built.name(), kind.name, "{spec}");
    }
    let _ = std::fs::remove_file(log);
}

#[test]
fn aligned_adaptor_asks_rapids_sizes_of_an_upstream_that_does_not_align() {
    use rmm::resources::CallbackResource;
    use std::sync::Mutex;
    let _guard = setup();
    // An upstream at fixed fake addresses (never touched), noting each request's size.
    let asked = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(AtomicUsize::new(1 << 20));
    let (noted, bases) = (asked.clone(), next.clone());
    let upstream = CallbackResource::new(
        0,
        false,
        Box::new(move |bytes, _, _| {
            noted.lock().unwrap().push(bytes);
            Some(bases.fetch_add(1 << 20, Ordering::Relaxed) + 256)
        }),
        Box::new(|_, _, _, _| {}),
        None,
    )
    .unwrap();
    let aligned = AlignedAdaptor::new(Arc::new(upstream), 4096, 65536).unwrap();
    // Rounded to 256, plus the alignment less 256: 65536 -> 69376, 77800 -> 81664.
    for (bytes, upstream_bytes) in [(65536, 69376), (77800, 81664), (3, 3)] {
        let ptr = aligned.allocate(bytes, S).unwrap();
        assert_eq!(asked.lock().unwrap().pop(), Some(upstream_bytes), "upstream size for {bytes}");
        if bytes >= 65536 {
            assert_eq!(ptr % 4096, 0);
            assert!(aligned.deallocate(ptr, bytes + 256, S).is_err(), "another size is refused");
        }
        aligned.deallocate(ptr, bytes, S).unwrap();
    }
    // A per-call alignment the adaptor covers is served; a larger one goes to the upstream,
    // which places none.
    let ptr = aligned.allocate_aligned(70000, 2048, S).unwrap();
    assert_eq!(ptr % 4096, 0);
    aligned.deallocate_aligned(ptr, 70000, 2048, S).unwrap();
    let refused = aligned.allocate_aligned(70000, 8192, S).map_err(Error::into_kind);
    assert!(matches!(refused, Err(ErrorKind::NotSupported(_))), "{refused:?}");
}
