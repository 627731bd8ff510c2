/*
 * rmm/resource_ref.hpp: RAPIDS RMM 26.x's names for references to memory resources, which are
 * CCCL's (cuda::mr::resource_ref and cuda::mr::synchronous_resource_ref). The RAPIDS-shaped
 * <rmm/...> headers of rmm-rs need CCCL's <cuda/memory_resource> (CCCL 3.1 or later: the CUDA
 * 13 toolkit, or the nvidia-cuda-cccl package for a host compiler) and the CUDA runtime's
 * headers; their resources are rmm-rs resources underneath (see rmm/mr/detail/rmm_rs_resource.hpp).
 */
#ifndef RMM_RESOURCE_REF_HPP
#define RMM_RESOURCE_REF_HPP

#include "../rmm.h"

#if !defined(__CUDA_RUNTIME_API_H__)
#error "the RAPIDS-shaped <rmm/...> headers need the CUDA runtime's <cuda_runtime_api.h> on the include path"
#endif

#include "error.hpp"

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>

namespace rmm {

using device_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::device_accessible>;
using device_async_resource_ref = cuda::mr::resource_ref<cuda::mr::device_accessible>;
using host_resource_ref = cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible>;
using host_async_resource_ref = cuda::mr::resource_ref<cuda::mr::host_accessible>;
using host_device_resource_ref =
    cuda::mr::synchronous_resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;
using host_device_async_resource_ref =
    cuda::mr::resource_ref<cuda::mr::host_accessible, cuda::mr::device_accessible>;

/// A reference to `*resource`; rmm::logic_error for a null pointer.
template <class Resource>
device_async_resource_ref to_device_async_resource_ref_checked(Resource *resource) {
  if (resource == nullptr) throw logic_error("to_device_async_resource_ref_checked: null resource pointer");
  return device_async_resource_ref{*resource};
}

}  // namespace rmm

#endif  // RMM_RESOURCE_REF_HPP
