// RAPIDS RMM 26.10's pool (the librmm-cu13 wheel) under bench_threads.cu's threads.
#include "workloads.hpp"
#include "rapids_pool.hpp"

int main() {
  bench::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  for (int round = 0; round < bench::rounds(); ++round) {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
    bench::RapidsPool a{&pool};
    bench::thread_rows("RAPIDS pool", a, 0);
  }
  bench::print_timings();
  return 0;
}
