/* Legacy RMM source compiles and behaves as legacy RMM did: <rmm/rmm.h> and <rmm/rmm_api.h>
 * (each twice), the positional rmmOptions_t initializer in legacy field order, size 0 before
 * the pointer check, and the calls refused before rmmInitialize and after rmmFinalize. */
#include <rmm/rmm.h>
#include <rmm/rmm_api.h>
#include <rmm/rmm.h>
#include <rmm/rmm_api.h>

#include "rmm_test.h"

int main(void) {
  void *ptr = NULL;
  size_t free_bytes = 0, total_bytes = 0;
  rmmOptions_t in_force;
  /* Legacy code filled the options by position and left the rest to zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
  rmmOptions_t options = {PoolAllocation, 8 << 20, true};
#pragma GCC diagnostic pop

  CHECK_RMM(RMM_ALLOC(&ptr, 256, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(RMM_ALLOC((void **)NULL, 0, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(RMM_FREE(NULL, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(rmmGetInfo(&free_bytes, &total_bytes, 0), RMM_ERROR_NOT_INITIALIZED);

  CHECK(options.maximum_pool_size == 0 && options.devices.count == 0);
  CHECK_OK(rmmInitialize(&options));
  CHECK(rmmIsInitialized(&in_force));
  CHECK(in_force.allocation_mode == PoolAllocation);
  CHECK(in_force.initial_pool_size == (8 << 20));
  CHECK(in_force.enable_logging == true);
  CHECK(in_force.maximum_pool_size == 0);
  {
    rmmResource_t resource = NULL;
    size_t pool_size = 0;
    CHECK_OK(rmmGetCurrentDeviceResource(&resource));
    CHECK_OK(rmmPoolResourceGetSize(resource, &pool_size));
    CHECK(pool_size == (8 << 20)); /* the initial size, not a 1-byte maximum */
    CHECK_OK(rmmResourceDestroy(resource));
  }
  CHECK_OK(RMM_ALLOC((void **)NULL, 0, 0));
  CHECK_OK(RMM_REALLOC((void **)NULL, 0, 0));
  ptr = (void *)&options;
  CHECK_OK(RMM_ALLOC(&ptr, 0, 0));
  CHECK(ptr == NULL);
  CHECK_OK(RMM_ALLOC(&ptr, 16 << 20, 0)); /* beyond the initial size: the pool grows */
  CHECK_OK(RMM_FREE(ptr, 0));
  CHECK_OK(rmmGetInfo(&free_bytes, &total_bytes, 0));
  CHECK(total_bytes > 0 && free_bytes <= total_bytes);
  CHECK(rmmLogSize() > 0); /* enable_logging, the third field, took effect */
  CHECK_OK(rmmFinalize());

  CHECK_RMM(RMM_ALLOC(&ptr, 256, 0), RMM_ERROR_NOT_INITIALIZED);
  CHECK_RMM(RMM_FREE(NULL, 0), RMM_ERROR_NOT_INITIALIZED);
  return rmm_test_finish("legacy source");
}
