// Cross-stream reuse on a real GPU: a slow kernel on stream A writes a buffer, spins, then
// copies it out; the buffer is freed on A while that kernel still runs, and stream B at once
// allocates (getting the same memory, taken from A) and overwrites it. A's copy must still
// hold A's values: the resource has to make B wait for A. Run for pool, fixed-size, binning,
// arena and expandable, many iterations each, on streams announced to rmm-rs
// (rmmStreamRegister: B records A's event itself) and on streams it was not told of (A records
// it for takers once B asked, or B synchronizes the device). Only resources bounded to one
// block force B to take A's memory on unannounced streams: the others may grow instead.
#include "cuda_test.cuh"

namespace {

constexpr size_t kWords = 1 << 18;  // 1 MiB
constexpr size_t kBytes = kWords * sizeof(unsigned);
constexpr int kIterations = 200;

// Writes the pattern, spins ~`spin_cycles`, then copies the buffer to `result`. Another
// stream's write landing during the spin shows up in `result`.
__global__ void write_spin_copy(unsigned *buffer, unsigned *result, size_t words, unsigned seed,
                                long long spin_cycles) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  for (size_t i = first; i < words; i += stride) buffer[i] = pattern(i, seed);
  long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
  for (size_t i = first; i < words; i += stride) {
    result[i] = *static_cast<volatile unsigned *>(&buffer[i]);
  }
}

__global__ void overwrite(unsigned *buffer, size_t words) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    buffer[i] = 0xDEADBEEFu;
  }
}

int run(const char *name, rmmResource_t resource, bool bounded) {
  for (bool announced : {true, false}) {
    cudaStream_t a, b;
    CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    if (announced) {
      CHECK_OK(rmmStreamRegister(a));
      CHECK_OK(rmmStreamRegister(b));
    }
    unsigned *result = nullptr, *host = new unsigned[kWords];
    CUDA_CHECK(cudaMalloc(&result, kBytes));
    int reused = 0, corrupted = 0;
    for (int it = 0; it < kIterations; ++it) {
      void *p = nullptr, *q = nullptr;
      CHECK_OK(rmmResourceAllocate(resource, &p, kBytes, a));
      write_spin_copy<<<64, 256, 0, a>>>(static_cast<unsigned *>(p), result, kWords, it, 200000);
      CUDA_CHECK(cudaGetLastError());
      CHECK_OK(rmmResourceDeallocate(resource, p, kBytes, a));
      CHECK_OK(rmmResourceAllocate(resource, &q, kBytes, b));
      overwrite<<<64, 256, 0, b>>>(static_cast<unsigned *>(q), kWords);
      CUDA_CHECK(cudaGetLastError());
      reused += (p == q);
      CUDA_CHECK(cudaStreamSynchronize(a));
      CUDA_CHECK(cudaMemcpy(host, result, kBytes, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < kWords; ++i) {
        if (host[i] != pattern(i, it)) {
          ++corrupted;
          break;
        }
      }
      CHECK_OK(rmmResourceDeallocate(resource, q, kBytes, b));
      // Move the memory back to A for the next round (b's blocks are taken by a).
      CUDA_CHECK(cudaStreamSynchronize(b));
    }
    std::printf("%s, %s streams: %d iterations, B reused A's block %d times, %d corrupted results\n", name,
                announced ? "announced" : "unannounced", kIterations, reused, corrupted);
    CHECK(corrupted == 0);
    if (announced || bounded) CHECK(reused > kIterations / 2);
    CUDA_CHECK(cudaFree(result));
    delete[] host;
    CHECK_OK(rmmStreamUnregister(a));
    CHECK_OK(rmmStreamUnregister(b));
    CUDA_CHECK(cudaStreamDestroy(a));
    CUDA_CHECK(cudaStreamDestroy(b));
  }
  return 0;
}

}  // namespace

int main() {
  cuda_test_require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  rmmResource_t cuda, pool, fixed, binning_pool, binning, arena;
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  // The pool holds exactly one block's worth, so B can only get memory by taking A's.
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, kBytes, kBytes));
  run("pool", pool, true);
  CHECK_OK(rmmFixedSizeResourceCreate(&fixed, cuda, kBytes, 1));
  run("fixed_size", fixed, false);
  CHECK_OK(rmmPoolResourceCreate(&binning_pool, cuda, 0, 0));
  CHECK_OK(rmmBinningResourceCreate(&binning, binning_pool, 10, 20));
  run("binning", binning, false);
  CHECK_OK(rmmArenaResourceCreate(&arena, cuda, 0));
  run("arena", arena, false);
  for (rmmResource_t r : {pool, fixed, binning, binning_pool, arena, cuda}) CHECK_OK(rmmResourceDestroy(r));
  rmmResource_t expandable = nullptr;
  rmmError_t made = rmmExpandableResourceCreate(&expandable, 0);
  if (made == RMM_ERROR_NOT_SUPPORTED) {
    std::printf("expandable: this driver has no virtual-memory API\n");
  } else {
    CHECK_OK(made);
    run("expandable", expandable, false);
    CHECK_OK(rmmResourceDestroy(expandable));
  }
  return rmm_test_finish("cuda_stream_reuse");
}
