/*
 * rmm/mr/cuda_async_memory_resource.hpp: RAPIDS RMM's cuda_async_memory_resource
 * (cudaMallocAsync over a memory pool of its own), an rmm-rs cuda_async resource.
 */
#ifndef RMM_MR_CUDA_ASYNC_MEMORY_RESOURCE_HPP
#define RMM_MR_CUDA_ASYNC_MEMORY_RESOURCE_HPP

#include "../detail/runtime_capabilities.hpp"
#include "detail/rmm_rs_resource.hpp"

#include <cstdint>
#include <optional>

namespace rmm {
namespace mr {

class cuda_async_memory_resource : public rmm_rs_resource {
 public:
  /// RAPIDS RMM's export handle kinds; rmm-rs's pools are not exportable, so any other than
  /// `none` is rmm::logic_error.
  enum class allocation_handle_type : std::int32_t { none = 0, posix_file_descriptor = 1, win32 = 2, win32_kmt = 4, fabric = 8 };

  /// A pool starting with `initial_pool_size` bytes (default 0) that keeps up to
  /// `release_threshold` bytes (default 0) across synchronizations.
  explicit cuda_async_memory_resource(std::optional<std::size_t> initial_pool_size = {},
                                      std::optional<std::size_t> release_threshold = {},
                                      std::optional<allocation_handle_type> export_handle_type = {})
      : rmm_rs_resource(create(
            [&](rmmResource_t *out) {
              if (export_handle_type.value_or(allocation_handle_type::none) != allocation_handle_type::none) {
                throw logic_error("cuda_async_memory_resource: rmm-rs does not export its pools");
              }
              return rmmAsyncResourceCreate(out, initial_pool_size.value_or(0), release_threshold.value_or(0));
            },
            "rmmAsyncResourceCreate")) {}

  /// The driver memory pool the resource allocates from; it keeps owning it.
  cudaMemPool_t pool_handle() const noexcept {
    void *pool = nullptr;
    (void)rmmAsyncResourceGetPool(handle(), &pool);
    return static_cast<cudaMemPool_t>(pool);
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_ASYNC_MEMORY_RESOURCE_HPP
