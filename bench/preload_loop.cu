// What a program that cannot be rebuilt does: cudaMalloc, a kernel, cudaFree, in a loop, on the
// default stream, linked with the static CUDA runtime (nvcc's default), so the preload library
// reaches it only through the driver (cuGetProcAddress). bench/frameworks/preload_bench.py runs
// it without and with the preload library. Prints "RESULT <us per iteration> <checksum>".
// Built with -DRMM_LINKED it calls rmmCudaMalloc/rmmCudaFree itself (what the preload library's
// cudaMalloc/cudaFree are), so a tool that cannot attach under LD_PRELOAD still sees the same
// frees (scripts/gpu-preload-bench.sh, PRELOAD_SANITIZE=1).
#include <cuda_runtime.h>
#ifdef RMM_LINKED
#include <rmm.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

__global__ void fill(float *out, size_t n, float value) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) {
    out[i] = value + static_cast<float>(i % 7);
  }
}

__global__ void accumulate(const float *in, size_t n, float *sum) {
  float local = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x) local += in[i];
  atomicAdd(sum, local);
}

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

#ifdef RMM_LINKED
cudaError_t allocate(float **ptr, size_t bytes) {
  return rmmCudaMalloc(reinterpret_cast<void **>(ptr), bytes) == RMM_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t release(float *ptr) { return rmmCudaFree(ptr) == RMM_SUCCESS ? cudaSuccess : cudaErrorInvalidValue; }
#else
cudaError_t allocate(float **ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
cudaError_t release(float *ptr) { return cudaFree(ptr); }
#endif

}  // namespace

int main(int argc, char **argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
#ifdef RMM_LINKED
  // NULL: the stack RMM_ALLOC_CONF names, as the preload library reads it.
  if (rmmConfigure(nullptr) != RMM_SUCCESS) {
    std::fprintf(stderr, "rmmConfigure: %s\n", rmmGetLastErrorMessage());
    return 1;
  }
#endif
  float *sum = nullptr;
  check(cudaMalloc(&sum, sizeof(float)), "cudaMalloc(sum)");
  check(cudaMemset(sum, 0, sizeof(float)), "cudaMemset");
  // Sizes of a solver's temporaries: 4 KiB to 16 MiB, a few live at once.
  const size_t sizes[] = {1 << 10, 1 << 14, 1 << 18, 1 << 20, 1 << 22, 3 << 10, 5 << 16};
  auto run = [&](int count) {
    for (int i = 0; i < count; ++i) {
      size_t a_n = sizes[i % 7], b_n = sizes[(i + 3) % 7];
      float *a = nullptr, *b = nullptr;
      check(allocate(&a, a_n * sizeof(float)), "cudaMalloc(a)");
      check(allocate(&b, b_n * sizeof(float)), "cudaMalloc(b)");
      fill<<<64, 256>>>(a, a_n, 1.0f);
      fill<<<64, 256>>>(b, b_n, 2.0f);
      accumulate<<<64, 256>>>(a, a_n, sum);
      accumulate<<<64, 256>>>(b, b_n, sum);
      check(release(a), "cudaFree(a)");
      check(release(b), "cudaFree(b)");
    }
  };
  run(100);  // warm up
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto start = std::chrono::steady_clock::now();
  run(iterations);
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iterations;
  float host = 0;
  check(cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("RESULT %.2f %.6g\n", us, host);
  check(cudaFree(sum), "cudaFree(sum)");
  return 0;
}
