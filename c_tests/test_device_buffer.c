/* Device buffers (create, from host, copy to host, resize, shrink to fit, deep copy, streams,
 * destroy), rmmMemcpyAsync, and the framework entry points PyTorch and CuPy load by name.
 * Contents are checked by copying back to the host, so this runs on a GPU as well. */
#include "rmm_test.h"

static void fill_pattern(unsigned char *bytes, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) bytes[i] = (unsigned char)(i * 31u + seed);
}

static bool has_pattern(const unsigned char *bytes, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i)
    if (bytes[i] != (unsigned char)(i * 31u + seed)) return false;
  return true;
}

int main(void) {
  enum { N = 100000 };
  static unsigned char host[N], back[N + 64];
  rmmDeviceBuffer_t a = NULL, b = NULL, empty = NULL, copy = NULL;
  rmmResource_t cuda = NULL, pool = NULL;
  cudaStream_t stream = NULL;
  size_t size = 0, capacity = 0;
  void *data = NULL, *before = NULL;

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 1 << 22, 0));
  CHECK_OK(rmmStreamCreate(&stream));
  fill_pattern(host, N, 7);

  /* From host bytes, through the current device resource (NULL), and back. */
  CHECK_OK(rmmDeviceBufferCreateFromHost(&a, host, N, stream, NULL));
  CHECK_OK(rmmDeviceBufferSize(a, &size, &capacity));
  CHECK(size == N && capacity == N);
  CHECK_OK(rmmDeviceBufferData(a, &data));
  CHECK(data != NULL && rmm_test_aligned(data, 256));
  memset(back, 0, sizeof back);
  CHECK_OK(rmmDeviceBufferCopyToHost(a, back, sizeof back, stream));
  CHECK(has_pattern(back, N, 7));
  CHECK_RMM(rmmDeviceBufferCopyToHost(a, back, N - 1, stream), RMM_ERROR_INVALID_ARGUMENT);

  /* Shrinking within the capacity moves nothing; growing beyond it keeps the contents. */
  CHECK_OK(rmmDeviceBufferResize(a, 1000, stream));
  CHECK_OK(rmmDeviceBufferSize(a, &size, &capacity));
  CHECK(size == 1000 && capacity == N);
  CHECK_OK(rmmDeviceBufferData(a, &before));
  CHECK(before == data);
  CHECK_OK(rmmDeviceBufferShrinkToFit(a, stream));
  CHECK_OK(rmmDeviceBufferSize(a, &size, &capacity));
  CHECK(size == 1000 && capacity == 1000);
  CHECK_OK(rmmDeviceBufferResize(a, 5000, stream));
  CHECK_OK(rmmDeviceBufferSize(a, &size, &capacity));
  CHECK(size == 5000 && capacity == 5000);
  memset(back, 0, sizeof back);
  CHECK_OK(rmmDeviceBufferCopyToHost(a, back, sizeof back, stream));
  CHECK(has_pattern(back, 1000, 7)); /* the first 1000 bytes came along */

  /* A deep copy into the pool, on the default stream, then freed there. */
  CHECK_OK(rmmDeviceBufferCopy(&copy, a, NULL, pool));
  CHECK_OK(rmmDeviceBufferData(copy, &data));
  CHECK_OK(rmmDeviceBufferData(a, &before));
  CHECK(data != before);
  memset(back, 0, sizeof back);
  CHECK_OK(rmmDeviceBufferCopyToHost(copy, back, sizeof back, NULL));
  CHECK(has_pattern(back, 1000, 7));
  CHECK_OK(rmmDeviceBufferSetStream(copy, stream));

  /* Uninitialized buffers, and empty ones with a NULL data pointer. */
  CHECK_OK(rmmDeviceBufferCreate(&b, 4096, stream, pool));
  CHECK_OK(rmmDeviceBufferCreate(&empty, 0, stream, NULL));
  CHECK_OK(rmmDeviceBufferData(empty, &data));
  CHECK(data == NULL);
  CHECK_OK(rmmDeviceBufferCopyToHost(empty, NULL, 0, stream));
  CHECK_OK(rmmDeviceBufferDestroy(empty));
  CHECK_OK(rmmDeviceBufferCreateFromHost(&empty, NULL, 0, stream, NULL));
  CHECK_OK(rmmDeviceBufferSize(empty, &size, NULL));
  CHECK(size == 0);

  /* rmmMemcpyAsync in every direction. */
  CHECK_OK(rmmDeviceBufferData(b, &data));
  CHECK_OK(rmmMemcpyAsync(data, host, 4096, stream));
  CHECK_OK(rmmDeviceBufferData(a, &before));
  CHECK_OK(rmmMemcpyAsync(before, data, 4096, stream));
  memset(back, 0, sizeof back);
  CHECK_OK(rmmMemcpyAsync(back, before, 4096, stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK(has_pattern(back, 4096, 7));
  CHECK_OK(rmmMemcpyAsync(NULL, NULL, 0, stream));
  CHECK_RMM(rmmMemcpyAsync(NULL, host, 16, stream), RMM_ERROR_INVALID_ARGUMENT);

  /* Bad input. */
  CHECK_RMM(rmmDeviceBufferCreate(NULL, 16, stream, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceBufferCreateFromHost(&b, NULL, 16, stream, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceBufferCreate(&b, (size_t)1 << 60, stream, pool), RMM_ERROR_OUT_OF_MEMORY);
  CHECK_RMM(rmmDeviceBufferSize(NULL, &size, NULL), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmDeviceBufferData((rmmDeviceBuffer_t)(uintptr_t)0x12345, &data), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmDeviceBufferData(a, NULL), RMM_ERROR_INVALID_ARGUMENT);

  CHECK_OK(rmmDeviceBufferDestroy(a));
  CHECK_RMM(rmmDeviceBufferDestroy(a), RMM_ERROR_INVALID_HANDLE); /* destroyed: refused */
  CHECK_RMM(rmmDeviceBufferResize(a, 10, stream), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmDeviceBufferDestroy(b));
  CHECK_OK(rmmDeviceBufferDestroy(copy));
  CHECK_OK(rmmDeviceBufferDestroy(empty));
  CHECK_OK(rmmDeviceBufferDestroy(NULL));

  /* PyTorch's and CuPy's entry points. */
  {
    void *t = rmmTorchAllocate(1 << 20, 0, stream);
    void *c = rmmCupyAllocate(NULL, 4096, 0);
    void *p = rmmCupyAllocate(pool, 4096, 0);
    CHECK(t != NULL && c != NULL && p != NULL);
    CHECK(rmmTorchAllocate(-1, 0, stream) == NULL);
    CHECK(strstr(rmmGetLastErrorMessage(), "negative") != NULL);
    CHECK(rmmTorchAllocate(16, 99, stream) == NULL); /* no such device */
    CHECK(rmmCupyAllocate((void *)(uintptr_t)0x777, 16, 0) == NULL); /* not a resource handle */
    rmmTorchDeallocate(t, 1 << 20, 0, stream);
    rmmCupyDeallocate(NULL, c, 0);
    rmmCupyDeallocate(pool, p, 0);
    rmmTorchDeallocate(t, 1 << 20, 0, stream); /* a double free is refused, not a crash */
    CHECK(strstr(rmmGetLastErrorMessage(), "not a live") != NULL);
  }

  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("device_buffer");
}
