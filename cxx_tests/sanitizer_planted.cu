// Programs with one planted error each, for compute-sanitizer under the preload library and
// over a linked pool (scripts/gpu-sanitizer.sh). Each mode allocates with cudaMalloc (under
// LD_PRELOAD: from rmm-rs's pool), so what the sanitizer finds is what it sees inside pooled
// memory.
//
//   sanitizer_planted MODE       MODE: clean | overflow | use-after-free | race | sync | uninit
//
// clean            a kernel inside its blocks: no tool reports anything.
// overflow         a kernel writes one int past the end of a 1000-byte block (byte 1000, inside
//                  the pool's 1024-byte block and its chunk): memcheck reports it only when the
//                  pool registers its blocks with the sanitizer (NVTX), as a pool hides it.
// far-overflow     a kernel writes 64 MiB past a block, beyond any chunk: memcheck always sees it.
// use-after-free   a kernel writes to a block after cudaFree: memcheck, with the registration.
// race             threads of a block write and read shared memory without a barrier: racecheck.
// sync             __syncthreads in divergent code: synccheck.
// uninit           a kernel reads device memory nothing wrote: initcheck.
// stream-ordered   no error: a block from cudaMallocAsync written by a kernel that is still
//                  running when cudaFreeAsync on the same stream returns (a pool that told the
//                  sanitizer "freed" at the call would get a false report).
//
// Built with -DRMM_LINKED, the program links librmm and calls rmmCudaMalloc/rmmCudaFree (what
// the preload library's cudaMalloc/cudaFree are) on the stack RMM_ALLOC_CONF names.
//
// Exits 0 when the CUDA calls succeed (the tool's exit code says what it found), 1 otherwise.
#include <cuda_runtime.h>
#ifdef RMM_LINKED
#include <rmm.h>
#endif

#include <cstdio>
#include <cstring>

namespace {

__global__ void write_at(int *base, long index, int value) {
  if (threadIdx.x == 0 && blockIdx.x == 0) base[index] = value;
}

__global__ void late_write(int *base, int count, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  if (threadIdx.x < count) base[threadIdx.x] = 1;
}

__global__ void shared_race(int *out) {
  __shared__ int cell[64];
  cell[threadIdx.x % 64] = static_cast<int>(threadIdx.x);
  // No __syncthreads(): the read below races with the neighbour's write above.
  out[threadIdx.x] = cell[(threadIdx.x + 1) % 64];
}

__global__ void divergent_barrier(int *out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = static_cast<int>(threadIdx.x);
}

__global__ void copy(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

template <typename T>
cudaError_t allocate(T **ptr, size_t bytes) {
#ifdef RMM_LINKED
  return rmmCudaMalloc(reinterpret_cast<void **>(ptr), bytes) == RMM_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
#else
  return cudaMalloc(ptr, bytes);
#endif
}

cudaError_t release(void *ptr) {
#ifdef RMM_LINKED
  return rmmCudaFree(ptr) == RMM_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
#else
  return cudaFree(ptr);
#endif
}

int check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "sanitizer_planted: %s: %s\n", what, cudaGetErrorString(status));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // what it printed survives a crash
#ifdef RMM_LINKED
  // rmm-rs first, before the CUDA runtime has made a context current: the pool registers its
  // chunk with the device's context current all the same (compute-sanitizer answers "not
  // ready" to a registration without one).
  if (rmmConfigure(nullptr) != RMM_SUCCESS) {
    std::fprintf(stderr, "sanitizer_planted: rmmConfigure: %s\n", rmmGetLastErrorMessage());
    return 1;
  }
#endif
  // A neighbour first, so the planted block sits inside a chunk with memory after it.
  int *neighbour = nullptr, *block = nullptr;
  if (check(allocate(&neighbour, 4096), "cudaMalloc(neighbour)") || check(allocate(&block, 1000), "cudaMalloc(block)")) return 1;
  int *after = nullptr;
  if (check(allocate(&after, 4096), "cudaMalloc(after)")) return 1;
  if (check(cudaMemset(block, 0, 1000), "cudaMemset")) return 1;

  if (std::strcmp(mode, "clean") == 0) {
    write_at<<<1, 32>>>(block, 249, 7);
  } else if (std::strcmp(mode, "overflow") == 0) {
    write_at<<<1, 32>>>(block, 250, 7);
  } else if (std::strcmp(mode, "far-overflow") == 0) {
    write_at<<<1, 32>>>(block, 16L << 20, 7);
  } else if (std::strcmp(mode, "use-after-free") == 0) {
    if (check(release(block), "cudaFree(block)")) return 1;
    write_at<<<1, 32>>>(block, 10, 7);
    block = nullptr;
  } else if (std::strcmp(mode, "stream-ordered") == 0) {
    cudaStream_t stream = nullptr;
    int *late = nullptr;
    if (check(cudaStreamCreate(&stream), "cudaStreamCreate") || check(cudaMallocAsync(&late, 1000, stream), "cudaMallocAsync")) return 1;
    late_write<<<1, 256, 0, stream>>>(late, 250, 200000000LL);
    if (check(cudaFreeAsync(late, stream), "cudaFreeAsync") || check(cudaStreamSynchronize(stream), "cudaStreamSynchronize")) return 1;
    if (check(cudaStreamDestroy(stream), "cudaStreamDestroy")) return 1;
  } else if (std::strcmp(mode, "race") == 0) {
    shared_race<<<1, 256>>>(after);
  } else if (std::strcmp(mode, "sync") == 0) {
    divergent_barrier<<<1, 64>>>(after);
  } else if (std::strcmp(mode, "uninit") == 0) {
    int *fresh = nullptr;
    if (check(allocate(&fresh, 4096), "cudaMalloc(fresh)")) return 1;
    copy<<<4, 256>>>(fresh, after, 1024);
    int host[4];
    if (check(cudaMemcpy(host, after, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
    if (check(release(fresh), "cudaFree(fresh)")) return 1;
  } else {
    std::fprintf(stderr, "sanitizer_planted: unknown mode %s\n", mode);
    return 2;
  }
  std::printf("sanitizer_planted %s: launched\n", mode);
  cudaError_t launched = cudaGetLastError();
  cudaError_t finished = cudaDeviceSynchronize();
  std::printf("sanitizer_planted %s: launch %s, sync %s\n", mode, cudaGetErrorName(launched), cudaGetErrorName(finished));
  if (block != nullptr && check(release(block), "cudaFree(block)")) return 1;
  if (check(release(neighbour), "cudaFree(neighbour)") || check(release(after), "cudaFree(after)")) return 1;
  return 0;
}
