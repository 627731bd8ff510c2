/* Before rmm serves the program's first cudaMalloc, the shim initializes the CUDA runtime
 * (the runtime's own cudaFree(NULL)), as the program's cudaMalloc would have, so a program that
 * counts on its first cudaMalloc having made a context current keeps working. Built twice: as a
 * stand-in runtime (RMM_TEST_FAKE_RUNTIME: a cudaFree that counts NULL frees, linked after the
 * shim, so the shim's RTLD_NEXT lookup finds it) and as the program. */
#include <stddef.h>
#include <stdio.h>

#ifdef RMM_TEST_FAKE_RUNTIME
static int null_frees;

int cudaFree(void *ptr) {
  if (ptr == NULL) {
    ++null_frees;
    return 0;
  }
  return 1; /* cudaErrorInvalidValue: the stand-in allocates nothing */
}

int fake_runtime_null_frees(void) { return null_frees; }
#else
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);
int fake_runtime_null_frees(void);

int main(void) {
  void *first = NULL, *second = NULL;
  int failures = 0;
  if (fake_runtime_null_frees() != 0) ++failures;
  if (cudaMalloc(&first, 1000) != 0 || first == NULL) ++failures;
  if (fake_runtime_null_frees() != 1) {
    fprintf(stderr, "FAILED: the runtime was initialized %d times before the first allocation\n", fake_runtime_null_frees());
    ++failures;
  }
  if (cudaMalloc(&second, 1000) != 0 || fake_runtime_null_frees() != 1) ++failures;
  if (cudaFree(first) != 0 || cudaFree(second) != 0) ++failures; /* rmm's: freed by rmm */
  if (failures != 0) {
    fprintf(stderr, "FAILED: %d check(s)\n", failures);
    return 1;
  }
  printf("PASS: the runtime was initialized once, before the first allocation\n");
  return 0;
}
#endif
