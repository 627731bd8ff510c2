// A stream per iteration: N iterations (argv[1], default 100,000) of {make a stream; allocate
// 4 KiB on it; free it on it; destroy the stream}, in four variants:
//   announced     rmmStreamCreate/rmmStreamDestroy, rmmResourceAllocate on an rmm-rs pool;
//   unannounced   cudaStreamCreate/cudaStreamDestroy (rmm-rs is told nothing), same pool calls;
//   RMM_ALLOC     cudaStreamCreate/cudaStreamDestroy, RMM_ALLOC/RMM_FREE with the pool as the
//                 device's resource;
//   cudaMallocAsync  cudaStreamCreate/cudaStreamDestroy, cudaMallocAsync/cudaFreeAsync;
//   batches       as unannounced, 256 streams live at once per iteration (N / 256 iterations):
//                 rmm-rs's sweep then also asks the driver about handles destroyed a batch ago
//                 that no new stream has taken yet.
// Prints, per variant, us per iteration for each fifth of the run with the process's RSS after
// it, and the pool's reserved bytes at the end. Flat fifths and a flat RSS mean a destroyed
// stream costs nothing once gone. Built by scripts/gpu-stream-churn.sh.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "rmm.h"

namespace {

void ok(rmmError_t status, const char* what) {
  if (status != RMM_SUCCESS) {
    std::fprintf(stderr, "%s: %s (%s)\n", what, rmmGetErrorName(status), rmmGetLastErrorMessage());
    std::exit(1);
  }
}

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

/// The process's resident set in MiB (/proc/self/statm).
double rss_mib() {
  long pages = 0, resident = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(statm);
  }
  return double(resident) * 4096.0 / (1 << 20);
}

enum class Variant { Announced, Unannounced, Legacy, CudaMallocAsync, Batches };

constexpr int kBatch = 256;

const char* name_of(Variant variant) {
  switch (variant) {
    case Variant::Announced: return "rmmStreamCreate + rmmResourceAllocate (pool)";
    case Variant::Unannounced: return "cudaStreamCreate + rmmResourceAllocate (pool)";
    case Variant::Legacy: return "cudaStreamCreate + RMM_ALLOC (pool as device resource)";
    case Variant::CudaMallocAsync: return "cudaStreamCreate + cudaMallocAsync";
    case Variant::Batches: return "256 cudaStreamCreate streams at once + rmmResourceAllocate (pool), per iteration";
  }
  return "?";
}

/// One iteration of `variant` on `pool`.
void iterate(Variant variant, rmmResource_t pool) {
  const size_t bytes = 4096;
  cudaStream_t stream = nullptr;
  void* ptr = nullptr;
  switch (variant) {
    case Variant::Announced:
      ok(rmmStreamCreate(&stream), "rmmStreamCreate");
      ok(rmmResourceAllocate(pool, &ptr, bytes, stream), "rmmResourceAllocate");
      ok(rmmResourceDeallocate(pool, ptr, bytes, stream), "rmmResourceDeallocate");
      ok(rmmStreamDestroy(stream), "rmmStreamDestroy");
      return;
    case Variant::Unannounced:
      check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
      ok(rmmResourceAllocate(pool, &ptr, bytes, stream), "rmmResourceAllocate");
      ok(rmmResourceDeallocate(pool, ptr, bytes, stream), "rmmResourceDeallocate");
      check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
      return;
    case Variant::Legacy:
      check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
      ok(RMM_ALLOC(&ptr, bytes, stream), "RMM_ALLOC");
      ok(RMM_FREE(ptr, stream), "RMM_FREE");
      check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
      return;
    case Variant::CudaMallocAsync:
      check_cuda(cudaStreamCreate(&stream), "cudaStreamCreate");
      check_cuda(cudaMallocAsync(&ptr, bytes, stream), "cudaMallocAsync");
      check_cuda(cudaFreeAsync(ptr, stream), "cudaFreeAsync");
      check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
      return;
    case Variant::Batches: {
      cudaStream_t streams[kBatch];
      void* ptrs[kBatch];
      for (int i = 0; i < kBatch; ++i) {
        check_cuda(cudaStreamCreate(&streams[i]), "cudaStreamCreate");
        ok(rmmResourceAllocate(pool, &ptrs[i], bytes, streams[i]), "rmmResourceAllocate");
      }
      for (int i = 0; i < kBatch; ++i) ok(rmmResourceDeallocate(pool, ptrs[i], bytes, streams[i]), "rmmResourceDeallocate");
      for (int i = 0; i < kBatch; ++i) check_cuda(cudaStreamDestroy(streams[i]), "cudaStreamDestroy");
      return;
    }
  }
}

void run(Variant variant, long iterations, rmmResource_t cuda) {
  rmmResource_t pool = nullptr, previous = nullptr;
  if (variant != Variant::CudaMallocAsync) {
    ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
  }
  if (variant == Variant::Legacy) {
    ok(rmmSetCurrentDeviceResource(pool, &previous), "rmmSetCurrentDeviceResource");
  }
  if (variant == Variant::Batches) iterations = iterations / kBatch > 5 ? iterations / kBatch : 5;
  std::printf("== %s: %ld iterations\n", name_of(variant), iterations);
  const long fifth = iterations / 5 > 0 ? iterations / 5 : 1;
  for (long done = 0, part = 1; done < iterations; ++part) {
    const long count = part == 5 ? iterations - done : (fifth < iterations - done ? fifth : iterations - done);
    auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < count; ++i) iterate(variant, pool);
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    done += count;
    std::printf("  fifth %ld: %.2f us/iteration, RSS %.1f MiB\n", part, us / double(count), rss_mib());
  }
  if (pool != nullptr) {
    rmmFootprint_t footprint;
    ok(rmmResourceGetFootprint(pool, &footprint), "rmmResourceGetFootprint");
    std::printf("  pool reserved at the end: %zu bytes (peak %zu)\n", footprint.reserved_bytes,
                footprint.peak_reserved_bytes);
  }
  std::fflush(stdout);
  if (variant == Variant::Legacy) {
    ok(rmmSetCurrentDeviceResource(previous, nullptr), "rmmSetCurrentDeviceResource");
    ok(rmmResourceDestroy(previous), "rmmResourceDestroy");
  }
  if (pool != nullptr) ok(rmmResourceDestroy(pool), "rmmResourceDestroy");
}

}  // namespace

int main(int argc, char** argv) {
  const long iterations = argc > 1 ? std::atol(argv[1]) : 100000;
  // VARIANTS: a subset, e.g. "unannounced,cudaMallocAsync" (default: all five).
  const char* only = std::getenv("VARIANTS");
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  check_cuda(cudaFree(nullptr), "cudaFree(0)");
  rmmResource_t cuda = nullptr;
  ok(rmmCudaResourceCreate(&cuda), "rmmCudaResourceCreate");
  const struct {
    Variant variant;
    const char* key;
  } variants[] = {{Variant::Announced, "announced"},
                  {Variant::Unannounced, "unannounced"},
                  {Variant::Legacy, "RMM_ALLOC"},
                  {Variant::CudaMallocAsync, "cudaMallocAsync"},
                  {Variant::Batches, "batches"}};
  const std::string wanted = only == nullptr ? std::string() : "," + std::string(only) + ",";
  for (const auto& v : variants) {
    if (only != nullptr && wanted.find("," + std::string(v.key) + ",") == std::string::npos) continue;
    run(v.variant, iterations, cuda);
  }
  ok(rmmResourceDestroy(cuda), "rmmResourceDestroy");
  return 0;
}
