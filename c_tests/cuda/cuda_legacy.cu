// Kernels write and read memory from the legacy API: rmmAlloc after rmmInitialize(NULL),
// rmmRealloc (contents preserved, checked with cudaMemcpy), allocations on streams made with
// cudaStreamCreate and with rmmStreamCreate.
#include "cuda_test.cuh"

static void check_alloc_and_realloc() {
  const size_t mib = size_t(1) << 20;
  void *ptr = nullptr;
  ptrdiff_t offset = -1;
  int device = -1;

  CHECK_OK(RMM_ALLOC(&ptr, 4 * mib, 0));
  CHECK(rmm_test_aligned(ptr, 256));
  CHECK(memory_type(ptr, &device) == cudaMemoryTypeDevice);
  CHECK(device == 0);
  write_and_verify(ptr, 4 * mib, 1, 0);

  // rmmGetAllocationOffset on real device memory.
  CHECK_OK(rmmGetAllocationOffset(&offset, ptr, 0));
  CHECK(offset == 0);
  CHECK_OK(rmmGetAllocationOffset(&offset, static_cast<char *>(ptr) + 4096, 0));
  CHECK(offset == 4096);

  // Grow: the first 4 MiB are preserved (read by a kernel and by cudaMemcpy).
  CHECK_OK(RMM_REALLOC(&ptr, 16 * mib, 0));
  CHECK(ptr != nullptr);
  CHECK(gpu_mismatches(ptr, 4 * mib, 1, 0) == 0);
  CHECK(host_copy_matches(ptr, 4 * mib, 1));
  write_and_verify(ptr, 16 * mib, 2, 0);

  // Shrink: the first 1 MiB stays.
  CHECK_OK(rmmRealloc(&ptr, mib, 0, __FILE__, __LINE__));
  CHECK(gpu_mismatches(ptr, mib, 2, 0) == 0);
  CHECK(host_copy_matches(ptr, mib, 2));

  // Failure leaves the memory as it was.
  void *same = ptr;
  CHECK_RMM(RMM_REALLOC(&ptr, SIZE_MAX / 2, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(ptr == same);
  CHECK(host_copy_matches(ptr, mib, 2));
  CHECK_OK(RMM_FREE(ptr, 0));

  // Odd sizes are fine too.
  CHECK_OK(RMM_ALLOC(&ptr, 1000 * sizeof(unsigned) + 3, 0));
  write_and_verify(ptr, 1000 * sizeof(unsigned), 3, 0);
  CHECK_OK(RMM_FREE(ptr, 0));
}

// rmmGetInfo agrees with cudaMemGetInfo on the total.
static void check_info() {
  size_t free_rmm = 0, total_rmm = 0, free_cuda = 0, total_cuda = 0;
  CHECK_OK(rmmGetInfo(&free_rmm, &total_rmm, 0));
  CUDA_CHECK(cudaMemGetInfo(&free_cuda, &total_cuda));
  CHECK(total_rmm == total_cuda);
  CHECK(free_rmm <= total_rmm);
}

// A pointer from cudaMalloc is not rmm's to free.
static void check_foreign_pointer() {
  void *foreign = nullptr;
  CUDA_CHECK(cudaMalloc(&foreign, 4096));
  CHECK_RMM(RMM_FREE(foreign, 0), RMM_ERROR_INVALID_ARGUMENT);
  CUDA_CHECK(cudaFree(foreign));
}

// Allocations in the order of a stream, used by kernels on that stream.
static void check_stream(cudaStream_t stream, unsigned seed) {
  const size_t bytes = size_t(8) << 20;
  void *a = nullptr, *b = nullptr;
  CHECK_OK(rmmAlloc(&a, bytes, stream, __FILE__, __LINE__));
  CHECK_OK(RMM_ALLOC(&b, bytes, stream));
  gpu_fill(a, bytes, seed, stream);
  CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
  CHECK(gpu_mismatches(b, bytes, seed, stream) == 0);
  CHECK_OK(RMM_REALLOC(&b, 2 * bytes, stream));
  CHECK(gpu_mismatches(b, bytes, seed, stream) == 0);
  CHECK_OK(rmmFree(a, stream, __FILE__, __LINE__));
  CHECK_OK(RMM_FREE(b, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

int main() {
  cuda_test_require_gpus(1);
  CHECK(!rmm_test_simulated());
  CUDA_CHECK(cudaSetDevice(0));

  CHECK_OK(rmmInitialize(nullptr));
  rmmOptions_t options;
  CHECK(rmmIsInitialized(&options));
  CHECK(options.devices.count == 1 && options.devices.ids[0] == 0);

  check_alloc_and_realloc();
  check_info();
  check_foreign_pointer();

  // A stream from the CUDA runtime.
  cudaStream_t cuda_stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&cuda_stream));
  check_stream(cuda_stream, 10);
  CHECK_OK(rmmStreamSynchronize(cuda_stream));
  CUDA_CHECK(cudaStreamDestroy(cuda_stream));

  // A stream from rmm is an ordinary cudaStream_t for the runtime.
  cudaStream_t rmm_stream = nullptr;
  CHECK_OK(rmmStreamCreate(&rmm_stream));
  check_stream(rmm_stream, 11);
  CUDA_CHECK(cudaStreamQuery(rmm_stream));
  CHECK_OK(rmmStreamDestroy(rmm_stream));

  // The per-thread default stream.
  check_stream(cudaStreamPerThread, 12);

  CHECK_OK(rmmFinalize());

  // Managed memory through rmmInitialize: kernels and the host both use it.
  rmmOptions_t managed;
  std::memset(&managed, 0, sizeof managed);
  managed.allocation_mode = CudaManagedMemory;
  CHECK_OK(rmmInitialize(&managed));
  void *ptr = nullptr;
  CHECK_OK(RMM_ALLOC(&ptr, size_t(1) << 20, 0));
  CHECK(memory_type(ptr) == cudaMemoryTypeManaged);
  write_and_verify(ptr, size_t(1) << 20, 20, 0);
  CUDA_CHECK(cudaDeviceSynchronize());
  const unsigned *words = static_cast<const unsigned *>(ptr);
  for (size_t i = 0; i < 1024; ++i) CHECK(words[i] == pattern(i, 20));
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmFinalize());

  CUDA_CHECK(cudaDeviceSynchronize());
  return rmm_test_finish("cuda_legacy");
}
