/* The stand-in CUDA runtime of sim_cudart/cuda_runtime_api.h, over rmm's C API: copies and
 * synchronization go through the legacy default stream, which orders itself after the other
 * (blocking) streams as CUDA's does. */
#include "cuda_runtime_api.h"

#include <rmm.h>

static cudaError_t from_rmm(rmmError_t status) {
  switch (status) {
    case RMM_SUCCESS: return cudaSuccess;
    case RMM_ERROR_INVALID_ARGUMENT: return cudaErrorInvalidValue;
    case RMM_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    default: return cudaErrorUnknown;
  }
}

cudaError_t cudaStreamCreate(cudaStream_t *stream) { return from_rmm(rmmStreamCreate(stream)); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) { return from_rmm(rmmStreamDestroy(stream)); }
cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return from_rmm(rmmStreamSynchronize(stream)); }
cudaError_t cudaDeviceSynchronize(void) { return from_rmm(rmmStreamSynchronize(NULL)); }
cudaError_t cudaGetDeviceCount(int *count) { return from_rmm(rmmGetDeviceCount(count)); }
cudaError_t cudaGetDevice(int *device) { return from_rmm(rmmGetDevice(device)); }

cudaError_t cudaSetDevice(int device) {
  int count = 0;
  if (rmmGetDeviceCount(&count) != RMM_SUCCESS || device < 0 || device >= count) return cudaErrorInvalidDevice;
  return from_rmm(rmmSetDevice(device));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  rmmError_t status;
  if (kind > cudaMemcpyDefault) return cudaErrorInvalidValue;
  status = rmmMemcpyAsync(dst, src, count, NULL);
  if (status == RMM_SUCCESS) status = rmmStreamSynchronize(NULL);
  return from_rmm(status);
}

const char *cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    default: return "unknown error";
  }
}
