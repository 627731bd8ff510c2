/* rmmGetErrorString and rmmGetErrorName for every code and unknown codes; rmmGetLastErrorMessage per thread. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "rmm_test.h"

#define CODE_COUNT 10

static const rmmError_t all_codes[CODE_COUNT] = {
    RMM_SUCCESS,
    RMM_ERROR_CUDA_ERROR,
    RMM_ERROR_INVALID_ARGUMENT,
    RMM_ERROR_NOT_INITIALIZED,
    RMM_ERROR_OUT_OF_MEMORY,
    RMM_ERROR_UNKNOWN,
    RMM_ERROR_IO,
    RMM_ERROR_NOT_SUPPORTED,
    RMM_ERROR_INVALID_HANDLE,
    RMM_ERROR_ALREADY_INITIALIZED,
};

static void check_error_strings(void) {
  const int32_t unknown[6] = {-1, CODE_COUNT, 11, 1000, INT32_MIN, INT32_MAX};
  const char *known[CODE_COUNT];
  int i, j;

  /* The values legacy RMM had, and the appended ones. */
  CHECK(RMM_SUCCESS == 0);
  CHECK(RMM_ERROR_CUDA_ERROR == 1);
  CHECK(RMM_ERROR_INVALID_ARGUMENT == 2);
  CHECK(RMM_ERROR_NOT_INITIALIZED == 3);
  CHECK(RMM_ERROR_OUT_OF_MEMORY == 4);
  CHECK(RMM_ERROR_UNKNOWN == 5);
  CHECK(RMM_ERROR_IO == 6);
  CHECK(RMM_ERROR_NOT_SUPPORTED == 7);
  CHECK(RMM_ERROR_INVALID_HANDLE == 8);
  CHECK(RMM_ERROR_ALREADY_INITIALIZED == 9);

  for (i = 0; i < CODE_COUNT; ++i) {
    known[i] = rmmGetErrorString(all_codes[i]);
    CHECK(known[i] != NULL);
    CHECK(strlen(known[i]) > 0);
    /* Static: the same text every time. */
    CHECK_STR(rmmGetErrorString(all_codes[i]), known[i]);
    for (j = 0; j < i; ++j) CHECK(strcmp(known[i], known[j]) != 0);
  }
  /* The name is the enumerator's spelling, and the description starts with it. */
  CHECK_STR(rmmGetErrorName(RMM_ERROR_OUT_OF_MEMORY), "RMM_ERROR_OUT_OF_MEMORY");
  CHECK_STR(rmmGetErrorName(RMM_SUCCESS), "RMM_SUCCESS");
  for (i = 0; i < CODE_COUNT; ++i) {
    const char *name = rmmGetErrorName(all_codes[i]);
    CHECK(strncmp(known[i], name, strlen(name)) == 0);
    CHECK(known[i][strlen(name)] == ':');
  }
  for (i = 0; i < 6; ++i) {
    const char *text = rmmGetErrorString(unknown[i]);
    CHECK_STR(rmmGetErrorName(unknown[i]), "RMM_ERROR_UNRECOGNIZED");
    CHECK(text != NULL);
    CHECK(strlen(text) > 0);
    for (j = 0; j < CODE_COUNT; ++j) CHECK(strcmp(text, known[j]) != 0);
  }
}

struct thread_result {
  int empty_at_start;
  int message_after_failure;
  rmmError_t status;
};

static void *fresh_thread(void *arg) {
  struct thread_result *result = (struct thread_result *)arg;
  const char *message = rmmGetLastErrorMessage();
  int count = 0;
  result->empty_at_start = message != NULL && message[0] == '\0';
  result->status = rmmGetDeviceCount(NULL);
  message = rmmGetLastErrorMessage();
  result->message_after_failure = message != NULL && message[0] != '\0';
  if (rmmGetDeviceCount(&count) != RMM_SUCCESS) result->status = RMM_ERROR_UNKNOWN;
  return NULL;
}

static void check_last_error_messages(void) {
  const char *message = rmmGetLastErrorMessage();
  char saved[512];
  struct thread_result result;
  pthread_t thread;
  rmmResource_t handle = NULL;

  /* Nothing has failed on this thread yet. */
  CHECK(message != NULL);
  CHECK_STR(message, "");

  /* Each kind of failure leaves a message (CHECK_RMM checks it is non-empty too). */
  CHECK_RMM(rmmAlloc(NULL, 16, 0, __FILE__, __LINE__), RMM_ERROR_NOT_INITIALIZED);
  CHECK(strlen(rmmGetLastErrorMessage()) > 0);
  CHECK_RMM(rmmResourceDestroy((rmmResource_t)(uintptr_t)0x1234), RMM_ERROR_INVALID_HANDLE);
  CHECK(strlen(rmmGetLastErrorMessage()) > 0);
  CHECK_RMM(rmmFinalize(), RMM_ERROR_NOT_INITIALIZED);
  CHECK(strlen(rmmGetLastErrorMessage()) > 0);
  CHECK_OK(rmmInitialize(NULL)); /* the legacy calls below need it */
  CHECK_RMM(rmmAlloc(NULL, 16, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strlen(rmmGetLastErrorMessage()) > 0);
  {
    void *ptr = NULL;
    CHECK_RMM(rmmAlloc(&ptr, SIZE_MAX, 0, __FILE__, __LINE__), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(strlen(rmmGetLastErrorMessage()) > 0);
  }

  /* The message stays until the thread's next failing call, and is per thread: a new
   * thread starts with "" and its failures do not touch this thread's message. */
  CHECK_RMM(rmmSetDevice(-1), RMM_ERROR_INVALID_ARGUMENT);
  strncpy(saved, rmmGetLastErrorMessage(), sizeof saved - 1);
  saved[sizeof saved - 1] = '\0';
  CHECK(saved[0] != '\0');
  memset(&result, 0, sizeof result);
  CHECK(pthread_create(&thread, NULL, fresh_thread, &result) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(result.empty_at_start);
  CHECK(result.status == RMM_ERROR_INVALID_ARGUMENT);
  CHECK(result.message_after_failure);
  CHECK_STR(rmmGetLastErrorMessage(), saved);

  /* A successful call is not a failing call: the message may stay, but is never NULL. */
  CHECK_OK(rmmCudaResourceCreate(&handle));
  CHECK(rmmGetLastErrorMessage() != NULL);
  CHECK_OK(rmmResourceDestroy(handle));
}

int main(void) {
  check_last_error_messages();
  check_error_strings();
  return rmm_test_finish("errors");
}
