/* The shim says why it did not serve an allocation: under RMM_ALLOC_CONF=pool:initial=64TiB
 * (more than any device holds) every cudaMalloc fails; the first failure is said on
 * stderr at the default log level, with rmm's reason, and the exit repeats it with the count
 * (ctest matches both lines). With the argument "no-driver" it runs where there is no driver
 * and no simulator, and checks only the calls' results. This program links librmm_preload.so,
 * whose cudaMalloc it calls. */
#include <string.h>

#include "rmm_test.h"

int cudaMalloc(void **ptr, size_t size);

int main(int argc, char **argv) {
  void *ptr = NULL;
  int i;
  for (i = 0; i < 3; ++i) {
    CHECK(cudaMalloc(&ptr, 1 << 20) != 0);
  }
  CHECK(ptr == NULL);
  if (argc > 1 && strcmp(argv[1], "no-driver") == 0) {
    printf("PASS: preload_say_why without a driver\n");
    return 0;
  }
  return rmm_test_finish("preload_say_why");
}
