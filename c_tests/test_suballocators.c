/* Suballocating resources over an upstream handle: pool, arena, binning (and its bins),
 * fixed-size; rmmPoolResourceGetSize and rmmResourceRelease. Contents are checked through
 * managed upstreams (host-accessible everywhere) and, on simulated devices, device memory. */
#include <string.h>
#include "rmm_test.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static bool simulated;
static int stack_object = 3;

static const char *name_of(rmmResource_t resource) {
  const char *name = NULL;
  CHECK_OK(rmmResourceGetName(resource, &name));
  return name;
}

static size_t pool_size(rmmResource_t resource) {
  size_t size = (size_t)-1;
  CHECK_OK(rmmPoolResourceGetSize(resource, &size));
  CHECK(size != (size_t)-1);
  return size;
}

/* Allocates blocks of the given sizes, checks alignment, overlap and contents, frees them
 * (half through rmmResourceDeallocate, half through rmmFree). */
static void exercise(rmmResource_t resource, const size_t *sizes, int count, bool accessible,
                     cudaStream_t stream) {
  void *ptrs[32];
  int i, j;
  CHECK(count <= 32);
  for (i = 0; i < count; ++i) {
    ptrs[i] = NULL;
    CHECK_OK(rmmResourceAllocate(resource, &ptrs[i], sizes[i], stream));
    CHECK(ptrs[i] != NULL);
    CHECK(rmm_test_aligned(ptrs[i], 256));
    for (j = 0; j < i; ++j) {
      const char *a = (const char *)ptrs[i], *b = (const char *)ptrs[j];
      CHECK(a + sizes[i] <= b || b + sizes[j] <= a);
    }
  }
  CHECK_OK(rmmStreamSynchronize(stream));
  if (accessible) {
    for (i = 0; i < count; ++i) rmm_test_fill(ptrs[i], sizes[i], (unsigned)i + 100u);
    for (i = 0; i < count; ++i) CHECK(rmm_test_verify(ptrs[i], sizes[i], (unsigned)i + 100u));
  }
  for (i = 0; i < count; ++i) {
    if (i % 2) {
      CHECK_OK(rmmResourceDeallocate(resource, ptrs[i], sizes[i], stream));
    } else {
      CHECK_OK(rmmFree(ptrs[i], stream, __FILE__, __LINE__));
    }
  }
  CHECK_OK(rmmStreamSynchronize(stream));
}

/* Misuse common to every suballocator. `huge` is what SIZE_MAX bytes give: out of memory, or
 * for a fixed-size resource an invalid size. */
static void check_misuse_huge(rmmResource_t resource, rmmResource_t upstream, size_t size,
                              rmmError_t huge) {
  void *ptr = NULL;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, size, 0));
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, size + 256, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(upstream, ptr, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, &stack_object, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(resource, (char *)ptr + 256, size - 256, 0),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, size, 0));
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, size, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFree(ptr, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  ptr = (void *)&stack_object;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 0, 0));
  CHECK(ptr == NULL);
  CHECK_OK(rmmResourceDeallocate(resource, NULL, 0, 0));
  ptr = (void *)&stack_object;
  CHECK_RMM(rmmResourceAllocate(resource, &ptr, SIZE_MAX, 0), huge);
  CHECK(ptr == (void *)&stack_object);
}

static void check_misuse(rmmResource_t resource, rmmResource_t upstream, size_t size) {
  check_misuse_huge(resource, upstream, size, RMM_ERROR_OUT_OF_MEMORY);
}

static void check_create_errors(rmmResource_t upstream) {
  rmmResource_t out = (rmmResource_t)&stack_object, dead = NULL;
  CHECK_RMM(rmmPoolResourceCreate(NULL, upstream, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmArenaResourceCreate(NULL, upstream, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmBinningResourceCreate(NULL, upstream, 8, 10), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFixedSizeResourceCreate(NULL, upstream, 4096, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmPoolResourceCreate(&out, NULL, 0, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmArenaResourceCreate(&out, NULL, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmBinningResourceCreate(&out, NULL, 8, 10), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmFixedSizeResourceCreate(&out, NULL, 4096, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmCudaResourceCreate(&dead));
  CHECK_OK(rmmResourceDestroy(dead));
  CHECK_RMM(rmmPoolResourceCreate(&out, dead, 0, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmArenaResourceCreate(&out, dead, 0), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmBinningResourceCreate(&out, dead, 8, 10), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmFixedSizeResourceCreate(&out, (rmmResource_t)(uintptr_t)0x1234, 4096, 0),
            RMM_ERROR_INVALID_HANDLE);
  /* Bin exponents outside 0..40. */
  CHECK_RMM(rmmBinningResourceCreate(&out, upstream, -1, 10), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmBinningResourceCreate(&out, upstream, 0, 41), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(out == (rmmResource_t)&stack_object);

  /* rmmPoolResourceGetSize and rmmResourceRelease on other resources and bad input. */
  {
    size_t size = 77, released = 77;
    CHECK_RMM(rmmPoolResourceGetSize(upstream, &size), RMM_ERROR_NOT_SUPPORTED);
    CHECK(size == 77);
    CHECK_RMM(rmmPoolResourceGetSize(upstream, NULL), RMM_ERROR_INVALID_ARGUMENT);
    CHECK_RMM(rmmPoolResourceGetSize(NULL, &size), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmPoolResourceGetSize(dead, &size), RMM_ERROR_INVALID_HANDLE);
    CHECK_OK(rmmResourceRelease(upstream, &released)); /* holds nothing: releases 0 */
    CHECK(released == 0);
    CHECK_OK(rmmResourceRelease(upstream, NULL));
    CHECK_RMM(rmmResourceRelease(NULL, &released), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmResourceRelease(dead, NULL), RMM_ERROR_INVALID_HANDLE);
    /* AddBin on a resource that is not a binning resource, or with dead handles. */
    {
      rmmError_t status = rmmBinningResourceAddBin(upstream, 4096, NULL);
      CHECK(status == RMM_ERROR_INVALID_ARGUMENT || status == RMM_ERROR_NOT_SUPPORTED);
    }
    CHECK_RMM(rmmBinningResourceAddBin(NULL, 4096, NULL), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmBinningResourceAddBin(dead, 4096, NULL), RMM_ERROR_INVALID_HANDLE);
  }
}

static void check_pool(rmmResource_t managed, rmmResource_t cuda) {
  rmmResource_t pool = NULL, upstream = NULL, nested = NULL;
  const size_t sizes[8] = {256, 1000, 4 * KIB, 100 * KIB, 1 * MIB, 3, 777, 2 * MIB};
  size_t before, after, released = 99;
  void *ptr = NULL, *big = NULL;
  int device = -1;

  /* A pool over its own managed upstream handle, which the caller then destroys. */
  CHECK_OK(rmmManagedResourceCreate(&upstream));
  CHECK_OK(rmmPoolResourceCreate(&pool, upstream, 4 * MIB, 32 * MIB));
  CHECK_OK(rmmResourceDestroy(upstream)); /* the pool keeps its own reference */
  CHECK_STR(name_of(pool), "pool");
  CHECK_OK(rmmResourceGetDevice(pool, &device));
  CHECK(device == 0);
  CHECK(pool_size(pool) >= 4 * MIB);
  CHECK(pool_size(pool) <= 32 * MIB);
  exercise(pool, sizes, 8, true, 0);

  /* Growth up to the maximum, and no further. */
  CHECK_OK(rmmResourceAllocate(pool, &big, 12 * MIB, 0));
  CHECK(pool_size(pool) >= 12 * MIB);
  CHECK(pool_size(pool) <= 32 * MIB);
  rmm_test_fill(big, 12 * MIB, 5);
  ptr = (void *)&stack_object;
  CHECK_RMM(rmmResourceAllocate(pool, &ptr, 40 * MIB, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(ptr == (void *)&stack_object);
  CHECK_RMM(rmmResourceAllocate(pool, &ptr, 24 * MIB, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(pool_size(pool) <= 32 * MIB);
  CHECK(rmm_test_verify(big, 12 * MIB, 5));
  CHECK_OK(rmmResourceAllocate(pool, &ptr, 1 * MIB, 0)); /* still works */
  CHECK_OK(rmmResourceDeallocate(pool, ptr, 1 * MIB, 0));
  CHECK_OK(rmmResourceDeallocate(pool, big, 12 * MIB, 0));

  /* Release: wholly free chunks go back upstream. */
  before = pool_size(pool);
  CHECK_OK(rmmResourceRelease(pool, &released));
  after = pool_size(pool);
  CHECK(released <= before);
  CHECK(after == before - released);
  CHECK_OK(rmmResourceRelease(pool, NULL));
  exercise(pool, sizes, 8, true, 0); /* grows again after a release */

  check_misuse(pool, managed, 4096);

  /* As the current device's resource: rmmAlloc/rmmRealloc/rmmFree go through the pool. */
  {
    rmmResource_t previous = NULL;
    CHECK_OK(rmmSetCurrentDeviceResource(pool, &previous));
    CHECK_OK(RMM_ALLOC(&ptr, 3000, 0));
    rmm_test_fill(ptr, 3000, 6);
    CHECK_OK(RMM_REALLOC(&ptr, 9000, 0));
    CHECK_OK(rmmStreamSynchronize(0));
    CHECK(rmm_test_verify(ptr, 3000, 6));
    CHECK_OK(rmmResourceDeallocate(pool, ptr, 9000, 0));
    CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
    CHECK_OK(rmmResourceDestroy(previous));
  }

  /* A pool over a pool. */
  CHECK_OK(rmmPoolResourceCreate(&nested, pool, 1 * MIB, 0));
  exercise(nested, sizes, 6, true, 0);
  CHECK_OK(rmmResourceDestroy(nested));

  /* Destroyed while an allocation lives: still valid, rmmFree returns it. */
  CHECK_OK(rmmResourceAllocate(pool, &ptr, 5000, 0));
  CHECK_OK(rmmResourceDestroy(pool));
  rmm_test_fill(ptr, 5000, 7);
  CHECK(rmm_test_verify(ptr, 5000, 7));
  CHECK_OK(rmmFree(ptr, 0, __FILE__, __LINE__));

  /* A pool of device memory, no limit, nothing reserved up front. */
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 0, 0));
  exercise(pool, sizes, 8, simulated, 0);
  CHECK_OK(rmmResourceDestroy(pool));
}

/* Blocks freed on one stream and reused on another: the pool orders the reuse with events, so
 * the simulator's race checker (checked at the end) finds nothing. */
static void check_cross_stream(rmmResource_t upstream, const char *kind) {
  rmmResource_t resource = NULL;
  cudaStream_t a = NULL, b = NULL;
  size_t free_before = 0, free_after = 0, total = 0;
  int round;
  CHECK_OK(rmmGetInfo(&free_before, &total, 0));
  if (strcmp(kind, "pool") == 0) {
    CHECK_OK(rmmPoolResourceCreate(&resource, upstream, 2 * MIB, 0));
  } else {
    CHECK_OK(rmmArenaResourceCreate(&resource, upstream, 8 * MIB));
  }
  CHECK_OK(rmmStreamCreate(&a));
  CHECK_OK(rmmStreamCreate(&b));
  for (round = 0; round < 20; ++round) {
    cudaStream_t first = (round % 2) ? a : b, second = (round % 2) ? b : a;
    void *x = NULL, *y = NULL;
    const size_t size = (size_t)(round % 5 + 1) * 64 * KIB;
    CHECK_OK(rmmResourceAllocate(resource, &x, size, first));
    CHECK_OK(rmmResourceDeallocate(resource, x, size, first));
    CHECK_OK(rmmResourceAllocate(resource, &y, size, second)); /* may reuse x's block */
    CHECK_OK(rmmStreamSynchronize(second));
    rmm_test_fill(y, size, (unsigned)round);
    CHECK(rmm_test_verify(y, size, (unsigned)round));
    CHECK_OK(rmmResourceDeallocate(resource, y, size, second));
  }
  CHECK_OK(rmmStreamSynchronize(a));
  CHECK_OK(rmmStreamSynchronize(b));
  CHECK_OK(rmmStreamDestroy(a));
  CHECK_OK(rmmStreamDestroy(b));
  /* The streams are gone before the resource: destroying it must still give back all it
   * held upstream (simulated devices count every byte). */
  CHECK_OK(rmmResourceDestroy(resource));
  if (simulated) {
    CHECK_OK(rmmGetInfo(&free_after, &total, 0));
    if (free_after != free_before) {
      fprintf(stderr, "%s: %zu bytes not returned upstream after rmmResourceDestroy\n", kind,
              free_before - free_after);
    }
    CHECK(free_after == free_before);
  }
}

static void check_arena(rmmResource_t managed, rmmResource_t cuda) {
  rmmResource_t arena = NULL;
  const size_t sizes[10] = {8, 256, 1000, 64 * KIB, 256 * KIB, 256 * KIB + 1, 1 * MIB, 5 * MIB, 300, 4 * KIB};
  cudaStream_t stream = NULL;
  size_t free_before = 0, free_after = 0, total = 0;
  CHECK_OK(rmmGetInfo(&free_before, &total, 0));
  CHECK_OK(rmmArenaResourceCreate(&arena, managed, 16 * MIB));
  CHECK_STR(name_of(arena), "arena");
  CHECK(pool_size(arena) >= 16 * MIB);
  exercise(arena, sizes, 10, true, 0);
  CHECK_OK(rmmStreamCreate(&stream));
  exercise(arena, sizes, 10, true, stream); /* a per-stream arena */
  CHECK_OK(rmmStreamDestroy(stream));
  check_misuse(arena, managed, 1000);
  check_misuse(arena, managed, 1 * MIB);
  CHECK_OK(rmmResourceRelease(arena, NULL));
  CHECK_OK(rmmResourceDestroy(arena));
  if (simulated) {
    /* Nothing uses the arena any more: all it held went back upstream, including what the
     * arena of the (destroyed) stream held. Simulated devices count every byte. */
    CHECK_OK(rmmGetInfo(&free_after, &total, 0));
    CHECK(free_after == free_before);
  }

  /* Grows on demand from nothing. */
  CHECK_OK(rmmArenaResourceCreate(&arena, cuda, 0));
  exercise(arena, sizes, 10, simulated, 0);
  CHECK_OK(rmmResourceDestroy(arena));
}

static void check_fixed_size(rmmResource_t managed) {
  rmmResource_t fixed = NULL;
  void *ptr = NULL;
  const size_t sizes[6] = {1, 100, 1000, 4096, 4000, 256};
  CHECK_OK(rmmFixedSizeResourceCreate(&fixed, managed, 4096, 4));
  CHECK_STR(name_of(fixed), "fixed_size");
  CHECK(pool_size(fixed) >= 4 * 4096);
  exercise(fixed, sizes, 6, true, 0);
  /* Larger than a block: invalid. */
  ptr = (void *)&stack_object;
  CHECK_RMM(rmmResourceAllocate(fixed, &ptr, 4097, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceAllocate(fixed, &ptr, 1 * MIB, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(ptr == (void *)&stack_object);
  check_misuse_huge(fixed, managed, 4096, RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(fixed));

  /* Nothing up front; block size rounded up to 256. */
  CHECK_OK(rmmFixedSizeResourceCreate(&fixed, managed, 1000, 0));
  CHECK(pool_size(fixed) == 0);
  CHECK_OK(rmmResourceAllocate(fixed, &ptr, 1000, 0));
  CHECK(pool_size(fixed) >= 1000);
  rmm_test_fill(ptr, 1000, 1);
  CHECK(rmm_test_verify(ptr, 1000, 1));
  CHECK_OK(rmmResourceDeallocate(fixed, ptr, 1000, 0));
  CHECK_RMM(rmmResourceAllocate(fixed, &ptr, 1025, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(fixed));
}

static void check_binning(rmmResource_t managed, rmmResource_t cuda) {
  rmmResource_t binning = NULL, bin = NULL, other = NULL;
  const size_t sizes[8] = {1, 200, 256, 257, 5000, 16 * KIB, 16 * KIB + 1, 2 * MIB};
  void *ptr = NULL;
  size_t before;

  /* Bins of 256 B .. 16 KiB; larger requests go upstream. */
  CHECK_OK(rmmBinningResourceCreate(&binning, managed, 8, 14));
  CHECK_STR(name_of(binning), "binning");
  exercise(binning, sizes, 8, true, 0);
  check_misuse(binning, managed, 300);
  check_misuse(binning, managed, 1 * MIB);

  /* An explicit bin: requests up to 64 KiB now come from this fixed-size resource. */
  CHECK_OK(rmmFixedSizeResourceCreate(&bin, managed, 64 * KIB, 0));
  CHECK_OK(rmmBinningResourceAddBin(binning, 64 * KIB, bin));
  before = pool_size(bin);
  CHECK_OK(rmmResourceAllocate(binning, &ptr, 40 * KIB, 0));
  CHECK(pool_size(bin) > before);
  rmm_test_fill(ptr, 40 * KIB, 3);
  CHECK(rmm_test_verify(ptr, 40 * KIB, 3));
  CHECK_RMM(rmmResourceDeallocate(bin, ptr, 40 * KIB, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(binning, ptr, 40 * KIB, 0));
  CHECK_OK(rmmResourceDestroy(bin)); /* the binning resource keeps its own reference */
  CHECK_OK(rmmResourceAllocate(binning, &ptr, 50 * KIB, 0));
  CHECK_OK(rmmResourceDeallocate(binning, ptr, 50 * KIB, 0));
  CHECK_RMM(rmmBinningResourceAddBin(binning, 64 * KIB, bin), RMM_ERROR_INVALID_HANDLE);

  /* A bin made by rmm (NULL): a fixed-size resource of that size over the upstream. */
  CHECK_OK(rmmBinningResourceAddBin(binning, 1 * MIB, NULL));
  exercise(binning, sizes, 8, true, 0);
  CHECK_OK(rmmResourceDestroy(binning));

  /* min > max: no bins, everything goes upstream. */
  CHECK_OK(rmmBinningResourceCreate(&other, cuda, 12, 4));
  exercise(other, sizes, 8, simulated, 0);
  CHECK_OK(rmmResourceDestroy(other));
}

/* What one pool keeps free another pool of the device can use: when the device refuses an
 * allocation, every suballocator of the device gives its wholly free chunks back and the
 * allocation is tried once more. The first pool takes three quarters of the device's free
 * memory and frees it (keeping the chunk); the second then asks for half. */
static void check_release_on_out_of_memory(rmmResource_t cuda) {
  rmmResource_t first = NULL, second = NULL;
  size_t free_bytes = 0, total = 0, kept = 0;
  void *block = NULL;
  CHECK_OK(rmmPoolResourceCreate(&first, cuda, 0, 0));
  CHECK_OK(rmmPoolResourceCreate(&second, cuda, 0, 0));
  CHECK_OK(rmmGetInfo(&free_bytes, &total, NULL));
  size_t most = free_bytes / 4 * 3 / (1 << 21) * (1 << 21);
  size_t half = free_bytes / 2 / (1 << 21) * (1 << 21);
  CHECK_OK(rmmResourceAllocate(first, &block, most, NULL));
  CHECK_OK(rmmResourceDeallocate(first, block, most, NULL));
  CHECK_OK(rmmPoolResourceGetSize(first, &kept));
  CHECK(kept >= most);
  CHECK_OK(rmmResourceAllocate(second, &block, half, NULL));
  CHECK_OK(rmmPoolResourceGetSize(first, &kept));
  CHECK(kept == 0);
  CHECK_OK(rmmResourceDeallocate(second, block, half, NULL));
  CHECK_OK(rmmResourceDestroy(second));
  CHECK_OK(rmmResourceDestroy(first));
}

/* The expandable resource maps physical memory into its reserved range as it grows and, when
 * it gives a chunk back, unmaps it: afterwards it holds nothing, and grows again on demand. */
/* A chunk grows in place across its free end; with a release threshold, free pages go back
 * once the stream has passed the frees (here: after a synchronization the test makes). */
static void check_expandable_footprint(void) {
  rmmExpandableOptions_t options;
  rmmFootprint_t figures;
  rmmResource_t expandable = NULL;
  cudaStream_t stream = NULL;
  void *small = NULL, *large = NULL, *blocks[4] = {NULL, NULL, NULL, NULL};
  size_t mib = (size_t)1 << 20;
  memset(&options, 0, sizeof options);
  options.release_free_pages = 1;
  options.release_threshold = 4 * mib;
  /* Pages of the granularity (the default grows with the device: 20 MiB on an 80 GiB GPU). */
  options.page_size = 2 * mib;
  CHECK_OK(rmmExpandableResourceCreateWithOptions(&expandable, &options));
  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmResourceAllocate(expandable, &small, mib, stream));
  CHECK_OK(rmmResourceAllocate(expandable, &large, 3 * mib, stream));
  CHECK((char *)large == (char *)small + mib);
  CHECK_OK(rmmResourceGetFootprint(expandable, &figures));
  CHECK(figures.reserved_bytes == 4 * mib && figures.live_bytes == 4 * mib && figures.fragmentation == 0.0);
  CHECK_OK(rmmResourceDeallocate(expandable, large, 3 * mib, stream));
  for (int i = 0; i < 4; ++i) CHECK_OK(rmmResourceAllocate(expandable, &blocks[i], 5 * mib, stream));
  CHECK_OK(rmmMemcpyAsync(blocks[3], small, mib, stream));
  for (int i = 3; i >= 0; --i) CHECK_OK(rmmResourceDeallocate(expandable, blocks[i], 5 * mib, stream));
  CHECK_OK(rmmStreamSynchronize(stream));
  /* The next free finds the stream past the earlier ones and gives their pages back (a block
     of 256 KiB: smaller ones come from pages of their own). */
  CHECK_OK(rmmResourceAllocate(expandable, &large, 256 * 1024, stream));
  CHECK_OK(rmmResourceDeallocate(expandable, large, 256 * 1024, stream));
  CHECK_OK(rmmResourceGetFootprint(expandable, &figures));
  CHECK(figures.reserved_bytes <= 4 * mib);
  CHECK(figures.peak_reserved_bytes >= 22 * mib && figures.peak_live_bytes >= 21 * mib);
  CHECK_OK(rmmResourceDeallocate(expandable, small, mib, stream));
  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(expandable));
  options.page_size = 3 * mib;
  CHECK_RMM(rmmExpandableResourceCreateWithOptions(&expandable, &options), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmExpandableResourceCreateWithOptions(&expandable, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceGetFootprint(NULL, &figures), RMM_ERROR_INVALID_HANDLE);
}

static void check_expandable(void) {
  rmmResource_t expandable = NULL;
  void *blocks[3] = {NULL, NULL, NULL};
  size_t sizes[3] = {1000, 3 << 20, 40 << 20}, held = 0, released = 0;
  rmmError_t made = rmmExpandableResourceCreate(&expandable, 0);
  if (made == RMM_ERROR_NOT_SUPPORTED) return; /* a driver without the virtual-memory API */
  CHECK_OK(made);
  for (int i = 0; i < 3; ++i) CHECK_OK(rmmResourceAllocate(expandable, &blocks[i], sizes[i], NULL));
  CHECK_OK(rmmPoolResourceGetSize(expandable, &held));
  CHECK(held >= sizes[2]);
  for (int i = 0; i < 3; ++i) CHECK_OK(rmmResourceDeallocate(expandable, blocks[i], sizes[i], NULL));
  CHECK_OK(rmmResourceRelease(expandable, &released));
  CHECK(released == held);
  CHECK_OK(rmmPoolResourceGetSize(expandable, &held));
  CHECK(held == 0);
  CHECK_OK(rmmResourceAllocate(expandable, &blocks[0], sizes[1], NULL));
  CHECK_RMM(rmmResourceDeallocate(expandable, blocks[0], sizes[0], NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(expandable, blocks[0], sizes[1], NULL));
  CHECK_OK(rmmResourceDestroy(expandable));
  check_expandable_footprint();
}

int main(void) {
  rmmResource_t managed = NULL, cuda = NULL;
  simulated = rmm_test_simulated();
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmCudaResourceCreate(&cuda));

  check_create_errors(cuda);
  check_pool(managed, cuda);
  check_cross_stream(managed, "pool");
  check_cross_stream(managed, "arena");
  check_arena(managed, cuda);
  check_fixed_size(managed);
  check_binning(managed, cuda);
  check_release_on_out_of_memory(cuda);
  check_expandable();

  CHECK_OK(rmmResourceDestroy(managed));
  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("suballocators");
}
