/* Sleep and wake (rmmResourceSleep, rmmResourceWake, rmmResourceIsAsleep, rmmDeviceSleep,
 * rmmDeviceWake): a stack over an expandable resource gives back all its device memory, live
 * blocks' included, and takes it again with every address unchanged; RMM_SLEEP_KEEP brings the
 * contents back, RMM_SLEEP_DISCARD drops them. While asleep allocations are refused (with the
 * reason) and frees are taken. Bad calls are refused and change nothing; a wake the device
 * cannot serve leaves the resource asleep with its host copy.
 *
 * Runs on simulated devices and on a real GPU alike: contents go in and out with
 * rmmMemcpyAsync (device memory is never touched from the host), device memory in use is what
 * rmmGetDeviceMemInfo says. */
#include "rmm_test.h"

#define MIB ((size_t)1 << 20)
/* The mapping granularity of current GPUs and of simulated devices. */
#define GRANULE (2 * MIB)

/* A byte of a block's pattern: it differs per block (seed) and per 256-byte stretch, so that
 * a page put back at another address, or another block's page, shows. */
static unsigned char pattern_byte(size_t i, unsigned seed) {
  uint32_t h = (uint32_t)(i >> 8) * 2654435761u + seed * 40503u + 1u;
  return (unsigned char)((h >> 24) ^ (i & 0xFFu));
}

/* Writes the pattern of `seed` to `bytes` of device memory at `ptr` (through a host copy). */
static void put(void *ptr, size_t bytes, unsigned seed, cudaStream_t stream) {
  unsigned char *host = (unsigned char *)malloc(bytes);
  size_t i;
  CHECK(host != NULL);
  for (i = 0; i < bytes; ++i) host[i] = pattern_byte(i, seed);
  CHECK_OK(rmmMemcpyAsync(ptr, host, bytes, stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  free(host);
}

/* True when `bytes` of device memory at `ptr` hold the pattern of `seed`. */
static bool holds(const void *ptr, size_t bytes, unsigned seed, cudaStream_t stream) {
  unsigned char *host = (unsigned char *)malloc(bytes);
  bool same = true;
  size_t i;
  CHECK(host != NULL);
  memset(host, 0, bytes);
  CHECK_OK(rmmMemcpyAsync(host, ptr, bytes, stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  for (i = 0; i < bytes && same; ++i) same = host[i] == pattern_byte(i, seed);
  free(host);
  return same;
}

/* Bytes of `device`'s memory in use. */
static size_t device_used(int device) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_OK(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, device));
  CHECK(free_bytes <= total_bytes);
  return total_bytes - free_bytes;
}

static size_t device_free(int device) {
  size_t free_bytes = 0, total_bytes = 0;
  CHECK_OK(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, device));
  return free_bytes;
}

/* While a resource sleeps the device has what it had before the resource was made: exactly on
 * simulated devices, within one granule on a GPU (whose driver counts in its own units). */
static void check_back_to(size_t before, bool simulated, const char *when) {
  size_t used = device_used(0);
  if (simulated ? used != before : used > before + GRANULE) {
    fprintf(stderr, "%s: %zu bytes of device memory in use, %zu before the resource was made\n", when, used,
            before);
    rmm_test_fail(__FILE__, __LINE__, "a sleeping resource holds no device memory");
  }
}

static int is_asleep(rmmResource_t resource) {
  int asleep = -1;
  CHECK_OK(rmmResourceIsAsleep(resource, &asleep));
  CHECK(asleep == 0 || asleep == 1);
  return asleep;
}

/* An allocation that a sleeping stack must refuse, leaving the out-pointer alone. */
static void check_refused(rmmResource_t resource, size_t bytes, cudaStream_t stream) {
  int marker = 0;
  void *ptr = &marker;
  CHECK_RMM(rmmResourceAllocate(resource, &ptr, bytes, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "asleep") != NULL);
  CHECK(ptr == &marker);
}

/* Warms the driver up (a stream's first copy, the first virtual memory mapping, a pinned host
 * copy) so that what it takes for itself is counted before the baseline is measured. */
static void warm_up(cudaStream_t stream) {
  rmmResource_t expandable = NULL;
  void *block = NULL;
  CHECK_OK(rmmExpandableResourceCreate(&expandable, 0));
  CHECK_OK(rmmResourceAllocate(expandable, &block, MIB, stream));
  put(block, 4096, 1, stream);
  CHECK_OK(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, stream));
  CHECK_OK(rmmResourceWake(expandable, stream));
  CHECK(holds(block, 4096, 1, stream));
  CHECK_OK(rmmResourceDeallocate(expandable, block, MIB, stream));
  CHECK_OK(rmmResourceDestroy(expandable));
}

/* RMM_SLEEP_KEEP through statistics over a pool over an expandable resource with pages of one
 * granule: blocks of several sizes, small and large, some freed to leave holes. */
static void keep_mode(cudaStream_t stream, bool simulated) {
  enum { BLOCKS = 9 };
  const size_t sizes[BLOCKS] = {1, 100, 4096 + 3, 200 << 10, 300 << 10, MIB, 3 * MIB + 5, 9 * MIB, 40 * MIB};
  void *blocks[BLOCKS] = {0};
  void *spacers[BLOCKS] = {0};
  void *again = NULL;
  rmmResource_t expandable = NULL, pool = NULL, stats = NULL;
  rmmExpandableOptions_t options;
  rmmStatistics_t counts;
  size_t before = device_used(0);
  int i;

  memset(&options, 0, sizeof options);
  options.page_size = GRANULE;
  CHECK_OK(rmmExpandableResourceCreateWithOptions(&expandable, &options));
  CHECK_OK(rmmPoolResourceCreate(&pool, expandable, 0, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  for (i = 0; i < BLOCKS; i++) {
    CHECK_OK(rmmResourceAllocate(stats, &spacers[i], 512 << 10, i % 2 ? stream : 0));
    CHECK_OK(rmmResourceAllocate(stats, &blocks[i], sizes[i], i % 2 ? stream : 0));
    put(blocks[i], sizes[i], 10u + (unsigned)i, stream);
  }
  /* The spacers go: the live blocks sit between free ranges. */
  for (i = 0; i < BLOCKS; i++) CHECK_OK(rmmResourceDeallocate(stats, spacers[i], 512 << 10, i % 2 ? stream : 0));
  CHECK(device_used(0) > before);
  CHECK(is_asleep(stats) == 0 && is_asleep(pool) == 0 && is_asleep(expandable) == 0);

  CHECK_OK(rmmResourceSleep(stats, RMM_SLEEP_KEEP, stream));
  CHECK(is_asleep(stats) == 1 && is_asleep(pool) == 1 && is_asleep(expandable) == 1);
  check_back_to(before, simulated, "keep mode, asleep");

  /* Allocations are refused, through every layer and of every size; frees are taken. */
  check_refused(stats, 1000, 0);
  check_refused(pool, 5 * MIB, stream);
  check_refused(expandable, 256, stream);
  CHECK_OK(rmmResourceDeallocate(stats, blocks[2], sizes[2], stream));
  CHECK_OK(rmmResourceDeallocate(stats, blocks[7], sizes[7], 0));
  blocks[2] = blocks[7] = NULL;
  check_back_to(before, simulated, "keep mode, after frees while asleep");
  memset(&counts, 0, sizeof counts);
  CHECK_OK(rmmStatisticsAdaptorGetCounts(stats, &counts));
  CHECK(counts.current_count == BLOCKS - 2); /* the refusals counted nothing */

  CHECK_OK(rmmResourceWake(stats, stream));
  CHECK(is_asleep(stats) == 0 && is_asleep(expandable) == 0);
  /* Every block at its address holds what it held. */
  for (i = 0; i < BLOCKS; i++) {
    if (blocks[i] != NULL && !holds(blocks[i], sizes[i], 10u + (unsigned)i, stream)) {
      fprintf(stderr, "block %d (%zu bytes at %p) lost its contents over the sleep\n", i, sizes[i], blocks[i]);
      rmm_test_fail(__FILE__, __LINE__, "keep mode keeps contents");
    }
  }
  /* The stack allocates again; what was freed while asleep is usable. */
  CHECK_OK(rmmResourceAllocate(stats, &again, sizes[7], stream));
  put(again, sizes[7], 99, stream);
  CHECK(holds(again, sizes[7], 99, stream));
  CHECK_OK(rmmResourceDeallocate(stats, again, sizes[7], stream));
  /* Each block is still the allocation it was: freed by its address and size. */
  for (i = 0; i < BLOCKS; i++) {
    if (blocks[i] == NULL) continue;
    CHECK(holds(blocks[i], sizes[i], 10u + (unsigned)i, stream));
    CHECK_OK(rmmResourceDeallocate(stats, blocks[i], sizes[i], i % 2 ? stream : 0));
  }
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(expandable));
  check_back_to(before, simulated, "keep mode, destroyed");
}

/* RMM_SLEEP_DISCARD, on an expandable resource with default options, three times over: the
 * memory goes, and at wake new memory is mapped at the same addresses and is usable. */
static void discard_mode(cudaStream_t stream, bool simulated) {
  enum { BLOCKS = 4 };
  const size_t sizes[BLOCKS] = {100, 3 * MIB, 40 * MIB, 200 << 10};
  void *blocks[BLOCKS] = {0};
  rmmResource_t expandable = NULL;
  size_t before = device_used(0);
  int round, i;

  CHECK_OK(rmmExpandableResourceCreate(&expandable, 0));
  for (i = 0; i < BLOCKS; i++) CHECK_OK(rmmResourceAllocate(expandable, &blocks[i], sizes[i], stream));
  for (round = 0; round < 3; round++) {
    CHECK_OK(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, round == 1 ? 0 : stream));
    CHECK(is_asleep(expandable) == 1);
    check_back_to(before, simulated, "discard mode, asleep");
    check_refused(expandable, 4096, stream);
    CHECK_OK(rmmResourceWake(expandable, round == 2 ? 0 : stream));
    CHECK(is_asleep(expandable) == 0);
    for (i = 0; i < BLOCKS; i++) {
      put(blocks[i], sizes[i], (unsigned)(round * 10 + i), stream);
      CHECK(holds(blocks[i], sizes[i], (unsigned)(round * 10 + i), stream));
    }
  }
  for (i = 0; i < BLOCKS; i++) CHECK_OK(rmmResourceDeallocate(expandable, blocks[i], sizes[i], stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmResourceDestroy(expandable));
  check_back_to(before, simulated, "discard mode, destroyed");
}

/* Bad calls are refused, with a message, and change nothing. */
static void bad_calls(cudaStream_t stream) {
  rmmResource_t cuda = NULL, pool_over_cuda = NULL, expandable = NULL, gone = NULL;
  void *block = NULL;
  int asleep = 12345, i;
  rmmResource_t cannot_sleep[2];

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool_over_cuda, cuda, 0, 0));
  cannot_sleep[0] = cuda;
  cannot_sleep[1] = pool_over_cuda;
  for (i = 0; i < 2; i++) {
    CHECK_RMM(rmmResourceSleep(cannot_sleep[i], RMM_SLEEP_KEEP, stream), RMM_ERROR_NOT_SUPPORTED);
    CHECK(strstr(rmmGetLastErrorMessage(), "expandable") != NULL);
    CHECK_RMM(rmmResourceSleep(cannot_sleep[i], RMM_SLEEP_DISCARD, 0), RMM_ERROR_NOT_SUPPORTED);
    CHECK_RMM(rmmResourceWake(cannot_sleep[i], stream), RMM_ERROR_NOT_SUPPORTED);
    CHECK_RMM(rmmResourceIsAsleep(cannot_sleep[i], &asleep), RMM_ERROR_NOT_SUPPORTED);
    CHECK(asleep == 12345);
  }

  CHECK_OK(rmmExpandableResourceCreate(&expandable, 0));
  CHECK_OK(rmmResourceAllocate(expandable, &block, MIB, stream));
  put(block, MIB, 5, stream);
  CHECK_RMM(rmmResourceSleep(NULL, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceWake(NULL, stream), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceIsAsleep(NULL, &asleep), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceIsAsleep(expandable, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceSleep(expandable, 7, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "RMM_SLEEP_KEEP") != NULL);
  CHECK(is_asleep(expandable) == 0);
  CHECK_RMM(rmmResourceWake(expandable, stream), RMM_ERROR_INVALID_ARGUMENT); /* awake */
  CHECK(strstr(rmmGetLastErrorMessage(), "awake") != NULL);
  CHECK(is_asleep(expandable) == 0);
  CHECK(holds(block, MIB, 5, stream));

  CHECK_OK(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, stream));
  CHECK_RMM(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_ARGUMENT); /* twice */
  CHECK(strstr(rmmGetLastErrorMessage(), "already asleep") != NULL);
  /* Twice in the other mode: the first sleep's copy stays what wakes. */
  CHECK_RMM(rmmResourceSleep(expandable, RMM_SLEEP_DISCARD, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(is_asleep(expandable) == 1);
  CHECK_OK(rmmResourceWake(expandable, stream));
  CHECK(holds(block, MIB, 5, stream));
  CHECK_RMM(rmmResourceWake(expandable, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(expandable, block, MIB, stream));

  /* A destroyed handle. */
  CHECK_OK(rmmExpandableResourceCreate(&gone, 0));
  CHECK_OK(rmmResourceDestroy(gone));
  CHECK_RMM(rmmResourceSleep(gone, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceWake(gone, stream), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceIsAsleep(gone, &asleep), RMM_ERROR_INVALID_HANDLE);

  /* Devices that do not exist, and an unknown mode, refused before anything else. */
  CHECK_RMM(rmmDeviceSleep(-1, RMM_SLEEP_KEEP, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceSleep(rmm_test_device_count(), RMM_SLEEP_KEEP, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceWake(-1, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceWake(rmm_test_device_count(), 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceSleep(0, 7, 0), RMM_ERROR_INVALID_ARGUMENT);

  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmResourceDestroy(expandable));
  CHECK_OK(rmmResourceDestroy(pool_over_cuda));
  CHECK_OK(rmmResourceDestroy(cuda));
}

/* rmmDeviceSleep / rmmDeviceWake on device 0's per-device resource: RMM_ALLOC goes through it
 * and is refused while it sleeps; a device resource over no expandable one cannot sleep. */
static void device_sleep(cudaStream_t stream, bool simulated) {
  rmmResource_t expandable = NULL, cuda = NULL, previous = NULL, restored = NULL;
  void *block = NULL, *refused = NULL, *freed_asleep = NULL;
  int marker = 0;
  size_t before = device_used(0);

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmSetPerDeviceResource(0, cuda, &previous));
  CHECK_RMM(rmmDeviceSleep(0, RMM_SLEEP_KEEP, stream), RMM_ERROR_NOT_SUPPORTED);
  CHECK_RMM(rmmDeviceWake(0, stream), RMM_ERROR_NOT_SUPPORTED);

  CHECK_OK(rmmExpandableResourceCreate(&expandable, 0));
  CHECK_OK(rmmSetPerDeviceResource(0, expandable, &restored));
  CHECK(restored != NULL);
  CHECK_OK(rmmResourceDestroy(restored)); /* the cuda resource, handed back */
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(RMM_ALLOC(&block, 5 * MIB, stream));
  CHECK_OK(RMM_ALLOC(&freed_asleep, 2 * MIB, stream));
  put(block, 5 * MIB, 4, stream);
  CHECK_RMM(rmmDeviceWake(0, stream), RMM_ERROR_INVALID_ARGUMENT); /* awake */

  CHECK_OK(rmmDeviceSleep(0, RMM_SLEEP_KEEP, stream));
  CHECK(is_asleep(expandable) == 1);
  check_back_to(before, simulated, "device sleep");
  CHECK_RMM(rmmDeviceSleep(0, RMM_SLEEP_KEEP, stream), RMM_ERROR_INVALID_ARGUMENT); /* twice */
  refused = &marker;
  CHECK_RMM(RMM_ALLOC(&refused, 100, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "asleep") != NULL);
  CHECK(refused == &marker);
  CHECK_RMM(RMM_ALLOC(&refused, 8 * MIB, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(refused == &marker);
  CHECK_OK(RMM_FREE(freed_asleep, stream)); /* taken while asleep */

  CHECK_OK(rmmDeviceWake(0, stream));
  CHECK(is_asleep(expandable) == 0);
  CHECK(holds(block, 5 * MIB, 4, stream));
  CHECK_RMM(rmmDeviceWake(0, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(RMM_ALLOC(&freed_asleep, 2 * MIB, stream));
  CHECK_OK(RMM_FREE(freed_asleep, stream));
  CHECK_OK(RMM_FREE(block, stream));

  /* Discard through the device too. */
  CHECK_OK(rmmDeviceSleep(0, RMM_SLEEP_DISCARD, 0));
  CHECK(is_asleep(expandable) == 1);
  CHECK_OK(rmmDeviceWake(0, 0));

  CHECK_OK(rmmStreamSynchronize(stream));
  restored = NULL;
  CHECK_OK(rmmSetPerDeviceResource(0, previous, &restored));
  CHECK(restored != NULL);
  CHECK_OK(rmmResourceDestroy(restored));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(expandable));
}

/* A wake the device cannot serve (someone else took the memory meanwhile) is out of memory and
 * leaves the resource asleep with its host copy; once the memory is back, a wake succeeds. */
static void wake_without_memory(cudaStream_t stream) {
  const size_t size = 96 * MIB;
  rmmResource_t expandable = NULL, cuda = NULL;
  rmmExpandableOptions_t options;
  void *block = NULL, *hog = NULL;
  size_t hog_size;
  rmmError_t status = RMM_ERROR_OUT_OF_MEMORY;

  memset(&options, 0, sizeof options);
  options.page_size = GRANULE;
  CHECK_OK(rmmExpandableResourceCreateWithOptions(&expandable, &options));
  CHECK_OK(rmmResourceAllocate(expandable, &block, size, stream));
  put(block, size, 9, stream);
  CHECK_OK(rmmResourceSleep(expandable, RMM_SLEEP_KEEP, stream));

  /* Take all but 32 MiB of the device (a GPU's driver may want some room of its own: less,
   * then, as long as under the block's size stays free). */
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  for (hog_size = (device_free(0) - 32 * MIB) / GRANULE * GRANULE; hog_size > size; hog_size -= 16 * MIB) {
    status = rmmResourceAllocate(cuda, &hog, hog_size, 0);
    if (status != RMM_ERROR_OUT_OF_MEMORY) break;
  }
  CHECK_OK(status);
  if (device_free(0) + GRANULE < size) {
    CHECK_RMM(rmmResourceWake(expandable, stream), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(is_asleep(expandable) == 1);
    check_refused(expandable, 4096, stream);
    CHECK_RMM(rmmResourceWake(expandable, 0), RMM_ERROR_OUT_OF_MEMORY); /* again, still asleep */
    CHECK(is_asleep(expandable) == 1);
  } else {
    printf("note: %zu bytes left free beside a hog of %zu: the failed wake not tried\n", device_free(0), hog_size);
  }
  CHECK_OK(rmmResourceDeallocate(cuda, hog, hog_size, 0));

  CHECK_OK(rmmResourceWake(expandable, stream));
  CHECK(is_asleep(expandable) == 0);
  CHECK(holds(block, size, 9, stream)); /* the host copy survived the failed wakes */
  CHECK_OK(rmmResourceDeallocate(expandable, block, size, stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmResourceDestroy(expandable));
}

/* With two devices: device 1's expandable resource sleeps, device 0's keeps allocating. */
static void other_device_awake(cudaStream_t stream) {
  rmmResource_t on_0 = NULL, on_1 = NULL;
  void *block_0 = NULL, *block_1 = NULL, *more = NULL;
  cudaStream_t stream_1 = NULL;

  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmExpandableResourceCreate(&on_0, 0));
  CHECK_OK(rmmResourceAllocate(on_0, &block_0, MIB, stream));
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(rmmStreamCreate(&stream_1));
  CHECK_OK(rmmExpandableResourceCreate(&on_1, 0));
  CHECK_OK(rmmResourceAllocate(on_1, &block_1, 3 * MIB, stream_1));
  put(block_1, 3 * MIB, 21, stream_1);
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmResourceSleep(on_1, RMM_SLEEP_KEEP, stream_1)); /* device 0 current */
  CHECK(is_asleep(on_1) == 1 && is_asleep(on_0) == 0);
  check_refused(on_1, MIB, stream_1);
  CHECK_OK(rmmResourceAllocate(on_0, &more, MIB, stream));
  CHECK_OK(rmmResourceDeallocate(on_0, more, MIB, stream));
  CHECK_OK(rmmResourceWake(on_1, stream_1));
  CHECK(holds(block_1, 3 * MIB, 21, stream_1));
  CHECK_OK(rmmResourceDeallocate(on_1, block_1, 3 * MIB, stream_1));
  CHECK_OK(rmmResourceDeallocate(on_0, block_0, MIB, stream));
  CHECK_OK(rmmStreamSynchronize(stream_1));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream_1));
  CHECK_OK(rmmResourceDestroy(on_1));
  CHECK_OK(rmmResourceDestroy(on_0));
}

int main(void) {
  bool simulated = rmm_test_simulated();
  cudaStream_t stream = NULL;
  size_t baseline;

  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmStreamCreate(&stream));
  warm_up(stream);
  baseline = device_used(0);

  keep_mode(stream, simulated);
  discard_mode(stream, simulated);
  bad_calls(stream);
  device_sleep(stream, simulated);
  wake_without_memory(stream);
  if (rmm_test_device_count() >= 2) other_device_awake(stream);

  CHECK_OK(rmmStreamDestroy(stream));
  check_back_to(baseline, simulated, "the end");
  return rmm_test_finish("test_sleep");
}
