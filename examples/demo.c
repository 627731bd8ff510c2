/* rmm-rs demo: legacy RMM calls and a resource stack, on a GPU or a simulated device. */
#include <stdio.h>
#include <stdlib.h>

#include "rmm.h"

#define CHECK(call)                                                                       \
  do {                                                                                    \
    rmmError_t status_ = (call);                                                          \
    if (status_ != RMM_SUCCESS) {                                                         \
      fprintf(stderr, "%s failed: %s\n  %s\n", #call, rmmGetErrorString(status_),       \
              rmmGetLastErrorMessage());                                                  \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  bool simulated = false;
  int devices = 0;
  CHECK(rmmIsSimulated(&simulated));
  CHECK(rmmGetDeviceCount(&devices));
  printf("rmm-rs demo on %d %s device(s)\n", devices, simulated ? "SIMULATED" : "CUDA GPU");

  /* A resource stack through handles: a stream-ordered pool as the device's resource;
   * before rmmInitialize, RMM_ALLOC uses the current device's resource. */
  rmmResource_t async_pool = NULL, previous = NULL;
  rmmError_t made = rmmAsyncResourceCreate(&async_pool, 64u << 20, SIZE_MAX);
  if (made == RMM_ERROR_NOT_SUPPORTED) {
    printf("cuda_async: not supported here (%s); using cuda\n", rmmGetLastErrorMessage());
    CHECK(rmmCudaResourceCreate(&async_pool));
  } else {
    CHECK(made);
  }
  const char *name = NULL;
  CHECK(rmmResourceGetName(async_pool, &name));
  CHECK(rmmSetCurrentDeviceResource(async_pool, &previous));
  cudaStream_t stream = NULL;
  CHECK(rmmStreamCreate(&stream));
  void *blocks[8];
  for (int i = 0; i < 8; ++i) {
    CHECK(RMM_ALLOC(&blocks[i], (size_t)(i + 1) << 20, stream));
  }
  for (int i = 0; i < 8; ++i) {
    CHECK(RMM_FREE(blocks[i], stream));
  }
  CHECK(rmmStreamSynchronize(stream));
  printf("%s resource: 8 stream-ordered allocations of 1..8 MiB made and freed on a new stream\n", name);

  /* Bad input is an error code, never a crash. */
  int on_stack = 0;
  rmmError_t refused = rmmFree(&on_stack, 0, __FILE__, __LINE__);
  printf("freeing a stack address: %s (%s)\n", rmmGetErrorString(refused), rmmGetLastErrorMessage());

  CHECK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK(rmmResourceDestroy(previous));
  CHECK(rmmResourceDestroy(async_pool));
  CHECK(rmmStreamDestroy(stream));
  /* Legacy RMM, unchanged: initialize, allocate, resize, free. */
  CHECK(rmmInitialize(NULL));
  double *values = NULL;
  CHECK(RMM_ALLOC(&values, 1000 * sizeof(double), 0));
  CHECK(RMM_REALLOC(&values, 4000 * sizeof(double), 0));
  size_t free_bytes = 0, total_bytes = 0;
  CHECK(rmmGetInfo(&free_bytes, &total_bytes, 0));
  printf("legacy: RMM_ALLOC + RMM_REALLOC -> %p; device has %zu of %zu MiB free\n", (void *)values,
         free_bytes >> 20, total_bytes >> 20);
  CHECK(RMM_FREE(values, 0));
  CHECK(rmmFinalize());

  printf("demo finished\n");
  return 0;
}
