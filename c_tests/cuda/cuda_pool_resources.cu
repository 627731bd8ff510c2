// The resources over driver pools and system memory on the real GPU: a view over pools the
// program made (not destroyed by the view), the default managed pool (CUDA 13), a host memory
// pool, the hardware-decompression flag, and system memory (HMM/ATS). Each one either works
// (kernels write and read its memory, the runtime sees the memory type asked for) or is
// refused with RMM_ERROR_NOT_SUPPORTED exactly where rmmDeviceSupports says the device lacks
// it, which must agree with what the runtime and driver report.
#include "cuda_test.cuh"

#include <cuda.h>

static int current_device() {
  int device = -1;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

static bool rmm_supports(uint32_t capability) {
  int supported = -1;
  CHECK_OK(rmmDeviceSupports(&supported, capability, current_device()));
  CHECK(supported == 0 || supported == 1);
  return supported == 1;
}

static int attribute(cudaDeviceAttr attr) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, current_device()));
  return value;
}

// rmmDeviceSupports agrees with the runtime and the driver version.
static void capabilities_are_truthful() {
  int driver = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CHECK(rmm_supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS) == (attribute(cudaDevAttrPageableMemoryAccess) != 0));
  bool const pools = attribute(cudaDevAttrMemoryPoolsSupported) != 0;
  CHECK(rmm_supports(RMM_CAPABILITY_HW_DECOMPRESS) == (pools && driver >= 12080));
  CHECK(rmm_supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS) ==
        (pools && driver >= 13000 && attribute(cudaDevAttrConcurrentManagedAccess) != 0));
  std::printf("driver %d: pageable access %d, managed pools %d, host pools %d, hw decompress %d\n", driver,
              rmm_supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS), rmm_supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS),
              rmm_supports(RMM_CAPABILITY_HOST_MEMORY_POOLS), rmm_supports(RMM_CAPABILITY_HW_DECOMPRESS));
}

static void use(rmmResource_t resource, unsigned seed) {
  size_t const bytes = (size_t(2) << 20) + 4096;
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, stream));
  write_and_verify(ptr, bytes, seed, stream);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

static void view_over_pools_the_program_made() {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = current_device();
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  rmmResource_t view = nullptr;
  CHECK_OK(rmmAsyncViewResourceCreate(&view, pool));
  void *reported = nullptr;
  CHECK_OK(rmmAsyncResourceGetPool(view, &reported));
  CHECK(reported == static_cast<void *>(pool));
  use(view, 11);
  CHECK_OK(rmmResourceDestroy(view));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemPoolDestroy(pool));  // the view did not destroy it

  cudaMemPool_t default_pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&default_pool, current_device()));
  CHECK_OK(rmmAsyncViewResourceCreate(&view, default_pool));
  use(view, 12);
  CHECK_OK(rmmResourceDestroy(view));

  rmmResource_t owner = nullptr;
  CHECK_OK(rmmAsyncResourceCreate(&owner, 0, SIZE_MAX));
  void *owned = nullptr;
  CHECK_OK(rmmAsyncResourceGetPool(owner, &owned));
  CHECK_OK(rmmAsyncViewResourceCreate(&view, owned));
  use(view, 13);
  CHECK_OK(rmmResourceDestroy(view));
  use(owner, 14);
  CHECK_OK(rmmResourceDestroy(owner));

  view = nullptr;
  CHECK_RMM(rmmAsyncViewResourceCreate(&view, nullptr), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(view == nullptr);
  std::printf("cuda_async_view: the program's pool, the default pool and a resource's pool; NULL refused\n");
}

static void managed_pool() {
  rmmResource_t resource = nullptr;
  if (!rmm_supports(RMM_CAPABILITY_MANAGED_MEMORY_POOLS)) {
    CHECK_RMM(rmmAsyncManagedResourceCreate(&resource), RMM_ERROR_NOT_SUPPORTED);
    std::printf("cuda_async_managed: refused (%s)\n", rmmGetLastErrorMessage());
    return;
  }
  CHECK_OK(rmmAsyncManagedResourceCreate(&resource));
  use(resource, 21);
  size_t const bytes = 1 << 20;
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, nullptr));
  CHECK(memory_type(ptr) == cudaMemoryTypeManaged);
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
  std::memset(ptr, 0x5a, bytes);  // the host writes managed memory
  CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, nullptr));
#if CUDART_VERSION >= 13000
  cudaMemPool_t expected = nullptr;
  cudaMemLocation location = {};
  location.type = cudaMemLocationTypeDevice;
  location.id = current_device();
  CUDA_CHECK(cudaMemGetDefaultMemPool(&expected, &location, cudaMemAllocationTypeManaged));
  void *pool = nullptr;
  CHECK_OK(rmmAsyncResourceGetPool(resource, &pool));
  CHECK(pool == static_cast<void *>(expected));
#endif
  CHECK_OK(rmmResourceDestroy(resource));
  std::printf("cuda_async_managed: managed memory from the default managed pool\n");
}

static void host_pool() {
  rmmResource_t resource = nullptr;
  if (!rmm_supports(RMM_CAPABILITY_HOST_MEMORY_POOLS)) {
    CHECK_RMM(rmmAsyncPinnedHostResourceCreate(&resource, 0, SIZE_MAX), RMM_ERROR_NOT_SUPPORTED);
    std::printf("cuda_async_pinned_host: refused (%s)\n", rmmGetLastErrorMessage());
    return;
  }
  CHECK_OK(rmmAsyncPinnedHostResourceCreate(&resource, 4 << 20, SIZE_MAX));
  use(resource, 31);
  size_t const bytes = 1 << 20;
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, nullptr));
  CHECK(memory_type(ptr) == cudaMemoryTypeHost);
  CUDA_CHECK(cudaStreamSynchronize(nullptr));
  std::memset(ptr, 0x5a, bytes);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, nullptr));
  CHECK_OK(rmmResourceDestroy(resource));
  std::printf("cuda_async_pinned_host: pinned host memory from a host pool\n");
}

static void hw_decompress() {
  rmmResource_t resource = nullptr;
  if (!rmm_supports(RMM_CAPABILITY_HW_DECOMPRESS)) {
    CHECK_RMM(rmmAsyncResourceCreateWithFlags(&resource, 0, SIZE_MAX, 0, RMM_ASYNC_HW_DECOMPRESS), RMM_ERROR_NOT_SUPPORTED);
    std::printf("hw_decompress: refused (%s)\n", rmmGetLastErrorMessage());
    return;
  }
  CHECK_OK(rmmAsyncResourceCreateWithFlags(&resource, 0, SIZE_MAX, 0, RMM_ASYNC_HW_DECOMPRESS));
  use(resource, 41);
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 4096, nullptr));
#if CUDA_VERSION >= 12080
  bool capable = false;
  CHECK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE,
                              reinterpret_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS);
  CHECK(capable);
#endif
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 4096, nullptr));
  CHECK_OK(rmmResourceDestroy(resource));
  std::printf("hw_decompress: a pool whose memory serves hardware decompression\n");
}

static void system_memory() {
  rmmResource_t resource = nullptr;
  size_t free_bytes = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  if (!rmm_supports(RMM_CAPABILITY_PAGEABLE_MEMORY_ACCESS)) {
    CHECK_RMM(rmmSystemResourceCreate(&resource), RMM_ERROR_NOT_SUPPORTED);
    CHECK_RMM(rmmSamHeadroomResourceCreate(&resource, 1 << 20), RMM_ERROR_NOT_SUPPORTED);
    CHECK(resource == nullptr);
    std::printf("system, sam_headroom: refused (%s)\n", rmmGetLastErrorMessage());
    return;
  }
  CHECK_OK(rmmSystemResourceCreate(&resource));
  use(resource, 51);
  CHECK_OK(rmmResourceDestroy(resource));
  CHECK_RMM(rmmSamHeadroomResourceCreate(&resource, total + 1), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmSamHeadroomResourceCreate(&resource, total));  // everything prefers the host
  use(resource, 52);
  CHECK_OK(rmmResourceDestroy(resource));
  CHECK_OK(rmmSamHeadroomResourceCreate(&resource, size_t(1) << 30));
  use(resource, 53);
  CHECK_OK(rmmResourceDestroy(resource));
  std::printf("system, sam_headroom: kernels on system memory\n");
}

// The driver does not check a cudaMemPool_t (a made-up value crashes in it, as in any CUDA
// call), so only what rmm-rs can tell is tried here: an rmmResource_t given for its pool.
static void resource_handle_for_a_pool() {
  rmmResource_t owner = nullptr, view = nullptr;
  CHECK_OK(rmmAsyncResourceCreate(&owner, 0, SIZE_MAX));
  CHECK_RMM(rmmAsyncViewResourceCreate(&view, owner), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(view == nullptr);
  CHECK_OK(rmmResourceDestroy(owner));
  std::printf("cuda_async_view: an rmmResource_t for a pool refused (%s)\n", rmmGetLastErrorMessage());
}

int main() {
  cuda_test_require_gpus(1);
  capabilities_are_truthful();
  view_over_pools_the_program_made();
  managed_pool();
  host_pool();
  hw_decompress();
  system_memory();
  resource_handle_for_a_pool();
  return rmm_test_finish("cuda_pool_resources");
}
