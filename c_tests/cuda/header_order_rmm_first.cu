// rmm.h before cuda_runtime.h: both declare cudaStream_t, identically.
#include "rmm.h"
#include <cuda_runtime.h>
#include "rmm.h"

#include <type_traits>

static_assert(std::is_same<cudaStream_t, CUstream_st *>::value, "one cudaStream_t type");

__global__ void touch(int *data) { data[threadIdx.x] = static_cast<int>(threadIdx.x); }

// Allocates through rmm on a runtime stream and runs a kernel on it; 0 on success.
int header_order_rmm_first() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  int *data = nullptr;
  if (rmmInitialize(nullptr) != RMM_SUCCESS) return 9;  // the legacy calls need it
  if (RMM_ALLOC(&data, 32 * sizeof(int), stream) != RMM_SUCCESS) return 2;
  touch<<<1, 32, 0, stream>>>(data);
  int host[32] = {0};
  if (cudaMemcpyAsync(host, data, sizeof host, cudaMemcpyDeviceToHost, stream) != cudaSuccess) return 3;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 4;
  for (int i = 0; i < 32; ++i) {
    if (host[i] != i) return 5;
  }
  if (RMM_FREE(data, stream) != RMM_SUCCESS) return 6;
  if (rmmStreamSynchronize(stream) != RMM_SUCCESS) return 7;
  if (rmmFinalize() != RMM_SUCCESS) return 10;
  return cudaStreamDestroy(stream) == cudaSuccess ? 0 : 8;
}
