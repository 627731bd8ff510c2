// A CUDA program that knows nothing of rmm: it allocates with cudaMalloc, cudaMallocAsync and
// cudaMallocPitch, computes on that memory and prints a checksum. Built twice (shared and
// static CUDA runtime) and run with and without LD_PRELOAD=librmm_preload.so by
// preload_check.sh: the checksums must match, and under the preload rmm's report must count
// the allocations.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t status_ = (call);                                                        \
    if (status_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

__global__ void fill(unsigned *data, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    data[i] = (unsigned)(i * 2654435761u) ^ seed;
}

__global__ void sum(const unsigned *data, size_t n, unsigned long long *total) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    local += data[i];
  atomicAdd(total, local);
}

int main() {
  const int rounds = 200;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  unsigned long long *total = nullptr;
  CUDA_CHECK(cudaMalloc(&total, sizeof *total));
  CUDA_CHECK(cudaMemset(total, 0, sizeof *total));
  size_t free_before = 0, device_total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_before, &device_total));
  int allocations = 1;
  for (int round = 0; round < rounds; ++round) {
    size_t n = 1000 + (size_t)round * 7919 % 300000;
    std::vector<unsigned *> blocks;
    for (int k = 0; k < 4; ++k) {
      unsigned *data = nullptr;
      if (k % 2 == 0) {
        CUDA_CHECK(cudaMalloc(&data, n * sizeof *data));
        fill<<<64, 256>>>(data, n, round * 4 + k);
        sum<<<64, 256>>>(data, n, total);
      } else {
        CUDA_CHECK(cudaMallocAsync(&data, n * sizeof *data, stream));
        fill<<<64, 256, 0, stream>>>(data, n, round * 4 + k);
        sum<<<64, 256, 0, stream>>>(data, n, total);
      }
      ++allocations;
      blocks.push_back(data);
    }
    unsigned *pitched = nullptr;
    size_t pitch = 0;
    CUDA_CHECK(cudaMallocPitch((void **)&pitched, &pitch, 1000 * sizeof(unsigned), 8));
    ++allocations;
    fill<<<8, 256>>>(pitched, pitch / sizeof(unsigned) * 8, round);
    CUDA_CHECK(cudaFree(pitched));
    CUDA_CHECK(cudaGetLastError());
    for (int k = 0; k < 4; ++k) {
      if (k % 2 == 0) CUDA_CHECK(cudaFree(blocks[k]));
      else CUDA_CHECK(cudaFreeAsync(blocks[k], stream));
    }
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  unsigned long long host_total = 0;
  CUDA_CHECK(cudaMemcpy(&host_total, total, sizeof host_total, cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaFree(total));
  CUDA_CHECK(cudaStreamDestroy(stream));
  std::printf("checksum %llu after %d allocations\n", host_total, allocations);
  return 0;
}
