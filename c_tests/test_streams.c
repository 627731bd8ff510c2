/* rmmStreamCreate / rmmStreamSynchronize / rmmStreamDestroy, and allocations in the order of
 * created streams through rmmAlloc, rmmRealloc and resources. */
#include "rmm_test.h"

/* cudaStreamLegacy and cudaStreamPerThread, as CUDA defines them. */
#define STREAM_LEGACY ((cudaStream_t)(uintptr_t)0x1)
#define STREAM_PER_THREAD ((cudaStream_t)(uintptr_t)0x2)

int main(void) {
  const bool simulated = rmm_test_simulated();
  cudaStream_t a = NULL, b = NULL;
  void *ptr = NULL, *other = NULL;
  rmmResource_t managed = NULL, async = NULL;
  rmmError_t status;

  CHECK_OK(rmmInitialize(NULL)); /* the legacy calls need it */
  CHECK_RMM(rmmStreamCreate(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmStreamCreate(&a));
  CHECK_OK(rmmStreamCreate(&b));
  CHECK(a != NULL && b != NULL && a != b);
  CHECK(a != STREAM_LEGACY && a != STREAM_PER_THREAD);
  CHECK(b != STREAM_LEGACY && b != STREAM_PER_THREAD);
  /* With flags: the default, and a non-blocking stream; unknown flags and NULL refused. */
  {
    cudaStream_t flagged = NULL;
    CHECK_RMM(rmmStreamCreateWithFlags(NULL, RMM_STREAM_NON_BLOCKING), RMM_ERROR_INVALID_ARGUMENT);
    CHECK_RMM(rmmStreamCreateWithFlags(&flagged, 2), RMM_ERROR_INVALID_ARGUMENT);
    CHECK(flagged == NULL);
    CHECK_OK(rmmStreamCreateWithFlags(&flagged, RMM_STREAM_NON_BLOCKING));
    CHECK(flagged != NULL && flagged != STREAM_LEGACY && flagged != STREAM_PER_THREAD);
    CHECK_OK(rmmAlloc(&ptr, 1000, flagged, __FILE__, __LINE__));
    CHECK_OK(rmmFree(ptr, flagged, __FILE__, __LINE__));
    CHECK_OK(rmmStreamSynchronize(flagged));
    CHECK_OK(rmmStreamDestroy(flagged));
    CHECK_OK(rmmStreamCreateWithFlags(&flagged, RMM_STREAM_DEFAULT));
    CHECK_OK(rmmStreamDestroy(flagged));
    ptr = NULL;
  }

  /* Synchronizing every kind of stream. */
  CHECK_OK(rmmStreamSynchronize(0));
  CHECK_OK(rmmStreamSynchronize(STREAM_LEGACY));
  CHECK_OK(rmmStreamSynchronize(STREAM_PER_THREAD));
  CHECK_OK(rmmStreamSynchronize(a));
  CHECK_OK(rmmStreamSynchronize(b));

  /* The default streams cannot be destroyed. */
  CHECK_RMM(rmmStreamDestroy(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStreamDestroy(STREAM_LEGACY), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStreamDestroy(STREAM_PER_THREAD), RMM_ERROR_INVALID_ARGUMENT);

  /* rmmAlloc / rmmFree on created streams, including a free on another stream. */
  CHECK_OK(rmmAlloc(&ptr, 10000, a, __FILE__, __LINE__));
  CHECK_OK(RMM_ALLOC(&other, 20000, b));
  CHECK(ptr != NULL && other != NULL);
  if (simulated) {
    rmm_test_fill(ptr, 10000, 1);
    rmm_test_fill(other, 20000, 2);
  }
  CHECK_OK(RMM_REALLOC(&ptr, 30000, a));
  CHECK_OK(rmmStreamSynchronize(a));
  if (simulated) CHECK(rmm_test_verify(ptr, 10000, 1));
  CHECK_OK(rmmFree(ptr, a, __FILE__, __LINE__));
  CHECK_OK(rmmStreamSynchronize(b));
  CHECK_OK(RMM_FREE(other, a));
  CHECK_OK(RMM_ALLOC(&ptr, 64, STREAM_PER_THREAD));
  CHECK_OK(RMM_FREE(ptr, STREAM_PER_THREAD));
  CHECK_OK(RMM_ALLOC(&ptr, 64, STREAM_LEGACY));
  CHECK_OK(RMM_FREE(ptr, STREAM_LEGACY));

  /* Managed memory on a stream: the realloc copy is ordered on the stream; after a
   * synchronization the host sees it (on real GPUs too). */
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmResourceAllocate(managed, &ptr, 4096, a));
  CHECK_OK(rmmStreamSynchronize(a));
  rmm_test_fill(ptr, 4096, 5);
  CHECK_OK(RMM_REALLOC(&ptr, 8192, a));
  CHECK_OK(rmmStreamSynchronize(a));
  CHECK(rmm_test_verify(ptr, 4096, 5));
  CHECK_RMM(rmmResourceDeallocate(managed, ptr, 4096, a), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(managed, ptr, 8192, a));
  CHECK_OK(rmmResourceDestroy(managed));

  /* Stream-ordered resource on created streams. */
  status = rmmAsyncResourceCreate(&async, 0, SIZE_MAX);
  CHECK(status == RMM_SUCCESS || status == RMM_ERROR_NOT_SUPPORTED);
  if (status == RMM_SUCCESS) {
    int i;
    for (i = 0; i < 8; ++i) {
      cudaStream_t s = (i % 2) ? a : b;
      CHECK_OK(rmmResourceAllocate(async, &ptr, (size_t)(i + 1) * 4096, s));
      if (simulated) {
        CHECK_OK(rmmStreamSynchronize(s));
        rmm_test_fill(ptr, (size_t)(i + 1) * 4096, (unsigned)i);
        CHECK(rmm_test_verify(ptr, (size_t)(i + 1) * 4096, (unsigned)i));
      }
      CHECK_OK(rmmResourceDeallocate(async, ptr, (size_t)(i + 1) * 4096, s));
    }
    /* Allocated on one stream, freed on another after synchronizing the first. */
    CHECK_OK(rmmResourceAllocate(async, &ptr, 1000, a));
    CHECK_OK(rmmStreamSynchronize(a));
    CHECK_OK(rmmResourceDeallocate(async, ptr, 1000, b));
    CHECK_OK(rmmStreamSynchronize(b));
    CHECK_OK(rmmResourceDestroy(async));
  }

  /* Registering: the default streams are refused; a created stream may be unregistered
   * (announcing its end), registered again and used as before. */
  CHECK_RMM(rmmStreamRegister(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStreamRegister(STREAM_PER_THREAD), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStreamUnregister(STREAM_LEGACY), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(RMM_ALLOC(&ptr, 4096, a));
  CHECK_OK(rmmStreamUnregister(a));
  CHECK_OK(RMM_FREE(ptr, a));
  CHECK_OK(rmmStreamRegister(a));
  CHECK_OK(rmmStreamRegister(a));
  CHECK_OK(RMM_ALLOC(&ptr, 4096, a));
  CHECK_OK(RMM_FREE(ptr, a));

  /* A stream destroyed while its allocation lives: the memory is still freed correctly. */
  CHECK_OK(RMM_ALLOC(&ptr, 2048, b));
  CHECK_OK(rmmStreamSynchronize(b));
  CHECK_OK(rmmStreamDestroy(b));
  CHECK_OK(RMM_FREE(ptr, 0));

  CHECK_OK(rmmStreamSynchronize(a));
  CHECK_OK(rmmStreamDestroy(a));
  CHECK_OK(rmmStreamSynchronize(0));
  return rmm_test_finish("streams");
}
