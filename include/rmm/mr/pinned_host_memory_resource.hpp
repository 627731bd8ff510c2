/*
 * rmm/mr/pinned_host_memory_resource.hpp: RAPIDS RMM's pinned_host_memory_resource
 * (page-locked host memory, cudaMallocHost), an rmm-rs pinned_host resource: accessible from
 * the host and every device.
 */
#ifndef RMM_MR_PINNED_HOST_MEMORY_RESOURCE_HPP
#define RMM_MR_PINNED_HOST_MEMORY_RESOURCE_HPP

#include "../detail/aligned.hpp"
#include "cuda_memory_resource.hpp"

namespace rmm {
namespace mr {

class pinned_host_memory_resource : public rmm_rs_resource {
 public:
  pinned_host_memory_resource()
      : rmm_rs_resource(detail::instance_of_current_device(
            [](rmmResource_t *out) { return rmmPinnedHostResourceCreate(out); }, "rmmPinnedHostResourceCreate")) {}
  friend void get_property(pinned_host_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<pinned_host_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_PINNED_HOST_MEMORY_RESOURCE_HPP
