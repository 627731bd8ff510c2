/*
 * rmm/mr/cuda_async_view_memory_resource.hpp: RAPIDS RMM's cuda_async_view_memory_resource
 * (cudaMallocAsync over a memory pool the caller made and keeps), an rmm-rs cuda_async_view
 * resource.
 */
#ifndef RMM_MR_CUDA_ASYNC_VIEW_MEMORY_RESOURCE_HPP
#define RMM_MR_CUDA_ASYNC_VIEW_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

namespace rmm {
namespace mr {

class cuda_async_view_memory_resource : public rmm_rs_resource {
 public:
  /// Allocates from `pool_handle` on the current device, which it does not own: the pool must
  /// outlive the resource and its allocations. A null handle, an rmmResource_t, or a pool
  /// imported from another process (which allocates nothing) is an rmm::logic_error; so is a
  /// value that names no pool on simulated devices (the driver does not check one).
  cuda_async_view_memory_resource(cudaMemPool_t pool_handle)  // NOLINT: implicit, as in RAPIDS
      : rmm_rs_resource(create(
            [&](rmmResource_t *out) { return rmmAsyncViewResourceCreate(out, static_cast<void *>(pool_handle)); },
            "rmmAsyncViewResourceCreate")) {}

  /// The pool the resource allocates from (the caller's).
  cudaMemPool_t pool_handle() const noexcept {
    void *pool = nullptr;
    (void)rmmAsyncResourceGetPool(handle(), &pool);
    return static_cast<cudaMemPool_t>(pool);
  }
};

static_assert(cuda::mr::resource_with<cuda_async_view_memory_resource, cuda::mr::device_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_ASYNC_VIEW_MEMORY_RESOURCE_HPP
