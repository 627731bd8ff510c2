// RAPIDS RMM 26.10's pool (the librmm-cu13 wheel) on the streams of bench_streams.cu.
#include "workloads.hpp"
#include "rapids_pool.hpp"

int main() {
  bench::check_cuda(cudaSetDevice(0), "cudaSetDevice");
  auto streams = bench::application_streams();
  for (int round = 0; round < bench::rounds(); ++round) {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
    bench::RapidsPool a{&pool};
    bench::stream_pairs("RAPIDS pool", a, streams);
  }
  bench::check_cuda(cudaStreamDestroy(streams[0].stream), "cudaStreamDestroy");
  bench::print_timings();
  return 0;
}
