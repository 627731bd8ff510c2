// A legacy multi-threaded program that cannot be rebuilt: THREADS threads, each cudaMalloc of
// 256 B to 1 MiB, every 16th iteration a kernel and a copy back to the host, then cudaFree, on
// the legacy default stream, linked with the static CUDA runtime (nvcc's default), so the
// preload library reaches it through the driver. bench/frameworks/preload_bench.py runs it
// without and with the preload library.
//
//   preload_threads THREADS [ITERATIONS per thread]
//
// Prints "RESULT <us per pair, aggregate> <checksum>": the checksum sums what the kernels wrote
// and must be the same with and without the preload library.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

__global__ void stamp(unsigned *block, size_t words, unsigned value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < words; i += size_t{gridDim.x} * blockDim.x) {
    block[i] = value + static_cast<unsigned>(i);
  }
}

std::atomic<int> failures{0};

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "preload_threads: %s: %s\n", what, cudaGetErrorString(status));
    failures.fetch_add(1);
  }
}

// One thread's loop; returns the sum of the last words its kernels wrote.
unsigned long long work(int thread, int iterations) {
  unsigned long long checksum = 0;
  unsigned state = 2654435761u * static_cast<unsigned>(thread + 1);
  for (int i = 0; i < iterations && failures.load(std::memory_order_relaxed) == 0; ++i) {
    state = state * 1664525u + 1013904223u;
    // 256 B to 1 MiB, log-uniform, in multiples of 256 B.
    size_t bytes = size_t{256} << ((state >> 8) % 13);
    if (bytes < (size_t{1} << 20)) bytes += size_t{256} * ((state >> 24) % 4);
    unsigned *block = nullptr;
    check(cudaMalloc(&block, bytes), "cudaMalloc");
    if (block == nullptr) break;
    if (i % 16 == 0) {
      size_t words = bytes / sizeof(unsigned);
      stamp<<<8, 128>>>(block, words, static_cast<unsigned>(i));
      unsigned last = 0;
      check(cudaMemcpy(&last, block + words - 1, sizeof last, cudaMemcpyDeviceToHost), "cudaMemcpy");
      checksum += last;
    }
    check(cudaFree(block), "cudaFree");
  }
  return checksum;
}

}  // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 20000;
  check(cudaFree(nullptr), "context");
  work(0, 64);  // warm up
  std::vector<unsigned long long> sums(threads);
  std::vector<std::thread> pool;
  auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { sums[t] = work(t, iterations); });
  for (auto &thread : pool) thread.join();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  unsigned long long checksum = 0;
  for (auto sum : sums) checksum += sum;
  if (failures.load() != 0) return 1;
  std::printf("RESULT %.3f %llu\n", us / (double(threads) * iterations), checksum);
  return 0;
}
