/*
 * rmm/mr/sam_headroom_memory_resource.hpp: RAPIDS RMM's sam_headroom_memory_resource: system
 * memory (see system_memory_resource.hpp) of which the driver is told to prefer the device for
 * as much as leaves `headroom` bytes of it free, and the host for the rest; an rmm-rs
 * sam_headroom resource.
 */
#ifndef RMM_MR_SAM_HEADROOM_MEMORY_RESOURCE_HPP
#define RMM_MR_SAM_HEADROOM_MEMORY_RESOURCE_HPP

#include "system_memory_resource.hpp"

namespace rmm {
namespace mr {

class sam_headroom_memory_resource : public rmm_rs_resource {
 public:
  /// System memory for the current device that keeps `headroom` bytes of it free. A device
  /// without pageable memory access, or a headroom above the device's memory: rmm::logic_error.
  explicit sam_headroom_memory_resource(std::size_t headroom)
      : rmm_rs_resource(create([&](rmmResource_t *out) { return rmmSamHeadroomResourceCreate(out, headroom); },
                               "rmmSamHeadroomResourceCreate")) {}
  friend void get_property(sam_headroom_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<sam_headroom_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_SAM_HEADROOM_MEMORY_RESOURCE_HPP
