/*
 * rmm/mr/cuda_memory_resource.hpp: RAPIDS RMM's cuda_memory_resource (cudaMalloc), an rmm-rs
 * cuda resource.
 */
#ifndef RMM_MR_CUDA_MEMORY_RESOURCE_HPP
#define RMM_MR_CUDA_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <map>
#include <mutex>

namespace rmm {
namespace mr {

namespace detail {
struct shared_instance_tag {};

// One object per device for each stateless RAPIDS kind, whose copies are every object of the
// kind made on that device: they are equal and may free each other's memory, as in RAPIDS
// RMM. The instances live as long as the process.
template <class Kind>
Kind &instance_of_current_device(rmmError_t (*create)(rmmResource_t *), const char *what) {
  static std::mutex lock;
  static auto *by_device = new std::map<int, Kind>();
  int const device = get_current_cuda_device().value();
  std::lock_guard<std::mutex> guard(lock);
  auto found = by_device->find(device);
  if (found == by_device->end()) {
    rmmResource_t handle = nullptr;
    check_creation(create(&handle), what);
    found = by_device->emplace(device, Kind{shared_instance_tag{}, rmm_rs_resource{handle}}).first;
  }
  return found->second;
}
}  // namespace detail

/// Device memory of the device current at construction (cudaMalloc).
class cuda_memory_resource : public rmm_rs_resource {
 public:
  cuda_memory_resource() : cuda_memory_resource(of_current_device()) {}
  cuda_memory_resource(detail::shared_instance_tag, rmm_rs_resource shared) : rmm_rs_resource(std::move(shared)) {}

  /// The object every cuda_memory_resource made on the current device copies.
  static cuda_memory_resource &of_current_device() {
    return detail::instance_of_current_device<cuda_memory_resource>(&rmmCudaResourceCreate, "rmmCudaResourceCreate");
  }
};

static_assert(cuda::mr::resource_with<cuda_memory_resource, cuda::mr::device_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_MEMORY_RESOURCE_HPP
