/*
 * Stale stream handles (issue 51): handles of streams destroyed long ago (the first of four
 * batches of 256 made and destroyed, as the stream churn whose driver query crashed an H200),
 * destroyed just now, destroyed after rmm-rs stopped knowing them (rmmStreamUnregister), and
 * made up. rmm-rs must never hand such a handle to the driver, so the process must survive
 * every call below on a GPU; on simulated devices, the simulator counts every stale handle a
 * driver call is handed with the races (rmm_test_finish checks there are none).
 *
 * 1. Without configuration: every resource that does not order memory by stream (cuda,
 *    managed, pinned_host, system where offered, callback) and every adaptor over one takes
 *    each stale handle, at rmmResourceAllocate and rmmResourceDeallocate, at rmmAlloc and
 *    rmmFree, with each device current; so does a device buffer of such a resource. (The
 *    stream-ordered resources ask the driver about a handle rmm-rs was not told of, which must
 *    then be live: they get none here.)
 * 2. With `registered_streams` configured: every kind and adaptor gets every stale handle;
 *    the stream-ordered ones refuse it (RMM_ERROR_INVALID_ARGUMENT) without asking the driver,
 *    at allocations and frees alike (the pointer then stays live, and NULL frees it).
 *
 * Runs on simulated devices under ctest and on the GPU(s) under scripts/gpu-test.sh (ctest
 * c11.test_stale_streams) and scripts/gpu-stale-streams.sh.
 */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "rmm_test.h"

/* Streams per batch, and batches made and destroyed (scripts/gpu-stale-streams.sh raises
 * BATCHES to churn the driver's stream objects longer). */
#ifndef BATCH
#define BATCH 256
#endif
#ifndef BATCHES
#define BATCHES 4
#endif
#define MAX_STACKS 64
#define MAX_STALE 8

typedef struct {
  char name[64];
  rmmResource_t handle;
  bool ordered; /* orders its memory by stream */
} stack_entry;

static stack_entry stacks[MAX_STACKS];
static int stack_count;
static rmmResource_t callback_upstream;

/* The callback resource's functions take memory from a cuda resource, passing the stream on
 * untouched (the cuda resource does not look at it either). */
static void *callback_allocate(size_t bytes, cudaStream_t stream, void *user_data) {
  void *ptr = NULL;
  (void)user_data;
  return rmmResourceAllocate(callback_upstream, &ptr, bytes, stream) == RMM_SUCCESS ? ptr : NULL;
}

static void callback_deallocate(void *ptr, size_t bytes, cudaStream_t stream, void *user_data) {
  (void)user_data;
  CHECK_OK(rmmResourceDeallocate(callback_upstream, ptr, bytes, stream));
}

static bool never_retry(size_t bytes, void *arg) {
  (void)bytes;
  (void)arg;
  return false;
}

static void add(const char *name, rmmResource_t handle, bool ordered) {
  CHECK(stack_count < MAX_STACKS);
  snprintf(stacks[stack_count].name, sizeof stacks[stack_count].name, "%s", name);
  stacks[stack_count].handle = handle;
  stacks[stack_count].ordered = ordered;
  ++stack_count;
}

/* Every kind of resource of the current device, and every adaptor over cuda, managed,
 * callback, pool and expandable. */
static void make_stacks(int device) {
  static const char *const adaptors[] = {"aligned", "statistics", "limiting", "tracking",
                                         "logging", "failure_callback", "prefetch"};
  rmmResource_t cuda, r;
  rmmError_t status;
  char log_path[128];
  int base_count, i, a;
  stack_count = 0;
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  add("cuda", cuda, false);
  CHECK_OK(rmmManagedResourceCreate(&r));
  add("managed", r, false);
  CHECK_OK(rmmPinnedHostResourceCreate(&r));
  add("pinned_host", r, false);
  status = rmmSystemResourceCreate(&r);
  if (status == RMM_SUCCESS) {
    add("system", r, false);
  } else {
    CHECK(status == RMM_ERROR_NOT_SUPPORTED); /* no HMM or ATS here */
  }
  CHECK_OK(rmmCallbackResourceCreate(callback_allocate, callback_deallocate, NULL, device, &r));
  add("callback", r, false);
  CHECK_OK(rmmPoolResourceCreate(&r, cuda, 0, 0));
  add("pool", r, true);
  CHECK_OK(rmmExpandableResourceCreate(&r, 0));
  add("expandable", r, true);
  CHECK_OK(rmmArenaResourceCreate(&r, cuda, 0));
  add("arena", r, true);
  CHECK_OK(rmmBinningResourceCreate(&r, cuda, 8, 14));
  add("binning", r, true);
  CHECK_OK(rmmFixedSizeResourceCreate(&r, cuda, 4096, 2));
  add("fixed_size", r, true);
  status = rmmAsyncResourceCreate(&r, 0, 0);
  if (status == RMM_SUCCESS) {
    add("cuda_async", r, true);
  } else {
    CHECK(status == RMM_ERROR_NOT_SUPPORTED); /* no memory pools in this driver */
  }
  base_count = stack_count;
  for (i = 0; i < base_count; ++i) {
    const stack_entry base = stacks[i];
    char name[64];
    if (strcmp(base.name, "cuda") != 0 && strcmp(base.name, "managed") != 0 && strcmp(base.name, "callback") != 0 &&
        strcmp(base.name, "pool") != 0 && strcmp(base.name, "expandable") != 0) {
      continue;
    }
    for (a = 0; a < (int)(sizeof adaptors / sizeof adaptors[0]); ++a) {
      switch (a) {
        case 0: CHECK_OK(rmmAlignedAdaptorCreate(&r, base.handle, 1 << 16, 0)); break;
        case 1: CHECK_OK(rmmStatisticsAdaptorCreate(&r, base.handle)); break;
        case 2: CHECK_OK(rmmLimitingAdaptorCreate(&r, base.handle, (size_t)1 << 30)); break;
        case 3: CHECK_OK(rmmTrackingAdaptorCreate(&r, base.handle, false)); break;
        case 4:
          snprintf(log_path, sizeof log_path, "/tmp/rmm-stale-streams-%ld-%d.csv", (long)getpid(), i);
          CHECK_OK(rmmLoggingAdaptorCreate(&r, base.handle, log_path));
          break;
        case 5: CHECK_OK(rmmFailureCallbackAdaptorCreate(&r, base.handle, never_retry, NULL)); break;
        default: CHECK_OK(rmmPrefetchAdaptorCreate(&r, base.handle)); break;
      }
      snprintf(name, sizeof name, "%.20s over %.20s", adaptors[a], base.name);
      add(name, r, base.ordered);
    }
  }
}

static void destroy_stacks(void) {
  int i;
  for (i = stack_count - 1; i >= 0; --i) CHECK_OK(rmmResourceDestroy(stacks[i].handle));
  stack_count = 0;
}

static void remove_logs(void) {
  char log_path[128];
  int i;
  for (i = 0; i < MAX_STACKS; ++i) {
    snprintf(log_path, sizeof log_path, "/tmp/rmm-stale-streams-%ld-%d.csv", (long)getpid(), i);
    unlink(log_path);
  }
}

typedef struct {
  const char *name;
  cudaStream_t handle;
} stale_t;

/* Handles that name no live stream. No stream is made after them, so none is handed out again. */
static int stale_handles(stale_t *out) {
  cudaStream_t batch[BATCH], long_ago = NULL, just_now = NULL, forgotten = NULL;
  int b, i, n = 0;
  for (b = 0; b < BATCHES; ++b) {
    for (i = 0; i < BATCH; ++i) CHECK_OK(rmmStreamCreate(&batch[i]));
    for (i = 0; i < BATCH; ++i) CHECK_OK(rmmStreamDestroy(batch[i]));
    if (b == 0) long_ago = batch[0];
  }
  /* A stream rmm-rs stopped knowing (as a program's own stream), then destroyed. */
  CHECK_OK(rmmStreamCreate(&forgotten));
  CHECK_OK(rmmStreamUnregister(forgotten));
  CHECK_OK(rmmStreamDestroy(forgotten));
  CHECK_OK(rmmStreamCreate(&just_now));
  CHECK_OK(rmmStreamDestroy(just_now));
  out[n].name = "destroyed long ago";
  out[n++].handle = long_ago;
  out[n].name = "destroyed unannounced";
  out[n++].handle = forgotten;
  out[n].name = "destroyed just now";
  out[n++].handle = just_now;
  out[n].name = "made up 0x3";
  out[n++].handle = (cudaStream_t)(uintptr_t)0x3;
  out[n].name = "made up 0x1234";
  out[n++].handle = (cudaStream_t)(uintptr_t)0x1234;
  out[n].name = "made up 0xdeadbee0";
  out[n++].handle = (cudaStream_t)(uintptr_t)0xdeadbee0u;
  out[n].name = "made up -16";
  out[n++].handle = (cudaStream_t)(uintptr_t)(intptr_t)-16;
  return n;
}

static void check_refused(rmmError_t status, const char *what) {
  if (status != RMM_ERROR_INVALID_ARGUMENT || strstr(rmmGetLastErrorMessage(), "rmmStreamRegister") == NULL) {
    fprintf(stderr, "%s: returned %s: %s\n", what, rmmGetErrorName(status), rmmGetLastErrorMessage());
    CHECK(!"refused with RMM_ERROR_INVALID_ARGUMENT, naming rmmStreamRegister");
  }
}

/* One stack, one stale handle, allocating with device `allocating` current and freeing with
 * `freeing` current. A stream-ordered stack gets one only with registered_streams. */
static void one(const stack_entry *stack, const stale_t *stale, int device, int allocating, int freeing) {
  char what[256];
  void *ptr = NULL;
  rmmError_t status;
  snprintf(what, sizeof what, "%s of device %d on %s, device %d current, freed with device %d current", stack->name, device,
           stale->name, allocating, freeing);
  CHECK_OK(rmmSetDevice(allocating));
  status = rmmResourceAllocate(stack->handle, &ptr, 4096, stale->handle);
  if (stack->ordered) {
    check_refused(status, what);
    CHECK(ptr == NULL);
    /* Allocated on NULL, freed with the stale handle: refused, the pointer stays live. */
    CHECK_OK(rmmResourceAllocate(stack->handle, &ptr, 4096, NULL));
    CHECK_OK(rmmSetDevice(freeing));
    check_refused(rmmFree(ptr, stale->handle, __FILE__, __LINE__), what);
    CHECK_OK(rmmResourceDeallocate(stack->handle, ptr, 4096, NULL));
    return;
  }
  if (status != RMM_SUCCESS) {
    fprintf(stderr, "%s: %s\n", what, rmmGetLastErrorMessage());
    CHECK(status == RMM_SUCCESS);
  }
  CHECK_OK(rmmSetDevice(freeing));
  if ((allocating + freeing) % 2 == 0) {
    CHECK_OK(rmmResourceDeallocate(stack->handle, ptr, 4096, stale->handle));
  } else {
    CHECK_OK(rmmFree(ptr, stale->handle, __FILE__, __LINE__));
  }
}

/* rmmAlloc/rmmFree with the stack as the device's resource, and a device buffer of it. */
static void legacy_and_buffer(const stack_entry *stack, const stale_t *stale, int device, bool registered) {
  rmmResource_t previous = NULL;
  rmmDeviceBuffer_t buffer = NULL;
  void *ptr = NULL;
  CHECK_OK(rmmSetDevice(device));
  CHECK_OK(rmmSetPerDeviceResource(device, stack->handle, &previous));
  if (stack->ordered) {
    check_refused(rmmAlloc(&ptr, 4096, stale->handle, __FILE__, __LINE__), stack->name);
  } else {
    CHECK_OK(rmmAlloc(&ptr, 4096, stale->handle, __FILE__, __LINE__));
    CHECK_OK(rmmFree(ptr, stale->handle, __FILE__, __LINE__));
  }
  CHECK_OK(rmmSetPerDeviceResource(device, previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));
  /* A buffer's stream: taken where its memory is freed at once; with registered_streams,
   * refused (its copies go in the stream's order). */
  CHECK_OK(rmmDeviceBufferCreate(&buffer, 4096, NULL, stack->handle));
  if (registered) {
    check_refused(rmmDeviceBufferSetStream(buffer, stale->handle), stack->name);
  } else {
    CHECK_OK(rmmDeviceBufferSetStream(buffer, stale->handle));
  }
  CHECK_OK(rmmDeviceBufferDestroy(buffer));
}

static stale_t stale[8][MAX_STALE];
static int stale_count;

static void run(int devices, bool registered) {
  int device, s, k, allocating, freeing;
  for (device = 0; device < devices; ++device) {
    CHECK_OK(rmmSetDevice(device));
    CHECK_OK(rmmCudaResourceCreate(&callback_upstream));
    make_stacks(device);
    for (s = 0; s < stale_count; ++s) {
      for (k = 0; k < stack_count; ++k) {
        if (stacks[k].ordered && !registered) continue; /* would ask the driver: live streams only */
        for (allocating = 0; allocating < devices; ++allocating) {
          for (freeing = 0; freeing < devices; ++freeing) {
            one(&stacks[k], &stale[device][s], device, allocating, freeing);
          }
        }
        legacy_and_buffer(&stacks[k], &stale[device][s], device, registered);
      }
    }
    destroy_stacks();
    CHECK_OK(rmmResourceDestroy(callback_upstream));
    printf("device %d, %s: %d stale handles, every kind and adaptor survived\n", device,
           registered ? "registered_streams" : "no configuration", stale_count);
  }
}

int main(void) {
  int devices = rmm_test_device_count(), device;
  if (devices > 8) devices = 8;
  /* Made first, for every device: no stream is made after them. */
  for (device = 0; device < devices; ++device) {
    CHECK_OK(rmmSetDevice(device));
    stale_count = stale_handles(stale[device]);
  }
  run(devices, false);
  CHECK_OK(rmmConfigure("registered_streams/cuda"));
  run(devices, true);
  remove_logs();
  return rmm_test_finish("test_stale_streams");
}
