/* Giving memory back. rmmDeviceRelease: every byte the resources of a device hold without using
 * it goes back to the device (pools' chunks in every stream, a binning resource's bins,
 * expandable memory's free pages, also inside a chunk still in use); memory in use stays and
 * stays usable; bad devices are refused. rmmResourceSetReleaseThreshold: above it, a pool gives
 * chunks back as frees empty them. */
#include "rmm_test.h"

#define MIB ((size_t)1 << 20)

static rmmFootprint_t footprint_of(rmmResource_t resource) {
  rmmFootprint_t footprint;
  memset(&footprint, 0, sizeof footprint);
  CHECK_OK(rmmResourceGetFootprint(resource, &footprint));
  return footprint;
}

int main(void) {
  int count = rmm_test_device_count();
  rmmResource_t cuda = NULL, pool = NULL, bins_pool = NULL, bins = NULL, expandable = NULL;
  cudaStream_t stream = NULL;
  void *blocks[16] = {0};
  void *kept_pool = NULL, *kept_expandable = NULL;
  size_t released = 12345, held = 0;
  rmmExpandableOptions_t options;
  int i;

  CHECK_RMM(rmmDeviceRelease(-1, &released), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmDeviceRelease(count, &released), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(released == 12345);

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 16 * MIB, 0));
  CHECK_OK(rmmPoolResourceCreate(&bins_pool, cuda, 0, 0));
  CHECK_OK(rmmBinningResourceCreate(&bins, bins_pool, 10, 20));
  memset(&options, 0, sizeof options);
  options.page_size = 2 * MIB; /* the granularity of current GPUs and of simulated devices */
  CHECK_OK(rmmExpandableResourceCreateWithOptions(&expandable, &options));
  CHECK_OK(rmmStreamCreate(&stream));

  /* Memory on the NULL stream and on a stream of the program's, all of it freed but one block
   * of the expandable resource, which sits between free pages of its chunk. */
  for (i = 0; i < 16; i++) CHECK_OK(rmmResourceAllocate(pool, &blocks[i], (size_t)(i + 1) * MIB, i % 2 ? stream : 0));
  for (i = 0; i < 16; i++) CHECK_OK(rmmResourceDeallocate(pool, blocks[i], (size_t)(i + 1) * MIB, i % 2 ? stream : 0));
  for (i = 0; i < 16; i++) CHECK_OK(rmmResourceAllocate(bins, &blocks[i], (size_t)1024 << (i % 8), stream));
  for (i = 0; i < 16; i++) CHECK_OK(rmmResourceDeallocate(bins, blocks[i], (size_t)1024 << (i % 8), stream));
  for (i = 0; i < 8; i++) CHECK_OK(rmmResourceAllocate(expandable, &blocks[i], 8 * MIB, 0));
  kept_expandable = blocks[4];
  for (i = 0; i < 8; i++)
    if (i != 4) CHECK_OK(rmmResourceDeallocate(expandable, blocks[i], 8 * MIB, 0));
  CHECK(footprint_of(pool).reserved_bytes >= 16 * MIB);
  CHECK(footprint_of(bins_pool).reserved_bytes > 0);
  CHECK(footprint_of(expandable).reserved_bytes >= 16 * MIB);

  CHECK_OK(rmmDeviceRelease(0, &released));
  CHECK(released >= 16 * MIB);
  CHECK(footprint_of(pool).reserved_bytes == 0); /* its initial size too: asked for on demand */
  CHECK(footprint_of(bins_pool).reserved_bytes == 0);
  /* The expandable resource keeps the pages under its one live block (one more at each end
   * where the block does not start or end on a page). */
  held = footprint_of(expandable).reserved_bytes;
  CHECK(held >= 8 * MIB);
  CHECK(held - 8 * MIB <= 2 * 2 * MIB);
  if (rmm_test_simulated()) { /* device memory is host memory there */
    rmm_test_fill(kept_expandable, 8 * MIB, 7);
    CHECK(rmm_test_verify(kept_expandable, 8 * MIB, 7));
  }

  /* Everything still works, and a second release with nothing to give gives nothing. */
  CHECK_OK(rmmResourceAllocate(pool, &kept_pool, 3 * MIB, stream));
  if (rmm_test_simulated()) rmm_test_fill(kept_pool, 3 * MIB, 9);
  CHECK_OK(rmmDeviceRelease(0, NULL));
  if (rmm_test_simulated()) CHECK(rmm_test_verify(kept_pool, 3 * MIB, 9));
  CHECK_OK(rmmResourceDeallocate(pool, kept_pool, 3 * MIB, stream));
  CHECK_OK(rmmResourceDeallocate(expandable, kept_expandable, 8 * MIB, 0));
  CHECK_OK(rmmDeviceRelease(0, &released));
  CHECK_OK(rmmDeviceRelease(0, &released));
  CHECK(released == 0);

  /* A release threshold of 0: each chunk goes back as soon as a free empties it (its stream has
   * nothing left to do here), the initial size staying; through an adaptor too. */
  {
    rmmResource_t thrifty = NULL, stats = NULL;
    CHECK_OK(rmmPoolResourceCreate(&thrifty, cuda, 0, 0));
    CHECK_OK(rmmStatisticsAdaptorCreate(&stats, thrifty));
    CHECK_OK(rmmResourceSetReleaseThreshold(stats, 0));
    CHECK_OK(rmmResourceAllocate(stats, &kept_pool, 6 * MIB, 0));
    CHECK(footprint_of(thrifty).reserved_bytes >= 6 * MIB);
    CHECK_OK(rmmResourceDeallocate(stats, kept_pool, 6 * MIB, 0));
    CHECK_OK(rmmStreamSynchronize(0));
    /* A growth finishes what waits. Blocks above 4 MiB: a smaller one a stream just freed may
     * be kept aside for its next allocation, its chunk counted empty a little later. */
    CHECK_OK(rmmResourceAllocate(stats, &kept_pool, 5 * MIB, 0));
    CHECK_OK(rmmResourceDeallocate(stats, kept_pool, 5 * MIB, 0));
    CHECK(footprint_of(thrifty).reserved_bytes == 0);
    CHECK_OK(rmmResourceSetReleaseThreshold(thrifty, SIZE_MAX)); /* back to keeping everything */
    CHECK_OK(rmmResourceAllocate(thrifty, &kept_pool, 1 * MIB, 0));
    CHECK_OK(rmmResourceDeallocate(thrifty, kept_pool, 1 * MIB, 0));
    CHECK(footprint_of(thrifty).reserved_bytes > 0);
    CHECK_RMM(rmmResourceSetReleaseThreshold(cuda, 0), RMM_ERROR_NOT_SUPPORTED); /* keeps no pool */
    CHECK_RMM(rmmResourceSetReleaseThreshold(NULL, 0), RMM_ERROR_INVALID_HANDLE);
    CHECK_OK(rmmResourceDestroy(stats));
    CHECK_OK(rmmResourceDestroy(thrifty));
  }

  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(expandable));
  CHECK_OK(rmmResourceDestroy(bins));
  CHECK_OK(rmmResourceDestroy(bins_pool));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("test_device_release");
}
