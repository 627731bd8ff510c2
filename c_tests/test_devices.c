/* Devices and per-device resources: rmmGetDeviceCount, rmmGetDevice, rmmSetDevice,
 * rmmIsSimulated, rmmSimGetRaceCount, rmmSimGetPointerAttributes, rmmGetDeviceMemInfo, rmmPrefetch,
 * rmmSet/GetPerDeviceResource,
 * rmmSet/GetCurrentDeviceResource. (Two-device cases are in test_multi_device.c.) */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <pthread.h>

#include "rmm_test.h"

static const char *resource_name(rmmResource_t resource) {
  const char *name = NULL;
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK(name != NULL);
  return name;
}

static void check_device_queries(int count) {
  int device = -1;
  bool simulated = false;
  size_t races = 99;

  CHECK_RMM(rmmGetDeviceCount(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetDevice(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmIsSimulated(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSimGetRaceCount(NULL), RMM_ERROR_INVALID_ARGUMENT);

  CHECK_OK(rmmIsSimulated(&simulated));
  CHECK(simulated == (getenv("RMM_SIM_DEVICES") != NULL));
  if (simulated) {
    const char *spec = getenv("RMM_SIM_DEVICES");
    if (strcmp(spec, "2:1GiB") == 0) CHECK(count == 2);
    CHECK_OK(rmmSimGetRaceCount(&races));
    CHECK(races == 0);
  } else {
    CHECK_RMM(rmmSimGetRaceCount(&races), RMM_ERROR_NOT_SUPPORTED);
    CHECK(races == 99);
  }

  /* The current device starts as device 0, as with the CUDA runtime. */
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 0);

  /* Invalid device numbers are refused and change nothing. */
  CHECK_RMM(rmmSetDevice(-1), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetDevice(count), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetDevice(INT_MAX), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetDevice(INT_MIN), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 0);

  /* Every existing device can be made current. */
  for (device = count - 1; device >= 0; --device) {
    int current = -1;
    CHECK_OK(rmmSetDevice(device));
    CHECK_OK(rmmGetDevice(&current));
    CHECK(current == device);
  }
}

static void check_per_device_errors(int count) {
  rmmResource_t resource = (rmmResource_t)&count, cuda = NULL, previous = (rmmResource_t)&count;
  /* NULL out-pointers and invalid devices. */
  CHECK_RMM(rmmGetPerDeviceResource(0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetCurrentDeviceResource(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetPerDeviceResource(-1, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetPerDeviceResource(count, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetPerDeviceResource(INT_MAX, &resource), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(resource == (rmmResource_t)&count);

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_RMM(rmmSetPerDeviceResource(-1, cuda, &previous), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetPerDeviceResource(count, cuda, &previous), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetPerDeviceResource(INT_MIN, cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(previous == (rmmResource_t)&count);
  /* NULL and garbage handles. */
  CHECK_RMM(rmmSetPerDeviceResource(0, NULL, NULL), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmSetCurrentDeviceResource(NULL, &previous), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmSetPerDeviceResource(0, (rmmResource_t)(uintptr_t)0x1234, NULL),
            RMM_ERROR_INVALID_HANDLE);
  CHECK(previous == (rmmResource_t)&count);
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_RMM(rmmSetPerDeviceResource(0, cuda, NULL), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmSetCurrentDeviceResource(cuda, NULL), RMM_ERROR_INVALID_HANDLE);
}

static void check_per_device(void) {
  rmmResource_t initial = NULL, managed = NULL, previous = NULL, got = NULL, pinned = NULL;
  rmmResource_t again = NULL;
  void *ptr = NULL;
  int device = -1;

  CHECK_OK(rmmSetDevice(0));

  /* Device 0's resource is a cuda resource unless one was set. */
  CHECK_OK(rmmGetPerDeviceResource(0, &initial));
  CHECK(initial != NULL);
  CHECK_STR(resource_name(initial), "cuda");
  CHECK_OK(rmmResourceGetDevice(initial, &device));
  CHECK(device == 0);
  CHECK_OK(rmmGetCurrentDeviceResource(&got));
  CHECK(got != initial); /* a new handle each time */
  CHECK_STR(resource_name(got), "cuda");
  /* ...to the same resource. */
  CHECK_OK(rmmResourceAllocate(initial, &ptr, 512, 0));
  CHECK_OK(rmmResourceDeallocate(got, ptr, 512, 0));
  CHECK_OK(rmmResourceDestroy(got));

  /* Set a managed resource with `previous`. */
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmSetPerDeviceResource(0, managed, &previous));
  CHECK(previous != NULL);
  CHECK_STR(resource_name(previous), "cuda");
  CHECK_OK(rmmResourceAllocate(previous, &ptr, 64, 0)); /* the same resource as `initial` */
  CHECK_OK(rmmResourceDeallocate(initial, ptr, 64, 0));
  CHECK_OK(rmmGetPerDeviceResource(0, &got));
  CHECK_STR(resource_name(got), "managed");
  CHECK_OK(rmmResourceDestroy(got));

  /* rmmAlloc now draws from the managed resource (host-accessible everywhere). */
  CHECK_OK(RMM_ALLOC(&ptr, 4096, 0));
  rmm_test_fill(ptr, 4096, 8);
  CHECK(rmm_test_verify(ptr, 4096, 8));
  CHECK_RMM(rmmResourceDeallocate(initial, ptr, 4096, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(managed, ptr, 4096, 0));

  /* The registry keeps its own reference: the caller's handle may go. */
  CHECK_OK(rmmResourceDestroy(managed));
  CHECK_OK(RMM_ALLOC(&ptr, 100, 0));
  rmm_test_fill(ptr, 100, 1);
  CHECK_OK(rmmGetCurrentDeviceResource(&got));
  CHECK_STR(resource_name(got), "managed");
  CHECK_OK(rmmResourceDeallocate(got, ptr, 100, 0));

  /* Set with previous = NULL, through the current-device call. */
  CHECK_OK(rmmPinnedHostResourceCreate(&pinned));
  CHECK_OK(rmmSetCurrentDeviceResource(pinned, NULL));
  CHECK_OK(rmmGetPerDeviceResource(0, &again));
  CHECK_STR(resource_name(again), "pinned_host");
  CHECK_OK(RMM_ALLOC(&ptr, 300, 0));
  rmm_test_fill(ptr, 300, 2); /* pinned host memory */
  CHECK(rmm_test_verify(ptr, 300, 2));
  CHECK_OK(rmmResourceDeallocate(pinned, ptr, 300, 0));
  CHECK_OK(rmmResourceDestroy(again));

  /* Set back the managed one through the other handle, getting the pinned one back. */
  CHECK_OK(rmmSetCurrentDeviceResource(got, &again));
  CHECK_STR(resource_name(again), "pinned_host");
  CHECK_OK(rmmResourceAllocate(again, &ptr, 32, 0));
  CHECK_OK(rmmResourceDeallocate(pinned, ptr, 32, 0));
  CHECK_OK(rmmResourceDestroy(again));
  CHECK_OK(rmmResourceDestroy(pinned));
  CHECK_OK(rmmResourceDestroy(got));

  /* Restore the original cuda resource. */
  CHECK_OK(rmmSetPerDeviceResource(0, previous, &got));
  CHECK_STR(resource_name(got), "managed");
  CHECK_OK(rmmResourceDestroy(got));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmGetCurrentDeviceResource(&got));
  CHECK_STR(resource_name(got), "cuda");
  CHECK_OK(RMM_ALLOC(&ptr, 64, 0));
  CHECK_OK(rmmResourceDeallocate(initial, ptr, 64, 0));
  CHECK_OK(rmmResourceDestroy(got));
  CHECK_OK(rmmResourceDestroy(initial));
}

struct thread_device {
  int device;
  rmmError_t status;
};

static void *report_device(void *arg) {
  struct thread_device *result = (struct thread_device *)arg;
  result->status = rmmGetDevice(&result->device);
  return NULL;
}

/* The current device is per thread: a new thread starts on device 0. */
static void check_per_thread_device(int count) {
  struct thread_device result = {-1, RMM_ERROR_UNKNOWN};
  pthread_t thread;
  int device = -1;
  CHECK_OK(rmmSetDevice(count - 1));
  CHECK(pthread_create(&thread, NULL, report_device, &result) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK_RMM(result.status, RMM_SUCCESS);
  CHECK(result.device == 0);
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == count - 1);
  CHECK_OK(rmmSetDevice(0));
}

/* rmmSimGetPointerAttributes: the kind and device of simulated memory, as cudaMemoryType numbers
 * them (what a stand-in of cudaPointerGetAttributes answers); not supported on real devices. */
static void check_pointer_attributes(int count) {
  bool simulated = false;
  int type = 99, device = 99, last = count - 1, host = 0;
  rmmResource_t cuda = NULL, managed = NULL, pinned = NULL;
  void *on_device = NULL, *in_managed = NULL, *in_pinned = NULL;

  CHECK_RMM(rmmSimGetPointerAttributes(NULL, &device, &host), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSimGetPointerAttributes(&type, NULL, &host), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(type == 99 && device == 99);
  CHECK_OK(rmmIsSimulated(&simulated));
  if (!simulated) {
    CHECK_RMM(rmmSimGetPointerAttributes(&type, &device, &host), RMM_ERROR_NOT_SUPPORTED);
    CHECK(type == 99 && device == 99);
    return;
  }
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, &host));
  CHECK(type == 0 && device == -1);
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, NULL));
  CHECK(type == 0 && device == -1);

  /* Memory of the last device, asked about with device 0 current. */
  CHECK_OK(rmmSetDevice(last));
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmPinnedHostResourceCreate(&pinned));
  CHECK_OK(rmmResourceAllocate(cuda, &on_device, 1000, NULL));
  CHECK_OK(rmmResourceAllocate(managed, &in_managed, 1000, NULL));
  CHECK_OK(rmmResourceAllocate(pinned, &in_pinned, 1000, NULL));
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, on_device));
  CHECK(type == 2 && device == last);
  /* Inside the allocation, not only at its start. */
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, (char *)on_device + 999));
  CHECK(type == 2 && device == last);
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, in_managed));
  CHECK(type == 3 && device == last);
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, in_pinned));
  CHECK(type == 1 && device == last);
  CHECK_OK(rmmSetDevice(last));
  CHECK_OK(rmmResourceDeallocate(cuda, on_device, 1000, NULL));
  CHECK_OK(rmmResourceDeallocate(managed, in_managed, 1000, NULL));
  CHECK_OK(rmmResourceDeallocate(pinned, in_pinned, 1000, NULL));
  CHECK_OK(rmmSetDevice(0));
  /* Freed memory is no longer simulated memory. */
  CHECK_OK(rmmSimGetPointerAttributes(&type, &device, on_device));
  CHECK(type == 0 && device == -1);
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmResourceDestroy(managed));
  CHECK_OK(rmmResourceDestroy(pinned));
}

/* rmmGetDeviceMemInfo: free and total bytes of any device, with no rmmInitialize; device memory
 * allocated there takes from its free bytes (on simulated devices, exactly). */
static void check_device_mem_info(int count) {
  bool simulated = false;
  size_t free_bytes = 7, total_bytes = 7, free_after = 0, total_after = 0;
  rmmResource_t cuda = NULL;
  void *ptr = NULL;
  const int last = count - 1;

  CHECK_RMM(rmmGetDeviceMemInfo(NULL, &total_bytes, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetDeviceMemInfo(&free_bytes, NULL, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, -1), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, count), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(free_bytes == 7 && total_bytes == 7);
  CHECK_OK(rmmGetDeviceMemInfo(&free_bytes, &total_bytes, last));
  CHECK(total_bytes > 0 && free_bytes <= total_bytes);

  CHECK_OK(rmmSetDevice(last));
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmResourceAllocate(cuda, &ptr, 1 << 20, NULL));
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmGetDeviceMemInfo(&free_after, &total_after, last));
  CHECK(total_after == total_bytes);
  CHECK_OK(rmmIsSimulated(&simulated));
  if (simulated) CHECK(free_after == free_bytes - (1 << 20));
  CHECK_OK(rmmSetDevice(last));
  CHECK_OK(rmmResourceDeallocate(cuda, ptr, 1 << 20, NULL));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmGetDeviceMemInfo(&free_after, &total_after, last));
  if (simulated) CHECK(free_after == free_bytes);
}

/* rmmPrefetch: managed memory migrates; other memory, NULL and 0 bytes need nothing; a device
 * that does not exist is refused. */
static void check_prefetch(int count) {
  rmmResource_t managed = NULL, cuda = NULL;
  void *on_managed = NULL, *on_device = NULL;
  CHECK_OK(rmmManagedResourceCreate(&managed));
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmResourceAllocate(managed, &on_managed, 1 << 16, NULL));
  CHECK_OK(rmmResourceAllocate(cuda, &on_device, 4096, NULL));
  CHECK_OK(rmmPrefetch(on_managed, 1 << 16, count - 1, NULL));
  CHECK_OK(rmmPrefetch(on_device, 4096, 0, NULL));
  CHECK_OK(rmmPrefetch(NULL, 4096, 0, NULL));
  CHECK_RMM(rmmPrefetch(on_managed, 1 << 16, -1, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmPrefetch(on_managed, 1 << 16, count, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(cuda, on_device, 4096, NULL));
  CHECK_OK(rmmResourceDeallocate(managed, on_managed, 1 << 16, NULL));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmResourceDestroy(managed));
}

int main(void) {
  const int count = rmm_test_device_count();
  check_device_queries(count);
  check_per_device_errors(count);
  check_per_device();
  check_per_thread_device(count);
  check_pointer_attributes(count);
  check_device_mem_info(count);
  check_prefetch(count);
  return rmm_test_finish("devices");
}
