/* A program written exactly like old RMM user code: rmmInitialize(NULL), the RMM_ALLOC /
 * RMM_REALLOC / RMM_FREE macros wrapped in RMM_TRY inside functions that return rmmError_t,
 * and errors propagated to the caller. It includes nothing but rmm.h and the C library. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmm.h"

#define N 4096

static int reached_after_failure = 0;

/* Allocates, grows, shrinks and frees a buffer: the legacy happy path. */
static rmmError_t use_buffer(cudaStream_t stream) {
  float *buffer = NULL;
  RMM_TRY(RMM_ALLOC(&buffer, N * sizeof(float), stream));
  if (buffer == NULL) return RMM_ERROR_UNKNOWN;
  RMM_TRY(RMM_REALLOC(&buffer, 2 * N * sizeof(float), stream));
  if (buffer == NULL) return RMM_ERROR_UNKNOWN;
  RMM_TRY(RMM_REALLOC(&buffer, N / 2 * sizeof(float), stream));
  RMM_TRY(RMM_FREE(buffer, stream));
  return RMM_SUCCESS;
}

/* RMM_TRY returns the first failure: the code after it must not run. */
static rmmError_t allocate_too_much(cudaStream_t stream) {
  char *huge = NULL;
  RMM_TRY(RMM_ALLOC(&huge, SIZE_MAX / 2, stream));
  reached_after_failure = 1;
  RMM_TRY(RMM_FREE(huge, stream));
  return RMM_SUCCESS;
}

static rmmError_t free_twice(cudaStream_t stream) {
  int *data = NULL;
  RMM_TRY(RMM_ALLOC(&data, 100 * sizeof(int), stream));
  RMM_TRY(RMM_FREE(data, stream));
  RMM_TRY(RMM_FREE(data, stream));
  reached_after_failure = 1;
  return RMM_SUCCESS;
}

/* Nested propagation: an error deep down comes out unchanged. */
static rmmError_t outer(cudaStream_t stream) {
  RMM_TRY(use_buffer(stream));
  RMM_TRY(allocate_too_much(stream));
  reached_after_failure = 1;
  return RMM_SUCCESS;
}

static int fail(const char *what, rmmError_t status) {
  fprintf(stderr, "FAILED: %s: %d (%s): %s\n", what, (int)status, rmmGetErrorString(status),
          rmmGetLastErrorMessage());
  return 1;
}

int main(void) {
  rmmError_t status;
  double *values = NULL;
  size_t free_bytes = 0, total_bytes = 0;

  status = rmmInitialize(NULL);
  if (status != RMM_SUCCESS) return fail("rmmInitialize", status);

  status = use_buffer(0);
  if (status != RMM_SUCCESS) return fail("use_buffer", status);

  status = allocate_too_much(0);
  if (status != RMM_ERROR_OUT_OF_MEMORY) return fail("allocate_too_much", status);
  if (reached_after_failure) return fail("RMM_TRY did not return on failure", status);

  status = free_twice(0);
  if (status != RMM_ERROR_INVALID_ARGUMENT) return fail("free_twice", status);
  if (reached_after_failure) return fail("RMM_TRY did not return on failure", status);

  status = outer(0);
  if (status != RMM_ERROR_OUT_OF_MEMORY) return fail("outer", status);
  if (reached_after_failure) return fail("RMM_TRY did not return on failure", status);
  if (strlen(rmmGetLastErrorMessage()) == 0) return fail("no message after a failure", status);

  /* The process keeps working after the failures. */
  status = RMM_ALLOC(&values, 1000 * sizeof(double), 0);
  if (status != RMM_SUCCESS || values == NULL) return fail("RMM_ALLOC after failures", status);
  status = rmmGetInfo(&free_bytes, &total_bytes, 0);
  if (status != RMM_SUCCESS) return fail("rmmGetInfo", status);
  if (total_bytes == 0 || free_bytes > total_bytes) return fail("rmmGetInfo values", status);
  status = RMM_FREE(values, 0);
  if (status != RMM_SUCCESS) return fail("RMM_FREE", status);

  status = rmmFinalize();
  if (status != RMM_SUCCESS) return fail("rmmFinalize", status);

  printf("PASS: legacy program\n");
  return 0;
}
