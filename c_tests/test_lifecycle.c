/* rmmInitialize / rmmFinalize / rmmIsInitialized: options in and out, the states before,
 * during and after initialization, and invalid options. */
#include "rmm_test.h"

static void check_default_options(const rmmOptions_t *options, int device) {
  CHECK(options->allocation_mode == CudaDefaultAllocation);
  CHECK(options->initial_pool_size == 0);
  CHECK(options->maximum_pool_size == 0);
  CHECK(options->enable_logging == false);
  CHECK(options->devices.count == 1);
  CHECK(options->devices.ids[0] == device);
}

static void check_resource_name(int device, const char *expected) {
  rmmResource_t resource = NULL;
  const char *name = NULL;
  CHECK_OK(rmmGetPerDeviceResource(device, &resource));
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK_STR(name, expected);
  CHECK_OK(rmmResourceDestroy(resource));
}

/* rmmInitialize with `options` must fail with `expected` and leave rmm uninitialized. */
static void check_refused(const rmmOptions_t *options, rmmError_t expected) {
  CHECK_RMM(rmmInitialize(options), expected);
  CHECK(!rmmIsInitialized(NULL));
  check_resource_name(0, "cuda");
}

/* The version needs no initialization and matches the header's. */
static void check_version(void) {
  int major = -1, minor = -1, patch = -1;
  CHECK_OK(rmmGetVersion(&major, &minor, &patch));
  CHECK(major == RMM_VERSION_MAJOR && minor == RMM_VERSION_MINOR && patch == RMM_VERSION_PATCH);
  CHECK(RMM_VERSION == RMM_VERSION_MAJOR * 10000 + RMM_VERSION_MINOR * 100 + RMM_VERSION_PATCH);
  CHECK_RMM(rmmGetVersion(NULL, &minor, &patch), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetVersion(&major, &minor, NULL), RMM_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  check_version();
  const bool simulated = rmm_test_simulated();
  const int count = rmm_test_device_count();
  rmmOptions_t options;
  void *ptr = NULL;
  void *before = NULL;
  int device = -1;

  /* Before any rmmInitialize: not initialized, and rmmFinalize has nothing to end. */
  CHECK(!rmmIsInitialized(NULL));
  memset(&options, 0x5A, sizeof options);
  CHECK(!rmmIsInitialized(&options));
  CHECK_RMM(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED);

  /* Before rmmInitialize the legacy calls are refused, as in RMM 0.14 (this program has no
   * RMM_ALLOC_CONF and set no resource): allocation, rmmGetInfo, freeing NULL, size 0. */
  ptr = (void *)&options;
  CHECK_RMM(rmmAlloc(&ptr, 512, 0, __FILE__, __LINE__), RMM_ERROR_NOT_INITIALIZED);
  CHECK(ptr == (void *)&options);
  CHECK_RMM(RMM_ALLOC(&ptr, 0, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(rmmAlloc(NULL, 0, 0, __FILE__, __LINE__), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(RMM_FREE(NULL, 0), RMM_ERROR_NOT_INITIALIZED);
  ptr = NULL;
  CHECK_RMM(RMM_REALLOC(&ptr, 64, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK(ptr == NULL);
  {
    size_t free_bytes = 1, total_bytes = 1;
    CHECK_RMM(rmmGetInfo(&free_bytes, &total_bytes, 0), RMM_ERROR_NOT_INITIALIZED);
    CHECK(free_bytes == 1 && total_bytes == 1);
  }
  CHECK(!rmmIsInitialized(NULL));
  /* Memory from a resource is not the legacy API's: rmmFree takes it back at any time. */
  {
    rmmResource_t current = NULL;
    CHECK_OK(rmmGetCurrentDeviceResource(&current));
    CHECK_OK(rmmResourceAllocate(current, &ptr, 512, 0));
    CHECK_OK(rmmFree(ptr, 0, __FILE__, __LINE__));
    CHECK_RMM(rmmFree(ptr, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
    CHECK_OK(rmmResourceDestroy(current));
  }
  CHECK(!rmmIsInitialized(NULL));

  /* rmmInitialize(NULL): the defaults on the current device, copied out by rmmIsInitialized. */
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 0);
  CHECK_OK(rmmInitialize(NULL));
  CHECK(rmmIsInitialized(NULL));
  memset(&options, 0x5A, sizeof options);
  CHECK(rmmIsInitialized(&options));
  check_default_options(&options, device);
  check_resource_name(0, "cuda");

  /* A second rmmInitialize is refused and changes nothing. */
  CHECK_RMM(rmmInitialize(NULL), RMM_ERROR_ALREADY_INITIALIZED);
  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaManagedMemory;
  CHECK_RMM(rmmInitialize(&options), RMM_ERROR_ALREADY_INITIALIZED);
  memset(&options, 0x5A, sizeof options);
  CHECK(rmmIsInitialized(&options));
  check_default_options(&options, device);

  /* file/line may be NULL/0. */
  CHECK_OK(rmmAlloc(&before, 4096, 0, NULL, 0));
  CHECK(before != NULL);
  if (simulated) rmm_test_fill(before, 4096, 11);

  /* rmmFinalize: new allocations are refused, live ones stay valid and can be freed. */
  CHECK_OK(rmmFinalize());
  CHECK(!rmmIsInitialized(NULL));
  memset(&options, 0x5A, sizeof options);
  CHECK(!rmmIsInitialized(&options));
  ptr = (void *)&options; /* out-pointers are written only on success */
  CHECK_RMM(rmmAlloc(&ptr, 16, 0, __FILE__, __LINE__), RMM_ERROR_NOT_INITIALIZED);
  CHECK(ptr == (void *)&options);
  CHECK(rmmGetLastErrorMessage()[0] != '\0');
  CHECK_RMM(RMM_ALLOC(&ptr, 1 << 20, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK(ptr == (void *)&options);
  ptr = NULL; /* rmmRealloc of NULL allocates: refused too */
  CHECK_RMM(rmmRealloc(&ptr, 64, 0, __FILE__, __LINE__), RMM_ERROR_NOT_INITIALIZED);
  CHECK(ptr == NULL);
  if (simulated) CHECK(rmm_test_verify(before, 4096, 11));
  CHECK_OK(rmmFree(before, 0, __FILE__, __LINE__));
  CHECK_RMM(rmmFree(before, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED);
  check_resource_name(0, "cuda");

  /* Initialize again with explicit options: managed memory on device 0. Managed memory may
   * be dereferenced from the host on real GPUs too. */
  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaManagedMemory;
  options.devices.count = 1;
  options.devices.ids[0] = 0;
  CHECK_OK(rmmInitialize(&options));
  {
    rmmOptions_t out;
    memset(&out, 0x5A, sizeof out);
    CHECK(rmmIsInitialized(&out));
    CHECK(out.allocation_mode == CudaManagedMemory);
    CHECK(out.devices.count == 1);
    CHECK(out.devices.ids[0] == 0);
    CHECK(out.initial_pool_size == 0 && out.maximum_pool_size == 0 && !out.enable_logging);
  }
  check_resource_name(0, "managed");
  CHECK_OK(RMM_ALLOC(&ptr, 1000, 0));
  CHECK(ptr != NULL);
  rmm_test_fill(ptr, 1000, 3);
  CHECK(rmm_test_verify(ptr, 1000, 3));
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmFinalize());
  /* Each device gets back the resource it had before. */
  check_resource_name(0, "cuda");

  /* CudaAsyncAllocation: the driver's pools, where the device has them. */
  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaAsyncAllocation;
  options.initial_pool_size = 1 << 20;
  {
    rmmError_t status = rmmInitialize(&options);
    CHECK(status == RMM_SUCCESS || status == RMM_ERROR_NOT_SUPPORTED);
    if (status == RMM_SUCCESS) {
      rmmOptions_t out;
      CHECK(rmmIsInitialized(&out));
      CHECK(out.allocation_mode == CudaAsyncAllocation);
      CHECK(out.initial_pool_size == (size_t)1 << 20);
      CHECK(out.devices.count == 1 && out.devices.ids[0] == device);
      check_resource_name(0, "cuda_async");
      CHECK_OK(RMM_ALLOC(&ptr, 4096, 0));
      CHECK(ptr != NULL);
      CHECK_OK(RMM_FREE(ptr, 0));
      CHECK_OK(rmmStreamSynchronize(0));
      CHECK_OK(rmmFinalize());
    } else {
      CHECK(!rmmIsInitialized(NULL));
    }
  }

  /* PoolAllocation (and with managed memory): supported, or refused as not supported. */
  {
    const rmmAllocationMode_t pool_modes[2] = {PoolAllocation, PoolAllocation | CudaManagedMemory};
    int i;
    for (i = 0; i < 2; ++i) {
      rmmError_t status;
      memset(&options, 0, sizeof options);
      options.allocation_mode = pool_modes[i];
      options.initial_pool_size = 1 << 20;
      options.maximum_pool_size = 64 << 20;
      status = rmmInitialize(&options);
      CHECK(status == RMM_SUCCESS || status == RMM_ERROR_NOT_SUPPORTED);
      if (status == RMM_SUCCESS) {
        rmmOptions_t out;
        CHECK(rmmIsInitialized(&out));
        CHECK(out.allocation_mode == pool_modes[i]);
        CHECK_OK(RMM_ALLOC(&ptr, 4096, 0));
        CHECK(ptr != NULL);
        CHECK_OK(RMM_FREE(ptr, 0));
        CHECK_OK(rmmFinalize());
      } else {
        CHECK(!rmmIsInitialized(NULL));
      }
    }
  }

  /* Invalid options: each refused, nothing installed. */
  memset(&options, 0, sizeof options);
  options.devices.count = -1;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.devices.count = RMM_MAX_DEVICES + 1;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.devices.count = 1;
  options.devices.ids[0] = -1;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.devices.ids[0] = count;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.devices.count = 2; /* a device listed twice */
  options.devices.ids[0] = 0;
  options.devices.ids[1] = 0;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  memset(&options, 0, sizeof options);
  options.allocation_mode = 0x100; /* unknown flag */
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.allocation_mode = CudaAsyncAllocation | PoolAllocation;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);
  options.allocation_mode = CudaAsyncAllocation | CudaManagedMemory;
  check_refused(&options, RMM_ERROR_INVALID_ARGUMENT);

  /* After all that, a plain initialize/finalize cycle still works. */
  CHECK_OK(rmmInitialize(NULL));
  CHECK_OK(RMM_ALLOC(&ptr, 256, 0));
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmFinalize());
  CHECK(!rmmIsInitialized(NULL));

  return rmm_test_finish("lifecycle");
}
