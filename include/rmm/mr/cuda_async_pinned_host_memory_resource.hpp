/*
 * rmm/mr/cuda_async_pinned_host_memory_resource.hpp: an rmm-rs cuda_async_pinned_host resource
 * (no RAPIDS class of this name): stream-ordered page-locked host memory from a driver memory
 * pool of its own located on the host (CUDA 12.6 and later, where the device offers it),
 * usable from the host and every device.
 */
#ifndef RMM_MR_CUDA_ASYNC_PINNED_HOST_MEMORY_RESOURCE_HPP
#define RMM_MR_CUDA_ASYNC_PINNED_HOST_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <cstdint>
#include <optional>

namespace rmm {
namespace mr {

class cuda_async_pinned_host_memory_resource : public rmm_rs_resource {
 public:
  /// A host pool reached through the current device, starting with `initial_pool_size` bytes
  /// (default 0) and keeping up to `release_threshold` bytes (default: all it holds) across
  /// synchronizations. Where the driver or device has no host pools: rmm::logic_error.
  explicit cuda_async_pinned_host_memory_resource(std::optional<std::size_t> initial_pool_size = {},
                                                  std::optional<std::size_t> release_threshold = {})
      : rmm_rs_resource(create(
            [&](rmmResource_t *out) {
              return rmmAsyncPinnedHostResourceCreate(out, initial_pool_size.value_or(0),
                                                      release_threshold.value_or(SIZE_MAX));
            },
            "rmmAsyncPinnedHostResourceCreate")) {}

  /// The driver memory pool the resource allocates from; it keeps owning it.
  cudaMemPool_t pool_handle() const noexcept {
    void *pool = nullptr;
    (void)rmmAsyncResourceGetPool(handle(), &pool);
    return static_cast<cudaMemPool_t>(pool);
  }

  friend void get_property(cuda_async_pinned_host_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<cuda_async_pinned_host_memory_resource, cuda::mr::device_accessible,
                                      cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_ASYNC_PINNED_HOST_MEMORY_RESOURCE_HPP
