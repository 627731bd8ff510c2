// Kernels write and read memory from each resource (cuda, managed, cuda_async, pinned host)
// through rmmResourceAllocate, on the default stream, a cudaStreamCreate stream and an
// rmmStreamCreate stream.
#include "cuda_test.cuh"

#include <cstring>

enum Kind { CUDA, MANAGED, ASYNC, PINNED };

struct KindInfo {
  Kind kind;
  const char *name;
  cudaMemoryType type;
  bool host_accessible;
};

static const KindInfo kinds[] = {
    {CUDA, "cuda", cudaMemoryTypeDevice, false},
    {MANAGED, "managed", cudaMemoryTypeManaged, true},
    {ASYNC, "cuda_async", cudaMemoryTypeDevice, false},
    {PINNED, "pinned_host", cudaMemoryTypeHost, true},
};

static bool create(Kind kind, rmmResource_t *resource) {
  rmmError_t status = RMM_ERROR_UNKNOWN;
  switch (kind) {
    case CUDA: status = rmmCudaResourceCreate(resource); break;
    case MANAGED: status = rmmManagedResourceCreate(resource); break;
    case ASYNC: status = rmmAsyncResourceCreate(resource, size_t(16) << 20, SIZE_MAX); break;
    case PINNED: status = rmmPinnedHostResourceCreate(resource); break;
  }
  if (kind == ASYNC && status == RMM_ERROR_NOT_SUPPORTED) {
    std::printf("note: cuda_async not supported here: %s\n", rmmGetLastErrorMessage());
    return false;
  }
  CHECK_RMM(status, RMM_SUCCESS);
  return true;
}

// Allocate on `stream`, kernels write and read on `stream`, deallocate on `stream`.
static void use_on_stream(const KindInfo &info, rmmResource_t resource, cudaStream_t stream,
                          unsigned seed) {
  const size_t bytes = size_t(4) << 20;
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, stream));
  CHECK(ptr != nullptr);
  CHECK(rmm_test_aligned(ptr, 256));
  write_and_verify(ptr, bytes, seed, stream);
  if (info.host_accessible) {
    // The host reads what the kernel wrote, and a kernel reads what the host wrote.
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const unsigned *words = static_cast<const unsigned *>(ptr);
    for (size_t i = 0; i < bytes / sizeof(unsigned); i += 997) CHECK(words[i] == pattern(i, seed));
    unsigned *writable = static_cast<unsigned *>(ptr);
    for (size_t i = 0; i < bytes / sizeof(unsigned); ++i) writable[i] = pattern(i, seed + 1);
    CHECK(gpu_mismatches(ptr, bytes, seed + 1, stream) == 0);
  }
  CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, stream));

  // Stream-ordered reuse: allocate again on the same stream right away and use it.
  CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, stream));
  gpu_fill(ptr, bytes, seed + 2, stream);
  CHECK(gpu_mismatches(ptr, bytes, seed + 2, stream) == 0);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

static void check_kind(const KindInfo &info) {
  rmmResource_t resource = nullptr;
  if (!create(info.kind, &resource)) return;
  std::printf("resource %s\n", info.name);

  const char *name = nullptr;
  int device = -1, current = -1;
  CHECK_OK(rmmResourceGetName(resource, &name));
  CHECK_STR(name, info.name);
  CUDA_CHECK(cudaGetDevice(&current));
  CHECK_OK(rmmResourceGetDevice(resource, &device));
  CHECK(device == current);

  // The CUDA runtime sees ordinary memory of the expected kind.
  void *ptr = nullptr;
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 1 << 20, 0));
  CUDA_CHECK(cudaDeviceSynchronize());
  CHECK(memory_type(ptr) == info.type);
  write_and_verify(ptr, 1 << 20, 30, 0);
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 1 << 20, 0));

  use_on_stream(info, resource, 0, 40);

  cudaStream_t cuda_stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&cuda_stream));
  use_on_stream(info, resource, cuda_stream, 50);
  CUDA_CHECK(cudaStreamDestroy(cuda_stream));

  cudaStream_t rmm_stream = nullptr;
  CHECK_OK(rmmStreamCreate(&rmm_stream));
  use_on_stream(info, resource, rmm_stream, 60);
  CHECK_OK(rmmStreamDestroy(rmm_stream));

  // Destroyed while an allocation lives: the memory stays valid for kernels, rmmFree returns it.
  CHECK_OK(rmmResourceAllocate(resource, &ptr, 1 << 20, 0));
  CHECK_OK(rmmResourceDestroy(resource));
  write_and_verify(ptr, 1 << 20, 70, 0);
  CHECK_OK(rmmFree(ptr, 0, __FILE__, __LINE__));
  CUDA_CHECK(cudaDeviceSynchronize());
}

// The current device's resource, set to each kind, serves rmmAlloc used by kernels.
static void check_as_current_resource(const KindInfo &info) {
  rmmResource_t resource = nullptr, previous = nullptr;
  if (!create(info.kind, &resource)) return;
  CHECK_OK(rmmSetCurrentDeviceResource(resource, &previous));
  void *ptr = nullptr;
  CHECK_OK(RMM_ALLOC(&ptr, 3 << 20, 0));
  write_and_verify(ptr, 3 << 20, 80, 0);
  CHECK_OK(RMM_REALLOC(&ptr, 6 << 20, 0));
  CHECK(gpu_mismatches(ptr, 3 << 20, 80, 0) == 0);
  CHECK(host_copy_matches(ptr, 3 << 20, 80));
  CHECK_OK(rmmResourceDeallocate(resource, ptr, 6 << 20, 0));
  CHECK_OK(rmmSetCurrentDeviceResource(previous, nullptr));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(resource));
  CUDA_CHECK(cudaDeviceSynchronize());
}

int main() {
  cuda_test_require_gpus(1);
  CHECK(!rmm_test_simulated());
  CUDA_CHECK(cudaSetDevice(0));
  for (const KindInfo &info : kinds) check_kind(info);
  for (const KindInfo &info : kinds) check_as_current_resource(info);
  return rmm_test_finish("cuda_resources");
}
