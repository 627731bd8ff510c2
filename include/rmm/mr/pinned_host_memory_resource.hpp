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
      : pinned_host_memory_resource(detail::instance_of_current_device<pinned_host_memory_resource>(&rmmPinnedHostResourceCreate, "rmmPinnedHostResourceCreate")) {}
  pinned_host_memory_resource(detail::shared_instance_tag, rmm_rs_resource shared) : rmm_rs_resource(std::move(shared)) {}
  friend void get_property(pinned_host_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<pinned_host_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_PINNED_HOST_MEMORY_RESOURCE_HPP
