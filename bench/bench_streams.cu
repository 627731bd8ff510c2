// Allocate+free pairs on the streams programs use, each timed interleaved with the same pairs
// on the NULL stream (bench::stream_pairs): rmm-rs's pool through rmmResourceAllocate and
// through RMM_ALLOC/RMM_FREE, the expandable resource, and cudaMallocAsync, on a stream from
// rmmStreamCreate, an application's cudaStreamCreateWithFlags stream and the per-thread
// default stream. First, what the driver calls a stream-ordered allocator might make cost
// here. bench_streams_rapids.cu runs RAPIDS RMM's pool on the same streams.
#include <cuda.h>

#include "rmm_rs_resource.hpp"

using bench::ok;

namespace {

template <class Call>
void driver_cost(const char* what, Call call) {
  bench::Pinned pinned;
  const int calls = 200000;
  for (int i = 0; i < 1000; ++i) call();
  auto start = bench::clock_type::now();
  for (int i = 0; i < calls; ++i) call();
  std::fprintf(stderr, "driver call: %s %.1f ns\n", what, bench::ns_since(start) / calls);
}

}  // namespace

int main() {
  int device = 0;
  bench::use_device(device);
  auto streams = bench::application_streams();
  cudaStream_t app = streams[0].stream;
  {
    CUevent event;
    cuEventCreate(&event, CU_EVENT_DISABLE_TIMING);
    CUcontext ctx;
    unsigned long long id;
    driver_cost("cuStreamGetId(application stream)", [&] { cuStreamGetId((CUstream)app, &id); });
    driver_cost("cuStreamGetId(per-thread default stream)", [&] { cuStreamGetId(CU_STREAM_PER_THREAD, &id); });
    driver_cost("cuCtxGetCurrent", [&] { cuCtxGetCurrent(&ctx); });
    driver_cost("cuEventRecord(application stream)", [&] { cuEventRecord(event, (CUstream)app); });
    driver_cost("cuEventRecord(legacy default stream)", [&] { cuEventRecord(event, CU_STREAM_LEGACY); });
    driver_cost("cuEventQuery", [&] { cuEventQuery(event); });
    cuEventDestroy(event);
  }
  cudaStream_t created = nullptr;
  ok(rmmStreamCreate(&created), "rmmStreamCreate");
  auto with_rmm_stream = streams;
  with_rmm_stream.insert(with_rmm_stream.begin(), {"rmmStreamCreate stream", created});

  rmmResource_t cuda, pool, previous;
  ok(rmmCudaResourceCreate(&cuda), "rmmCudaResourceCreate");
  for (int round = 0; round < bench::rounds(); ++round) {
    ok(rmmPoolResourceCreate(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
    ok(rmmSetCurrentDeviceResource(pool, &previous), "rmmSetCurrentDeviceResource");
    bench::RmmRs resource_api{pool, nullptr};
    bench::stream_pairs("rmm-rs pool: rmmResourceAllocate", resource_api, with_rmm_stream);
    bench::RmmRsLegacy legacy;
    bench::stream_pairs("rmm-rs pool: RMM_ALLOC", legacy, with_rmm_stream);
    ok(rmmSetCurrentDeviceResource(previous, nullptr), "rmmSetCurrentDeviceResource");
    ok(rmmResourceDestroy(pool), "rmmResourceDestroy");
    rmmResource_t expandable;
    if (rmmExpandableResourceCreate(&expandable, device) == RMM_SUCCESS) {
      bench::RmmRs a{expandable, nullptr};
      bench::stream_pairs("rmm-rs expandable", a, with_rmm_stream);
      ok(rmmResourceDestroy(expandable), "rmmResourceDestroy");
    }
    bench::CudaMallocAsync cuda_async(device);
    bench::stream_pairs("cudaMallocAsync", cuda_async, streams);
  }
  ok(rmmResourceDestroy(cuda), "rmmResourceDestroy");
  ok(rmmStreamDestroy(created), "rmmStreamDestroy");
  bench::check_cuda(cudaStreamDestroy(app), "cudaStreamDestroy");
  bench::print_timings();
  return 0;
}
