/* rmmInitialize over a device list fails as a whole (issue 51): an invalid entry late in the
 * list is refused as an invalid argument before any pool is made, also where a pool would not
 * fit an earlier device; a pool that does not fit a later device is that device's out of
 * memory, with the pools of the devices before it given back. Either way rmm is not
 * initialized, each device keeps its resource and its free memory, and a later rmmInitialize
 * works. Exits 77 (skipped) with fewer than two devices. */
#include "rmm_test.h"

static bool simulated;

static size_t free_memory(int device) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_OK(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, device));
  return free_bytes;
}

/* Free memory as before: exactly on simulated devices; on a GPU, less than `slack` apart (the
 * driver's own use moves a little; a pool left behind would be far more). */
static bool about(size_t now, size_t before, size_t slack) {
  if (simulated) return now == before;
  return now > before ? now - before < slack : before - now < slack;
}

static void check_resource_name(int device, const char *expected) {
  rmmResource_t resource = NULL;
  const char *name = NULL;
  CHECK_OK(rmmGetPerDeviceResource(device, &resource));
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK_STR(name, expected);
  CHECK_OK(rmmResourceDestroy(resource));
}

static rmmOptions_t pool_options(size_t pool, int first, int second, int third, int count) {
  rmmOptions_t options;
  memset(&options, 0, sizeof options);
  options.allocation_mode = PoolAllocation;
  options.initial_pool_size = pool;
  options.devices.count = count;
  options.devices.ids[0] = first;
  options.devices.ids[1] = second;
  options.devices.ids[2] = third;
  return options;
}

/* rmmInitialize(options) fails with `expected`, and leaves both devices as they were. */
static void check_refused(const rmmOptions_t *options, rmmError_t expected, size_t slack) {
  const size_t free0 = free_memory(0), free1 = free_memory(1);
  CHECK_RMM(rmmInitialize(options), expected);
  CHECK(!rmmIsInitialized(NULL));
  CHECK(about(free_memory(0), free0, slack));
  CHECK(about(free_memory(1), free1, slack));
  check_resource_name(0, "cuda");
  check_resource_name(1, "cuda");
  CHECK_RMM(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED);
  CHECK(about(free_memory(0), free0, slack));
  CHECK(about(free_memory(1), free1, slack));
}

/* The invalid last entries of a list of three whose first two are 0 and 1. */
static void check_invalid_last_entries(size_t pool, int count, size_t slack) {
  const int invalid[4] = {count, -1, 0, 1};
  int i;
  for (i = 0; i < 4; ++i) {
    const rmmOptions_t options = pool_options(pool, 0, 1, invalid[i], 3);
    check_refused(&options, RMM_ERROR_INVALID_ARGUMENT, slack);
  }
}

int main(void) {
  int count;
  size_t free0, free1, pool, fill_bytes;
  rmmResource_t cuda1 = NULL;
  void *fill = NULL, *ptr = NULL;
  rmmOptions_t options;

  simulated = rmm_test_simulated();
  rmm_test_require_devices(2);
  count = rmm_test_device_count();
  CHECK_OK(rmmSetDevice(0));
  check_resource_name(0, "cuda");
  check_resource_name(1, "cuda");
  free0 = free_memory(0);
  free1 = free_memory(1);
  /* A quarter of the smaller device's free memory, in whole MiB. */
  pool = (free0 < free1 ? free0 : free1) / 4 >> 20 << 20;
  CHECK(pool >= (4u << 20));

  /* (1) An invalid last entry, with room for the pools: nothing is made first. */
  check_invalid_last_entries(pool, count, pool / 2);

  /* Device 1 filled so that the pool does not fit it: the invalid argument still wins, where a
   * pool for device 0 made first and then device 1's out of memory was answered before. */
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(rmmCudaResourceCreate(&cuda1));
  CHECK_OK(rmmSetDevice(0));
  fill_bytes = free_memory(1) - pool / 2;
  CHECK_OK(rmmResourceAllocate(cuda1, &fill, fill_bytes, 0));
  check_invalid_last_entries(pool, count, pool / 2);

  /* (2) The pool fits device 0 but not device 1: device 1's out of memory, and device 0's pool
   * given back. Listed the other way round, device 1 fails first. */
  options = pool_options(pool, 0, 1, 0, 2);
  check_refused(&options, RMM_ERROR_OUT_OF_MEMORY, pool / 2);
  options = pool_options(pool, 1, 0, 0, 2);
  check_refused(&options, RMM_ERROR_OUT_OF_MEMORY, pool / 2);

  /* Device 0 alone still works while device 1 is full. */
  options = pool_options(pool, 0, 0, 0, 1);
  free0 = free_memory(0);
  CHECK_OK(rmmInitialize(&options));
  CHECK(free_memory(0) <= free0 - pool);
  CHECK_OK(rmmFinalize());
  CHECK(about(free_memory(0), free0, pool / 2));
  CHECK_OK(rmmResourceDeallocate(cuda1, fill, fill_bytes, 0));
  CHECK_OK(rmmResourceDestroy(cuda1));

  /* Then both devices, with the legacy calls on each, and rmmFinalize puts everything back. */
  free0 = free_memory(0);
  free1 = free_memory(1);
  options = pool_options(pool, 1, 0, 0, 2);
  CHECK_OK(rmmInitialize(&options));
  CHECK(rmmIsInitialized(NULL));
  check_resource_name(0, "pool");
  check_resource_name(1, "pool");
  CHECK(free_memory(0) <= free0 - pool);
  CHECK(free_memory(1) <= free1 - pool);
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(RMM_ALLOC(&ptr, 4096, 0));
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(RMM_ALLOC(&ptr, 4096, 0));
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmFinalize());
  CHECK(!rmmIsInitialized(NULL));
  check_resource_name(0, "cuda");
  check_resource_name(1, "cuda");
  CHECK(about(free_memory(0), free0, pool / 2));
  CHECK(about(free_memory(1), free1, pool / 2));

  return rmm_test_finish("initialize_rollback");
}
