/* The shim says why it did not serve an allocation: under RMM_ALLOC_CONF=pool:initial=64TiB
 * (more than any device holds) every cudaMalloc fails; the first failure is said on
 * stderr at the default log level, with rmm's reason, and the exit repeats it with the count
 * (ctest matches both lines). This program links librmm_preload.so, whose cudaMalloc it calls. */
#include "rmm_test.h"

int cudaMalloc(void **ptr, size_t size);

int main(void) {
  void *ptr = NULL;
  int i;
  for (i = 0; i < 3; ++i) {
    CHECK(cudaMalloc(&ptr, 1 << 20) != 0);
  }
  CHECK(ptr == NULL);
  return rmm_test_finish("preload_say_why");
}
