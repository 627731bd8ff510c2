// Helpers of the CUDA tests: kernels that write and read memory rmm handed out, checked on
// the device (an error counter) and on the host (cudaMemcpy back), plus CUDA_CHECK.
#ifndef RMM_CUDA_TEST_CUH
#define RMM_CUDA_TEST_CUH

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "rmm.h"
#include "rmm_test.h"

#define CUDA_CHECK(call)                                                                  \
  do {                                                                                    \
    cudaError_t cuda_check_status_ = (call);                                              \
    if (cuda_check_status_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "%s:%d: FAILED: %s\n  CUDA error %d: %s\n", __FILE__, __LINE__, \
                   #call, static_cast<int>(cuda_check_status_),                           \
                   cudaGetErrorString(cuda_check_status_));                               \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

// The value word `i` of a buffer filled with `seed` holds.
__host__ __device__ inline unsigned pattern(size_t i, unsigned seed) {
  return (static_cast<unsigned>(i) * 2654435761u) ^ (seed * 40503u + 17u);
}

__global__ void fill_kernel(unsigned *data, size_t words, unsigned seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    data[i] = pattern(i, seed);
  }
}

__global__ void check_kernel(const unsigned *data, size_t words, unsigned seed,
                             unsigned long long *errors) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (data[i] != pattern(i, seed)) atomicAdd(errors, 1ULL);
  }
}

// Skips the test (exit 77) when fewer than `needed` GPUs are visible to the CUDA runtime.
inline void cuda_test_require_gpus(int needed) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count < needed) {
    std::printf("SKIP: needs %d GPU(s); cudaGetDeviceCount: %d (%s)\n", needed, count,
                cudaGetErrorString(status));
    std::exit(RMM_TEST_SKIP);
  }
}

// Launches the fill kernel over `bytes` of `ptr` on `stream`.
inline void gpu_fill(void *ptr, size_t bytes, unsigned seed, cudaStream_t stream) {
  const size_t words = bytes / sizeof(unsigned);
  fill_kernel<<<128, 256, 0, stream>>>(static_cast<unsigned *>(ptr), words, seed);
  CUDA_CHECK(cudaGetLastError());
}

// Counts, on the device, the words of `ptr` that do not hold the pattern of `seed`.
inline unsigned long long gpu_mismatches(const void *ptr, size_t bytes, unsigned seed,
                                         cudaStream_t stream) {
  const size_t words = bytes / sizeof(unsigned);
  unsigned long long *errors = nullptr;
  unsigned long long host_errors = ~0ULL;
  CUDA_CHECK(cudaMalloc(&errors, sizeof *errors));
  CUDA_CHECK(cudaMemsetAsync(errors, 0, sizeof *errors, stream));
  check_kernel<<<128, 256, 0, stream>>>(static_cast<const unsigned *>(ptr), words, seed, errors);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaMemcpyAsync(&host_errors, errors, sizeof host_errors, cudaMemcpyDeviceToHost,
                             stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFree(errors));
  return host_errors;
}

// Copies `bytes` of `ptr` back with cudaMemcpy and checks the pattern of `seed` on the host.
inline bool host_copy_matches(const void *ptr, size_t bytes, unsigned seed) {
  const size_t words = bytes / sizeof(unsigned);
  std::vector<unsigned> copy(words);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(copy.data(), ptr, words * sizeof(unsigned), cudaMemcpyDefault));
  for (size_t i = 0; i < words; ++i) {
    if (copy[i] != pattern(i, seed)) {
      std::fprintf(stderr, "word %zu of %p is %08x, expected %08x\n", i, ptr, copy[i],
                   pattern(i, seed));
      return false;
    }
  }
  return true;
}

// A kernel writes the buffer, another kernel reads it back, and the host checks a copy.
inline void write_and_verify(void *ptr, size_t bytes, unsigned seed, cudaStream_t stream) {
  CHECK(ptr != nullptr);
  gpu_fill(ptr, bytes, seed, stream);
  CHECK(gpu_mismatches(ptr, bytes, seed, stream) == 0);
  CHECK(host_copy_matches(ptr, bytes, seed));
}

// The kind of memory the CUDA runtime sees at `ptr`, and its device.
inline cudaMemoryType memory_type(const void *ptr, int *device = nullptr) {
  cudaPointerAttributes attributes;
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, ptr));
  if (device != nullptr) *device = attributes.device;
  return attributes.type;
}

#endif  // RMM_CUDA_TEST_CUH
