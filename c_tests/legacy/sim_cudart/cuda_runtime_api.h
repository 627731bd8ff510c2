/*
 * A test stand-in for the few CUDA runtime calls legacy RMM programs make (cudaStreamCreate,
 * cudaMemcpy, cudaGetDeviceCount ...), over rmm-rs's simulated devices, so that such programs
 * build and run unchanged in CI without the CUDA toolkit or a GPU. It is found as
 * <cuda_runtime_api.h> only by the legacy tests (their include path puts this folder first);
 * on a machine with CUDA they build against the real runtime instead.
 */
#ifndef RMM_TEST_SIM_CUDART_H
#define RMM_TEST_SIM_CUDART_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *cudaStream_t;

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorUnknown = 999
} cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
const char *cudaGetErrorString(cudaError_t error);

#ifdef __cplusplus
}
#endif

#endif /* RMM_TEST_SIM_CUDART_H */
