/*
 * rmm/mr/managed_memory_resource.hpp: RAPIDS RMM's managed_memory_resource (cudaMallocManaged),
 * an rmm-rs managed resource: accessible from the device and the host.
 */
#ifndef RMM_MR_MANAGED_MEMORY_RESOURCE_HPP
#define RMM_MR_MANAGED_MEMORY_RESOURCE_HPP

#include "cuda_memory_resource.hpp"

namespace rmm {
namespace mr {

class managed_memory_resource : public rmm_rs_resource {
 public:
  managed_memory_resource()
      : managed_memory_resource(detail::instance_of_current_device<managed_memory_resource>(&rmmManagedResourceCreate, "rmmManagedResourceCreate")) {}
  managed_memory_resource(detail::shared_instance_tag, rmm_rs_resource shared) : rmm_rs_resource(std::move(shared)) {}
  friend void get_property(managed_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_MANAGED_MEMORY_RESOURCE_HPP
