/*
 * rmm/mr/cuda_async_managed_memory_resource.hpp: RAPIDS RMM's
 * cuda_async_managed_memory_resource (stream-ordered managed memory from the device's default
 * managed memory pool, CUDA 13), an rmm-rs cuda_async_managed resource.
 */
#ifndef RMM_MR_CUDA_ASYNC_MANAGED_MEMORY_RESOURCE_HPP
#define RMM_MR_CUDA_ASYNC_MANAGED_MEMORY_RESOURCE_HPP

#include "../detail/runtime_capabilities.hpp"
#include "cuda_memory_resource.hpp"

namespace rmm {
namespace mr {

class cuda_async_managed_memory_resource : public rmm_rs_resource {
 public:
  /// Managed memory of the current device's default managed pool. Every object made on a
  /// device shares one rmm-rs resource over that pool: they are equal and may free each
  /// other's memory. Where the driver (older than CUDA 13) or the device (no concurrent managed
  /// access) has no managed pools: rmm::logic_error.
  cuda_async_managed_memory_resource()
      : cuda_async_managed_memory_resource(detail::instance_of_current_device<cuda_async_managed_memory_resource>(
            &rmmAsyncManagedResourceCreate, "rmmAsyncManagedResourceCreate")) {}
  cuda_async_managed_memory_resource(detail::shared_instance_tag, rmm_rs_resource shared)
      : rmm_rs_resource(std::move(shared)) {}

  /// The device's default managed pool (the driver's: never destroy it).
  cudaMemPool_t pool_handle() const noexcept {
    void *pool = nullptr;
    (void)rmmAsyncResourceGetPool(handle(), &pool);
    return static_cast<cudaMemPool_t>(pool);
  }

  friend void get_property(cuda_async_managed_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<cuda_async_managed_memory_resource, cuda::mr::device_accessible,
                                      cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_ASYNC_MANAGED_MEMORY_RESOURCE_HPP
