// RAPIDS RMM's pool (the librmm-cu13 wheel) as the benchmarks' allocator interface, for the
// *_rapids.cu programs.
#ifndef RMM_BENCH_RAPIDS_POOL_HPP
#define RMM_BENCH_RAPIDS_POOL_HPP

#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>

namespace bench {

struct RapidsPool {
  rmm::mr::pool_memory_resource* mr;
  void* allocate(size_t bytes, cudaStream_t stream) { return mr->allocate(cuda::stream_ref{stream}, bytes, 256); }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) { mr->deallocate(cuda::stream_ref{stream}, p, bytes, 256); }
  size_t reserved() { return mr->pool_size(); }
};

}  // namespace bench

#endif  // RMM_BENCH_RAPIDS_POOL_HPP
