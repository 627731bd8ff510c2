// Compares builds of the library on one host (scripts/gpu-compare-builds.sh), measuring as the
// benchmark does, each figure timed interleaved with what it is compared to:
//   pool_pair, legacy_pair  a 256 B allocate+free pair through rmmResourceAllocate on a pool,
//                           and through RMM_ALLOC/RMM_FREE with that pool as the current
//                           device's resource (ns per pair);
//   stats_pair, stats_random  what the statistics adaptor adds over the bare pool beneath it
//                           (bench::added_per_allocation) on pairs and on random_allocations;
//   threads_8               the benchmark's 8-thread churn on the pool, each thread on its own
//                           stream (ns per allocation, in aggregate);
//   tracking_pair, logging_pair  what the tracking adaptor (no call site, no stacks) or the
//                           logging adaptor (to a file in $TMPDIR) adds to pairs;
//   aligned_pair            what an aligned adaptor (4 KiB, threshold 0: every block shifted
//                           and recorded) adds to pairs;
//   fresh_stats_pair, fresh_limiting_pair, fresh_tracking_pair  what the statistics, limiting
//                           and tracking adaptors add to pairs when every sample runs on a
//                           thread of its own, new to them (a thread pool replacing threads);
//   stats_threads_8, limiting_threads_8, tracking_threads_8, logging_threads_8,
//   aligned_threads_8       what the statistics, a limiting (limit far above the churn's), the
//                           tracking, the logging or that aligned adaptor adds to that churn
//                           when all eight threads go through it (the same churn on the bare
//                           pool, in turn).
// SAMPLES=n timed samples after one warm-up (default 9); AA=1 compares the pool with itself
// in the adaptor figures, which must give about 0. Prints "name median name median ...".
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "rmm_rs_resource.hpp"

namespace {

using bench::ok;

// What `adapted` adds to 256-byte allocate+free pairs over `bare` (ns per allocation).
double added_on_pairs(bench::RmmRs& bare, bench::RmmRs& adapted) {
  bench::PairSteps<bench::RmmRs> bare_pairs{bare, 256, 200000}, adapted_pairs{adapted, 256, 200000};
  return bench::added_per_allocation(bare_pairs, adapted_pairs, 200000);
}

// `added_on_pairs` on a thread that has never used either resource, which ends afterwards.
double added_on_a_new_thread(bench::RmmRs& bare, bench::RmmRs& adapted) {
  double added = 0;
  std::thread([&] {
    bench::Pinned pinned;
    added = added_on_pairs(bare, adapted);
  }).join();
  return added;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  rmmResource_t cuda, pool, stats, limiting, tracking, logging, aligned, previous;
  ok(rmmCudaResourceCreate(&cuda), "rmmCudaResourceCreate");
  ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
  ok(rmmStatisticsAdaptorCreate(&stats, pool), "rmmStatisticsAdaptorCreate");
  ok(rmmLimitingAdaptorCreate(&limiting, pool, std::size_t{64} << 30), "rmmLimitingAdaptorCreate");
  ok(rmmTrackingAdaptorCreate(&tracking, pool, false), "rmmTrackingAdaptorCreate");
  std::string log_path = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/adaptor_probe.csv";
  ok(rmmLoggingAdaptorCreate(&logging, pool, log_path.c_str()), "rmmLoggingAdaptorCreate");
  ok(rmmAlignedAdaptorCreate(&aligned, pool, 4096, 0), "rmmAlignedAdaptorCreate");
  ok(rmmSetCurrentDeviceResource(pool, &previous), "rmmSetCurrentDeviceResource");
  bench::RmmRs bare{pool, nullptr}, adapted{std::getenv("AA") ? pool : stats, nullptr}, limited{limiting, nullptr},
      tracked{tracking, nullptr}, logged{logging, nullptr}, shifted{aligned, nullptr};
  bench::RmmRsLegacy legacy;
  int samples = std::getenv("SAMPLES") ? std::atoi(std::getenv("SAMPLES")) : 9;
  std::vector<double> pool_pair, legacy_pair, stats_pair, stats_random, threads_8, stats_threads_8, limiting_threads_8;
  std::vector<double> tracking_pair, tracking_threads_8, logging_pair, logging_threads_8, aligned_pair, aligned_threads_8;
  std::vector<double> fresh_stats_pair, fresh_limiting_pair, fresh_tracking_pair;
  std::optional<bench::Pinned> pinned;
  pinned.emplace();
  for (int i = 0; i <= samples; ++i) {
    bench::PairSteps<bench::RmmRs> resource_pairs{bare, 256, 200000};
    bench::PairSteps<bench::RmmRsLegacy> legacy_pairs{legacy, 256, 200000};
    auto [resource_ns, legacy_ns] = bench::interleaved(resource_pairs, legacy_pairs, 200000);
    double p = added_on_pairs(bare, adapted);
    bench::RandomSteps<bench::RmmRs> bare_random(bare, 20000, 1 << 20, 0), adapted_random(adapted, 20000, 1 << 20, 0);
    double r = bench::added_per_allocation(bare_random, adapted_random, 20000);
    double tp = added_on_pairs(bare, tracked);
    double lp = added_on_pairs(bare, logged);
    double ap = added_on_pairs(bare, shifted);
    if (i == 0) continue;  // warm-up
    pool_pair.push_back(resource_ns);
    legacy_pair.push_back(legacy_ns);
    stats_pair.push_back(p);
    stats_random.push_back(r);
    tracking_pair.push_back(tp);
    logging_pair.push_back(lp);
    aligned_pair.push_back(ap);
  }
  pinned.reset();  // threads_8's threads spread over the processors, each fresh sample pins its own
  for (int i = 0; i <= samples; ++i) {
    double s = added_on_a_new_thread(bare, adapted);
    double l = added_on_a_new_thread(bare, limited);
    double k = added_on_a_new_thread(bare, tracked);
    if (i == 0) continue;
    fresh_stats_pair.push_back(s);
    fresh_limiting_pair.push_back(l);
    fresh_tracking_pair.push_back(k);
  }
  for (int i = 0; i <= samples; ++i) {
    double t = bench::threaded(bare, 8, 20000, 0).ns_per_alloc;
    double s = bench::threaded(adapted, 8, 20000, 0).ns_per_alloc;
    double l = bench::threaded(limited, 8, 20000, 0).ns_per_alloc;
    double k = bench::threaded(tracked, 8, 20000, 0).ns_per_alloc;
    double g = bench::threaded(logged, 8, 20000, 0).ns_per_alloc;
    double a = bench::threaded(shifted, 8, 20000, 0).ns_per_alloc;
    if (i > 0) threads_8.push_back(t);
    if (i > 0) stats_threads_8.push_back(s - t);
    if (i > 0) limiting_threads_8.push_back(l - t);
    if (i > 0) tracking_threads_8.push_back(k - t);
    if (i > 0) logging_threads_8.push_back(g - t);
    if (i > 0) aligned_threads_8.push_back(a - t);
  }
  std::printf(
      "pool_pair %.2f legacy_pair %.2f stats_pair %.2f stats_random %.2f threads_8 %.2f stats_threads_8 %.2f "
      "limiting_threads_8 %.2f tracking_pair %.2f tracking_threads_8 %.2f logging_pair %.2f logging_threads_8 %.2f "
      "aligned_pair %.2f aligned_threads_8 %.2f fresh_stats_pair %.2f fresh_limiting_pair %.2f fresh_tracking_pair %.2f\n",
      median(pool_pair), median(legacy_pair), median(stats_pair), median(stats_random), median(threads_8),
      median(stats_threads_8), median(limiting_threads_8), median(tracking_pair), median(tracking_threads_8),
      median(logging_pair), median(logging_threads_8), median(aligned_pair), median(aligned_threads_8), median(fresh_stats_pair),
      median(fresh_limiting_pair), median(fresh_tracking_pair));
  ok(rmmSetCurrentDeviceResource(previous, nullptr), "rmmSetCurrentDeviceResource");
  ok(rmmResourceDestroy(logging), "rmmResourceDestroy");
  ok(rmmResourceDestroy(aligned), "rmmResourceDestroy");
  std::remove(log_path.c_str());
  return 0;
}
