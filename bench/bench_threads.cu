// Threads allocating at once (bench::thread_rows): rmm-rs's pool through the resource API and
// cudaMallocAsync. bench_threads_rapids.cu runs RAPIDS RMM's pool the same way. BENCH_ROUNDS
// (default 3) rounds, each with a new pool; ns per allocation in aggregate, median of the runs.
#include <rmm/rmm.h>

#include "rmm_rs_resource.hpp"
#include "workloads.hpp"

int main() {
  const int device = 0;
  bench::check_cuda(cudaSetDevice(device), "cudaSetDevice");
  rmmResource_t cuda, pool;
  bench::ok(rmmCudaResourceCreate(&cuda), "rmmCudaResourceCreate");
  for (int round = 0; round < bench::rounds(); ++round) {
    bench::ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
    bench::RmmRs a{pool, nullptr};
    bench::thread_rows("rmm-rs pool", a, device);
    bench::ok(rmmResourceDestroy(pool), "rmmResourceDestroy");
    bench::CudaMallocAsync cuda_async(device);
    bench::thread_rows("cudaMallocAsync", cuda_async, device);
  }
  bench::ok(rmmResourceDestroy(cuda), "rmmResourceDestroy");
  bench::print_timings();
  return 0;
}
