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
      : rmm_rs_resource(detail::instance_of_current_device(
            [](rmmResource_t *out) { return rmmManagedResourceCreate(out); }, "rmmManagedResourceCreate")) {}
  friend void get_property(managed_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<managed_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_MANAGED_MEMORY_RESOURCE_HPP
