/* Two devices: per-device resources, device switches, frees of another device's memory, and
 * rmmInitialize over a device list. Exits 77 (skipped) with fewer than two devices. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "rmm_test.h"

static const char *resource_name(rmmResource_t resource) {
  const char *name = NULL;
  CHECK_OK(rmmResourceGetName(resource, &name));
  return name;
}

static int resource_device(rmmResource_t resource) {
  int device = -1;
  CHECK_OK(rmmResourceGetDevice(resource, &device));
  return device;
}

static void check_resource_of(int device, const char *name) {
  rmmResource_t resource = NULL;
  CHECK_OK(rmmGetPerDeviceResource(device, &resource));
  CHECK_STR(resource_name(resource), name);
  CHECK(resource_device(resource) == device);
  CHECK_OK(rmmResourceDestroy(resource));
}

struct on_device {
  int device;
  size_t bytes;
  void *ptr;
  rmmError_t status;
};

static void *allocate_on_device(void *arg) {
  struct on_device *job = (struct on_device *)arg;
  job->status = rmmSetDevice(job->device);
  if (job->status == RMM_SUCCESS) {
    job->status = rmmAlloc(&job->ptr, job->bytes, 0, __FILE__, __LINE__);
  }
  return NULL;
}

int main(void) {
  rmmResource_t cuda0 = NULL, cuda1 = NULL, managed0 = NULL, managed1 = NULL;
  rmmResource_t previous0 = NULL, previous1 = NULL, sentinel = (rmmResource_t)&cuda0;
  rmmResource_t previous = NULL, current = NULL, pinned1 = NULL;
  void *p0 = NULL, *p1 = NULL, *ptr = NULL;
  int device = -1;
  bool simulated;

  rmm_test_require_devices(2);
  simulated = rmm_test_simulated();

  /* Resources belong to the device current when they are made. */
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(rmmCudaResourceCreate(&cuda1));
  CHECK_OK(rmmManagedResourceCreate(&managed1));
  CHECK_OK(rmmPinnedHostResourceCreate(&pinned1));
  CHECK(resource_device(cuda1) == 1);
  CHECK(resource_device(managed1) == 1);
  CHECK(resource_device(pinned1) == 1);
  CHECK_OK(rmmSetDevice(0));
  CHECK_OK(rmmCudaResourceCreate(&cuda0));
  CHECK_OK(rmmManagedResourceCreate(&managed0));
  CHECK(resource_device(cuda0) == 0);
  CHECK(resource_device(managed0) == 0);

  /* A resource serves only its own device. */
  previous = sentinel;
  CHECK_RMM(rmmSetPerDeviceResource(1, cuda0, &previous), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(previous == sentinel);
  CHECK_RMM(rmmSetPerDeviceResource(1, managed0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetPerDeviceResource(0, cuda1, &previous), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(previous == sentinel);
  CHECK_RMM(rmmSetCurrentDeviceResource(pinned1, NULL), RMM_ERROR_INVALID_ARGUMENT);
  check_resource_of(0, "cuda");
  check_resource_of(1, "cuda");

  /* Per-device resources set from device 0 for both devices. */
  CHECK_OK(rmmSetPerDeviceResource(0, managed0, &previous0));
  CHECK_OK(rmmSetPerDeviceResource(1, managed1, &previous1));
  CHECK(resource_device(previous0) == 0);
  CHECK(resource_device(previous1) == 1);
  check_resource_of(0, "managed");
  check_resource_of(1, "managed");
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 0);

  /* rmmAlloc follows the current device. */
  CHECK_OK(RMM_ALLOC(&p0, 1 << 16, 0));
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(rmmGetCurrentDeviceResource(&current));
  CHECK(resource_device(current) == 1);
  CHECK_OK(rmmResourceDestroy(current));
  CHECK_OK(RMM_ALLOC(&p1, 1 << 16, 0));
  CHECK(p0 != NULL && p1 != NULL && p0 != p1);
  rmm_test_fill(p1, 1 << 16, 1); /* managed memory */
  CHECK_OK(rmmSetDevice(0));
  rmm_test_fill(p0, 1 << 16, 0);
  CHECK(rmm_test_verify(p1, 1 << 16, 1));

  /* p1 came from managed1, p0 from managed0. */
  CHECK_RMM(rmmResourceDeallocate(managed0, p1, 1 << 16, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(managed1, p0, 1 << 16, 0), RMM_ERROR_INVALID_ARGUMENT);

  /* A free of device 1's pointer while device 0 is current goes to device 1's resource. */
  CHECK_OK(rmmFree(p1, 0, __FILE__, __LINE__));
  CHECK_RMM(rmmResourceDeallocate(managed1, p1, 1 << 16, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(rmm_test_verify(p0, 1 << 16, 0));
  CHECK_OK(rmmResourceDeallocate(managed0, p0, 1 << 16, 0));

  /* Device memory on each device, freed from the other. */
  CHECK_OK(rmmSetPerDeviceResource(0, cuda0, NULL));
  CHECK_OK(rmmSetPerDeviceResource(1, cuda1, NULL));
  CHECK_OK(RMM_ALLOC(&p0, 4096, 0));
  CHECK_OK(rmmSetDevice(1));
  CHECK_OK(RMM_ALLOC(&p1, 4096, 0));
  if (simulated) {
    rmm_test_fill(p0, 4096, 10);
    rmm_test_fill(p1, 4096, 11);
  }
  CHECK_OK(RMM_FREE(p0, 0)); /* device 0's pointer, device 1 current */
  CHECK_OK(rmmSetDevice(0));
  if (simulated) CHECK(rmm_test_verify(p1, 4096, 11));
  CHECK_OK(rmmResourceDeallocate(cuda1, p1, 4096, 0));

  /* Allocate on device 1 in another thread, free on this thread (device 0 current). */
  {
    struct on_device job = {1, 8192, NULL, RMM_ERROR_UNKNOWN};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, allocate_on_device, &job) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK_RMM(job.status, RMM_SUCCESS);
    CHECK(job.ptr != NULL);
    CHECK_OK(rmmGetDevice(&device));
    CHECK(device == 0);
    CHECK_RMM(rmmResourceDeallocate(cuda0, job.ptr, 8192, 0), RMM_ERROR_INVALID_ARGUMENT);
    CHECK_OK(rmmResourceDeallocate(cuda1, job.ptr, 8192, 0));
  }

  /* Streams on device 1. */
  {
    cudaStream_t stream = NULL;
    CHECK_OK(rmmSetDevice(1));
    CHECK_OK(rmmStreamCreate(&stream));
    CHECK_OK(rmmAlloc(&ptr, 1000, stream, __FILE__, __LINE__));
    CHECK_OK(rmmFree(ptr, stream, __FILE__, __LINE__));
    CHECK_OK(rmmStreamSynchronize(stream));
    CHECK_OK(rmmStreamDestroy(stream));
    CHECK_OK(rmmSetDevice(0));
  }

  /* Pinned host memory of device 1's context is usable from the host. */
  CHECK_OK(rmmResourceAllocate(pinned1, &ptr, 777, 0));
  rmm_test_fill(ptr, 777, 3);
  CHECK(rmm_test_verify(ptr, 777, 3));
  CHECK_OK(rmmResourceDeallocate(pinned1, ptr, 777, 0));

  /* rmmInitialize over a device list replaces each listed device's resource. */
  {
    rmmOptions_t options, out;
    memset(&options, 0, sizeof options);
    options.allocation_mode = CudaManagedMemory;
    options.devices.count = 2;
    options.devices.ids[0] = 1;
    options.devices.ids[1] = 0;
    CHECK_OK(rmmInitialize(&options));
    memset(&out, 0x5A, sizeof out);
    CHECK(rmmIsInitialized(&out));
    CHECK(out.allocation_mode == CudaManagedMemory);
    CHECK(out.devices.count == 2);
    CHECK(out.devices.ids[0] == 1 && out.devices.ids[1] == 0);
    check_resource_of(0, "managed");
    check_resource_of(1, "managed");
    CHECK_OK(rmmSetDevice(1));
    CHECK_OK(RMM_ALLOC(&p1, 512, 0));
    CHECK_OK(rmmSetDevice(0));
    rmm_test_fill(p1, 512, 4);
    CHECK_OK(rmmFinalize());
    /* Back to what each device had before; the live allocation stays valid. */
    check_resource_of(0, "cuda");
    check_resource_of(1, "cuda");
    CHECK(rmm_test_verify(p1, 512, 4));
    CHECK_OK(RMM_FREE(p1, 0));

    /* Only device 1 listed: device 0 keeps its resource. */
    CHECK_OK(rmmSetPerDeviceResource(0, managed0, NULL));
    memset(&options, 0, sizeof options);
    options.devices.count = 1;
    options.devices.ids[0] = 1;
    CHECK_OK(rmmInitialize(&options));
    check_resource_of(0, "managed");
    check_resource_of(1, "cuda");
    CHECK_OK(rmmFinalize());
    check_resource_of(0, "managed");
  }

  /* Restore the defaults and release every handle. */
  CHECK_OK(rmmSetPerDeviceResource(0, previous0, NULL));
  CHECK_OK(rmmSetPerDeviceResource(1, previous1, NULL));
  CHECK_OK(rmmResourceDestroy(previous0));
  CHECK_OK(rmmResourceDestroy(previous1));
  CHECK_OK(rmmResourceDestroy(cuda0));
  CHECK_OK(rmmResourceDestroy(cuda1));
  CHECK_OK(rmmResourceDestroy(managed0));
  CHECK_OK(rmmResourceDestroy(managed1));
  CHECK_OK(rmmResourceDestroy(pinned1));
  return rmm_test_finish("multi_device");
}
