/*
 * rmm/mr/fixed_size_memory_resource.hpp: RAPIDS RMM's fixed_size_memory_resource, an rmm-rs
 * fixed-size resource over any device resource.
 */
#ifndef RMM_MR_FIXED_SIZE_MEMORY_RESOURCE_HPP
#define RMM_MR_FIXED_SIZE_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

namespace rmm {
namespace mr {

class fixed_size_memory_resource : public rmm_rs_resource {
 public:
  static constexpr std::size_t default_block_size = std::size_t{1} << 20;
  static constexpr std::size_t default_blocks_to_preallocate = 128;

  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit fixed_size_memory_resource(Upstream const &upstream, std::size_t block_size = default_block_size,
                                      std::size_t blocks_to_preallocate = default_blocks_to_preallocate)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              return rmmFixedSizeResourceCreate(out, up, block_size, blocks_to_preallocate);
            },
            "rmmFixedSizeResourceCreate")),
        block_size_(align_up(block_size, CUDA_ALLOCATION_ALIGNMENT)) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }
  std::size_t get_block_size() const noexcept { return block_size_; }

 private:
  std::size_t block_size_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_FIXED_SIZE_MEMORY_RESOURCE_HPP
