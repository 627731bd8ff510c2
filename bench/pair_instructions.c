// Allocate+free pairs of 256 bytes through a pool, for counting the instructions one pair
// costs (scripts/pair-instructions.sh runs it under callgrind on a simulated device):
//   pair_instructions resource N [created]   rmmResourceAllocate + rmmResourceDeallocate on the pool
//   pair_instructions legacy N [created]     RMM_ALLOC + RMM_FREE with the pool as the device's resource
// on the NULL stream, or with `created` on a stream from rmmStreamCreate.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmm.h"

static int fail(const char* what) {
  fprintf(stderr, "pair_instructions: %s: %s\n", what, rmmGetLastErrorMessage());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (strcmp(argv[1], "resource") != 0 && strcmp(argv[1], "legacy") != 0)) {
    fprintf(stderr, "usage: %s resource|legacy PAIRS [created]\n", argv[0]);
    return 2;
  }
  cudaStream_t stream = NULL;
  if (argc == 4 && rmmStreamCreate(&stream) != RMM_SUCCESS) return fail("rmmStreamCreate");
  int legacy = strcmp(argv[1], "legacy") == 0;
  long pairs = atol(argv[2]);
  rmmResource_t cuda, pool;
  if (rmmCudaResourceCreate(&cuda) != RMM_SUCCESS) return fail("rmmCudaResourceCreate");
  if (rmmPoolResourceCreate(&pool, cuda, 64 << 20, 0) != RMM_SUCCESS) return fail("rmmPoolResourceCreate");
  if (legacy && rmmSetCurrentDeviceResource(pool, NULL) != RMM_SUCCESS) return fail("rmmSetCurrentDeviceResource");
  void* p = NULL;
  for (long i = 0; i < pairs; ++i) {
    if (legacy) {
      if (RMM_ALLOC(&p, 256, stream) != RMM_SUCCESS) return fail("RMM_ALLOC");
      if (RMM_FREE(p, stream) != RMM_SUCCESS) return fail("RMM_FREE");
    } else {
      if (rmmResourceAllocate(pool, &p, 256, stream) != RMM_SUCCESS) return fail("rmmResourceAllocate");
      if (rmmResourceDeallocate(pool, p, 256, stream) != RMM_SUCCESS) return fail("rmmResourceDeallocate");
    }
  }
  return 0;
}
