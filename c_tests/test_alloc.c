/* The legacy allocation API: rmmAlloc, rmmRealloc, rmmFree, rmmGetInfo,
 * rmmGetAllocationOffset, with good and bad input. */
#include "rmm_test.h"

static int stack_object = 42;

static void check_zero_and_null(void) {
  void *ptr = (void *)&stack_object;
  /* Zero bytes: SUCCESS and *ptr becomes NULL. */
  CHECK_OK(rmmAlloc(&ptr, 0, 0, __FILE__, __LINE__));
  CHECK(ptr == NULL);
  ptr = (void *)&stack_object;
  CHECK_OK(RMM_ALLOC(&ptr, 0, 0));
  CHECK(ptr == NULL);
  /* Freeing NULL is a no-op. */
  CHECK_OK(rmmFree(NULL, 0, __FILE__, __LINE__));
  CHECK_OK(RMM_FREE(NULL, 0));
  /* NULL out-pointers: invalid, except with size 0, which legacy RMM let succeed. */
  CHECK_RMM(rmmAlloc(NULL, 16, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(RMM_ALLOC((char **)NULL, 4, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmRealloc(NULL, 16, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmAlloc(NULL, 0, 0, __FILE__, __LINE__));
  CHECK_OK(RMM_ALLOC((char **)NULL, 0, 0));
  CHECK_OK(rmmRealloc(NULL, 0, 0, __FILE__, __LINE__));
}

static void check_huge(size_t total) {
  const size_t huge[3] = {SIZE_MAX, SIZE_MAX / 2, total + 1};
  void *ptr;
  int i;
  for (i = 0; i < 3; ++i) {
    ptr = (void *)&stack_object;
    CHECK_RMM(rmmAlloc(&ptr, huge[i], 0, __FILE__, __LINE__), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(ptr == (void *)&stack_object);
    CHECK(rmmGetLastErrorMessage()[0] != '\0');
    /* The process keeps working afterwards. */
    CHECK_OK(RMM_ALLOC(&ptr, 1 << 20, 0));
    CHECK(ptr != NULL);
    CHECK_OK(RMM_FREE(ptr, 0));
  }
}

static void check_bad_frees(bool simulated) {
  void *ptr = NULL;
  void *heap = malloc(512);
  char local[64];
  CHECK(heap != NULL);
  memset(local, 0, sizeof local);

  /* Pointers rmm did not hand out. */
  CHECK_RMM(rmmFree(local, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree(&stack_object, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree(heap, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree((void *)(uintptr_t)0x1000, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  free(heap); /* untouched by rmm: the C library still owns it */

  /* An interior pointer is not an allocation; the allocation stays live. */
  CHECK_OK(RMM_ALLOC(&ptr, 1024, 0));
  if (simulated) rmm_test_fill(ptr, 1024, 5);
  CHECK_RMM(rmmFree((char *)ptr + 256, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree((char *)ptr + 1, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  if (simulated) CHECK(rmm_test_verify(ptr, 1024, 5));
  CHECK_OK(RMM_FREE(ptr, 0));
  /* Double free. */
  CHECK_RMM(RMM_FREE(ptr, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree(ptr, 0, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);
}

static void check_info(bool simulated, size_t *total_out) {
  size_t free_before = 0, total = 0, free_after = 0, total_after = 0;
  void *ptr = NULL;
  CHECK_OK(rmmGetInfo(&free_before, &total, 0));
  CHECK(total > 0);
  CHECK(free_before <= total);
  CHECK_RMM(rmmGetInfo(NULL, &total, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetInfo(&free_before, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetInfo(NULL, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);

  CHECK_OK(RMM_ALLOC(&ptr, 64 << 20, 0));
  CHECK_OK(rmmGetInfo(&free_after, &total_after, 0));
  CHECK(total_after == total);
  CHECK(free_after <= total_after);
  if (simulated) {
    /* RMM_SIM_DEVICES=2:1GiB, and the simulator counts every byte. */
    CHECK(total == ((size_t)1 << 30));
    CHECK(free_after + (64u << 20) <= free_before);
  }
  CHECK_OK(RMM_FREE(ptr, 0));
  if (simulated) {
    CHECK_OK(rmmGetInfo(&free_after, &total_after, 0));
    CHECK(free_after == free_before);
  }
  *total_out = total;
}

static void check_offsets(void) {
  void *ptr = NULL;
  ptrdiff_t offset = -7;
  const size_t size = 10000;
  rmmResource_t resource = NULL;
  void *from_resource = NULL;

  CHECK_OK(RMM_ALLOC(&ptr, size, 0));
  CHECK_OK(rmmGetAllocationOffset(&offset, ptr, 0));
  CHECK(offset == 0);
  CHECK_OK(rmmGetAllocationOffset(&offset, (char *)ptr + 1, 0));
  CHECK(offset == 1);
  CHECK_OK(rmmGetAllocationOffset(&offset, (char *)ptr + 100, 0));
  CHECK(offset == 100);
  CHECK_OK(rmmGetAllocationOffset(&offset, (char *)ptr + size - 1, 0));
  CHECK(offset == (ptrdiff_t)(size - 1));
  /* offset may not be NULL; ptr must be device memory. */
  offset = -7;
  CHECK_RMM(rmmGetAllocationOffset(NULL, ptr, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetAllocationOffset(&offset, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(rmmGetAllocationOffset(&offset, &stack_object, 0) != RMM_SUCCESS);
  CHECK(offset == -7);
  CHECK_OK(RMM_FREE(ptr, 0));

  /* Memory from a resource handle is device memory too. */
  CHECK_OK(rmmCudaResourceCreate(&resource));
  CHECK_OK(rmmResourceAllocate(resource, &from_resource, 4096, 0));
  CHECK_OK(rmmGetAllocationOffset(&offset, from_resource, 0));
  CHECK(offset == 0);
  CHECK_OK(rmmGetAllocationOffset(&offset, (char *)from_resource + 4000, 0));
  CHECK(offset == 4000);
  CHECK_OK(rmmResourceDeallocate(resource, from_resource, 4096, 0));
  CHECK_OK(rmmResourceDestroy(resource));
}

/* rmmRealloc keeps the contents up to the smaller size. The memory comes from a managed
 * resource made the current device's resource, so the host may read it on real GPUs too. */
static void check_realloc(void) {
  rmmResource_t managed = NULL, previous = NULL, check = NULL;
  void *ptr = NULL;
  void *old = NULL;
  void *same = NULL;

  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmSetCurrentDeviceResource(managed, &previous));

  /* *ptr NULL allocates. */
  CHECK_OK(RMM_REALLOC(&ptr, 256, 0));
  CHECK(ptr != NULL);
  rmm_test_fill(ptr, 256, 1);

  /* Grow: the first 256 bytes move along. */
  old = ptr;
  CHECK_OK(RMM_REALLOC(&ptr, 1 << 20, 0));
  CHECK(ptr != NULL);
  CHECK_OK(rmmStreamSynchronize(0));
  CHECK(rmm_test_verify(ptr, 256, 1));
  if (ptr != old) CHECK_RMM(RMM_FREE(old, 0), RMM_ERROR_INVALID_ARGUMENT); /* old one freed */
  rmm_test_fill(ptr, 1 << 20, 2);

  /* Shrink: the first 100 bytes stay. */
  CHECK_OK(rmmRealloc(&ptr, 100, 0, __FILE__, __LINE__));
  CHECK_OK(rmmStreamSynchronize(0));
  CHECK(rmm_test_verify(ptr, 100, 2));

  /* The new allocation comes from the same resource and has the new size. */
  CHECK_OK(rmmGetCurrentDeviceResource(&check));
  CHECK_RMM(rmmResourceDeallocate(check, ptr, 256, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(check, ptr, 100, 0));
  CHECK_OK(rmmResourceDestroy(check));
  ptr = NULL;

  /* Failure leaves *ptr and its memory unchanged. */
  CHECK_OK(RMM_ALLOC(&ptr, 512, 0));
  rmm_test_fill(ptr, 512, 9);
  same = ptr;
  CHECK_RMM(RMM_REALLOC(&ptr, SIZE_MAX, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(ptr == same);
  CHECK_RMM(RMM_REALLOC(&ptr, SIZE_MAX / 2, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(ptr == same);
  CHECK(rmm_test_verify(ptr, 512, 9));

  /* new_size 0 frees and writes NULL. */
  CHECK_OK(RMM_REALLOC(&ptr, 0, 0));
  CHECK(ptr == NULL);
  CHECK_RMM(RMM_FREE(same, 0), RMM_ERROR_INVALID_ARGUMENT);

  /* A pointer rmm did not hand out. */
  ptr = (void *)&stack_object;
  CHECK_RMM(RMM_REALLOC(&ptr, 64, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == (void *)&stack_object);
  CHECK(stack_object == 42);

  /* Memory from rmmResourceAllocate is resized from its own resource. */
  CHECK_OK(rmmResourceAllocate(managed, &ptr, 300, 0));
  rmm_test_fill(ptr, 300, 4);
  CHECK_OK(RMM_REALLOC(&ptr, 600, 0));
  CHECK_OK(rmmStreamSynchronize(0));
  CHECK(rmm_test_verify(ptr, 300, 4));
  CHECK_OK(rmmResourceDeallocate(managed, ptr, 600, 0));

  CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(managed));
}

/* On simulated devices device memory is host memory: check contents of plain rmmAlloc too. */
static void check_contents(bool simulated) {
  enum { COUNT = 16 };
  void *ptrs[COUNT];
  size_t sizes[COUNT];
  int i, j;
  for (i = 0; i < COUNT; ++i) {
    sizes[i] = (size_t)(i + 1) * 1000 + (size_t)i;
    CHECK_OK(RMM_ALLOC(&ptrs[i], sizes[i], 0));
    CHECK(ptrs[i] != NULL);
    CHECK(rmm_test_aligned(ptrs[i], 256));
    for (j = 0; j < i; ++j) {
      /* Live allocations do not overlap. */
      const char *a = (const char *)ptrs[i], *b = (const char *)ptrs[j];
      CHECK(a + sizes[i] <= b || b + sizes[j] <= a);
    }
    if (simulated) rmm_test_fill(ptrs[i], sizes[i], (unsigned)i);
  }
  for (i = 0; i < COUNT; ++i) {
    if (simulated) CHECK(rmm_test_verify(ptrs[i], sizes[i], (unsigned)i));
    CHECK_OK(RMM_FREE(ptrs[i], 0));
  }
  if (simulated) {
    /* rmmRealloc of device memory on simulated devices. */
    void *ptr = NULL;
    CHECK_OK(RMM_ALLOC(&ptr, 4000, 0));
    rmm_test_fill(ptr, 4000, 77);
    CHECK_OK(RMM_REALLOC(&ptr, 8000, 0));
    CHECK_OK(rmmStreamSynchronize(0));
    CHECK(rmm_test_verify(ptr, 4000, 77));
    CHECK_OK(RMM_REALLOC(&ptr, 1000, 0));
    CHECK_OK(rmmStreamSynchronize(0));
    CHECK(rmm_test_verify(ptr, 1000, 77));
    CHECK_OK(RMM_FREE(ptr, 0));
  }
}

/* rmmCudaMalloc / rmmCudaFree: cudaMalloc's and cudaFree's contract (no stream; the free waits
 * for the device, as nothing configured async_free here), and their refusals. */
static void check_cuda_semantics(void) {
  void *p = NULL, *q = NULL;
  int local = 0;
  CHECK_RMM(rmmCudaMalloc(NULL, 64), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmCudaMalloc(&p, 0));
  CHECK(p == NULL);
  CHECK_OK(rmmCudaMalloc(&p, 1000));
  CHECK(p != NULL && rmm_test_aligned(p, 256));
  CHECK_RMM(rmmCudaMalloc(&q, (size_t)1 << 62), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(q == NULL);
  CHECK_RMM(rmmCudaFree((char *)p + 256), RMM_ERROR_INVALID_ARGUMENT); /* inside a block */
  CHECK_RMM(rmmCudaFree(&local), RMM_ERROR_INVALID_ARGUMENT);           /* never rmm's */
  CHECK_OK(rmmCudaFree(p));
  CHECK_RMM(rmmCudaFree(p), RMM_ERROR_INVALID_ARGUMENT); /* twice */
  CHECK_OK(rmmCudaFree(NULL));
  CHECK_OK(RMM_ALLOC(&p, 300, 0)); /* the legacy calls' memory is cudaFree's too */
  CHECK_OK(rmmCudaFree(p));
}

int main(void) {
  const bool simulated = rmm_test_simulated();
  size_t total = 0;
  CHECK_OK(rmmInitialize(NULL));
  check_zero_and_null();
  check_info(simulated, &total);
  check_huge(total);
  check_bad_frees(simulated);
  check_offsets();
  check_realloc();
  check_contents(simulated);
  check_cuda_semantics();
  CHECK_OK(rmmFinalize());
  return rmm_test_finish("alloc");
}
