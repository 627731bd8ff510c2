/* A linked program that never calls rmmConfigure gets the stack RMM_ALLOC_CONF names at its
 * first use of a device, in either form (ctest runs it with each), and RMM's plain cuda
 * resource without it; a spec that does not parse is an error at that first use. */
#define _POSIX_C_SOURCE 200809L
#include "rmm_test.h"

#define MIB ((size_t)1 << 20)

int main(void) {
  const char *conf = getenv("RMM_ALLOC_CONF");
  rmmResource_t current = NULL;
  const char *name = NULL;
  size_t bytes = 0;
  void *a = NULL;
  char *text;

  if (conf == NULL || conf[0] == '\0') {
    /* The default: RMM's cuda_memory_resource, and legacy calls wait for rmmInitialize. */
    CHECK_OK(rmmGetCurrentDeviceResource(&current));
    CHECK_OK(rmmResourceGetName(current, &name));
    CHECK_STR(name, "cuda");
    CHECK_RMM(RMM_ALLOC(&a, 1000, 0), RMM_ERROR_NOT_INITIALIZED);
    CHECK_OK(rmmResourceDestroy(current));
    return rmm_test_finish("alloc_conf (unset)");
  }
  if (strstr(conf, "slab") != NULL) {
    CHECK_RMM(rmmGetCurrentDeviceResource(&current), RMM_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(rmmGetLastErrorMessage(), "RMM_ALLOC_CONF: resource spec, at column ") != NULL);
    CHECK(strstr(rmmGetLastErrorMessage(), "(\"slab\"): unknown layer") != NULL);
    CHECK_RMM(RMM_ALLOC(&a, 1000, 0), RMM_ERROR_INVALID_ARGUMENT); /* and again: no silent default */
    return rmm_test_finish("alloc_conf (bad)");
  }

  /* Both forms say: a report of statistics over tracking over a pool of 4 MiB. */
  CHECK_OK(rmmGetCurrentDeviceResource(&current));
  CHECK_OK(rmmResourceGetName(current, &name));
  CHECK_STR(name, "statistics");
  CHECK_OK(rmmPoolResourceGetSize(current, &bytes));
  CHECK(bytes == 4 * MIB);
  CHECK_OK(RMM_ALLOC(&a, 3 * MIB, 0)); /* the environment configured rmm: no rmmInitialize */
  text = rmm_test_report();
  CHECK(strstr(text, "device 0: pool resource, 4.0 MiB reserved from the device") != NULL);
  CHECK(strstr(text, "1 allocations, 3.0 MiB in all") != NULL);
  CHECK(strstr(text, "1 allocation(s), 3145728 bytes, outstanding") != NULL);
  free(text);
  CHECK_OK(RMM_FREE(a, 0));
  CHECK_OK(rmmResourceRelease(current, &bytes));
  CHECK_OK(rmmResourceDestroy(current));

  /* Device 1 gets the same stack at its own first use. */
  rmm_test_require_devices(2);
  CHECK_OK(rmmGetPerDeviceResource(1, &current));
  CHECK_OK(rmmResourceGetName(current, &name));
  CHECK_STR(name, "statistics");
  CHECK_OK(rmmResourceRelease(current, &bytes));
  CHECK_OK(rmmResourceDestroy(current));
  text = rmm_test_report();
  CHECK(strstr(text, "device 1: pool resource, ") != NULL);
  free(text);
  return rmm_test_finish("alloc_conf");
}
