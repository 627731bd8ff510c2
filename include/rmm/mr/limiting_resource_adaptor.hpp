/*
 * rmm/mr/limiting_resource_adaptor.hpp: RAPIDS RMM's limiting_resource_adaptor, an rmm-rs
 * limiting adaptor: allocations past the limit are rmm::out_of_memory.
 */
#ifndef RMM_MR_LIMITING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_LIMITING_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

namespace rmm {
namespace mr {

class limiting_resource_adaptor : public rmm_rs_resource {
 public:
  /// rmm-rs counts each allocation rounded up to 256 bytes: `alignment` must be 256 (RAPIDS'
  /// default), anything else is rmm::logic_error.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  limiting_resource_adaptor(Upstream const &upstream, std::size_t allocation_limit,
                            std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              if (alignment != CUDA_ALLOCATION_ALIGNMENT) {
                throw logic_error("limiting_resource_adaptor: rmm-rs counts in 256-byte units (alignment 256)");
              }
              return rmmLimitingAdaptorCreate(out, up, allocation_limit);
            },
            "rmmLimitingAdaptorCreate")),
        limit_(allocation_limit) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }
  std::size_t get_allocated_bytes() const {
    std::size_t bytes = 0;
    check(rmmLimitingAdaptorGetAllocatedBytes(handle(), &bytes), "rmmLimitingAdaptorGetAllocatedBytes");
    return bytes;
  }
  std::size_t get_allocation_limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_LIMITING_RESOURCE_ADAPTOR_HPP
