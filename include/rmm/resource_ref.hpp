/*
 * rmm/resource_ref.hpp: RAPIDS RMM 26.x's names for references to memory resources, which are
 * CCCL's (cuda::mr::resource_ref and cuda::mr::synchronous_resource_ref). The RAPIDS-shaped
 * <rmm/...> headers of rmm-rs need CCCL 3.2 or later (<cuda/memory_resource>; the CUDA 13.0
 * toolkit's CCCL 3.0 is too old: the nvidia-cuda-cccl package or CCCL from GitHub) and the CUDA
 * runtime's headers; their resources are rmm-rs resources underneath (see rmm/mr/detail/rmm_rs_resource.hpp).
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

#if !defined(CCCL_VERSION) || CCCL_VERSION < 3002000
#error "the RAPIDS-shaped <rmm/...> headers need CCCL 3.2 or later (the CUDA 13.0 toolkit ships CCCL 3.0): put a newer CCCL first on the include path, e.g. the nvidia-cuda-cccl package's (scripts/fetch-cccl.sh)"
#endif

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
