/*
 * rmm/mr/system_memory_resource.hpp: RAPIDS RMM's system_memory_resource: host memory from the
 * system allocator, which the device reaches where the system has HMM or ATS
 * (is_system_memory_supported). In rmm-rs it is a callback resource over aligned host
 * allocation.
 */
#ifndef RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP
#define RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP

#include "../detail/runtime_capabilities.hpp"
#include "detail/rmm_rs_resource.hpp"

#include <cstdlib>

namespace rmm {
namespace mr {

namespace detail {
/// Whether `device` reaches pageable host memory (HMM or ATS). Asks the CUDA runtime.
inline bool is_system_memory_supported(cuda_device_id device) {
  cuda_set_device_raii on_device{device};
  return rmm::detail::device_attribute_is_set(cudaDevAttrPageableMemoryAccess);
}

struct system_allocation {
  void *allocate(cuda::stream_ref, std::size_t bytes, std::size_t alignment) {
    void *ptr = std::aligned_alloc(alignment, align_up(bytes, alignment));
    if (ptr == nullptr) throw out_of_memory("system_memory_resource: the system allocator had no memory");
    return ptr;
  }
  void deallocate(cuda::stream_ref stream, void *ptr, std::size_t, std::size_t) noexcept {
    // The device may still use the memory in the order of `stream`.
    (void)rmmStreamSynchronize(stream.get());
    std::free(ptr);
  }
  void *allocate_sync(std::size_t bytes, std::size_t alignment) { return allocate(cuda::stream_ref{cudaStream_t{}}, bytes, alignment); }
  void deallocate_sync(void *ptr, std::size_t bytes, std::size_t alignment) noexcept {
    deallocate(cuda::stream_ref{cudaStream_t{}}, ptr, bytes, alignment);
  }
  bool operator==(system_allocation const &) const noexcept { return true; }
  bool operator!=(system_allocation const &) const noexcept { return false; }
  friend void get_property(system_allocation const &, cuda::mr::device_accessible) noexcept {}
};
}  // namespace detail

class system_memory_resource : public rmm_rs_resource {
 public:
  system_memory_resource() : rmm_rs_resource(calling(detail::system_allocation{})) {}
  friend void get_property(system_memory_resource const &, cuda::mr::host_accessible) noexcept {}
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_SYSTEM_MEMORY_RESOURCE_HPP
