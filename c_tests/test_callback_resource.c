/* rmmCallbackResourceCreate: the caller's allocator as a resource, alone, as a pool's and a
 * binning resource's upstream, under adaptors, from several threads; NULL from the callback
 * is out of memory; misaligned memory is handed out as it is but refused as a pool's chunk;
 * NULL functions are refused; the alignment-taking functions get the alignment asked; everything handed to
 * rmm goes back to the callbacks once the resources are destroyed. The callbacks allocate
 * host memory, which rmm's bookkeeping never touches, so this runs on simulated and real
 * devices alike. */
#define _POSIX_C_SOURCE 200112L
#include "rmm_test.h"

#include <pthread.h>
#include <string.h>

struct allocator {
  pthread_mutex_t lock;
  size_t live_bytes, live_count, calls, frees;
  size_t refuse_above;  /* requests above this many bytes get NULL */
  size_t misalign;      /* added to the address handed out (0: none) */
  cudaStream_t last_stream;
};

static void *allocate(size_t bytes, cudaStream_t stream, void *user_data) {
  struct allocator *a = (struct allocator *)user_data;
  void *ptr = NULL;
  if (bytes > a->refuse_above || posix_memalign(&ptr, 256, bytes + 256) != 0) return NULL;
  pthread_mutex_lock(&a->lock);
  a->live_bytes += bytes;
  a->live_count += 1;
  a->calls += 1;
  a->last_stream = stream;
  pthread_mutex_unlock(&a->lock);
  return (char *)ptr + a->misalign;
}

static void deallocate(void *ptr, size_t bytes, cudaStream_t stream, void *user_data) {
  struct allocator *a = (struct allocator *)user_data;
  pthread_mutex_lock(&a->lock);
  a->live_bytes -= bytes;
  a->live_count -= 1;
  a->frees += 1;
  a->last_stream = stream;
  pthread_mutex_unlock(&a->lock);
  free((char *)ptr - a->misalign);
}

static void init_allocator(struct allocator *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_init(&a->lock, NULL);
  a->refuse_above = (size_t)1 << 40;
}

static rmmResource_t callback_resource(struct allocator *a) {
  rmmResource_t resource = NULL;
  CHECK_OK(rmmCallbackResourceCreate(allocate, deallocate, a, 0, &resource));
  return resource;
}

static void check_alone(void) {
  struct allocator a;
  rmmResource_t resource;
  void *ptr = NULL;
  const char *name = NULL;
  int device = -1;
  cudaStream_t stream = NULL;
  init_allocator(&a);
  resource = callback_resource(&a);
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK_STR(name, "callback");
  CHECK_OK(rmmResourceGetDevice(resource, &device));
  CHECK(device == 0);
  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 1000, stream));
  CHECK(ptr != NULL && rmm_test_aligned(ptr, 256));
  CHECK(a.live_bytes == 1000 && a.calls == 1 && a.last_stream == stream);
  rmm_test_fill(ptr, 1000, 3);
  CHECK(rmm_test_verify(ptr, 1000, 3));
  /* Ownership is checked before the callback hears of a free. */
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, 999, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(a.frees == 0);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 1000, stream));
  CHECK(a.live_bytes == 0 && a.frees == 1);
  CHECK_RMM(rmmResourceDeallocate(resource, ptr, 1000, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(a.frees == 1);
  /* rmmFree finds the resource by the pointer. */
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 4096, NULL));
  CHECK_OK(rmmFree(ptr, NULL, NULL, 0));
  CHECK(a.live_count == 0);
  /* NULL from the callback is out of memory, and nothing is written. */
  a.refuse_above = 1 << 20;
  ptr = (void *)&a;
  CHECK_RMM(rmmResourceAllocate(resource, &ptr, 2 << 20, NULL), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(ptr == (void *)&a);
  CHECK(strstr(rmmGetLastErrorMessage(), "callback") != NULL);
  /* What the callback returns is handed out as it is, aligned or not (its promise, as in RAPIDS
   * RMM); a pool over it refuses a chunk that is not 256-byte aligned and gives it back. */
  a.refuse_above = (size_t)1 << 40;
  a.misalign = 16;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 512, NULL));
  CHECK((uintptr_t)ptr % 256 == 16 && a.live_count == 1);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 512, NULL));
  CHECK(a.live_count == 0);
  {
    rmmResource_t pool = NULL;
    CHECK_OK(rmmPoolResourceCreate(&pool, resource, 0, 0));
    ptr = (void *)&a;
    CHECK_RMM(rmmResourceAllocate(pool, &ptr, 512, NULL), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(ptr == (void *)&a && a.live_count == 0);
    CHECK(strstr(rmmGetLastErrorMessage(), "aligned") != NULL);
    CHECK_OK(rmmResourceDestroy(pool));
  }
  a.misalign = 0;
  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(resource));
  CHECK(a.live_bytes == 0 && a.calls == a.frees);
}

static void check_refused(void) {
  struct allocator a;
  rmmResource_t resource = NULL;
  init_allocator(&a);
  CHECK_RMM(rmmCallbackResourceCreate(NULL, deallocate, &a, 0, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmCallbackResourceCreate(allocate, NULL, &a, 0, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmCallbackResourceCreate(allocate, deallocate, &a, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmCallbackResourceCreate(allocate, deallocate, &a, -1, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmCallbackResourceCreate(allocate, deallocate, &a, 4096, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(resource == NULL && a.calls == 0);
}

static bool note_failure(size_t bytes, void *arg) {
  (void)bytes;
  *(int *)arg += 1;
  return false;
}

struct worker {
  rmmResource_t resource;
  unsigned seed;
  bool ok;
};

static void *churn(void *arg) {
  struct worker *w = (struct worker *)arg;
  void *ptrs[16] = {0};
  int round, i;
  w->ok = true;
  for (round = 0; round < 200; ++round) {
    for (i = 0; i < 16; ++i) {
      size_t bytes = 256 + (size_t)((w->seed * 131u + (unsigned)round * 17u + (unsigned)i * 7u) % 50000u);
      if (rmmResourceAllocate(w->resource, &ptrs[i], bytes, NULL) != RMM_SUCCESS) w->ok = false;
      else if (rmmResourceDeallocate(w->resource, ptrs[i], bytes, NULL) != RMM_SUCCESS) w->ok = false;
    }
  }
  return NULL;
}

static void check_as_upstream(void) {
  struct allocator a;
  rmmResource_t upstream, pool, statistics, limiting, binning, failure;
  rmmStatistics_t counts;
  void *ptr = NULL, *big = NULL;
  int failures = 0, t;
  pthread_t threads[4];
  struct worker workers[4];
  init_allocator(&a);
  upstream = callback_resource(&a);
  CHECK_OK(rmmPoolResourceCreate(&pool, upstream, 4 << 20, 64 << 20));
  CHECK(a.calls == 1 && a.live_bytes == (4 << 20)); /* the pool's first chunk */
  CHECK_OK(rmmStatisticsAdaptorCreate(&statistics, pool));
  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, statistics, 32 << 20));
  CHECK_OK(rmmBinningResourceCreate(&binning, limiting, 8, 16));
  CHECK_OK(rmmResourceAllocate(binning, &ptr, 3000, NULL));
  CHECK_OK(rmmResourceAllocate(binning, &big, 8 << 20, NULL)); /* past the first chunk: the pool grows */
  CHECK(a.calls >= 2);
  rmm_test_fill(big, 8 << 20, 9);
  CHECK(rmm_test_verify(big, 8 << 20, 9));
  CHECK_OK(rmmStatisticsAdaptorGetCounts(statistics, &counts));
  CHECK(counts.current_count >= 1 && counts.current_bytes >= (8 << 20));
  CHECK_RMM(rmmResourceAllocate(binning, &ptr, 40 << 20, NULL), RMM_ERROR_OUT_OF_MEMORY); /* the limit */
  CHECK_OK(rmmResourceDeallocate(binning, big, 8 << 20, NULL));
  CHECK_OK(rmmFree(ptr, NULL, NULL, 0));

  /* Out of memory from the callback reaches a failure-callback adaptor above the pool. */
  a.refuse_above = 1 << 20;
  CHECK_OK(rmmFailureCallbackAdaptorCreate(&failure, pool, note_failure, &failures));
  CHECK_RMM(rmmResourceAllocate(failure, &ptr, 48 << 20, NULL), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(failures == 1);
  a.refuse_above = (size_t)1 << 40;

  for (t = 0; t < 4; ++t) {
    workers[t].resource = t % 2 ? binning : statistics;
    workers[t].seed = (unsigned)t + 1;
    CHECK(pthread_create(&threads[t], NULL, churn, &workers[t]) == 0);
  }
  for (t = 0; t < 4; ++t) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(workers[t].ok);
  }

  CHECK_OK(rmmResourceDestroy(failure));
  CHECK_OK(rmmResourceDestroy(binning));
  /* The bins' chunks went back through the adaptors with the binning resource. */
  CHECK_OK(rmmStatisticsAdaptorGetCounts(statistics, &counts));
  CHECK(counts.current_count == 0 && counts.current_bytes == 0);
  CHECK_OK(rmmResourceDestroy(limiting));
  CHECK_OK(rmmResourceDestroy(statistics));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK(a.live_count == 0 && a.live_bytes == 0); /* the pool gave its chunks back */
  CHECK_OK(rmmResourceDestroy(upstream));
  CHECK(a.calls == a.frees);
}

/* Callbacks that take their memory from another rmm-rs resource (as a C++ resource over an
 * rmm-rs resource does): a pool over them hands out a block at the very address its chunk
 * came from, and both are live at once without either being refused. */
struct from_rmm {
  rmmResource_t below;
  size_t live;
  void *cached; /* a block taken outside any callback, for the allocate callback to give back */
};

static void *allocate_from_rmm(size_t bytes, cudaStream_t stream, void *user_data) {
  struct from_rmm *f = (struct from_rmm *)user_data;
  void *ptr = NULL;
  if (rmmResourceAllocate(f->below, &ptr, bytes, stream) != RMM_SUCCESS) return NULL;
  f->live += bytes;
  return ptr;
}

static void deallocate_to_rmm(void *ptr, size_t bytes, cudaStream_t stream, void *user_data) {
  struct from_rmm *f = (struct from_rmm *)user_data;
  CHECK_OK(rmmResourceDeallocate(f->below, ptr, bytes, stream));
  f->live -= bytes;
}

static void *free_without_resource(size_t bytes, cudaStream_t stream, void *user_data) {
  void *ptr = allocate_from_rmm(bytes, stream, user_data);
  /* Inside a callback, rmmFree cannot tell the callback's memory from a caller's. */
  CHECK_RMM(rmmFree(ptr, stream, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);
  return ptr;
}

/* An allocate callback that first gives back a block it took outside any callback: that free
 * is checked against the records like any other, so the block's record goes with it. */
static void *allocate_after_freeing_cached(size_t bytes, cudaStream_t stream, void *user_data) {
  struct from_rmm *f = (struct from_rmm *)user_data;
  if (f->cached != NULL) {
    CHECK_RMM(rmmResourceDeallocate(f->below, f->cached, 4096, stream), RMM_SUCCESS);
    f->cached = NULL;
  }
  return allocate_from_rmm(bytes, stream, user_data);
}

static void check_freeing_recorded_memory_in_a_callback(void) {
  struct from_rmm f = {NULL, 0, NULL};
  rmmResource_t callbacks = NULL;
  void *cached = NULL, *block = NULL;
  CHECK_OK(rmmCudaResourceCreate(&f.below));
  CHECK_OK(rmmResourceAllocate(f.below, &cached, 4096, NULL));
  f.cached = cached;
  CHECK_OK(rmmCallbackResourceCreate(allocate_after_freeing_cached, deallocate_to_rmm, &f, 0, &callbacks));
  CHECK_OK(rmmResourceAllocate(callbacks, &block, 4096, NULL));
  CHECK(f.cached == NULL);
  /* The cached block was freed once: a second free is refused, whatever now lies there. */
  CHECK_RMM(rmmResourceDeallocate(f.below, cached, 4096, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "is not a live allocation of this") != NULL ||
        strstr(rmmGetLastErrorMessage(), "another resource") != NULL); /* refused by the records */
  CHECK_OK(rmmResourceDeallocate(callbacks, block, 4096, NULL));
  CHECK(f.live == 0);
  CHECK_OK(rmmResourceDestroy(callbacks));
  CHECK_OK(rmmResourceDestroy(f.below));
}

static void check_over_rmm(void) {
  struct from_rmm f = {NULL, 0, NULL};
  rmmResource_t callbacks = NULL, pool = NULL, stats = NULL;
  void *first = NULL, *second = NULL;
  CHECK_OK(rmmCudaResourceCreate(&f.below));
  CHECK_OK(rmmCallbackResourceCreate(allocate_from_rmm, deallocate_to_rmm, &f, 0, &callbacks));
  CHECK_OK(rmmPoolResourceCreate(&pool, callbacks, 1 << 20, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  CHECK(f.live == 1 << 20);
  CHECK_OK(rmmResourceAllocate(stats, &first, 4096, NULL));
  CHECK_OK(rmmResourceAllocate(stats, &second, 2 << 20, NULL)); /* a second chunk */
  CHECK(f.live > 1 << 20);
  /* The caller's blocks are recorded; the chunks below them are not the caller's. */
  CHECK_RMM(rmmResourceDeallocate(f.below, first, 4096, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmFree(first, NULL, NULL, 0));
  CHECK_OK(rmmResourceDeallocate(stats, second, 2 << 20, NULL));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK(f.live == 0); /* the pool gave its chunks back through the callbacks */
  CHECK_OK(rmmResourceDestroy(callbacks));

  CHECK_OK(rmmCallbackResourceCreate(free_without_resource, deallocate_to_rmm, &f, 0, &callbacks));
  CHECK_OK(rmmResourceAllocate(callbacks, &first, 512, NULL));
  CHECK_OK(rmmResourceDeallocate(callbacks, first, 512, NULL));
  CHECK(f.live == 0);
  CHECK_OK(rmmResourceDestroy(callbacks));
  CHECK_OK(rmmResourceDestroy(f.below));
}

/* rmmCallbackResourceCreateWithRelease: the release function runs once, when the resource
 * itself goes: not while a pool over it, or memory from it, is still alive; never when creation
 * fails. */
static void note_release(void *user_data) { ++((struct allocator *)user_data)->frees; }

static void check_release(void) {
  struct allocator a;
  rmmResource_t resource = NULL, pool = NULL;
  void *block = NULL;
  size_t releases_before;
  init_allocator(&a);
  CHECK_OK(rmmCallbackResourceCreateWithRelease(allocate, deallocate, note_release, &a, 0, &resource));
  CHECK_OK(rmmPoolResourceCreate(&pool, resource, 1 << 20, 0));
  CHECK_OK(rmmResourceAllocate(pool, &block, 4096, NULL));
  CHECK_OK(rmmResourceDestroy(resource));
  CHECK_OK(rmmResourceDestroy(pool));
  releases_before = a.frees;  /* the pool's chunk is still out: nothing released yet */
  CHECK(a.live_count == 1);
  CHECK_RMM(rmmResourceDeallocate(pool, block, 4096, NULL), RMM_ERROR_INVALID_HANDLE); /* handle gone */
  CHECK_OK(rmmFree(block, NULL, NULL, 0)); /* the last use: pool, then resource go */
  CHECK(a.live_count == 0);
  CHECK(a.frees == releases_before + 2); /* the chunk's deallocate, then the release */

  init_allocator(&a);
  CHECK_RMM(rmmCallbackResourceCreateWithRelease(allocate, deallocate, note_release, &a, 12345, &resource),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK(a.frees == 0); /* creation failed: user_data stays the caller's */
  CHECK_RMM(rmmCallbackResourceCreateWithRelease(NULL, deallocate, note_release, &a, 0, &resource),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK(a.frees == 0);
}

/* rmmCallbackResourceCreateAligned: the alignment asked of rmmResourceAllocateAligned reaches
 * the functions through adaptors, and comes back with the free. */
static size_t last_alignment;

static void *allocate_aligned(size_t bytes, size_t alignment, cudaStream_t stream, void *user_data) {
  void *ptr = NULL;
  (void)stream;
  (void)user_data;
  last_alignment = alignment;
  return posix_memalign(&ptr, alignment, bytes) == 0 ? ptr : NULL;
}

static void deallocate_aligned(void *ptr, size_t bytes, size_t alignment, cudaStream_t stream, void *user_data) {
  (void)bytes;
  (void)stream;
  (void)user_data;
  last_alignment = alignment;
  free(ptr);
}

static void check_alignment_passed_on(void) {
  rmmResource_t callback = NULL, stats = NULL, cuda = NULL, pool = NULL;
  void *ptr = NULL;
  CHECK_RMM(rmmCallbackResourceCreateAligned(NULL, deallocate_aligned, NULL, NULL, 0, &callback),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmCallbackResourceCreateAligned(allocate_aligned, deallocate_aligned, NULL, NULL, 0, &callback));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, callback));
  CHECK_OK(rmmResourceAllocateAligned(stats, &ptr, 1000, 4096, NULL));
  CHECK(last_alignment == 4096 && rmm_test_aligned(ptr, 4096));
  CHECK_OK(rmmResourceDeallocateAligned(stats, ptr, 1000, 4096, NULL));
  CHECK(last_alignment == 4096);
  /* Up to 256, and the plain calls: 256. */
  CHECK_OK(rmmResourceAllocateAligned(stats, &ptr, 1000, 64, NULL));
  CHECK(last_alignment == 256);
  CHECK_OK(rmmFree(ptr, NULL, NULL, 0));
  CHECK(last_alignment == 256);
  CHECK_RMM(rmmResourceAllocateAligned(stats, &ptr, 1000, 3, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceAllocateAligned(stats, NULL, 1000, 512, NULL), RMM_ERROR_INVALID_ARGUMENT);
  /* A resource that places no larger alignment says so; a pool places it itself. */
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_RMM(rmmResourceAllocateAligned(cuda, &ptr, 1000, 512, NULL), RMM_ERROR_NOT_SUPPORTED);
  CHECK(strstr(rmmGetLastErrorMessage(), "512") != NULL);
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 1 << 20, 0));
  CHECK_OK(rmmResourceAllocateAligned(pool, &ptr, 1000, 1 << 16, NULL));
  CHECK(rmm_test_aligned(ptr, 1 << 16));
  CHECK_RMM(rmmResourceDeallocateAligned(pool, ptr, 999, 1 << 16, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocateAligned(pool, ptr, 1000, 1 << 16, NULL));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(callback));
}

int main(void) {
  rmm_test_simulated();
  check_alignment_passed_on();
  check_refused();
  check_alone();
  check_as_upstream();
  check_over_rmm();
  check_freeing_recorded_memory_in_a_callback();
  check_release();
  return rmm_test_finish("callback resource");
}
