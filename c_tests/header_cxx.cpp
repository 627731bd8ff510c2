// rmm.h from C++17: extern "C" linkage, the macros, and the types compile and link.
#include "rmm.h"
#include "rmm.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(std::is_same<decltype(&rmmAlloc),
                           rmmError_t (*)(void **, size_t, cudaStream_t, const char *, unsigned int)>::value,
              "rmmAlloc keeps the legacy signature");
static_assert(std::is_pointer<rmmResource_t>::value, "handles are opaque pointers");
static_assert(std::is_pointer<cudaStream_t>::value, "cudaStream_t is CUDA's pointer type");
static_assert(RMM_SUCCESS == 0 && RMM_ERROR_IO == 6, "legacy error values");

namespace {
rmmError_t create_and_destroy() {
  rmmResource_t resource = nullptr;
  RMM_TRY(rmmCudaResourceCreate(&resource));
  RMM_TRY(rmmResourceDestroy(resource));
  return RMM_SUCCESS;
}
}  // namespace

int main() {
  const char *text = rmmGetErrorString(RMM_ERROR_OUT_OF_MEMORY);
  if (text == nullptr || std::strlen(text) == 0) return 1;
  // A NULL handle is refused with an error, never a crash.
  const char *name = nullptr;
  if (rmmResourceGetName(nullptr, &name) != RMM_ERROR_INVALID_HANDLE) return 1;
  rmmError_t status = create_and_destroy();
  if (status != RMM_SUCCESS) {
    std::fprintf(stderr, "create_and_destroy: %d: %s\n", static_cast<int>(status), rmmGetLastErrorMessage());
    return 1;
  }
  void *ptr = nullptr;
  if (rmmInitialize(nullptr) != RMM_SUCCESS) return 1;
  status = RMM_ALLOC(&ptr, 256, nullptr);
  if (status != RMM_SUCCESS || ptr == nullptr) return 1;
  if (RMM_FREE(ptr, nullptr) != RMM_SUCCESS) return 1;
  if (rmmFinalize() != RMM_SUCCESS) return 1;
  std::printf("PASS: header from C++17\n");
  return 0;
}
