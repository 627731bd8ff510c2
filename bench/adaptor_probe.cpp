// What the statistics adaptor adds over the bare pool beneath it, measured as the benchmark
// does (bench::added_per_allocation), for comparing builds of the library on one host
// (scripts/gpu-compare-builds.sh). SAMPLES=n timed samples after one warm-up (default 9);
// AA=1 compares the pool with itself, which must give about 0. Prints the medians as
// "pair <ns> random <ns>".
#include "rmm_rs_resource.hpp"

namespace {

using bench::ok;

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
  bench::RmmRs bare{pool, nullptr}, adapted{std::getenv("AA") ? pool : stats, nullptr};
  int samples = std::getenv("SAMPLES") ? std::atoi(std::getenv("SAMPLES")) : 9;
  std::vector<double> pair, random;
  bench::Pinned pinned;
  for (int i = 0; i <= samples; ++i) {
    bench::PairSteps<bench::RmmRs> bare_pairs{bare, 256, 200000}, adapted_pairs{adapted, 256, 200000};
    double p = bench::added_per_allocation(bare_pairs, adapted_pairs, 200000);
    bench::RandomSteps<bench::RmmRs> bare_random(bare, 20000, 1 << 20, 0), adapted_random(adapted, 20000, 1 << 20, 0);
    double r = bench::added_per_allocation(bare_random, adapted_random, 20000);
    if (i == 0) continue;  // warm-up
    pair.push_back(p);
    random.push_back(r);
  }
  std::printf("pair %.2f random %.2f\n", median(pair), median(random));
  return 0;
}
