/* A minimal downstream program: legacy API plus a resource handle. */
#include <rmm.h>
#include <rmm/rmm.h> /* legacy RMM's include path, installed beside rmm.h */
#include <stdio.h>

static rmmError_t run(void) {
  void *ptr = NULL;
  rmmResource_t resource = NULL;
  const char *name = NULL;
  RMM_TRY(rmmInitialize(NULL));
  RMM_TRY(RMM_ALLOC(&ptr, 1 << 20, 0));
  RMM_TRY(RMM_FREE(ptr, 0));
  RMM_TRY(rmmCudaResourceCreate(&resource));
  RMM_TRY(rmmResourceGetName(resource, &name));
  RMM_TRY(rmmResourceAllocate(resource, &ptr, 4096, 0));
  RMM_TRY(rmmResourceDeallocate(resource, ptr, 4096, 0));
  RMM_TRY(rmmResourceDestroy(resource));
  RMM_TRY(rmmFinalize());
  printf("consumer: allocated from a %s resource\n", name);
  return RMM_SUCCESS;
}

int main(void) {
  rmmError_t status = run();
  if (status != RMM_SUCCESS) {
    fprintf(stderr, "consumer: %s: %s\n", rmmGetErrorString(status), rmmGetLastErrorMessage());
    return 1;
  }
  return 0;
}
