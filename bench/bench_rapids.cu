// RAPIDS RMM 26.10 (the librmm-cu13 wheel) on the same workloads as bench_rmm_rs.cu.
#include "workloads.hpp"

#include <functional>

#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

namespace {

template <class Resource>
struct Rapids {
  Resource* mr;
  std::function<size_t()> pool_size;
  void* allocate(size_t bytes, cudaStream_t stream) { return mr->allocate(cuda::stream_ref{stream}, bytes, 256); }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) { mr->deallocate(cuda::stream_ref{stream}, p, bytes, 256); }
  size_t reserved() { return pool_size ? pool_size() : 0; }
};

}  // namespace

int main() {
  int device = 0;
  bench::check_cuda(cudaSetDevice(device), "cudaSetDevice");
  for (int round = 0; round < bench::rounds(); ++round) {
    {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
      Rapids<rmm::mr::pool_memory_resource> a{&pool, [&] { return pool.pool_size(); }};
      bench::run_all("RAPIDS pool", a, false, device);
    }
    {
      rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
      rmm::mr::binning_memory_resource binning{pool, 8, 20};
      Rapids<rmm::mr::binning_memory_resource> a{&binning, [&] { return pool.pool_size(); }};
      bench::run_all("RAPIDS binning", a, false, device);
    }
    {
      rmm::mr::arena_memory_resource arena{rmm::mr::cuda_memory_resource{}};
      Rapids<rmm::mr::arena_memory_resource> a{&arena, {}};
      bench::run_all("RAPIDS arena", a, false, device);
    }
  }
  bench::print_timings();
  return 0;
}
