// rmmCallbackResourceCreate over the CUDA runtime's stream-ordered allocator: a pool whose
// chunks come from the caller's cudaMallocAsync/cudaFreeAsync callbacks hands out memory that
// kernels write and read; out of memory from the callback is RMM_ERROR_OUT_OF_MEMORY.
#include <atomic>

#include "cuda_test.cuh"

namespace {

struct Allocator {
  std::atomic<size_t> live{0};
  std::atomic<size_t> calls{0};
  size_t refuse_above{size_t{1} << 40};
};

void *allocate(size_t bytes, cudaStream_t stream, void *user_data) {
  auto *a = static_cast<Allocator *>(user_data);
  void *ptr = nullptr;
  if (bytes > a->refuse_above || cudaMallocAsync(&ptr, bytes, stream) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  a->live += bytes;
  a->calls += 1;
  return ptr;
}

void deallocate(void *ptr, size_t bytes, cudaStream_t stream, void *user_data) {
  auto *a = static_cast<Allocator *>(user_data);
  CUDA_CHECK(cudaFreeAsync(ptr, stream));
  a->live -= bytes;
}

}  // namespace

int main() {
  cuda_test_require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  Allocator a;
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  rmmResource_t upstream = nullptr, pool = nullptr;
  CHECK_OK(rmmCallbackResourceCreate(allocate, deallocate, &a, 0, &upstream));
  CHECK_OK(rmmPoolResourceCreate(&pool, upstream, 64 << 20, 0));
  CHECK(a.calls == 1 && a.live == (64u << 20));
  std::vector<void *> blocks;
  for (unsigned i = 0; i < 40; ++i) {
    void *ptr = nullptr;
    const size_t bytes = (size_t{1} << 20) * (1 + i % 7) + 4 * i;
    CHECK_OK(rmmResourceAllocate(pool, &ptr, bytes, stream));
    gpu_fill(ptr, bytes, i, stream);
    blocks.push_back(ptr);
  }
  CHECK(a.calls > 1);  // 40 blocks of up to 7 MiB outgrow the first chunk
  for (unsigned i = 0; i < 40; ++i) {
    const size_t bytes = (size_t{1} << 20) * (1 + i % 7) + 4 * i;
    CHECK(gpu_mismatches(blocks[i], bytes, i, stream) == 0);
    CHECK_OK(rmmFree(blocks[i], stream, __FILE__, __LINE__));
  }
  void *ptr = nullptr;
  a.refuse_above = 1 << 20;
  CHECK_RMM(rmmResourceAllocate(upstream, &ptr, 2 << 20, stream), RMM_ERROR_OUT_OF_MEMORY);
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(upstream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CHECK(a.live == 0);
  CUDA_CHECK(cudaStreamDestroy(stream));
  return rmm_test_finish("cuda callback resource");
}
