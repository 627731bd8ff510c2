/*
 * rmm/detail/runtime_capabilities.hpp: RAPIDS RMM's queries of what the driver and device offer,
 * asked of the CUDA runtime (link libcudart to use them).
 */
#ifndef RMM_DETAIL_RUNTIME_CAPABILITIES_HPP
#define RMM_DETAIL_RUNTIME_CAPABILITIES_HPP

#include "../cuda_device.hpp"

namespace rmm {
namespace detail {

inline bool device_attribute_is_set(cudaDeviceAttr attribute) {
  int value = 0;
  bool const answered = cudaDeviceGetAttribute(&value, attribute, get_current_cuda_device().value()) == cudaSuccess;
  if (!answered) (void)cudaGetLastError();
  return answered && value != 0;
}

/// cudaMallocAsync and memory pools.
struct runtime_async_alloc {
  static bool is_supported() {
    static bool const supported = device_attribute_is_set(cudaDevAttrMemoryPoolsSupported);
    return supported;
  }
};

/// Exporting pool memory with `handle_type`.
struct export_handle_type {
  static bool is_supported(cudaMemAllocationHandleType handle_type) {
    int types = 0;
    if (cudaDeviceGetAttribute(&types, cudaDevAttrMemoryPoolSupportedHandleTypes, get_current_cuda_device().value()) !=
        cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return (types & static_cast<int>(handle_type)) == static_cast<int>(handle_type);
  }
};

struct concurrent_managed_access {
  static bool is_supported() {
    static bool const supported = device_attribute_is_set(cudaDevAttrConcurrentManagedAccess);
    return supported;
  }
};

/// Managed memory from memory pools: not offered by rmm-rs's resources.
struct runtime_async_managed_alloc {
  static bool is_supported() { return false; }
};

/// Hardware decompression memory: not offered by rmm-rs's resources.
struct hwdecompress {
  static bool is_supported() { return false; }
};

struct device_integrated_memory {
  static bool is_supported() {
    static bool const integrated = device_attribute_is_set(cudaDevAttrIntegrated);
    return integrated;
  }
};

}  // namespace detail
}  // namespace rmm

#endif  // RMM_DETAIL_RUNTIME_CAPABILITIES_HPP
