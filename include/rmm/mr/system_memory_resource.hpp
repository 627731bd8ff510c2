/*
 * rmm/mr/system_memory_resource.hpp: RAPIDS RMM's system_memory_resource: pageable host memory
 * from the system allocator, which the device reaches where the system has HMM or ATS
 * (is_system_memory_supported); an rmm-rs system resource.
 */
#ifndef RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP
#define RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP

#include "../detail/runtime_capabilities.hpp"
#include "cuda_memory_resource.hpp"

namespace rmm {
namespace mr {

namespace detail {
/// Whether `device` reaches pageable host memory (HMM or ATS), as rmm-rs finds it
/// (rmmDeviceSupports; on simulated devices, RMM_SIM_PAGEABLE_MEMORY_ACCESS).
inline bool is_system_memory_supported(cuda_device_id device) {
  return rmm::detail::rmm_rs_supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS, device.value());
}
}  // namespace detail

class system_memory_resource : public rmm_rs_resource {
 public:
  /// System memory for the current device. Every object made on a device shares one rmm-rs
  /// resource (they are equal). A device without pageable memory access: rmm::logic_error.
  system_memory_resource()
      : system_memory_resource(
            detail::instance_of_current_device<system_memory_resource>(&rmmSystemResourceCreate, "rmmSystemResourceCreate")) {}
  system_memory_resource(detail::shared_instance_tag, rmm_rs_resource shared) : rmm_rs_resource(std::move(shared)) {}
  friend void get_property(system_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::resource_with<system_memory_resource, cuda::mr::device_accessible, cuda::mr::host_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP
