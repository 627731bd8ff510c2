/*
 * rmm/prefetch.hpp: rmm::prefetch, as RAPIDS RMM names it: migrates managed memory to a device
 * in the order of a stream (cudaMemPrefetchAsync); other memory is left as it is. Asks the
 * CUDA runtime (link libcudart).
 */
#ifndef RMM_PREFETCH_HPP
#define RMM_PREFETCH_HPP

#include "cuda_device.hpp"
#include "cuda_stream_view.hpp"

#include <cuda/std/span>

#include <cstddef>
#include <string>

namespace rmm {

inline void prefetch(void const *ptr, std::size_t size, cuda_device_id device, cuda_stream_view stream) {
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device.value();
  cudaError_t const status = cudaMemPrefetchAsync(ptr, size, location, 0, stream.value());
#else
  cudaError_t const status = cudaMemPrefetchAsync(ptr, size, device.value(), stream.value());
#endif
  // Memory that is not managed cannot be prefetched, and needs not be.
  if (status == cudaErrorInvalidValue) {
    (void)cudaGetLastError();
    return;
  }
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw cuda_error(std::string("rmm::prefetch: cudaMemPrefetchAsync failed: ") + cudaGetErrorName(status));
  }
}

template <typename T>
void prefetch(cuda::std::span<T const> data, cuda_device_id device, cuda_stream_view stream) {
  prefetch(data.data(), data.size_bytes(), device, stream);
}

}  // namespace rmm

#endif  // RMM_PREFETCH_HPP
