/* Adaptors over an upstream handle: statistics (with nested scopes and threads), logging,
 * limiting, tracking, failure callback, aligned, prefetch. Frees through rmmFree, which names
 * no resource, must still pass through the adaptor that made the allocation, also when the
 * adaptor sits over a pool. Device memory is never dereferenced: only addresses are checked. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>

#include "rmm_test_files.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static int stack_object = 3;

/* --- helpers ------------------------------------------------------------------------------ */

static const char *name_of(rmmResource_t resource) {
  const char *name = NULL;
  CHECK_OK(rmmResourceGetName(resource, &name));
  return name;
}

static bool ends_with(const char *text, const char *suffix) {
  size_t a = strlen(text), b = strlen(suffix);
  return a >= b && strcmp(text + a - b, suffix) == 0;
}

static void format_hex(char *out, size_t size, const void *ptr) {
  snprintf(out, size, "0x%" PRIxPTR, (uintptr_t)ptr);
}

/* Every adaptor's Create refuses a NULL out-pointer and a NULL or destroyed upstream, and
 * leaves `*resource` alone. */
static bool never_called(size_t bytes, void *arg) {
  (void)bytes;
  (void)arg;
  CHECK(!"the failure callback must not be called here");
  return false;
}

static void check_create_errors(void) {
  rmmResource_t out = (rmmResource_t)&stack_object, dead = NULL, cuda = NULL;
  rmmResource_t bad[3];
  char never[128];
  int i;
  snprintf(never, sizeof never, "/tmp/rmm-test-never-%ld.csv", (long)getpid());
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmCudaResourceCreate(&dead));
  CHECK_OK(rmmResourceDestroy(dead));
  bad[0] = NULL;
  bad[1] = (rmmResource_t)(uintptr_t)0x1234; /* never a handle */
  bad[2] = dead;

  CHECK_RMM(rmmStatisticsAdaptorCreate(NULL, cuda), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLoggingAdaptorCreate(NULL, cuda, never), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLimitingAdaptorCreate(NULL, cuda, 4096), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTrackingAdaptorCreate(NULL, cuda, false), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmFailureCallbackAdaptorCreate(NULL, cuda, never_called, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAlignedAdaptorCreate(NULL, cuda, 4096, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmPrefetchAdaptorCreate(NULL, cuda), RMM_ERROR_INVALID_ARGUMENT);
  for (i = 0; i < 3; ++i) {
    rmmResource_t upstream = bad[i];
    CHECK_RMM(rmmStatisticsAdaptorCreate(&out, upstream), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmLimitingAdaptorCreate(&out, upstream, 4096), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmTrackingAdaptorCreate(&out, upstream, false), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmFailureCallbackAdaptorCreate(&out, upstream, never_called, NULL),
              RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmAlignedAdaptorCreate(&out, upstream, 4096, 0), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmPrefetchAdaptorCreate(&out, upstream), RMM_ERROR_INVALID_HANDLE);
    CHECK_RMM(rmmLoggingAdaptorCreate(&out, upstream, never),
              RMM_ERROR_INVALID_HANDLE);
  }
  CHECK(out == (rmmResource_t)&stack_object);
  (void)remove(never);
  CHECK_OK(rmmResourceDestroy(cuda));
}

/* --- statistics --------------------------------------------------------------------------- */

static rmmStatistics_t counts_of(rmmResource_t stats) {
  rmmStatistics_t counts;
  memset(&counts, 0x5A, sizeof counts);
  CHECK_OK(rmmStatisticsAdaptorGetCounts(stats, &counts));
  return counts;
}

static void expect_counts(const char *file, int line, rmmStatistics_t c, int64_t current_bytes,
                          int64_t peak_bytes, int64_t total_bytes, int64_t current_count,
                          int64_t peak_count, int64_t total_count) {
  if (c.current_bytes != current_bytes || c.peak_bytes != peak_bytes ||
      c.total_bytes != total_bytes || c.current_count != current_count ||
      c.peak_count != peak_count || c.total_count != total_count) {
    fprintf(stderr,
            "%s:%d: statistics {bytes current %" PRId64 " peak %" PRId64 " total %" PRId64
            ", count current %" PRId64 " peak %" PRId64 " total %" PRId64 "}\n"
            "  expected {bytes current %" PRId64 " peak %" PRId64 " total %" PRId64
            ", count current %" PRId64 " peak %" PRId64 " total %" PRId64 "}\n",
            file, line, c.current_bytes, c.peak_bytes, c.total_bytes, c.current_count,
            c.peak_count, c.total_count, current_bytes, peak_bytes, total_bytes, current_count,
            peak_count, total_count);
    rmm_test_fail(file, line, "statistics figures");
  }
}

#define CHECK_COUNTS(c, cb, pb, tb, cc, pc, tc) \
  expect_counts(__FILE__, __LINE__, (c), (cb), (pb), (tb), (cc), (pc), (tc))

/* Exact figures and nested scopes over `upstream` (a cuda resource or a pool). */
static void check_statistics_figures(rmmResource_t upstream) {
  rmmResource_t stats = NULL;
  rmmStatistics_t popped;
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL, *f = NULL;

  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, upstream));
  CHECK_STR(name_of(stats), "statistics");
  CHECK_COUNTS(counts_of(stats), 0, 0, 0, 0, 0, 0);

  CHECK_OK(rmmResourceAllocate(stats, &a, 1000, 0));
  CHECK_OK(rmmResourceAllocate(stats, &b, 3000, 0));
  CHECK_COUNTS(counts_of(stats), 4000, 4000, 4000, 2, 2, 2);
  CHECK_OK(rmmResourceDeallocate(stats, a, 1000, 0));
  CHECK_COUNTS(counts_of(stats), 3000, 4000, 4000, 1, 2, 2);
  CHECK_OK(rmmResourceAllocate(stats, &c, 500, 0));
  CHECK_COUNTS(counts_of(stats), 3500, 4000, 4500, 2, 2, 3);
  /* Zero bytes: NULL, counted nowhere. */
  a = (void *)&stack_object;
  CHECK_OK(rmmResourceAllocate(stats, &a, 0, 0));
  CHECK(a == NULL);
  CHECK_COUNTS(counts_of(stats), 3500, 4000, 4500, 2, 2, 3);
  /* A failed allocation is not counted. */
  a = (void *)&stack_object;
  CHECK_RMM(rmmResourceAllocate(stats, &a, SIZE_MAX, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(a == (void *)&stack_object);
  CHECK_COUNTS(counts_of(stats), 3500, 4000, 4500, 2, 2, 3);

  /* Scope 1: starts from zero. */
  CHECK_OK(rmmStatisticsAdaptorPushCounters(stats));
  CHECK_COUNTS(counts_of(stats), 0, 0, 0, 0, 0, 0);
  CHECK_OK(rmmResourceAllocate(stats, &d, 2000, 0));
  CHECK_OK(rmmResourceDeallocate(stats, d, 2000, 0));
  CHECK_OK(rmmResourceAllocate(stats, &e, 100, 0));
  CHECK_COUNTS(counts_of(stats), 100, 2000, 2100, 1, 1, 2);

  /* Scope 2, which frees a block of the outermost scope: its current goes negative. */
  CHECK_OK(rmmStatisticsAdaptorPushCounters(stats));
  CHECK_COUNTS(counts_of(stats), 0, 0, 0, 0, 0, 0);
  CHECK_OK(rmmResourceAllocate(stats, &f, 10000, 0));
  CHECK_OK(rmmResourceDeallocate(stats, c, 500, 0));
  CHECK_COUNTS(counts_of(stats), 9500, 10000, 10000, 0, 1, 1);
  memset(&popped, 0x5A, sizeof popped);
  CHECK_OK(rmmStatisticsAdaptorPopCounters(stats, &popped));
  CHECK_COUNTS(popped, 9500, 10000, 10000, 0, 1, 1);

  /* Back in scope 1: peak = max(2000, 100 + 10000), totals add up. */
  CHECK_COUNTS(counts_of(stats), 9600, 10100, 12100, 1, 2, 3);
  /* An empty scope popped without an out-pointer changes nothing. */
  CHECK_OK(rmmStatisticsAdaptorPushCounters(stats));
  CHECK_OK(rmmStatisticsAdaptorPopCounters(stats, NULL));
  CHECK_COUNTS(counts_of(stats), 9600, 10100, 12100, 1, 2, 3);
  memset(&popped, 0x5A, sizeof popped);
  CHECK_OK(rmmStatisticsAdaptorPopCounters(stats, &popped));
  CHECK_COUNTS(popped, 9600, 10100, 12100, 1, 2, 3);

  /* The outermost scope: current 3500 + 9600; peak max(4000, 3500 + 10100); counts
   * current 2 + 1, peak max(2, 2 + 2), total 3 + 3. */
  CHECK_COUNTS(counts_of(stats), 13100, 13600, 16600, 3, 4, 6);

  /* No scope left to pop. */
  memset(&popped, 0x5A, sizeof popped);
  CHECK_RMM(rmmStatisticsAdaptorPopCounters(stats, &popped), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(popped.current_bytes == (int64_t)0x5A5A5A5A5A5A5A5All);
  CHECK_RMM(rmmStatisticsAdaptorPopCounters(stats, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_COUNTS(counts_of(stats), 13100, 13600, 16600, 3, 4, 6);

  CHECK_OK(rmmResourceDeallocate(stats, b, 3000, 0));
  CHECK_OK(rmmFree(e, 0, __FILE__, __LINE__));
  CHECK_OK(rmmFree(f, 0, __FILE__, __LINE__));
  CHECK_COUNTS(counts_of(stats), 0, 13600, 16600, 0, 4, 6);
  CHECK_OK(rmmResourceDestroy(stats));
}

/* Bad input of the statistics functions. */
static void check_statistics_errors(rmmResource_t cuda) {
  rmmResource_t stats = NULL;
  rmmStatistics_t counts;
  memset(&counts, 0x5A, sizeof counts);
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, cuda));
  CHECK_RMM(rmmStatisticsAdaptorGetCounts(stats, NULL), RMM_ERROR_INVALID_ARGUMENT);
  /* Not a statistics adaptor. */
  CHECK_RMM(rmmStatisticsAdaptorGetCounts(cuda, &counts), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStatisticsAdaptorPushCounters(cuda), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmStatisticsAdaptorPopCounters(cuda, &counts), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(counts.total_count == (int64_t)0x5A5A5A5A5A5A5A5All);
  /* NULL and destroyed handles. */
  CHECK_RMM(rmmStatisticsAdaptorGetCounts(NULL, &counts), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmStatisticsAdaptorPushCounters(NULL), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmStatisticsAdaptorPopCounters(NULL, NULL), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_RMM(rmmStatisticsAdaptorGetCounts(stats, &counts), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmStatisticsAdaptorPushCounters(stats), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmStatisticsAdaptorPopCounters(stats, &counts), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceDestroy(stats), RMM_ERROR_INVALID_HANDLE);
  CHECK(counts.total_count == (int64_t)0x5A5A5A5A5A5A5A5All);
}

/* Frees that name no resource (rmmFree), and frees through the wrong resource, of memory a
 * statistics adaptor handed out. */
static void check_statistics_frees(rmmResource_t upstream, bool is_pool) {
  rmmResource_t stats = NULL, previous = NULL;
  void *p = NULL, *q = NULL, *r = NULL;
  cudaStream_t stream = NULL;

  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, upstream));

  /* The current device resource: RMM_ALLOC / RMM_REALLOC / RMM_FREE go through it. */
  CHECK_OK(rmmSetCurrentDeviceResource(stats, &previous));
  CHECK_OK(RMM_ALLOC(&p, 3000, 0));
  CHECK_OK(RMM_ALLOC(&q, 5000, 0));
  CHECK_COUNTS(counts_of(stats), 8000, 8000, 8000, 2, 2, 2);
  CHECK_OK(RMM_REALLOC(&p, 9000, 0));
  CHECK_COUNTS(counts_of(stats), 14000, 17000, 17000, 2, 3, 3);
  CHECK_OK(RMM_FREE(p, 0));
  CHECK_COUNTS(counts_of(stats), 5000, 17000, 17000, 1, 3, 3);
  CHECK_OK(RMM_FREE(q, 0));
  CHECK_COUNTS(counts_of(stats), 0, 17000, 17000, 0, 3, 3);
  CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));

  /* rmmResourceAllocate + rmmFree, on the default stream and on a stream of its own. */
  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmResourceAllocate(stats, &p, 4096, 0));
  CHECK_OK(rmmResourceAllocate(stats, &q, 100, stream));
  CHECK_COUNTS(counts_of(stats), 4196, 17000, 21196, 2, 3, 5);
  CHECK_OK(rmmFree(p, 0, __FILE__, __LINE__));
  CHECK_OK(rmmFree(q, stream, __FILE__, __LINE__));
  CHECK_COUNTS(counts_of(stats), 0, 17000, 21196, 0, 3, 5);
  CHECK_RMM(rmmFree(q, stream, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT); /* twice */
  CHECK_COUNTS(counts_of(stats), 0, 17000, 21196, 0, 3, 5);

  /* Deallocating through the upstream bypasses the adaptor: refused, memory stays valid. */
  CHECK_OK(rmmResourceAllocate(stats, &r, 7000, 0));
  CHECK_RMM(rmmResourceDeallocate(upstream, r, 7000, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_COUNTS(counts_of(stats), 7000, 17000, 28196, 1, 3, 6);
  /* Still live and owned by the adaptor: a new allocation does not get the same address. */
  CHECK_OK(rmmResourceAllocate(stats, &p, 7000, 0));
  CHECK(p != r);
  CHECK_OK(rmmResourceDeallocate(stats, p, 7000, 0));
  /* Wrong sizes are refused too. */
  CHECK_RMM(rmmResourceDeallocate(stats, r, 6000, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_COUNTS(counts_of(stats), 7000, 17000, 35196, 1, 3, 7);
  if (is_pool) {
    CHECK_OK(rmmFree(r, 0, __FILE__, __LINE__));
  } else {
    CHECK_OK(rmmResourceDeallocate(stats, r, 7000, 0));
  }
  CHECK_COUNTS(counts_of(stats), 0, 17000, 35196, 0, 3, 7);

  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(stats));
}

/* Threads allocating and freeing through one statistics adaptor over a pool. */
#define STAT_THREADS 4
#define STAT_ITERATIONS 400
#define STAT_LIVE 8

struct stat_worker {
  rmmResource_t stats;
  int index;
  int64_t bytes;
  int64_t allocations;
  int failures;
};

static size_t worker_size(int thread, int i) {
  return (size_t)((i % 13) + 1) * 512 + (size_t)thread * 8 + (size_t)(i % 3);
}

static void *stat_worker_main(void *arg) {
  struct stat_worker *w = (struct stat_worker *)arg;
  void *live[STAT_LIVE];
  size_t sizes[STAT_LIVE];
  cudaStream_t stream = NULL;
  int i, slot;
  for (slot = 0; slot < STAT_LIVE; ++slot) live[slot] = NULL;
  if (rmmStreamCreate(&stream) != RMM_SUCCESS) {
    w->failures++;
    return NULL;
  }
  for (i = 0; i < STAT_ITERATIONS; ++i) {
    slot = i % STAT_LIVE;
    if (live[slot] != NULL) {
      rmmError_t status = (i % 2) ? rmmFree(live[slot], stream, __FILE__, __LINE__)
                                  : rmmResourceDeallocate(w->stats, live[slot], sizes[slot], stream);
      if (status != RMM_SUCCESS) w->failures++;
      live[slot] = NULL;
    }
    sizes[slot] = worker_size(w->index, i);
    if (rmmResourceAllocate(w->stats, &live[slot], sizes[slot], stream) != RMM_SUCCESS ||
        live[slot] == NULL) {
      w->failures++;
      live[slot] = NULL;
      continue;
    }
    w->bytes += (int64_t)sizes[slot];
    w->allocations++;
  }
  for (slot = 0; slot < STAT_LIVE; ++slot) {
    if (live[slot] != NULL && rmmFree(live[slot], stream, __FILE__, __LINE__) != RMM_SUCCESS) {
      w->failures++;
    }
  }
  if (rmmStreamSynchronize(stream) != RMM_SUCCESS) w->failures++;
  if (rmmStreamDestroy(stream) != RMM_SUCCESS) w->failures++;
  return NULL;
}

static void check_statistics_threads(rmmResource_t cuda) {
  rmmResource_t pool = NULL, stats = NULL;
  pthread_t threads[STAT_THREADS];
  struct stat_worker workers[STAT_THREADS];
  int64_t bytes = 0, allocations = 0;
  rmmStatistics_t c;
  int t;
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 8 * MIB, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  for (t = 0; t < STAT_THREADS; ++t) {
    workers[t].stats = stats;
    workers[t].index = t;
    workers[t].bytes = 0;
    workers[t].allocations = 0;
    workers[t].failures = 0;
    CHECK(pthread_create(&threads[t], NULL, stat_worker_main, &workers[t]) == 0);
  }
  for (t = 0; t < STAT_THREADS; ++t) {
    CHECK(pthread_join(threads[t], NULL) == 0);
    CHECK(workers[t].failures == 0);
    CHECK(workers[t].allocations == STAT_ITERATIONS);
    bytes += workers[t].bytes;
    allocations += workers[t].allocations;
  }
  c = counts_of(stats);
  CHECK(c.current_bytes == 0);
  CHECK(c.current_count == 0);
  CHECK(c.total_count == allocations);
  CHECK(c.total_count == (int64_t)STAT_THREADS * STAT_ITERATIONS);
  CHECK(c.total_bytes == bytes);
  CHECK(c.peak_count >= STAT_LIVE && c.peak_count <= STAT_THREADS * STAT_LIVE);
  CHECK(c.peak_bytes > 0 && c.peak_bytes <= c.total_bytes);
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
}

static void check_statistics(rmmResource_t cuda) {
  rmmResource_t pool = NULL;
  check_statistics_errors(cuda);
  check_statistics_figures(cuda);
  check_statistics_frees(cuda, false);
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  check_statistics_figures(pool);
  check_statistics_frees(pool, true);
  CHECK_OK(rmmResourceDestroy(pool));
  check_statistics_threads(cuda);
}

/* --- logging ------------------------------------------------------------------------------ */

struct log_line {
  char thread[32], time[32], action[32], pointer[32], size[32], stream[32];
};

/* Splits the log text into lines after checking the header; returns the number of lines. */
static int parse_log(const char *text, struct log_line *lines, int capacity) {
  const char *header = "Thread,Time,Action,Pointer,Size,Stream\n";
  const char *at;
  int count = 0;
  CHECK(text != NULL);
  if (strncmp(text, header, strlen(header)) != 0) {
    fprintf(stderr, "log text:\n%s\n", text);
    CHECK(!"the log starts with the header line");
  }
  at = text + strlen(header);
  while (*at != '\0') {
    const char *end = strchr(at, '\n');
    char *fields[6];
    char copy[256];
    size_t length;
    int field = 0;
    char *cursor;
    CHECK(end != NULL); /* every line ends with a newline */
    length = (size_t)(end - at);
    CHECK(length < sizeof copy);
    memcpy(copy, at, length);
    copy[length] = '\0';
    CHECK(count < capacity);
    fields[field++] = copy;
    for (cursor = copy; *cursor != '\0'; ++cursor) {
      if (*cursor == ',') {
        *cursor = '\0';
        CHECK(field < 6);
        fields[field++] = cursor + 1;
      }
    }
    CHECK(field == 6);
    CHECK(strlen(fields[0]) < 32 && strlen(fields[1]) < 32 && strlen(fields[2]) < 32);
    CHECK(strlen(fields[3]) < 32 && strlen(fields[4]) < 32 && strlen(fields[5]) < 32);
    strcpy(lines[count].thread, fields[0]);
    strcpy(lines[count].time, fields[1]);
    strcpy(lines[count].action, fields[2]);
    strcpy(lines[count].pointer, fields[3]);
    strcpy(lines[count].size, fields[4]);
    strcpy(lines[count].stream, fields[5]);
    /* Thread: the OS id in decimal; time: HH:MM:SS.ffffff */
    {
      const char *t = lines[count].thread, *time = lines[count].time;
      size_t i;
      CHECK(t[0] != '\0');
      for (; *t != '\0'; ++t) CHECK(*t >= '0' && *t <= '9');
      CHECK(strlen(time) == 15);
      for (i = 0; i < 15; ++i) {
        if (i == 2 || i == 5) {
          CHECK(time[i] == ':');
        } else if (i == 8) {
          CHECK(time[i] == '.');
        } else {
          CHECK(time[i] >= '0' && time[i] <= '9');
        }
      }
    }
    ++count;
    at = end + 1;
  }
  return count;
}

static void expect_line(const char *file, int line, const struct log_line *got, const char *action,
                        const void *ptr, size_t size, cudaStream_t stream) {
  char pointer[32], bytes[32], stream_text[32];
  if (ptr == NULL) {
    strcpy(pointer, "(nil)");
  } else {
    format_hex(pointer, sizeof pointer, ptr);
  }
  snprintf(bytes, sizeof bytes, "%zu", size);
  if (stream == NULL) {
    strcpy(stream_text, "0");
  } else {
    format_hex(stream_text, sizeof stream_text, (const void *)stream);
  }
  if (strcmp(got->action, action) != 0 || strcmp(got->pointer, pointer) != 0 ||
      strcmp(got->size, bytes) != 0 || strcmp(got->stream, stream_text) != 0) {
    fprintf(stderr, "%s:%d: log line %s,%s,%s,%s expected %s,%s,%s,%s\n", file, line,
            got->action, got->pointer, got->size, got->stream, action, pointer, bytes,
            stream_text);
    rmm_test_fail(file, line, "log line");
  }
}

#define EXPECT_LINE(got, action, ptr, size, stream) \
  expect_line(__FILE__, __LINE__, (got), (action), (ptr), (size), (stream))

static void check_logging(rmmResource_t cuda) {
  rmmResource_t pool = NULL, logging = NULL, out = (rmmResource_t)&stack_object;
  char path[128], env_path[128];
  struct log_line lines[16];
  char *text;
  void *a = NULL, *b = NULL, *c = NULL, *huge = (void *)&stack_object;
  cudaStream_t stream = NULL;
  int count, i;

  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 64 * MIB));

  /* A log file of its own. */
  rmm_test_temp_file(path, sizeof path, "log");
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, pool, path));
  CHECK_STR(name_of(logging), "logging");
  CHECK_OK(rmmResourceAllocate(logging, &a, 1000, 0));
  CHECK_OK(rmmResourceAllocate(logging, &b, 5000, stream));
  CHECK_OK(rmmResourceAllocate(logging, &c, 256, 0));
  CHECK_OK(rmmResourceDeallocate(logging, a, 1000, 0));
  CHECK_OK(rmmFree(b, stream, __FILE__, __LINE__)); /* rmmFree goes through the adaptor */
  CHECK_RMM(rmmResourceAllocate(logging, &huge, (size_t)1 << 45, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(huge == (void *)&stack_object);
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 16);
  if (count != 6) fprintf(stderr, "log:\n%s\n", text);
  CHECK(count == 6);
  EXPECT_LINE(&lines[0], "allocate", a, 1000, NULL);
  EXPECT_LINE(&lines[1], "allocate", b, 5000, stream);
  EXPECT_LINE(&lines[2], "allocate", c, 256, NULL);
  EXPECT_LINE(&lines[3], "free", a, 1000, NULL);
  EXPECT_LINE(&lines[4], "free", b, 5000, stream);
  EXPECT_LINE(&lines[5], "allocate failure", NULL, (size_t)1 << 45, NULL);
  for (i = 1; i < count; ++i) CHECK_STR(lines[i].thread, lines[0].thread);
  free(text);
  /* Flushed again: appended to. */
  CHECK_OK(rmmFree(c, 0, __FILE__, __LINE__));
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 16);
  CHECK(count == 7);
  EXPECT_LINE(&lines[5], "allocate failure", NULL, (size_t)1 << 45, NULL);
  EXPECT_LINE(&lines[6], "free", c, 256, NULL);
  free(text);
  /* Deallocating the adaptor's block through the pool is refused and not logged. */
  CHECK_OK(rmmResourceAllocate(logging, &a, 2048, stream));
  CHECK_RMM(rmmResourceDeallocate(pool, a, 2048, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(logging, a, 2048, stream));
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 16);
  CHECK(count == 9);
  EXPECT_LINE(&lines[7], "allocate", a, 2048, stream);
  EXPECT_LINE(&lines[8], "free", a, 2048, stream);
  free(text);
  /* Destroying the adaptor writes what is buffered, without a flush. */
  CHECK_OK(rmmResourceAllocate(logging, &a, 777, 0));
  CHECK_OK(rmmFree(a, 0, __FILE__, __LINE__));
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK_RMM(rmmLoggingAdaptorFlush(logging), RMM_ERROR_INVALID_HANDLE);
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 16);
  CHECK(count == 11);
  EXPECT_LINE(&lines[9], "allocate", a, 777, NULL);
  EXPECT_LINE(&lines[10], "free", a, 777, NULL);
  free(text);

  /* Created again over the same file: truncated, a header and nothing else. */
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, cuda, path));
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(path);
  CHECK_STR(text, "Thread,Time,Action,Pointer,Size,Stream\n");
  free(text);
  /* Over a cuda resource (not a pool) rmmFree goes through the adaptor too. */
  CHECK_OK(rmmResourceAllocate(logging, &a, 12345, stream));
  CHECK_OK(rmmFree(a, stream, __FILE__, __LINE__));
  CHECK_OK(rmmResourceDestroy(logging));
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 16);
  CHECK(count == 2);
  EXPECT_LINE(&lines[0], "allocate", a, 12345, stream);
  EXPECT_LINE(&lines[1], "free", a, 12345, stream);
  free(text);
  CHECK(remove(path) == 0);

  /* A NULL path: RMM_LOG_FILE names the file; without it the call is refused. */
  CHECK(unsetenv("RMM_LOG_FILE") == 0);
  CHECK_RMM(rmmLoggingAdaptorCreate(&out, cuda, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(out == (rmmResource_t)&stack_object);
  rmm_test_temp_file(env_path, sizeof env_path, "logenv");
  CHECK(setenv("RMM_LOG_FILE", env_path, 1) == 0);
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, pool, NULL));
  CHECK(unsetenv("RMM_LOG_FILE") == 0);
  CHECK_OK(rmmResourceAllocate(logging, &a, 4096, 0));
  CHECK_OK(rmmResourceDeallocate(logging, a, 4096, 0));
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(env_path);
  count = parse_log(text, lines, 16);
  CHECK(count == 2);
  EXPECT_LINE(&lines[0], "allocate", a, 4096, NULL);
  EXPECT_LINE(&lines[1], "free", a, 4096, NULL);
  free(text);
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK(remove(env_path) == 0);

  /* An unwritable path. */
  CHECK_RMM(rmmLoggingAdaptorCreate(&out, cuda, "/nonexistent-dir/x.csv"), RMM_ERROR_IO);
  CHECK(out == (rmmResource_t)&stack_object);
  /* A file that takes no data: the failure shows at creation or at the flush. */
  if (access("/dev/full", W_OK) == 0) {
    rmmError_t status = rmmLoggingAdaptorCreate(&logging, cuda, "/dev/full");
    if (status == RMM_SUCCESS) {
      CHECK_OK(rmmResourceAllocate(logging, &a, 1000, 0));
      CHECK_OK(rmmFree(a, 0, __FILE__, __LINE__));
      CHECK_RMM(rmmLoggingAdaptorFlush(logging), RMM_ERROR_IO);
      CHECK_OK(rmmResourceDestroy(logging));
    } else {
      CHECK_RMM(status, RMM_ERROR_IO);
    }
  }
  /* Flush of something that is not a logging adaptor. */
  CHECK_RMM(rmmLoggingAdaptorFlush(cuda), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLoggingAdaptorFlush(pool), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLoggingAdaptorFlush(NULL), RMM_ERROR_INVALID_HANDLE);

  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
}

/* --- limiting ----------------------------------------------------------------------------- */

static size_t allocated_bytes(rmmResource_t limiting) {
  size_t bytes = (size_t)-1;
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
  return bytes;
}

static void check_limiting(rmmResource_t cuda) {
  rmmResource_t limiting = NULL, pool = NULL, out = (rmmResource_t)&stack_object;
  void *a = NULL, *b = NULL, *c = NULL, *d = (void *)&stack_object;
  size_t bytes = 99;

  CHECK_RMM(rmmLimitingAdaptorCreate(&out, cuda, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(out == (rmmResource_t)&stack_object);

  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, cuda, 4096));
  CHECK_STR(name_of(limiting), "limiting");
  CHECK(allocated_bytes(limiting) == 0);
  CHECK_OK(rmmResourceAllocate(limiting, &a, 1000, 0)); /* counts 1024 */
  CHECK(allocated_bytes(limiting) == 1024);
  CHECK_OK(rmmResourceAllocate(limiting, &b, 1, 0)); /* counts 256 */
  CHECK(allocated_bytes(limiting) == 1280);
  CHECK_OK(rmmResourceAllocate(limiting, &c, 2816, 0)); /* exactly up to the limit */
  CHECK(allocated_bytes(limiting) == 4096);
  CHECK_RMM(rmmResourceAllocate(limiting, &d, 1, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(rmmGetLastErrorMessage(), "4096") != NULL);
  CHECK(d == (void *)&stack_object);
  CHECK(allocated_bytes(limiting) == 4096);
  CHECK_OK(rmmResourceDeallocate(limiting, a, 1000, 0));
  CHECK(allocated_bytes(limiting) == 3072);
  CHECK_RMM(rmmResourceAllocate(limiting, &d, 1025, 0), RMM_ERROR_OUT_OF_MEMORY); /* 1280 */
  CHECK(d == (void *)&stack_object);
  CHECK_OK(rmmResourceAllocate(limiting, &a, 1024, 0));
  CHECK(allocated_bytes(limiting) == 4096);
  CHECK_OK(rmmFree(a, 0, __FILE__, __LINE__)); /* rmmFree goes through the adaptor */
  CHECK_OK(rmmFree(b, 0, __FILE__, __LINE__));
  CHECK(allocated_bytes(limiting) == 2816);
  CHECK_OK(rmmResourceDeallocate(limiting, c, 2816, 0));
  CHECK(allocated_bytes(limiting) == 0);
  /* A single request over the limit. */
  CHECK_RMM(rmmResourceAllocate(limiting, &d, 4097, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(rmmGetLastErrorMessage(), "4096") != NULL);
  CHECK_RMM(rmmResourceAllocate(limiting, &d, SIZE_MAX, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(d == (void *)&stack_object);
  CHECK(allocated_bytes(limiting) == 0);
  CHECK_OK(rmmResourceDestroy(limiting));

  /* Over a pool: rmmFree and RMM_FREE still go through the adaptor. */
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, pool, 1 * MIB));
  CHECK_OK(rmmResourceAllocate(limiting, &a, 512 * KIB, 0));
  CHECK_OK(rmmResourceAllocate(limiting, &b, 512 * KIB - 300, 0)); /* counts 512 KiB - 256 */
  CHECK(allocated_bytes(limiting) == 1 * MIB - 256);
  CHECK_RMM(rmmResourceAllocate(limiting, &d, 257, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(strstr(rmmGetLastErrorMessage(), "1048576") != NULL);
  CHECK_RMM(rmmResourceDeallocate(pool, a, 512 * KIB, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(allocated_bytes(limiting) == 1 * MIB - 256);
  CHECK_OK(rmmFree(a, 0, __FILE__, __LINE__));
  CHECK(allocated_bytes(limiting) == 512 * KIB - 256);
  {
    rmmResource_t previous = NULL;
    CHECK_OK(rmmSetCurrentDeviceResource(limiting, &previous));
    CHECK_OK(RMM_ALLOC(&a, 512 * KIB, 0));
    CHECK(allocated_bytes(limiting) == 1 * MIB - 256);
    CHECK_RMM(RMM_ALLOC(&d, 512, 0), RMM_ERROR_OUT_OF_MEMORY);
    CHECK_OK(RMM_FREE(a, 0));
    CHECK(allocated_bytes(limiting) == 512 * KIB - 256);
    CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
    CHECK_OK(rmmResourceDestroy(previous));
  }
  CHECK_OK(rmmFree(b, 0, __FILE__, __LINE__));
  CHECK(allocated_bytes(limiting) == 0);

  /* Bad input. */
  CHECK_RMM(rmmLimitingAdaptorGetAllocatedBytes(limiting, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLimitingAdaptorGetAllocatedBytes(pool, &bytes), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmLimitingAdaptorGetAllocatedBytes(NULL, &bytes), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmResourceDestroy(limiting));
  CHECK_RMM(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes), RMM_ERROR_INVALID_HANDLE);
  CHECK(bytes == 99);
  CHECK_OK(rmmResourceDestroy(pool));
}

/* --- tracking ----------------------------------------------------------------------------- */

static size_t outstanding_count(rmmResource_t tracking) {
  size_t count = (size_t)-1;
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 0, &count));
  return count;
}

static const rmmAllocationRecord_t *find_record(const rmmAllocationRecord_t *records, size_t count,
                                                const void *ptr) {
  size_t i;
  for (i = 0; i < count; ++i) {
    if (records[i].ptr == ptr) return &records[i];
  }
  return NULL;
}

static char *report_of(rmmResource_t tracking) {
  size_t length = (size_t)-1, again = (size_t)-1;
  char *report;
  CHECK_OK(rmmTrackingAdaptorGetReport(tracking, NULL, 0, &length));
  CHECK(length != (size_t)-1);
  report = (char *)malloc(length + 1);
  CHECK(report != NULL);
  CHECK_OK(rmmTrackingAdaptorGetReport(tracking, report, length + 1, &again));
  CHECK(again == length);
  CHECK(strlen(report) == length);
  return report;
}

static void check_tracking_over(rmmResource_t upstream, bool capture_stacks) {
  rmmResource_t tracking = NULL, previous = NULL;
  rmmAllocationRecord_t records[4];
  const rmmAllocationRecord_t *record;
  void *a = NULL, *b = NULL, *c = NULL;
  unsigned line_a = 0, line_b = 0;
  char site[64], hex[32];
  char *report, small[8];
  size_t count = 99, length = 0, i;
  cudaStream_t stream = NULL;

  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, upstream, capture_stacks));
  CHECK_STR(name_of(tracking), "tracking");
  CHECK(outstanding_count(tracking) == 0);
  report = report_of(tracking);
  CHECK_STR(report, "");
  free(report);

  CHECK_OK(rmmSetCurrentDeviceResource(tracking, &previous));
  line_a = __LINE__; CHECK_OK(RMM_ALLOC(&a, 1234, 0));
  line_b = __LINE__; CHECK_OK(RMM_ALLOC(&b, 5678, stream));
  CHECK_OK(rmmResourceAllocate(tracking, &c, 300, 0)); /* no call site */
  CHECK(outstanding_count(tracking) == 3);

  memset(records, 0x5A, sizeof records);
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(tracking, records, 4, &count));
  CHECK(count == 3);
  CHECK(records[3].size == (size_t)0x5A5A5A5A5A5A5A5Aull); /* only `count` written */
  for (i = 1; i < count; ++i) CHECK((uintptr_t)records[i - 1].ptr < (uintptr_t)records[i].ptr);
  record = find_record(records, count, a);
  CHECK(record != NULL);
  CHECK(record->size == 1234);
  CHECK(record->line == line_a);
  CHECK(ends_with(record->file, "test_adaptors.c"));
  CHECK(record->stream == NULL);
  CHECK(record->thread != 0);
  record = find_record(records, count, b);
  CHECK(record != NULL);
  CHECK(record->size == 5678);
  CHECK(record->line == line_b);
  CHECK(ends_with(record->file, "test_adaptors.c"));
  CHECK(record->stream == stream);
  CHECK(record->thread == records[0].thread);
  record = find_record(records, count, c);
  CHECK(record != NULL);
  CHECK(record->size == 300);
  CHECK(record->line == 0);
  CHECK_STR(record->file, "");

  /* A capacity smaller than the count fills only that many. */
  memset(records, 0x5A, sizeof records);
  count = 0;
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(tracking, records, 1, &count));
  CHECK(count == 3);
  CHECK(records[0].size == 1234 || records[0].size == 5678 || records[0].size == 300);
  CHECK(records[1].size == (size_t)0x5A5A5A5A5A5A5A5Aull);
  CHECK(records[1].line == 0x5A5A5A5Au);
  /* Bad input. */
  count = 99;
  CHECK_RMM(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 2, &count), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTrackingAdaptorGetOutstanding(upstream, records, 4, &count),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK(count == 99);

  /* The report: length, a buffer too small, the text. */
  report = report_of(tracking);
  length = strlen(report);
  CHECK(length > 0);
  snprintf(site, sizeof site, "test_adaptors.c:%u", line_a);
  CHECK(strstr(report, site) != NULL);
  snprintf(site, sizeof site, "test_adaptors.c:%u", line_b);
  CHECK(strstr(report, site) != NULL);
  format_hex(hex, sizeof hex, a);
  CHECK(strstr(report, hex) != NULL);
  format_hex(hex, sizeof hex, c);
  CHECK(strstr(report, hex) != NULL);
  CHECK(strstr(report, "1234") != NULL && strstr(report, "5678") != NULL);
  {
    char *tight = (char *)malloc(length + 1);
    CHECK(tight != NULL);
    memset(tight, 'X', length + 1);
    CHECK_RMM(rmmTrackingAdaptorGetReport(tracking, tight, length, NULL),
              RMM_ERROR_INVALID_ARGUMENT);
    CHECK(tight[length] == 'X');
    free(tight);
  }
  memset(small, 'X', sizeof small);
  CHECK_RMM(rmmTrackingAdaptorGetReport(tracking, small, sizeof small, NULL),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTrackingAdaptorGetReport(tracking, NULL, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTrackingAdaptorGetReport(upstream, NULL, 0, &length), RMM_ERROR_INVALID_ARGUMENT);
  free(report);

  /* Frees, through the adaptor whichever way they come. */
  CHECK_OK(RMM_FREE(a, 0));
  CHECK(outstanding_count(tracking) == 2);
  CHECK_RMM(rmmResourceDeallocate(upstream, b, 5678, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(outstanding_count(tracking) == 2);
  CHECK_OK(rmmResourceDeallocate(tracking, b, 5678, stream));
  CHECK(outstanding_count(tracking) == 1);
  CHECK_OK(rmmFree(c, 0, __FILE__, __LINE__));
  CHECK(outstanding_count(tracking) == 0);
  report = report_of(tracking);
  CHECK_STR(report, "");
  free(report);
  small[0] = 'X';
  length = 99;
  CHECK_OK(rmmTrackingAdaptorGetReport(tracking, small, sizeof small, &length));
  CHECK(length == 0);
  CHECK(small[0] == '\0');

  CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(tracking));
  CHECK_RMM(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 0, &count), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmTrackingAdaptorGetReport(tracking, NULL, 0, &length), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
}

static void check_tracking(rmmResource_t cuda) {
  rmmResource_t pool = NULL;
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  check_tracking_over(pool, false);
  check_tracking_over(cuda, false);
  check_tracking_over(pool, true);
  CHECK_OK(rmmResourceDestroy(pool));
}

/* --- failure callback --------------------------------------------------------------------- */

struct spill {
  void *held;          /* a block the callback may free */
  int calls;           /* how often the callback ran */
  size_t last_bytes;   /* the bytes it was called with */
  void *last_arg;      /* the arg it was called with */
  int retries;         /* how often to answer true without freeing anything */
};

static bool spill_callback(size_t bytes, void *arg) {
  struct spill *spill = (struct spill *)arg;
  spill->calls++;
  spill->last_bytes = bytes;
  spill->last_arg = arg;
  if (spill->held != NULL) {
    CHECK_OK(rmmFree(spill->held, 0, __FILE__, __LINE__));
    spill->held = NULL;
    return true;
  }
  if (spill->retries > 0) {
    spill->retries--;
    return true;
  }
  return false;
}

static void check_failure_callback(rmmResource_t cuda) {
  rmmResource_t limiting = NULL, callback = NULL, pool = NULL, out = (rmmResource_t)&stack_object;
  struct spill spill;
  void *a = NULL, *b = NULL, *d = (void *)&stack_object;
  int layer;

  CHECK_RMM(rmmFailureCallbackAdaptorCreate(&out, cuda, NULL, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(out == (rmmResource_t)&stack_object);

  /* Over a limiting adaptor over cuda, then over a limiting adaptor over a pool. */
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  for (layer = 0; layer < 2; ++layer) {
    memset(&spill, 0, sizeof spill);
    CHECK_OK(rmmLimitingAdaptorCreate(&limiting, layer == 0 ? cuda : pool, 8192));
    CHECK_OK(rmmFailureCallbackAdaptorCreate(&callback, limiting, spill_callback, &spill));
    CHECK_STR(name_of(callback), "failure_callback");

    /* Allocations that fit never call it. */
    CHECK_OK(rmmResourceAllocate(callback, &spill.held, 6144, 0));
    CHECK(spill.calls == 0);
    /* The callback frees the held block and asks for a retry, which succeeds. */
    CHECK_OK(rmmResourceAllocate(callback, &a, 4096, 0));
    CHECK(a != NULL);
    CHECK(spill.calls == 1);
    CHECK(spill.last_bytes == 4096);
    CHECK(spill.last_arg == (void *)&spill);
    CHECK(spill.held == NULL);
    /* Nothing left to free: the callback answers false once, the allocation fails. */
    spill.calls = 0;
    CHECK_RMM(rmmResourceAllocate(callback, &d, 8192, 0), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(d == (void *)&stack_object);
    CHECK(spill.calls == 1);
    CHECK(spill.last_bytes == 8192);
    /* Two retries that do not help, then false: called exactly three times. */
    spill.calls = 0;
    spill.retries = 2;
    CHECK_RMM(rmmResourceAllocate(callback, &d, 5000, 0), RMM_ERROR_OUT_OF_MEMORY);
    CHECK(spill.calls == 3);
    CHECK(spill.retries == 0);
    /* Room again after a free. */
    spill.calls = 0;
    CHECK_OK(rmmResourceDeallocate(callback, a, 4096, 0));
    CHECK_OK(rmmResourceAllocate(callback, &b, 8192, 0));
    CHECK(spill.calls == 0);
    {
      size_t bytes = 0;
      CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
      CHECK(bytes == 8192);
      CHECK_OK(rmmFree(b, 0, __FILE__, __LINE__));
      CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
      CHECK(bytes == 0);
    }
    CHECK_OK(rmmResourceDestroy(callback));
    CHECK_OK(rmmResourceDestroy(limiting));
  }
  CHECK_OK(rmmResourceDestroy(pool));
}

/* --- aligned ------------------------------------------------------------------------------ */

static void check_aligned(rmmResource_t cuda) {
  rmmResource_t pool = NULL, stats = NULL, aligned = NULL, out = (rmmResource_t)&stack_object;
  static const size_t large[8] = {65536, 100000, 1 << 20, 3 * 65536 + 5, 70000, 262144, 65536,
                                  500000};
  static const size_t small[8] = {256, 1000, 65535, 3000, 1, 40000, 300, 65535};
  void *large_ptr[8], *small_ptr[8], *d = (void *)&stack_object;
  rmmStatistics_t c;
  int i, j;

  /* Alignments that are not a power of two; one below 256 is 256. */
  CHECK_RMM(rmmAlignedAdaptorCreate(&out, cuda, 1000, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAlignedAdaptorCreate(&out, cuda, 768, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAlignedAdaptorCreate(&out, cuda, 0, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmAlignedAdaptorCreate(&out, cuda, 4097, 65536), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(out == (rmmResource_t)&stack_object);
  CHECK_OK(rmmAlignedAdaptorCreate(&out, cuda, 128, 0));
  CHECK_OK(rmmResourceAllocate(out, &d, 1000, NULL));
  CHECK(rmm_test_aligned(d, 256));
  CHECK_OK(rmmResourceDeallocate(out, d, 1000, NULL));
  CHECK_OK(rmmResourceDestroy(out));
  d = (void *)&stack_object;
  CHECK_OK(rmmAlignedAdaptorCreate(&out, cuda, 256, 0));
  CHECK_OK(rmmResourceDestroy(out));

  /* aligned -> statistics -> pool: the statistics show what reaches the pool. */
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 8 * MIB, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  CHECK_OK(rmmAlignedAdaptorCreate(&aligned, stats, 4096, 65536));
  CHECK_STR(name_of(aligned), "aligned");
  for (i = 0; i < 8; ++i) {
    CHECK_OK(rmmResourceAllocate(aligned, &small_ptr[i], small[i], 0));
    CHECK_OK(rmmResourceAllocate(aligned, &large_ptr[i], large[i], 0));
    CHECK(rmm_test_aligned(small_ptr[i], 256));
    CHECK(rmm_test_aligned(large_ptr[i], 4096));
  }
  /* No two blocks overlap. */
  for (i = 0; i < 16; ++i) {
    for (j = 0; j < i; ++j) {
      uintptr_t p = (uintptr_t)(i < 8 ? small_ptr[i] : large_ptr[i - 8]);
      uintptr_t q = (uintptr_t)(j < 8 ? small_ptr[j] : large_ptr[j - 8]);
      size_t ps = i < 8 ? small[i] : large[i - 8], qs = j < 8 ? small[j] : large[j - 8];
      CHECK(p + ps <= q || q + qs <= p);
    }
  }
  c = counts_of(stats);
  CHECK(c.current_count == 16);
  CHECK(c.total_count == 16);

  /* Through the wrong resource or with the wrong size: refused, nothing freed. */
  CHECK_RMM(rmmResourceDeallocate(pool, large_ptr[0], large[0], 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(stats, large_ptr[0], large[0], 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(pool, small_ptr[0], small[0], 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(aligned, large_ptr[1], 1000, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceDeallocate(aligned, (char *)large_ptr[1] + 256, large[1], 0),
            RMM_ERROR_INVALID_ARGUMENT);
  CHECK(counts_of(stats).current_count == 16);

  /* rmmFree and rmmResourceDeallocate both return the memory. */
  for (i = 0; i < 8; ++i) {
    if (i % 2) {
      CHECK_OK(rmmFree(large_ptr[i], 0, __FILE__, __LINE__));
      CHECK_OK(rmmResourceDeallocate(aligned, small_ptr[i], small[i], 0));
    } else {
      CHECK_OK(rmmResourceDeallocate(aligned, large_ptr[i], large[i], 0));
      CHECK_OK(rmmFree(small_ptr[i], 0, __FILE__, __LINE__));
    }
  }
  c = counts_of(stats);
  CHECK(c.current_count == 0);
  CHECK(c.current_bytes == 0);
  CHECK_RMM(rmmFree(large_ptr[0], 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);

  /* As the current device resource. */
  {
    rmmResource_t previous = NULL;
    void *p = NULL, *q = NULL;
    CHECK_OK(rmmSetCurrentDeviceResource(aligned, &previous));
    CHECK_OK(RMM_ALLOC(&p, 300000, 0));
    CHECK_OK(RMM_ALLOC(&q, 1000, 0));
    CHECK(rmm_test_aligned(p, 4096));
    CHECK(rmm_test_aligned(q, 256));
    CHECK_OK(RMM_REALLOC(&q, 200000, 0));
    CHECK(rmm_test_aligned(q, 4096));
    CHECK_OK(RMM_FREE(p, 0));
    CHECK_OK(RMM_FREE(q, 0));
    CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
    CHECK_OK(rmmResourceDestroy(previous));
  }
  CHECK(counts_of(stats).current_bytes == 0);

  /* Sizes that overflow once padded: out of memory, not a crash. */
  CHECK_RMM(rmmResourceAllocate(aligned, &d, SIZE_MAX - 100, 0), RMM_ERROR_OUT_OF_MEMORY);
  CHECK(d == (void *)&stack_object);

  CHECK_OK(rmmResourceDestroy(aligned));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
}

/* --- prefetch ----------------------------------------------------------------------------- */

static void check_prefetch_over(rmmResource_t upstream) {
  rmmResource_t prefetch = NULL;
  void *a = NULL, *b = NULL, *c = NULL;
  int device = -1;
  cudaStream_t stream = NULL;
  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmPrefetchAdaptorCreate(&prefetch, upstream));
  CHECK_STR(name_of(prefetch), "prefetch");
  CHECK_OK(rmmResourceGetDevice(prefetch, &device));
  CHECK(device == 0);
  CHECK_OK(rmmResourceAllocate(prefetch, &a, 1 * MIB, 0));
  CHECK_OK(rmmResourceAllocate(prefetch, &b, 4096, stream));
  CHECK_OK(rmmResourceAllocate(prefetch, &c, 1, 0));
  CHECK(a != NULL && b != NULL && c != NULL);
  CHECK(a != b && b != c && a != c);
  CHECK(rmm_test_aligned(a, 256) && rmm_test_aligned(b, 256) && rmm_test_aligned(c, 256));
  CHECK_RMM(rmmResourceDeallocate(prefetch, a, 1000, 0), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDeallocate(prefetch, a, 1 * MIB, 0));
  CHECK_OK(rmmFree(b, stream, __FILE__, __LINE__));
  CHECK_OK(rmmFree(c, 0, __FILE__, __LINE__));
  CHECK_RMM(rmmFree(c, 0, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(rmmResourceDestroy(prefetch));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
}

static void check_prefetch(rmmResource_t cuda) {
  rmmResource_t managed = NULL, pool = NULL;
  CHECK_OK(rmmManagedResourceCreate(&managed));
  check_prefetch_over(managed);
  check_prefetch_over(cuda);
  CHECK_OK(rmmPoolResourceCreate(&pool, managed, 4 * MIB, 0));
  check_prefetch_over(pool);
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(managed));
}

/* --- a stack of adaptors ------------------------------------------------------------------ */

/* Every adaptor over one another over a pool; each sees the allocation and its free. */
static void check_stack(rmmResource_t cuda) {
  rmmResource_t pool = NULL, stats = NULL, limiting = NULL, tracking = NULL, callback = NULL,
                aligned = NULL, prefetch = NULL, logging = NULL, previous = NULL;
  struct spill spill;
  char path[128];
  struct log_line lines[8];
  char *text;
  void *p = NULL;
  size_t bytes = 1, count = 1;
  int lines_count;

  memset(&spill, 0, sizeof spill);
  rmm_test_temp_file(path, sizeof path, "stack");
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, stats, path));
  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, logging, 1 * MIB));
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, limiting, false));
  CHECK_OK(rmmFailureCallbackAdaptorCreate(&callback, tracking, spill_callback, &spill));
  CHECK_OK(rmmPrefetchAdaptorCreate(&prefetch, callback));
  CHECK_OK(rmmAlignedAdaptorCreate(&aligned, prefetch, 4096, 1));
  CHECK_OK(rmmSetCurrentDeviceResource(aligned, &previous));

  CHECK_OK(RMM_ALLOC(&p, 10000, 0));
  CHECK(rmm_test_aligned(p, 4096));
  CHECK(counts_of(stats).current_count == 1);
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
  CHECK(bytes >= 10240);
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 0, &count));
  CHECK(count == 1);
  CHECK_RMM(RMM_ALLOC(&p, 2 * MIB, 0), RMM_ERROR_OUT_OF_MEMORY); /* limited; callback false */
  CHECK(spill.calls == 1);
  CHECK_OK(RMM_FREE(p, 0));
  CHECK(counts_of(stats).current_count == 0);
  CHECK(counts_of(stats).current_bytes == 0);
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
  CHECK(bytes == 0);
  CHECK_OK(rmmTrackingAdaptorGetOutstanding(tracking, NULL, 0, &count));
  CHECK(count == 0);
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  text = rmm_test_read_file(path);
  lines_count = parse_log(text, lines, 8);
  CHECK(lines_count == 2);
  CHECK_STR(lines[0].action, "allocate");
  CHECK_STR(lines[1].action, "free");
  CHECK_STR(lines[0].pointer, lines[1].pointer);
  free(text);

  CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(aligned));
  CHECK_OK(rmmResourceDestroy(prefetch));
  CHECK_OK(rmmResourceDestroy(callback));
  CHECK_OK(rmmResourceDestroy(tracking));
  CHECK_OK(rmmResourceDestroy(limiting));
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK(remove(path) == 0);
}

/* --- contracts of rmm.h that hold for every upstream ------------------------------------ */

static int contract_failures;

#define CONTRACT(cond, what)                                                         \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: CONTRACT BROKEN: %s (%s)\n", __FILE__, __LINE__, what, \
              #cond);                                                                \
      contract_failures++;                                                           \
    }                                                                                \
  } while (0)

/* rmmResourceDestroy: "The resource itself lives on while anything still uses it: ...
 * allocations not yet freed (they stay valid and rmmFree returns them)". So an adaptor whose
 * handle was destroyed still sees the rmmFree of its live allocations, and so do the
 * adaptors beneath it, whatever the base resource is. */
static void check_destroyed_adaptor_sees_free(rmmResource_t base, const char *base_name) {
  rmmResource_t limiting = NULL, stats = NULL, logging = NULL;
  void *p = NULL;
  size_t bytes = 1;
  char path[128], message[160];
  struct log_line lines[4];
  char *text;
  int count;

  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, base, 1 * MIB));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, limiting));
  CHECK_OK(rmmResourceAllocate(stats, &p, 4096, 0));
  CHECK_OK(rmmResourceDestroy(stats)); /* the allocation keeps it alive */
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
  CHECK(bytes == 4096);
  CHECK_OK(rmmFree(p, 0, __FILE__, __LINE__));
  CHECK_OK(rmmLimitingAdaptorGetAllocatedBytes(limiting, &bytes));
  snprintf(message, sizeof message,
           "statistics -> limiting -> %s: rmmFree after the statistics handle was destroyed "
           "reaches the limiting adaptor (it still counts %zu bytes)", base_name, bytes);
  CONTRACT(bytes == 0, message);
  CHECK_OK(rmmResourceDestroy(limiting));

  rmm_test_temp_file(path, sizeof path, "destroyed");
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, base, path));
  CHECK_OK(rmmResourceAllocate(logging, &p, 1000, 0));
  CHECK_OK(rmmResourceDestroy(logging)); /* the allocation keeps it alive */
  CHECK_OK(rmmFree(p, 0, __FILE__, __LINE__));
  /* The last use is gone: the adaptor is destroyed now and has written its lines. */
  text = rmm_test_read_file(path);
  count = parse_log(text, lines, 4);
  snprintf(message, sizeof message,
           "logging -> %s: the rmmFree after the logging handle was destroyed is logged "
           "(%d line(s) in the log)", base_name, count);
  CONTRACT(count == 2, message);
  if (count == 2) EXPECT_LINE(&lines[1], "free", p, 1000, NULL);
  free(text);
  CHECK(remove(path) == 0);
}

/* rmmRealloc: "a new allocation from the same resource". A block RMM_ALLOC made through a
 * statistics adaptor is reallocated through it, even when the current device resource has
 * changed since, whatever is beneath the adaptor. */
static void check_realloc_same_resource(rmmResource_t base, const char *base_name) {
  rmmResource_t stats = NULL, previous = NULL;
  rmmStatistics_t c;
  void *p = NULL;
  char message[160];

  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, base));
  CHECK_OK(rmmSetCurrentDeviceResource(stats, &previous));
  CHECK_OK(RMM_ALLOC(&p, 3000, 0));
  CHECK_OK(rmmSetCurrentDeviceResource(previous, NULL));
  CHECK_OK(RMM_REALLOC(&p, 9000, 0));
  c = counts_of(stats);
  snprintf(message, sizeof message,
           "RMM_REALLOC of a block of statistics -> %s allocates through the statistics adaptor "
           "(it counts %" PRId64 " block(s), %" PRId64 " bytes)",
           base_name, c.current_count, c.current_bytes);
  CONTRACT(c.current_count == 1 && c.current_bytes == 9000 && c.total_count == 2, message);
  CHECK_OK(RMM_FREE(p, 0));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmResourceDestroy(stats));
}

static void check_contracts(rmmResource_t cuda) {
  rmmResource_t pool = NULL;
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  check_destroyed_adaptor_sees_free(cuda, "cuda");
  check_destroyed_adaptor_sees_free(pool, "pool");
  check_realloc_same_resource(cuda, "cuda");
  check_realloc_same_resource(pool, "pool");
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK(contract_failures == 0);
}

int main(void) {
  rmmResource_t cuda = NULL;
  (void)rmm_test_simulated();
  CHECK_OK(rmmCudaResourceCreate(&cuda));

  check_create_errors();
  check_statistics(cuda);
  check_logging(cuda);
  check_limiting(cuda);
  check_tracking(cuda);
  check_failure_callback(cuda);
  check_aligned(cuda);
  check_prefetch(cuda);
  check_stack(cuda);
  check_contracts(cuda); /* last: it reports every broken contract before failing */

  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("adaptors");
}
