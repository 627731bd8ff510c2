/*
 * rmm/detail/runtime_capabilities.hpp: RAPIDS RMM's queries of what the driver and device offer.
 * Those that rmm-rs's resources need are asked of rmm-rs (rmmDeviceSupports: the answer its
 * resources act on, simulated devices included); the others of the CUDA runtime (link libcudart
 * to use them).
 */
#ifndef RMM_DETAIL_RUNTIME_CAPABILITIES_HPP
#define RMM_DETAIL_RUNTIME_CAPABILITIES_HPP

#include "../cuda_device.hpp"

#include <cstdint>

/// The driver versions from which RAPIDS RMM offers hardware decompression and managed pools.
#ifndef RMM_MIN_HWDECOMPRESS_CUDA_VERSION
#define RMM_MIN_HWDECOMPRESS_CUDA_VERSION 12080
#endif
#ifndef RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION
#define RMM_MIN_ASYNC_MANAGED_ALLOC_CUDA_VERSION 13000
#endif

namespace rmm {
namespace detail {

/// Whether rmm-rs finds `capability` (RMM_CAPABILITY_*) on `device`; false when it cannot ask.
inline bool rmm_rs_supports(std::uint32_t capability, int device) {
  int supported = 0;
  return rmmDeviceSupports(&supported, capability, device) == RMM_SUCCESS && supported != 0;
}

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

/// Managed memory from memory pools (cuda_async_managed_memory_resource): a CUDA 13 driver
/// and a device with concurrent managed access, as rmm-rs finds them on the current device.
struct runtime_async_managed_alloc {
  static bool is_supported() { return rmm_rs_supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS, get_current_cuda_device().value()); }
};

/// Pools whose memory serves hardware decompression (a CUDA 12.8 driver), as rmm-rs finds them
/// on the current device.
struct hwdecompress {
  static bool is_supported() { return rmm_rs_supports(RMM_CAPABILITY_HW_DECOMPRESS, get_current_cuda_device().value()); }
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
