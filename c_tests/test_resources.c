/* Resource handles: every create function, allocate/deallocate, name and device, and the
 * misuse a C caller can make of handles and pointers. */
#include "rmm_test.h"

enum kind { CUDA, MANAGED, ASYNC, PINNED, KIND_COUNT };

static const char *const kind_names[KIND_COUNT] = {"cuda", "managed", "cuda_async", "pinned_host"};

static bool simulated;
static int stack_object = 7;

/* Creates a resource of `kind`; false when the device does not support it (async only). */
static bool create(enum kind kind, rmmResource_t *resource) {
  rmmError_t status = RMM_ERROR_UNKNOWN;
  *resource = NULL;
  switch (kind) {
    case CUDA: status = rmmCudaResourceCreate(resource); break;
    case MANAGED: status = rmmManagedResourceCreate(resource); break;
    case ASYNC: status = rmmAsyncResourceCreate(resource, 1 << 20, SIZE_MAX); break;
    case PINNED: status = rmmPinnedHostResourceCreate(resource); break;
    default: break;
  }
  if (kind == ASYNC && status == RMM_ERROR_NOT_SUPPORTED) {
    printf("note: rmmAsyncResourceCreate: not supported here (%s)\n", rmmGetLastErrorMessage());
    CHECK(*resource == NULL);
    return false;
  }
  CHECK_RMM(status, RMM_SUCCESS);
  CHECK(*resource != NULL);
  return true;
}

/* Device memory is host memory only on simulated devices; managed and pinned always are. */
static bool host_accessible(enum kind kind) {
  return simulated || kind == MANAGED || kind == PINNED;
}

static void check_create_null_out(void) {
  CHECK_RMM(rmmCudaResourceCreate(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmManagedResourceCreate(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAsyncResourceCreate(NULL, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmPinnedHostResourceCreate(NULL), RMM_ERROR_INVALID_ARGUMENT);
}

/* Calls on a handle that is not live must all answer RMM_ERROR_INVALID_HANDLE. */
static void check_dead_handle(rmmResource_t handle, bool null_handle) {
  void *ptr = (void *)&stack_object;
  const char *name = "untouched";
  int device = -5;
  rmmResource_t previous = (rmmResource_t)&stack_object;
  CHECK_RMM(rmmResourceAllocate(handle, &ptr, 64, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK(ptr == (void *)&stack_object);
  CHECK_RMM(rmmResourceDeallocate(handle, NULL, 0, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceGetName(handle, &name), RMM_ERROR_INVALID_HANDLE);
  CHECK_STR(name, "untouched");
  CHECK_RMM(rmmResourceGetDevice(handle, &device), RMM_ERROR_INVALID_HANDLE);
  CHECK(device == -5);
  CHECK_RMM(rmmSetPerDeviceResource(0, handle, &previous), RMM_ERROR_INVALID_HANDLE);
  CHECK(previous == (rmmResource_t)&stack_object);
  CHECK_RMM(rmmSetCurrentDeviceResource(handle, NULL), RMM_ERROR_INVALID_HANDLE);
  if (null_handle) {
    CHECK_OK(rmmResourceDestroy(handle)); /* NULL is a no-op */
  } else {
    CHECK_RMM(rmmResourceDestroy(handle), RMM_ERROR_INVALID_HANDLE);
  }
}

static void check_kind(enum kind kind) {
  rmmResource_t resource = NULL, other = NULL;
  const char *name = NULL;
  int device = -1, current = -1;
  void *ptr = NULL, *second = NULL;
  void *heap;
  const size_t size = 5000;
  const size_t huge[2] = {SIZE_MAX, SIZE_MAX / 2};
  int i;

  if (!create(kind, &resource)) return;
  printf("resource %s\n", kind_names[kind]);

  /* Name and device. */
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK_STR(name, kind_names[kind]);
  CHECK_OK(rmmGetDevice(&current));
  CHECK_OK(rmmResourceGetDevice(resource, &device));
  CHECK(device == current);
  CHECK_RMM(rmmResourceGetName(resource, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceGetDevice(resource, NULL), RMM_ERROR_INVALID_ARGUMENT);

  /* Allocate, use, deallocate. */
  CHECK_OK(rmmResourceAllocate(resource, &ptr, size, 0));
  CHECK(ptr != NULL);
  CHECK(rmm_test_aligned(ptr, 256));
  CHECK_OK(rmmResourceAllocate(resource, &second, size, 0));
  CHECK(second != NULL && second != ptr);
  CHECK((char *)ptr + size <= (char *)second || (char *)second + size <= (char *)ptr);
  if (kind == ASYNC) CHECK_OK(rmmStreamSynchronize(0)); /* stream-ordered memory */
  if (host_accessible(kind)) {
    rmm_test_fill(ptr, size, 21);
    rmm_test_fill(second, size, 22);
    CHECK(rmm_test_verify(ptr, size, 21));
    CHECK(rmm_test_verify(second, size, 22));
  }
  CHECK_RMM(rmmResourceAllocate(resource, NULL, 64, 0), RMM_ERROR_INVALID_ARGUMENT);

  /* Wrong size: refused, and the memory is still live. */
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, size - 1, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, size + 1, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
  if (host_accessible(kind)) CHECK(rmm_test_verify(ptr, size, 21));

  /* Through another resource (of the same kind and of another): refused, still live. */
  CHECK(create(kind == ASYNC ? CUDA : kind, &other));
  CHECK_RMM(rmmResourceDeallocate(other, ptr, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(other));
  CHECK(create(kind == PINNED ? CUDA : PINNED, &other));
  CHECK_RMM(rmmResourceDeallocate(other, ptr, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(other));
  if (host_accessible(kind)) CHECK(rmm_test_verify(ptr, size, 21));

  /* Pointers it did not hand out. */
  heap = malloc(256);
  CHECK(heap != NULL);
  CHECK_RMM(rmmResourceDeallocate(resource, &stack_object, sizeof stack_object, 0),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, heap, 256, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, (char *)ptr + 256, size - 256, 0),
            RMM_ERROR_INVALID_ARGUMENT);
  free(heap);
  CHECK(stack_object == 7);

  /* The correct deallocation works afterwards; a second one is a double free. */
  CHECK_OK(rmmResourceDeallocate(resource, ptr, size, 0));
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree(ptr, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  /* NULL is a no-op. */
  CHECK_OK(rmmResourceDeallocate(resource, NULL, 0, 0));
  CHECK_OK(rmmResourceDeallocate(resource, NULL, 128, 0));

  /* rmmFree returns memory of any resource; afterwards it is no longer live. */
  if (host_accessible(kind)) CHECK(rmm_test_verify(second, size, 22));
  CHECK_OK(rmmFree(second, 0, __FILE__, __LINE__));
  CHECK_RMM(rmmResourceDeallocate(resource, second, size, 0), RMM_ERROR_INVALID_ARGUMENT);

  /* Zero bytes: NULL and SUCCESS. */
  ptr = (void *)&stack_object;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 0, 0));
  CHECK(ptr == NULL);

  /* Huge sizes: out of memory, and the resource keeps working. */
  for (i = 0; i < 2; ++i) {
    ptr = (void *)&stack_object;
    CHECK_RMM(rmmResourceAllocate(resource, &ptr, huge[i], 0), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(ptr == (void *)&stack_object);
  }
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 1 << 20, 0));
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 1 << 20, 0));

  /* Destroyed while an allocation lives: the memory stays valid and rmmFree returns it. */
  CHECK_OK(rmmResourceAllocate(resource, &ptr, size, 0));
  if (kind == ASYNC) CHECK_OK(rmmStreamSynchronize(0));
  CHECK_OK(rmmResourceDestroy(resource));
  if (host_accessible(kind)) {
    rmm_test_fill(ptr, size, 23);
    CHECK(rmm_test_verify(ptr, size, 23));
  }
  check_dead_handle(resource, false);
  CHECK_OK(rmmFree(ptr, 0, __FILE__, __LINE__));
  CHECK_RMM(rmmFree(ptr, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  if (kind == ASYNC) CHECK_OK(rmmStreamSynchronize(0));
}

/* A destroyed handle stays dead even when its slot is reused by a new handle. */
/* A cuda_async resource whose pool memory can be exported: each kind the driver offers, and
 * refusals for what it does not (simulated devices offer POSIX file descriptors only). */
static void check_exportable_pools(void) {
  const uint32_t kinds[] = {RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, RMM_HANDLE_TYPE_FABRIC, RMM_HANDLE_TYPE_WIN32,
                            RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | RMM_HANDLE_TYPE_FABRIC};
  rmmResource_t resource = NULL;
  CHECK_RMM(rmmAsyncResourceCreateExportable(&resource, 0, 0, 0x10), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(resource == NULL);
  CHECK(strstr(rmmGetLastErrorMessage(), "0x10") != NULL);
  CHECK_RMM(rmmAsyncResourceCreateExportable(NULL, 0, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    rmmError_t status = rmmAsyncResourceCreateExportable(&resource, 1 << 20, SIZE_MAX, kinds[i]);
    bool const posix_only = kinds[i] == RMM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    if (rmm_test_simulated()) CHECK(status == (posix_only ? RMM_SUCCESS : RMM_ERROR_NOT_SUPPORTED));
    if (kinds[i] == RMM_HANDLE_TYPE_WIN32) CHECK(status == RMM_ERROR_NOT_SUPPORTED); /* Linux */
    CHECK(status == RMM_SUCCESS || status == RMM_ERROR_NOT_SUPPORTED);
    if (status != RMM_SUCCESS) {
      CHECK(resource == NULL);
      continue;
    }
    void *ptr = NULL, *pool = NULL;
    static const char bytes[4096] = {7};
    CHECK_OK(rmmAsyncResourceGetPool(resource, &pool));
    CHECK_OK(rmmResourceAllocate(resource, &ptr, 4096, 0));
    CHECK_OK(rmmMemcpyAsync(ptr, bytes, 4096, 0));
    CHECK_OK(rmmResourceDeallocate(resource, ptr, 4096, 0));
    CHECK_OK(rmmStreamSynchronize(0));
    CHECK_OK(rmmResourceDestroy(resource));
    resource = NULL;
  }
}

static void check_handle_reuse(void) {
  rmmResource_t first = NULL, second = NULL, third = NULL;
  const char *name = NULL;
  void *ptr = NULL;
  CHECK(create(CUDA, &first));
  CHECK_OK(rmmResourceDestroy(first));
  CHECK(create(MANAGED, &second));
  CHECK(create(PINNED, &third));
  check_dead_handle(first, false);
  CHECK_OK(rmmResourceGetName(second, &name));
  CHECK_STR(name, "managed");
  CHECK_OK(rmmResourceGetName(third, &name));
  CHECK_STR(name, "pinned_host");
  CHECK_OK(rmmResourceAllocate(second, &ptr, 64, 0));
  CHECK_OK(rmmResourceDeallocate(second, ptr, 64, 0));
  CHECK_OK(rmmResourceDestroy(second));
  CHECK_OK(rmmResourceDestroy(third));
  check_dead_handle(second, false);
  check_dead_handle(third, false);
}

/* Two handles to one resource (from the per-device registry) are the same resource. */
static void check_shared_handles(void) {
  rmmResource_t a = NULL, b = NULL;
  void *ptr = NULL;
  CHECK_OK(rmmGetCurrentDeviceResource(&a));
  CHECK_OK(rmmGetCurrentDeviceResource(&b));
  CHECK(a != NULL && b != NULL);
  CHECK_OK(rmmResourceAllocate(a, &ptr, 1000, 0));
  CHECK_OK(rmmResourceDeallocate(b, ptr, 1000, 0));
  /* rmmAlloc uses the current device's resource: the same one. */
  CHECK_OK(RMM_ALLOC(&ptr, 2000, 0));
  CHECK_OK(rmmResourceDeallocate(a, ptr, 2000, 0));
  CHECK_OK(rmmResourceDestroy(a));
  CHECK_OK(rmmResourceDestroy(b));
  check_dead_handle(a, false);
}

int main(void) {
  int kind;
  simulated = rmm_test_simulated();
  CHECK_OK(rmmInitialize(NULL)); /* the legacy calls need it */

  check_create_null_out();
  for (kind = 0; kind < KIND_COUNT; ++kind) check_kind((enum kind)kind);
  /* rmmAsyncResourceCreate with other pool settings. */
  {
    rmmResource_t resource = NULL;
    rmmError_t status = rmmAsyncResourceCreate(&resource, 0, 0);
    CHECK(status == RMM_SUCCESS || status == RMM_ERROR_NOT_SUPPORTED);
    if (status == RMM_SUCCESS) {
      void *ptr = NULL, *pool = NULL, *again = NULL;
      rmmResource_t stats = NULL;
      CHECK_OK(rmmResourceAllocate(resource, &ptr, 300, 0));
      CHECK_OK(rmmResourceDeallocate(resource, ptr, 300, 0));
      CHECK_OK(rmmStreamSynchronize(0));
      /* Its driver pool: the same each time; none for another kind or through an adaptor. */
      CHECK_OK(rmmAsyncResourceGetPool(resource, &pool));
      CHECK(pool != NULL);
      CHECK_OK(rmmAsyncResourceGetPool(resource, &again));
      CHECK(again == pool);
      CHECK_OK(rmmStatisticsAdaptorCreate(&stats, resource));
      CHECK_RMM(rmmAsyncResourceGetPool(stats, &again), RMM_ERROR_NOT_SUPPORTED);
      CHECK_RMM(rmmAsyncResourceGetPool(resource, NULL), RMM_ERROR_INVALID_ARGUMENT);
      CHECK_RMM(rmmAsyncResourceGetPool(NULL, &again), RMM_ERROR_INVALID_HANDLE);
      CHECK_OK(rmmResourceDestroy(stats));
      CHECK_OK(rmmResourceDestroy(resource));
    }
  }
  check_exportable_pools();
  check_handle_reuse();
  check_shared_handles();

  /* NULL, garbage and destroyed handles. */
  check_dead_handle(NULL, true);
  check_dead_handle((rmmResource_t)(uintptr_t)0x1234, false);
  check_dead_handle((rmmResource_t)(uintptr_t)0x1, false);
  check_dead_handle((rmmResource_t)(uintptr_t)0xDEADBEEF0000ULL, false);
  check_dead_handle((rmmResource_t)(uintptr_t)UINTPTR_MAX, false);
  check_dead_handle((rmmResource_t)(void *)&stack_object, false);
  CHECK_OK(rmmResourceDestroy(NULL));

  return rmm_test_finish("resources");
}
