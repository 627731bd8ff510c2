// rmm-rs resources through the C API, next to cudaMalloc and cudaMallocAsync in the same run.
// Linked statically (librmm.a), so it never meets RAPIDS RMM's librmm.so.
#include "rmm_rs_resource.hpp"

using bench::ok;
using bench::RmmRs;

int main() {
  int device = 0;
  bench::use_device(device);

  // What a driver call on the free path costs, alone and with 8 threads at once.
  for (int threads : {1, 8}) {
    std::vector<cudaStream_t> streams(threads);
    std::vector<cudaEvent_t> events(threads);
    for (int t = 0; t < threads; ++t) {
      bench::check_cuda(cudaStreamCreate(&streams[t]), "cudaStreamCreate");
      bench::check_cuda(cudaEventCreateWithFlags(&events[t], cudaEventDisableTiming), "cudaEventCreate");
    }
    for (int which = 0; which < 2; ++which) {
      const int calls = 100000;
      auto start = bench::clock_type::now();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          unsigned long long id = 0;
          for (int i = 0; i < calls; ++i) {
            if (which == 0) cudaStreamGetId(streams[t], &id);
            else cudaEventRecord(events[t], streams[t]);
          }
        });
      }
      for (auto& th : pool) th.join();
      double ns = bench::ns_since(start) / calls;  // wall time per call on each thread
      std::fprintf(stderr, "driver cost: %s with %d thread(s): %.1f ns per call per thread\n",
                   which == 0 ? "cudaStreamGetId" : "cudaEventRecord", threads, ns);
    }
    for (int t = 0; t < threads; ++t) {
      cudaStreamDestroy(streams[t]);
      cudaEventDestroy(events[t]);
    }
  }

  bench::CudaMalloc cuda_malloc;
  bench::run_all("cudaMalloc", cuda_malloc, true, device);
  bench::CudaMallocAsync cuda_async(device);
  rmmResource_t cuda;
  ok(rmmCudaResourceCreate(&cuda), "cuda resource");
  for (int round = 0; round < bench::rounds(); ++round) {
    bench::run_all("cudaMallocAsync", cuda_async, false, device);
    auto run = [&](const char* name, rmmResource_t resource, rmmResource_t sized, bool short_list = false) {
      RmmRs a{resource, sized};
      bench::run_all(name, a, false, device, short_list);
      size_t released = 0;
      ok(rmmResourceRelease(resource, &released), "release");
      ok(rmmResourceDestroy(resource), "destroy");
    };
    rmmResource_t pool, binning_pool, binning, arena;
    ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "pool");
    run("rmm-rs pool", pool, pool);
    rmmResource_t expandable;
    if (rmmExpandableResourceCreate(&expandable, 0) == RMM_SUCCESS) run("rmm-rs expandable", expandable, expandable);
    // Pages of the device's granularity: the churn's footprint is bounded by the free bytes in
    // partly used pages, which smaller pages cut (the default page is 20 MiB on an 80 GiB GPU).
    rmmExpandableOptions_t small_pages{};
    small_pages.page_size = 2 << 20;
    if (rmmExpandableResourceCreateWithOptions(&expandable, &small_pages) == RMM_SUCCESS)
      run("rmm-rs expandable (2 MiB pages)", expandable, expandable);
    // RMM_ALLOC/RMM_FREE against rmmResourceAllocate/Deallocate on the same pool (the current
    // device's resource), timed interleaved: what the legacy entry points add.
    {
      rmmResource_t legacy_pool, previous;
      ok(rmmPoolResourceCreate(&legacy_pool, cuda, 0, 0), "pool for RMM_ALLOC");
      ok(rmmSetCurrentDeviceResource(legacy_pool, &previous), "rmmSetCurrentDeviceResource");
      RmmRs resource_api{legacy_pool, nullptr};
      bench::RmmRsLegacy legacy;
      for (int i = 0; i <= 20; ++i) {  // 20 samples a round; the first run is a warm-up
        bench::Pinned pinned;
        bench::PairSteps<RmmRs> resource_pairs{resource_api, 256, 200000};
        bench::PairSteps<bench::RmmRsLegacy> legacy_pairs{legacy, 256, 200000};
        auto [resource_ns, legacy_ns] = bench::interleaved(resource_pairs, legacy_pairs, 200000);
        if (i == 0) continue;
        bench::timings_of("interleaved_pair_256B", "rmm-rs pool: rmmResourceAllocate").ns.push_back(resource_ns);
        bench::timings_of("interleaved_pair_256B", "rmm-rs pool: RMM_ALLOC").ns.push_back(legacy_ns);
        bench::timings_of("interleaved_pair_256B", "ratio RMM_ALLOC / rmmResourceAllocate").ns.push_back(legacy_ns / resource_ns);
      }
      bench::run_all("rmm-rs RMM_ALLOC (pool)", legacy, false, device, true);
      ok(rmmSetCurrentDeviceResource(previous, nullptr), "rmmSetCurrentDeviceResource");
      ok(rmmResourceDestroy(previous), "destroy");
      ok(rmmResourceDestroy(legacy_pool), "destroy");
    }
    ok(rmmPoolResourceCreate(&binning_pool, cuda, 0, 0), "pool for binning");
    ok(rmmBinningResourceCreate(&binning, binning_pool, 8, 20), "binning");
    run("rmm-rs binning", binning, binning_pool);
    ok(rmmResourceDestroy(binning_pool), "destroy");
    ok(rmmArenaResourceCreate(&arena, cuda, 0), "arena");
    run("rmm-rs arena", arena, arena);
    // Each adaptor over a pool of its own: its cost is the difference to "rmm-rs pool" above.
    auto over_pool = [&](const char* name, auto create) {
      rmmResource_t adaptor_pool, adaptor;
      ok(rmmPoolResourceCreate(&adaptor_pool, cuda, 0, 0), "pool for an adaptor");
      ok(create(&adaptor, adaptor_pool), name);
      // What the adaptor adds: the same workload on the adaptor and on the bare pool beneath
      // it, interleaved in slices (see bench::added_per_allocation).
      RmmRs bare{adaptor_pool, nullptr}, adapted{adaptor, nullptr};
      for (int i = 0; i <= 20; ++i) {  // 20 samples a round; the first run is a warm-up
        double pair, random;
        {
          bench::Pinned pinned;
          bench::PairSteps<RmmRs> bare_pairs{bare, 256, 200000}, adapted_pairs{adapted, 256, 200000};
          pair = bench::added_per_allocation(bare_pairs, adapted_pairs, 200000);
          bench::RandomSteps<RmmRs> bare_random(bare, 20000, 1 << 20, 0), adapted_random(adapted, 20000, 1 << 20, 0);
          random = bench::added_per_allocation(bare_random, adapted_random, 20000);
        }
        // The threaded churn, all eight threads through the adaptor, against the bare pool
        // just before (unpinned: the threads spread over the processors).
        double threads_8 = bench::threaded(adapted, 8, 20000, 0).ns_per_alloc - bench::threaded(bare, 8, 20000, 0).ns_per_alloc;
        if (i == 0) continue;
        bench::timings_of("added_pair_256B", name).ns.push_back(pair);
        bench::timings_of("added_random_allocations", name).ns.push_back(random);
        bench::timings_of("added_threads_8", name).ns.push_back(threads_8);
      }
      run(name, adaptor, adaptor_pool, true);
      ok(rmmResourceDestroy(adaptor_pool), "destroy");
    };
    over_pool("rmm-rs statistics/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmStatisticsAdaptorCreate(out, up); });
    over_pool("rmm-rs logging/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmLoggingAdaptorCreate(out, up, "/tmp/rmm-bench-log.csv"); });
    over_pool("rmm-rs limiting/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmLimitingAdaptorCreate(out, up, SIZE_MAX); });
    over_pool("rmm-rs tracking/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmTrackingAdaptorCreate(out, up, false); });
    over_pool("rmm-rs failure_callback/pool", [](rmmResource_t* out, rmmResource_t up) {
      return rmmFailureCallbackAdaptorCreate(out, up, [](size_t, void*) { return false; }, nullptr);
    });
    over_pool("rmm-rs aligned/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmAlignedAdaptorCreate(out, up, 4096, 65536); });
    over_pool("rmm-rs prefetch/pool", [](rmmResource_t* out, rmmResource_t up) { return rmmPrefetchAdaptorCreate(out, up); });
    rmmResource_t async_resource;
    ok(rmmAsyncResourceCreate(&async_resource, 0, SIZE_MAX), "async");
    run("rmm-rs cuda_async", async_resource, nullptr);
  }
  ok(rmmResourceDestroy(cuda), "destroy");
  bench::print_timings();
  return 0;
}
