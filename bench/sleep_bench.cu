// Sleep and wake of an expandable resource on a GPU (scripts/gpu-sleep.sh): time against a
// plain pinned cudaMemcpyAsync of the same bytes both ways, device memory held while asleep
// against the CUDA context's own, and the contents after wake.
//
//   sleep_bench [GIB] [BLOCK_MIB] [CYCLES]    (default 10 GiB in 256 MiB blocks, 3 cycles)
//
// Prints one line per measurement and "FAILED" (exit 1) when contents or addresses did not
// survive a sleep.
#include <cuda_runtime.h>
#include <rmm.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(call)                                                                    \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                         \
    }                                                                                       \
  } while (0)
#define CHECK_RMM(call)                                                                      \
  do {                                                                                       \
    rmmError_t e_ = (call);                                                                  \
    if (e_ != RMM_SUCCESS) {                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, rmmGetLastErrorMessage()); \
      std::exit(2);                                                                          \
    }                                                                                        \
  } while (0)

__global__ void fill(unsigned* block, size_t words, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
    block[i] = (unsigned)(i * 2654435761u) ^ seed;
}

__global__ void count_wrong(const unsigned* block, size_t words, unsigned seed, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < words; i += (size_t)gridDim.x * blockDim.x)
    mine += block[i] != ((unsigned)(i * 2654435761u) ^ seed);
  if (mine) atomicAdd(wrong, mine);
}

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static size_t used_bytes() {
  size_t free = 0, total = 0;
  CHECK_CUDA(cudaMemGetInfo(&free, &total));
  return total - free;
}

int main(int argc, char** argv) {
  const size_t gib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10;
  const size_t block_mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 256;
  const int cycles = argc > 3 ? std::atoi(argv[3]) : 3;
  const size_t bytes = gib << 30, block = block_mib << 20, blocks = bytes / block;
  CHECK_CUDA(cudaFree(nullptr));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const size_t context = used_bytes();
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s; %zu GiB in %zu blocks of %zu MiB; context holds %.1f MiB\n", prop.name, gib, blocks, block_mib,
              context / 1048576.0);

  // The yardstick: the same bytes to pinned host memory and back, on the same stream.
  {
    void *device = nullptr, *host = nullptr;
    CHECK_CUDA(cudaMalloc(&device, bytes));
    double pin = now_ms();
    CHECK_CUDA(cudaMallocHost(&host, bytes));
    pin = now_ms() - pin;
    for (int round = 0; round < 2; ++round) {
      double t = now_ms();
      CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      double down = now_ms() - t;
      t = now_ms();
      CHECK_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      double up = now_ms() - t;
      std::printf("memcpy round %d: to host %.1f ms, back %.1f ms, both %.1f ms (%.1f GB/s); cudaMallocHost took %.1f ms\n", round,
                  down, up, down + up, 2.0 * bytes / (down + up) / 1e6, pin);
    }
    CHECK_CUDA(cudaFreeHost(host));
    CHECK_CUDA(cudaFree(device));
  }

  rmmResource_t expandable;
  CHECK_RMM(rmmExpandableResourceCreate(&expandable, 0));
  std::vector<void*> live(blocks);
  for (size_t i = 0; i < blocks; ++i) {
    CHECK_RMM(rmmResourceAllocate(expandable, &live[i], block, stream));
    fill<<<1024, 256, 0, stream>>>((unsigned*)live[i], block / 4, (unsigned)i);
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("awake: process holds %.1f MiB above the context\n", (used_bytes() - context) / 1048576.0);
  unsigned long long* wrong;
  CHECK_CUDA(cudaMallocManaged(&wrong, sizeof *wrong));
  int failed = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    for (unsigned mode : {RMM_SLEEP_KEEP, RMM_SLEEP_DISCARD}) {
      const char* name = mode == RMM_SLEEP_KEEP ? "keep" : "discard";
      double t = now_ms();
      CHECK_RMM(rmmResourceSleep(expandable, mode, stream));
      double slept = now_ms() - t;
      double asleep_mib = ((double)used_bytes() - (double)context) / 1048576.0;
      void* refused = nullptr;
      rmmError_t refusal = rmmResourceAllocate(expandable, &refused, 1 << 20, stream);
      t = now_ms();
      CHECK_RMM(rmmResourceWake(expandable, stream));
      double woke = now_ms() - t;
      std::printf("cycle %d %s: sleep %.1f ms, wake %.1f ms, both %.1f ms; asleep the process holds %+.1f MiB against the context; "
                  "an allocation while asleep: %s\n",
                  cycle, name, slept, woke, slept + woke, asleep_mib, rmmGetErrorName(refusal));
      if (refusal == RMM_SUCCESS) failed = 1;
      if (mode == RMM_SLEEP_KEEP) {
        *wrong = 0;
        for (size_t i = 0; i < blocks; ++i) count_wrong<<<1024, 256, 0, stream>>>((const unsigned*)live[i], block / 4, (unsigned)i, wrong);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        std::printf("cycle %d keep: %llu words differ after wake\n", cycle, *wrong);
        if (*wrong) failed = 1;
      } else {
        // Discarded: the memory is usable again at the same addresses.
        for (size_t i = 0; i < blocks; ++i) fill<<<1024, 256, 0, stream>>>((unsigned*)live[i], block / 4, (unsigned)i);
        CHECK_CUDA(cudaStreamSynchronize(stream));
      }
    }
  }
  for (size_t i = 0; i < blocks; ++i) CHECK_RMM(rmmResourceDeallocate(expandable, live[i], block, stream));
  CHECK_RMM(rmmResourceDestroy(expandable));
  CHECK_CUDA(cudaFree(wrong));
  std::printf(failed ? "FAILED\n" : "sleep_bench: passed\n");
  return failed;
}
