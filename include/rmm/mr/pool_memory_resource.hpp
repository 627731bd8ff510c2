/*
 * rmm/mr/pool_memory_resource.hpp: RAPIDS RMM's pool_memory_resource, an rmm-rs pool (a
 * stream-ordered TLSF suballocator) over any device resource.
 */
#ifndef RMM_MR_POOL_MEMORY_RESOURCE_HPP
#define RMM_MR_POOL_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <optional>

namespace rmm {
namespace mr {

class pool_memory_resource : public rmm_rs_resource {
 public:
  /// A pool of `initial_pool_size` bytes from `upstream` that grows on demand up to
  /// `maximum_pool_size` (none: no limit).
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  pool_memory_resource(Upstream const &upstream, std::size_t initial_pool_size,
                       std::optional<std::size_t> maximum_pool_size = std::nullopt)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              check_sizes(initial_pool_size, maximum_pool_size);
              return rmmPoolResourceCreate(out, up, initial_pool_size, maximum_pool_size.value_or(0));
            },
            "rmmPoolResourceCreate")) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// The bytes the pool holds from its upstream.
  std::size_t pool_size() const noexcept {
    std::size_t size = 0;
    (void)rmmPoolResourceGetSize(handle(), &size);
    return size;
  }

 private:
  // RAPIDS RMM's preconditions: sizes in 256-byte units, the maximum not below the initial size.
  static void check_sizes(std::size_t initial, std::optional<std::size_t> maximum) {
    if (!is_aligned(initial, CUDA_ALLOCATION_ALIGNMENT)) {
      throw logic_error("pool_memory_resource: the initial pool size must be a multiple of 256 bytes");
    }
    if (maximum && !is_aligned(*maximum, CUDA_ALLOCATION_ALIGNMENT)) {
      throw logic_error("pool_memory_resource: the maximum pool size must be a multiple of 256 bytes");
    }
    if (maximum && *maximum < initial) {
      throw logic_error("pool_memory_resource: the maximum pool size is below the initial pool size");
    }
  }
};

static_assert(cuda::mr::resource_with<pool_memory_resource, cuda::mr::device_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_POOL_MEMORY_RESOURCE_HPP
