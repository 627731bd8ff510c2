/* rmmResourceCreateFromSpec: stacks from the stack-spec language on simulated devices, used
 * through the ordinary entry points (allocate, free, statistics, limits, snapshots, the
 * per-device registry), and bad specs refused with a message that points at the bad text. */
#define _POSIX_C_SOURCE 200809L
#include "rmm_test.h"

#define MIB ((size_t)1 << 20)

static char *snapshot(rmmResource_t resource) {
  size_t length = 0;
  char *text;
  CHECK_OK(rmmResourceGetSnapshot(resource, NULL, 0, &length));
  text = (char *)malloc(length + 1);
  CHECK(text != NULL);
  CHECK_OK(rmmResourceGetSnapshot(resource, text, length + 1, NULL));
  return text;
}

/* A spec refused as INVALID_ARGUMENT, with a message that says each of `says`. */
static void refused(const char *spec, int device, const char *says1, const char *says2) {
  rmmResource_t untouched = NULL;
  CHECK_RMM(rmmResourceCreateFromSpec(spec, device, &untouched), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(untouched == NULL);
  if (strstr(rmmGetLastErrorMessage(), says1) == NULL || strstr(rmmGetLastErrorMessage(), says2) == NULL) {
    fprintf(stderr, "spec \"%s\": the message does not say \"%s\" and \"%s\"\n", spec, says1, says2);
    rmm_test_fail(__FILE__, __LINE__, "the message names the bad text");
  }
}

int main(void) {
  rmmResource_t top = NULL, other = NULL, previous = NULL, current = NULL;
  rmmStatistics_t counts;
  const char *name = NULL;
  size_t bytes = 0;
  int device = -1;
  void *a = NULL, *b = NULL, *pool = NULL;
  char *text;

  /* Bad arguments and bad specs. */
  refused(NULL, 0, "spec is NULL", "rmmResourceCreateFromSpec");
  CHECK_RMM(rmmResourceCreateFromSpec("pool", 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  refused("pool", 7, "device 7 does not exist", "");
  refused("pool", -1, "device -1 does not exist", "");
  refused("statistics/pool:inital=1GiB", 0, "at column 17 (\"inital\")", "pool takes initial, maximum");
  refused("statistics/slab", 0, "at column 12 (\"slab\"): unknown layer", "expected a resource");
  refused("pool:initial=lots", 0, "at column 14 (\"lots\")", "is not a size");
  refused("pool:initial=4G", 0, "at column 14 (\"4G\")", "4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000 bytes)");
  refused("cuda/pool", 0, "at column 6 (\"pool\")", "must be the last layer");
  refused("pool/", 0, "at column 6", "an empty layer");
  refused("report/pool", 0, "report applies to the devices' default stacks", "");
  refused("async_free/pool", 0, "async_free applies to the devices' default stacks", "");

  /* A pool with statistics on device 0: every entry point works on the handle. */
  CHECK_OK(rmmResourceCreateFromSpec("statistics/pool:initial=8MiB,maximum=64MiB/cuda", 0, &top));
  CHECK(top != NULL);
  CHECK_OK(rmmResourceGetName(top, &name));
  CHECK_STR(name, "statistics");
  CHECK_OK(rmmResourceAllocate(top, &a, 3 * MIB, NULL));
  CHECK_OK(rmmResourceAllocate(top, &b, 1000, NULL));
  CHECK(rmm_test_aligned(a, 256) && rmm_test_aligned(b, 256));
  CHECK_OK(rmmStatisticsAdaptorGetCounts(top, &counts));
  CHECK(counts.current_bytes == (int64_t)(3 * MIB + 1000) && counts.current_count == 2);
  CHECK_OK(rmmPoolResourceGetSize(top, &bytes));
  CHECK(bytes == 8 * MIB);
  text = snapshot(top);
  CHECK(strstr(text, "\"statistics\"") != NULL && strstr(text, "\"pool\"") != NULL && strstr(text, "\"cuda\"") != NULL);
  free(text);
  CHECK_RMM(rmmResourceAllocate(top, &a, 65 * MIB, NULL), RMM_ERROR_OUT_OF_MEMORY); /* the maximum */
  CHECK_OK(rmmResourceDeallocate(top, a, 3 * MIB, NULL));
  CHECK_OK(rmmFree(b, NULL, __FILE__, __LINE__)); /* rmmFree knows it too */
  CHECK_OK(rmmStatisticsAdaptorGetCounts(top, &counts));
  CHECK(counts.current_bytes == 0 && counts.total_count == 2);

  /* It serves as a device's resource like any other handle. */
  CHECK_OK(rmmSetPerDeviceResource(0, top, &previous));
  CHECK_OK(rmmGetPerDeviceResource(0, &current));
  CHECK_OK(rmmResourceGetName(current, &name));
  CHECK_STR(name, "statistics");
  CHECK_OK(rmmSetPerDeviceResource(0, previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(current));
  CHECK_OK(rmmResourceDestroy(top));

  /* Device 1: a limit over bins over an arena of managed memory. */
  rmm_test_require_devices(2);
  CHECK_OK(rmmResourceCreateFromSpec(" limiting:limit=2MiB / binning:min=10,max=16,bins=[1MiB] / arena:size=4MiB / managed ", 1, &top));
  CHECK_OK(rmmResourceGetDevice(top, &device));
  CHECK(device == 1);
  CHECK_OK(rmmResourceAllocate(top, &a, 1 * MIB, NULL)); /* the 1 MiB bin */
  CHECK_RMM(rmmResourceAllocate(top, &b, 2 * MIB, NULL), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(rmmGetLastErrorMessage(), "limit") != NULL);
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(top, &bytes));
  CHECK(bytes == 1 * MIB);
  CHECK_OK(rmmResourceDeallocate(top, a, 1 * MIB, NULL));
  CHECK_OK(rmmResourceDestroy(top));

  /* Device resources with their options. */
  CHECK_OK(rmmResourceCreateFromSpec("cuda_async:initial=4MiB,release_threshold=unlimited,handle_types=posix_file_descriptor", 0, &other));
  CHECK_OK(rmmAsyncResourceGetPool(other, &pool));
  CHECK(pool != NULL);
  CHECK_OK(rmmResourceAllocate(other, &a, 5000, NULL));
  CHECK_OK(rmmResourceDeallocate(other, a, 5000, NULL));
  CHECK_OK(rmmResourceDestroy(other));
  CHECK_OK(rmmResourceCreateFromSpec("tracking:stacks=false/expandable:maximum=64MiB,release_threshold=0", 0, &other));
  CHECK_OK(rmmResourceAllocate(other, &a, 3 * MIB, NULL));
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(other, NULL, 0, &bytes));
  CHECK(bytes == 1);
  CHECK_OK(rmmResourceDeallocate(other, a, 3 * MIB, NULL));
  CHECK_OK(rmmResourceDestroy(other));
  return rmm_test_finish("spec");
}
