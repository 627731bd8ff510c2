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
// One rmm-rs resource per device for each stateless RAPIDS kind (one per `Create` type), shared
// by every object of the kind made on that device: they are equal and may free each other's
// memory, as in RAPIDS RMM. The instances live as long as the process.
template <class Create>
rmm_rs_resource const &instance_of_current_device(Create create_call, const char *what) {
  static std::mutex lock;
  static auto *by_device = new std::map<int, rmm_rs_resource>();
  int const device = get_current_cuda_device().value();
  std::lock_guard<std::mutex> guard(lock);
  auto found = by_device->find(device);
  if (found == by_device->end()) {
    rmmResource_t handle = nullptr;
    check(create_call(&handle), what);
    found = by_device->emplace(device, rmm_rs_resource{handle}).first;
  }
  return found->second;
}
}  // namespace detail

/// Device memory of the device current at construction (cudaMalloc).
class cuda_memory_resource : public rmm_rs_resource {
 public:
  cuda_memory_resource()
      : rmm_rs_resource(detail::instance_of_current_device([](rmmResource_t *out) { return rmmCudaResourceCreate(out); },
                                                           "rmmCudaResourceCreate")) {}
};

static_assert(cuda::mr::resource_with<cuda_memory_resource, cuda::mr::device_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CUDA_MEMORY_RESOURCE_HPP
