/* Sinks from C: a logging adaptor that hands its CSV lines to a callback (header first, on
 * the calling thread; lines from four threads; flush; the release once the adaptor is gone;
 * bad input), rmm-rs's diagnostics to a sink at the level set (rmmLogSetLevel), and the stack
 * a tracking adaptor keeps with an allocation. */
#define _POSIX_C_SOURCE 200112L
#include "rmm_test.h"

#include <pthread.h>
#include <string.h>

struct lines {
  pthread_mutex_t lock;
  size_t count, allocations, frees, released;
  char first[64];
};

static int take_line(const char *line, size_t length, void *user_data) {
  struct lines *lines = (struct lines *)user_data;
  CHECK(strlen(line) == length);
  pthread_mutex_lock(&lines->lock);
  if (lines->count == 0 && length < sizeof lines->first) memcpy(lines->first, line, length + 1);
  lines->count++;
  if (strstr(line, ",allocate,") != NULL) lines->allocations++;
  if (strstr(line, ",free,") != NULL) lines->frees++;
  pthread_mutex_unlock(&lines->lock);
  return 0;
}

static void release_lines(void *user_data) { ((struct lines *)user_data)->released++; }

static void *churn(void *arg) {
  rmmResource_t logging = (rmmResource_t)arg;
  int i;
  for (i = 0; i < 500; i++) {
    void *ptr = NULL;
    CHECK_OK(rmmResourceAllocate(logging, &ptr, 512, NULL));
    CHECK_OK(rmmResourceDeallocate(logging, ptr, 512, NULL));
  }
  return NULL;
}

static void check_logging_sink(rmmResource_t cuda) {
  struct lines lines;
  rmmResource_t logging = NULL, gone = NULL;
  pthread_t threads[4];
  int t;
  memset(&lines, 0, sizeof lines);
  pthread_mutex_init(&lines.lock, NULL);

  CHECK_OK(rmmLoggingAdaptorCreateWithSink(&logging, cuda, take_line, release_lines, &lines));
  CHECK(lines.count == 1);
  CHECK_STR(lines.first, "Thread,Time,Action,Pointer,Size,Stream");
  for (t = 0; t < 4; t++) CHECK(pthread_create(&threads[t], NULL, churn, logging) == 0);
  for (t = 0; t < 4; t++) CHECK(pthread_join(threads[t], NULL) == 0);
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  CHECK(lines.count == 1 + 4000 && lines.allocations == 2000 && lines.frees == 2000);
  CHECK(lines.released == 0);
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK(lines.released == 1);

  /* Bad input: refused, and the release is not called (user_data stays the caller's). */
  CHECK_RMM(rmmLoggingAdaptorCreateWithSink(&logging, cuda, NULL, release_lines, &lines), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLoggingAdaptorCreateWithSink(NULL, cuda, take_line, release_lines, &lines), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLoggingAdaptorCreateWithSink(&logging, NULL, take_line, release_lines, &lines), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmCudaResourceCreate(&gone));
  CHECK_OK(rmmResourceDestroy(gone));
  CHECK_RMM(rmmLoggingAdaptorCreateWithSink(&logging, gone, take_line, release_lines, &lines), RMM_ERROR_INVALID_HANDLE);
  CHECK(lines.released == 1);
  pthread_mutex_destroy(&lines.lock);
}

struct messages {
  size_t count;
  int last_level;
};

static void take_message(int level, const char *message, size_t length, void *user_data) {
  struct messages *messages = (struct messages *)user_data;
  CHECK(strlen(message) == length);
  if (strstr(message, "rmmLogGetLevel") != NULL) {
    messages->count++;
    messages->last_level = level;
  }
}

static void check_diagnostics_sink(void) {
  struct messages messages = {0, -1};
  uint64_t sink = 0;
  int level = -1, before = -1;
  CHECK_OK(rmmLogGetLevel(&before));
  CHECK_OK(rmmLogSinkAdd(&sink, take_message, &messages));
  CHECK_OK(rmmLogSetLevel(RMM_LOG_LEVEL_INFO));
  CHECK_RMM(rmmLogGetLevel(NULL), RMM_ERROR_INVALID_ARGUMENT); /* a failure, written at debug */
  CHECK(messages.count == 0);
  CHECK_OK(rmmLogSetLevel(RMM_LOG_LEVEL_DEBUG));
  CHECK_OK(rmmLogGetLevel(&level));
  CHECK(level == RMM_LOG_LEVEL_DEBUG);
  CHECK_RMM(rmmLogGetLevel(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(messages.count == 1 && messages.last_level == RMM_LOG_LEVEL_DEBUG);
  CHECK_OK(rmmLogSinkRemove(sink));
  CHECK_RMM(rmmLogGetLevel(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(messages.count == 1);
  CHECK_RMM(rmmLogSinkRemove(sink), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLogSinkAdd(&sink, NULL, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLogSetLevel(RMM_LOG_LEVEL_OFF + 1), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmLogSetLevel(before));
}

static void check_tracking_stack(rmmResource_t cuda) {
  rmmResource_t tracking = NULL;
  void *ptr = NULL;
  size_t length = 0;
  char *text;
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, cuda, true));
  CHECK_OK(rmmResourceAllocate(tracking, &ptr, 1024, NULL));
  CHECK_OK(rmmTrackingAdaptorGetStack(tracking, ptr, NULL, 0, &length));
  CHECK(length > 0);
  text = (char *)malloc(length + 1);
  CHECK(text != NULL);
  CHECK_OK(rmmTrackingAdaptorGetStack(tracking, ptr, text, length + 1, NULL));
  CHECK(strlen(text) == length);
  free(text);
  CHECK_RMM(rmmTrackingAdaptorGetStack(tracking, (char *)ptr + 256, NULL, 0, &length), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(tracking, ptr, 1024, NULL));
  CHECK_RMM(rmmTrackingAdaptorGetStack(tracking, ptr, NULL, 0, &length), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(tracking));
}

int main(void) {
  rmmResource_t cuda = NULL;
  (void)rmm_test_simulated();
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  check_logging_sink(cuda);
  check_diagnostics_sink();
  check_tracking_stack(cuda);
  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("log_sinks");
}
