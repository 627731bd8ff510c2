// Adaptors on the real GPU: kernels write and read memory that goes through each adaptor
// over a pool (on the default stream and a created stream), frees with rmmFree pass back
// through the adaptor, and the prefetch adaptor makes managed memory resident on the device.
#include "cuda_test.cuh"

#include <string>

static void use(rmmResource_t resource, cudaStream_t stream, unsigned seed) {
  const size_t bytes = (size_t(3) << 20) + 4096;
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, stream));
  write_and_verify(ptr, bytes, seed, stream);
  CHECK_OK(rmmFree(ptr, stream, __FILE__, __LINE__));  // no resource named: through the adaptor
}

static void over_pool(const char *name, rmmResource_t cuda, rmmError_t (*create)(rmmResource_t *, rmmResource_t)) {
  rmmResource_t pool, adaptor;
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, size_t(16) << 20, 0));
  CHECK_OK(create(&adaptor, pool));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  for (unsigned i = 0; i < 8; ++i) use(adaptor, i % 2 ? stream : nullptr, 100 + i);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
  size_t length = 0;
  CHECK_OK(rmmResourceGetSnapshot(adaptor, nullptr, 0, &length));
  std::string snapshot(length + 1, '\0');
  CHECK_OK(rmmResourceGetSnapshot(adaptor, &snapshot[0], snapshot.size(), &length));
  CHECK(snapshot.find(std::string("\"resource\": \"") + name + "\"") != std::string::npos);
  CHECK(snapshot.find("\"state\": \"used\"") == std::string::npos);  // everything was freed
  CHECK_OK(rmmResourceDestroy(adaptor));
  CHECK_OK(rmmResourceDestroy(pool));
  std::printf("%s over pool: kernels verified, frees went through it\n", name);
}

static rmmError_t statistics(rmmResource_t *out, rmmResource_t up) { return rmmStatisticsAdaptorCreate(out, up); }
static rmmError_t logging(rmmResource_t *out, rmmResource_t up) { return rmmLoggingAdaptorCreate(out, up, "/tmp/rmm-cuda-adaptors.csv"); }
static rmmError_t limiting(rmmResource_t *out, rmmResource_t up) { return rmmLimitingAdaptorCreate(out, up, size_t(64) << 20); }
static rmmError_t tracking(rmmResource_t *out, rmmResource_t up) { return rmmTrackingAdaptorCreate(out, up, false); }
static bool never(size_t, void *) { return false; }
static rmmError_t failure_callback(rmmResource_t *out, rmmResource_t up) { return rmmFailureCallbackAdaptorCreate(out, up, never, nullptr); }
static rmmError_t aligned(rmmResource_t *out, rmmResource_t up) { return rmmAlignedAdaptorCreate(out, up, 1 << 16, 1 << 20); }
static rmmError_t prefetch(rmmResource_t *out, rmmResource_t up) { return rmmPrefetchAdaptorCreate(out, up); }

// Statistics through rmmFree on the GPU: counts go back to zero.
static void statistics_figures(rmmResource_t cuda) {
  rmmResource_t pool, stats, previous;
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 0, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  CHECK_OK(rmmSetCurrentDeviceResource(stats, &previous));
  void *a = nullptr, *b = nullptr;
  CHECK_OK(RMM_ALLOC(&a, 1000, 0));
  CHECK_OK(RMM_ALLOC(&b, 5000, 0));
  write_and_verify(a, 1000 / 4 * 4, 7, nullptr);
  rmmStatistics_t counts;
  CHECK_OK(rmmStatisticsAdaptorGetCounts(stats, &counts));
  CHECK(counts.current_bytes == 6000 && counts.current_count == 2 && counts.peak_bytes == 6000);
  CHECK_OK(RMM_FREE(a, 0));
  CHECK_OK(RMM_FREE(b, 0));
  CHECK_OK(rmmStatisticsAdaptorGetCounts(stats, &counts));
  CHECK(counts.current_bytes == 0 && counts.current_count == 0 && counts.total_bytes == 6000);
  CHECK_OK(rmmSetCurrentDeviceResource(previous, nullptr));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
}

// Managed memory through the prefetch adaptor: resident on the device after allocation.
static void prefetch_managed() {
  rmmResource_t managed, adaptor;
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmPrefetchAdaptorCreate(&adaptor, managed));
  const size_t bytes = size_t(8) << 20;
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(adaptor, &ptr, bytes, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  int device = -1;
  CUDA_CHECK(cudaGetDevice(&device));
  int location = -2;
  CUDA_CHECK(cudaMemRangeGetAttribute(&location, sizeof location, cudaMemRangeAttributeLastPrefetchLocation, ptr, bytes));
  std::printf("managed memory prefetched to %d (device %d)\n", location, device);
  CHECK(location == device);
  write_and_verify(ptr, bytes, 11, nullptr);
  CHECK_OK(rmmResourceDeallocate(adaptor, ptr, bytes, nullptr));
  CHECK_OK(rmmResourceDestroy(adaptor));
  CHECK_OK(rmmResourceDestroy(managed));
}

int main() {
  cuda_test_require_gpus(1);
  CHECK(!rmm_test_simulated());
  CUDA_CHECK(cudaSetDevice(0));
  rmmResource_t cuda;
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  over_pool("statistics", cuda, statistics);
  over_pool("logging", cuda, logging);
  over_pool("limiting", cuda, limiting);
  over_pool("tracking", cuda, tracking);
  over_pool("failure_callback", cuda, failure_callback);
  over_pool("aligned", cuda, aligned);
  over_pool("prefetch", cuda, prefetch);
  statistics_figures(cuda);
  prefetch_managed();
  CHECK_OK(rmmResourceDestroy(cuda));
  std::remove("/tmp/rmm-cuda-adaptors.csv");
  return rmm_test_finish("cuda_adaptors");
}
