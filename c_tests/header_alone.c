/* rmm.h compiles on its own, as the only include, and links. */
#include "rmm.h"

int main(void) {
  rmmOptions_t options;
  rmmResource_t handle = (rmmResource_t)0;
  cudaStream_t stream = (cudaStream_t)0;
  rmmError_t (*alloc)(void **, size_t, cudaStream_t, const char *, unsigned int) = rmmAlloc;
  const char *text = rmmGetErrorString(RMM_SUCCESS);
  options.allocation_mode = CudaDefaultAllocation | PoolAllocation | CudaManagedMemory;
  options.devices.count = RMM_MAX_DEVICES;
  options.devices.ids[RMM_MAX_DEVICES - 1] = 0;
  (void)stream;
  (void)handle;
  if (alloc == 0 || text == 0 || text[0] == '\0') return 1;
  if (sizeof options.devices.ids / sizeof options.devices.ids[0] != RMM_MAX_DEVICES) return 1;
  if (options.allocation_mode != 3u) return 1;
  return rmmResourceDestroy(handle) == RMM_SUCCESS ? 0 : 1;
}
