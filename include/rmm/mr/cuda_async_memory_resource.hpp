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
  /// The kinds of shareable handle the pool's memory can be exported as (RMM_HANDLE_TYPE_*).
  enum class allocation_handle_type : std::int32_t {
    none = 0,
    posix_file_descriptor = RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
    win32 = RMM_HANDLE_TYPE_WIN32,
    win32_kmt = RMM_HANDLE_TYPE_WIN32_KMT,
    fabric = RMM_HANDLE_TYPE_FABRIC
  };

  /// A pool starting with `initial_pool_size` bytes (default 0) that keeps up to
  /// `release_threshold` bytes (default: all it holds) across synchronizations, and whose
  /// memory can be exported as `export_handle_type` (default none; one the device cannot export
  /// is an rmm::logic_error). As in RAPIDS RMM, the pool's memory serves hardware
  /// decompression wherever the driver offers it (rmm::detail::hwdecompress::is_supported());
  /// `enable_hw_decompress` (an rmm-rs addition) says otherwise, and true where the driver has
  /// none is an rmm::logic_error.
  explicit cuda_async_memory_resource(std::optional<std::size_t> initial_pool_size = {},
                                      std::optional<std::size_t> release_threshold = {},
                                      std::optional<allocation_handle_type> export_handle_type = {},
                                      std::optional<bool> enable_hw_decompress = {})
      : rmm_rs_resource(create(
            [&](rmmResource_t *out) {
              auto const handle_types = static_cast<std::uint32_t>(export_handle_type.value_or(allocation_handle_type::none));
              bool const decompress = enable_hw_decompress.has_value() ? *enable_hw_decompress
                                                                       : rmm::detail::hwdecompress::is_supported();
              return rmmAsyncResourceCreateWithFlags(out, initial_pool_size.value_or(0), release_threshold.value_or(SIZE_MAX),
                                                     handle_types, decompress ? RMM_ASYNC_HW_DECOMPRESS : 0U);
            },
            "rmmAsyncResourceCreateWithFlags")) {}

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
