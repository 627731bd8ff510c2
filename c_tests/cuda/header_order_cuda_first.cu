// cuda_runtime.h before rmm.h: both declare cudaStream_t, identically. Also the test's main.
#include <cuda_runtime.h>
#include "rmm.h"
#include <cuda_runtime.h>

#include <cstdio>
#include <type_traits>

static_assert(std::is_same<cudaStream_t, CUstream_st *>::value, "one cudaStream_t type");

int header_order_rmm_first();

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    std::printf("SKIP: no GPU\n");
    return 77;
  }
  // An rmm stream is a runtime stream, and a runtime stream is an rmm stream.
  cudaStream_t stream = nullptr;
  if (rmmStreamCreate(&stream) != RMM_SUCCESS) return 1;
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 2;
  if (rmmStreamDestroy(stream) != RMM_SUCCESS) return 3;
  const int status = header_order_rmm_first();
  if (status != 0) {
    std::fprintf(stderr, "header_order_rmm_first: step %d failed: %s\n", status, rmmGetLastErrorMessage());
    return 1;
  }
  std::printf("PASS: rmm.h and cuda_runtime.h in both orders\n");
  return 0;
}
