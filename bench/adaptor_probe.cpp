// What the statistics adaptor adds over the bare pool beneath it, measured as the benchmark
// does (bench::added_per_allocation), for comparing builds of the library on one host
// (scripts/gpu-compare-builds.sh). SAMPLES=n timed samples after one warm-up (default 9);
// AA=1 compares the pool with itself, which must give about 0. Prints the medians as
// "pair <ns> random <ns>".
#include "rmm.h"
#include "workloads.hpp"

namespace {

void ok(rmmError_t status, const char* what) {
  if (status != RMM_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, (int)status);
    std::exit(1);
  }
}

struct Resource {
  rmmResource_t handle;
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    ok(rmmResourceAllocate(handle, &p, bytes, stream), "rmmResourceAllocate");
    return p;
  }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) {
    ok(rmmResourceDeallocate(handle, p, bytes, stream), "rmmResourceDeallocate");
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  rmmResource_t cuda, pool, stats;
  ok(rmmCudaResourceCreate(&cuda), "rmmCudaResourceCreate");
  ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
  ok(rmmStatisticsAdaptorCreate(&stats, pool), "rmmStatisticsAdaptorCreate");
  Resource bare{pool}, adapted{std::getenv("AA") ? pool : stats};
  int samples = std::getenv("SAMPLES") ? std::atoi(std::getenv("SAMPLES")) : 9;
  std::vector<double> pair, random;
  bench::Pinned pinned;
  for (int i = 0; i <= samples; ++i) {
    bench::PairSteps<Resource> bare_pairs{bare, 256, 200000}, adapted_pairs{adapted, 256, 200000};
    double p = bench::added_per_allocation(bare_pairs, adapted_pairs, 200000);
    bench::RandomSteps<Resource> bare_random(bare, 20000, 1 << 20, 0), adapted_random(adapted, 20000, 1 << 20, 0);
    double r = bench::added_per_allocation(bare_random, adapted_random, 20000);
    if (i == 0) continue;  // warm-up
    pair.push_back(p);
    random.push_back(r);
  }
  std::printf("pair %.2f random %.2f\n", median(pair), median(random));
  return 0;
}
