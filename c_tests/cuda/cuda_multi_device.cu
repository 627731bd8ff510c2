// Two GPUs: per-device resources for device 0 and 1, cudaSetDevice switches, allocations on
// each device verified by a kernel on that device, and a free of device 1's pointer while
// device 0 is current going to device 1's resource. Exits 77 (skipped) with fewer than 2 GPUs.
#include "cuda_test.cuh"

#include <cstring>

static int resource_device(rmmResource_t resource) {
  int device = -1;
  CHECK_OK(rmmResourceGetDevice(resource, &device));
  return device;
}

static size_t free_memory_of(int device) {
  int current = -1;
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaGetDevice(&current));
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  CUDA_CHECK(cudaSetDevice(current));
  return free_bytes;
}

// Creates the device's context and loads the test kernels there, so that later readings of
// its free memory see only what rmm allocates and frees.
static void warm_up(int device) {
  CUDA_CHECK(cudaSetDevice(device));
  void *scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&scratch, 4096));
  gpu_fill(scratch, 4096, 1, 0);
  CHECK(gpu_mismatches(scratch, 4096, 1, 0) == 0);
  CUDA_CHECK(cudaFree(scratch));
  CUDA_CHECK(cudaDeviceSynchronize());
}

int main() {
  cuda_test_require_gpus(2);
  CHECK(!rmm_test_simulated());
  const size_t bytes = size_t(256) << 20;
  const size_t slack = size_t(64) << 20;  // other users of the GPU, driver bookkeeping
  warm_up(1);
  warm_up(0);

  // rmm follows cudaSetDevice.
  int device = -1;
  CUDA_CHECK(cudaSetDevice(1));
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 1);
  rmmResource_t r1 = nullptr;
  CHECK_OK(rmmCudaResourceCreate(&r1));
  CHECK(resource_device(r1) == 1);
  CUDA_CHECK(cudaSetDevice(0));
  CHECK_OK(rmmGetDevice(&device));
  CHECK(device == 0);
  rmmResource_t r0 = nullptr;
  CHECK_OK(rmmCudaResourceCreate(&r0));
  CHECK(resource_device(r0) == 0);

  // rmmSetDevice moves the runtime too.
  CHECK_OK(rmmSetDevice(1));
  CUDA_CHECK(cudaGetDevice(&device));
  CHECK(device == 1);
  CHECK_OK(rmmSetDevice(0));
  CUDA_CHECK(cudaGetDevice(&device));
  CHECK(device == 0);

  // Each resource serves its own device only.
  CHECK_RMM(rmmSetPerDeviceResource(1, r0, nullptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmSetPerDeviceResource(0, r1, nullptr), RMM_ERROR_INVALID_ARGUMENT);
  rmmResource_t previous0 = nullptr, previous1 = nullptr;
  CHECK_OK(rmmSetPerDeviceResource(0, r0, &previous0));
  CHECK_OK(rmmSetPerDeviceResource(1, r1, &previous1));

  // Allocate on each device with that device current; a kernel on each verifies its memory.
  void *p0 = nullptr, *p1 = nullptr;
  CUDA_CHECK(cudaSetDevice(0));
  CHECK_OK(RMM_ALLOC(&p0, bytes, 0));
  const size_t free1_before = free_memory_of(1);
  CUDA_CHECK(cudaSetDevice(1));
  CHECK_OK(RMM_ALLOC(&p1, bytes, 0));
  int owner = -1;
  CHECK(memory_type(p1, &owner) == cudaMemoryTypeDevice);
  CHECK(owner == 1);
  write_and_verify(p1, bytes, 1, 0);
  CUDA_CHECK(cudaSetDevice(0));
  CHECK(memory_type(p0, &owner) == cudaMemoryTypeDevice);
  CHECK(owner == 0);
  write_and_verify(p0, bytes, 0, 0);
  CHECK(free_memory_of(1) + bytes <= free1_before + slack);

  // p1 belongs to r1, p0 to r0.
  CHECK_RMM(rmmResourceDeallocate(r0, p1, bytes, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(r1, p0, bytes, 0), RMM_ERROR_INVALID_ARGUMENT);

  // Free device 1's pointer while device 0 is current: it goes to device 1's resource and
  // device 1 gets its memory back; device 0's memory is untouched.
  CUDA_CHECK(cudaSetDevice(0));
  CHECK_OK(RMM_FREE(p1, 0));
  CHECK_RMM(rmmResourceDeallocate(r1, p1, bytes, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(free_memory_of(1) + slack >= free1_before);
  CHECK(gpu_mismatches(p0, bytes, 0, 0) == 0);
  CUDA_CHECK(cudaGetDevice(&device));
  CHECK(device == 0);

  // And the other way round, from a stream of device 1.
  cudaStream_t stream1 = nullptr;
  CUDA_CHECK(cudaSetDevice(1));
  CUDA_CHECK(cudaStreamCreate(&stream1));
  CHECK_OK(RMM_ALLOC(&p1, bytes, stream1));
  write_and_verify(p1, bytes, 5, stream1);
  CHECK_OK(RMM_FREE(p0, stream1));
  CHECK_OK(RMM_FREE(p1, stream1));
  CUDA_CHECK(cudaStreamSynchronize(stream1));
  CUDA_CHECK(cudaStreamDestroy(stream1));
  CUDA_CHECK(cudaSetDevice(0));

  // Managed memory of device 1: written by a kernel there, read by the host.
  rmmResource_t m1 = nullptr;
  CUDA_CHECK(cudaSetDevice(1));
  CHECK_OK(rmmManagedResourceCreate(&m1));
  CHECK(resource_device(m1) == 1);
  void *managed = nullptr;
  CHECK_OK(rmmResourceAllocate(m1, &managed, 1 << 20, 0));
  write_and_verify(managed, 1 << 20, 9, 0);
  CUDA_CHECK(cudaSetDevice(0));
  CHECK(static_cast<const unsigned *>(managed)[0] == pattern(0, 9));
  CHECK_OK(rmmResourceDeallocate(m1, managed, 1 << 20, 0));
  CHECK_OK(rmmResourceDestroy(m1));

  // rmmInitialize over both devices, then allocate on each with cudaSetDevice.
  CHECK_OK(rmmSetPerDeviceResource(0, previous0, nullptr));
  CHECK_OK(rmmSetPerDeviceResource(1, previous1, nullptr));
  rmmOptions_t options;
  std::memset(&options, 0, sizeof options);
  options.devices.count = 2;
  options.devices.ids[0] = 0;
  options.devices.ids[1] = 1;
  CHECK_OK(rmmInitialize(&options));
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    void *ptr = nullptr;
    CHECK_OK(RMM_ALLOC(&ptr, 1 << 20, 0));
    CHECK(memory_type(ptr, &owner) == cudaMemoryTypeDevice);
    CHECK(owner == d);
    write_and_verify(ptr, 1 << 20, 100 + d, 0);
    CUDA_CHECK(cudaSetDevice(1 - d));
    CHECK_OK(RMM_FREE(ptr, 0));
  }
  CHECK_OK(rmmFinalize());
  CUDA_CHECK(cudaSetDevice(0));

  CHECK_OK(rmmResourceDestroy(previous0));
  CHECK_OK(rmmResourceDestroy(previous1));
  CHECK_OK(rmmResourceDestroy(r0));
  CHECK_OK(rmmResourceDestroy(r1));
  CUDA_CHECK(cudaDeviceSynchronize());
  return rmm_test_finish("cuda_multi_device");
}
