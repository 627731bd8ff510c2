// RAPIDS RMM 26.10's pool (the librmm-cu13 wheel) under bench_threads.cu's threads.
#include "workloads.hpp"

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

namespace {

struct RapidsPool {
  rmm::mr::pool_memory_resource* mr;
  void* allocate(size_t bytes, cudaStream_t stream) { return mr->allocate(cuda::stream_ref{stream}, bytes, 256); }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) { mr->deallocate(cuda::stream_ref{stream}, p, bytes, 256); }
  size_t reserved() { return mr->pool_size(); }
};

}  // namespace

int main() {
  bench::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  for (int round = 0; round < bench::rounds(); ++round) {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
    RapidsPool a{&pool};
    bench::thread_rows("RAPIDS pool", a, 0);
  }
  bench::print_timings();
  return 0;
}
