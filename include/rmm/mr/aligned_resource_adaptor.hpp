/*
 * rmm/mr/aligned_resource_adaptor.hpp: RAPIDS RMM's aligned_resource_adaptor, an rmm-rs aligned
 * adaptor: allocations of at least `alignment_threshold` bytes are aligned to `alignment`.
 */
#ifndef RMM_MR_ALIGNED_RESOURCE_ADAPTOR_HPP
#define RMM_MR_ALIGNED_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

namespace rmm {
namespace mr {

class aligned_resource_adaptor : public rmm_rs_resource {
 public:
  static constexpr std::size_t default_alignment_threshold = 0;

  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit aligned_resource_adaptor(Upstream const &upstream, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT,
                                    std::size_t alignment_threshold = default_alignment_threshold)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              return rmmAlignedAdaptorCreate(out, up, alignment, alignment_threshold);
            },
            "rmmAlignedAdaptorCreate")),
        alignment_(alignment),
        threshold_(alignment_threshold) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// As rmm_rs_resource::allocate, where `alignment` may be up to the adaptor's alignment for
  /// requests of at least its threshold.
  void *allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    bool const aligned_here = is_supported_alignment(alignment) && alignment <= alignment_ && bytes >= threshold_;
    return rmm_rs_resource::allocate(stream, bytes, aligned_here ? CUDA_ALLOCATION_ALIGNMENT : alignment);
  }
  void *allocate_sync(std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    return allocate_sync_through(*this, bytes, alignment);
  }

 private:
  std::size_t alignment_;
  std::size_t threshold_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_ALIGNED_RESOURCE_ADAPTOR_HPP
