/* JSON snapshots of resource stacks: rmmResourceGetSnapshot (length query, copy, buffer too
 * small, bad input) and rmmResourceWriteSnapshot (same text plus a newline, bad paths), over
 * statistics -> pool -> cuda with live blocks, and over the other suballocators and
 * adaptors. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>

#include "rmm_test_files.h"

#define MIB ((size_t)1 << 20)

/* The snapshot as a C string (malloc'ed), through a length query and a copy. */
static char *snapshot_of(rmmResource_t resource) {
  size_t length = (size_t)-1, again = (size_t)-1;
  char *text;
  CHECK_OK(rmmResourceGetSnapshot(resource, NULL, 0, &length));
  CHECK(length > 0 && length != (size_t)-1);
  text = (char *)malloc(length + 2);
  CHECK(text != NULL);
  memset(text, 'X', length + 2);
  CHECK_OK(rmmResourceGetSnapshot(resource, text, length + 1, &again));
  CHECK(again == length);
  CHECK(strlen(text) == length);
  CHECK(text[length + 1] == 'X');
  return text;
}

static int occurrences(const char *text, const char *what) {
  int count = 0;
  const char *at = text;
  while ((at = strstr(at, what)) != NULL) {
    ++count;
    at += strlen(what);
  }
  return count;
}

static void expect_contains(const char *file, int line, const char *text, const char *what) {
  if (strstr(text, what) == NULL) {
    fprintf(stderr, "%s:%d: the snapshot lacks %s:\n%s\n", file, line, what, text);
    rmm_test_fail(file, line, "snapshot contents");
  }
}

#define EXPECT_CONTAINS(text, what) expect_contains(__FILE__, __LINE__, (text), (what))

static void expect_address(const char *file, int line, const char *text, const void *ptr) {
  char hex[32];
  snprintf(hex, sizeof hex, "\"0x%" PRIxPTR "\"", (uintptr_t)ptr);
  expect_contains(file, line, text, hex);
}

#define EXPECT_ADDRESS(text, ptr) expect_address(__FILE__, __LINE__, (text), (ptr))

static void check_stack(rmmResource_t cuda) {
  rmmResource_t pool = NULL, stats = NULL, dead = NULL;
  void *a = NULL, *b = NULL, *c = NULL;
  cudaStream_t stream = NULL;
  char *text, *file_text, *small, path[128];
  size_t length = 0, other = 77;

  CHECK_OK(rmmStreamCreate(&stream));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 4 * MIB, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&stats, pool));
  CHECK_OK(rmmResourceAllocate(stats, &a, 1000, 0));
  CHECK_OK(rmmResourceAllocate(stats, &b, 70000, 0));
  CHECK_OK(rmmResourceAllocate(stats, &c, 5000, stream));

  text = snapshot_of(stats);
  length = strlen(text);
  EXPECT_CONTAINS(text, "\"resource\": \"statistics\"");
  EXPECT_CONTAINS(text, "\"resource\": \"pool\"");
  EXPECT_CONTAINS(text, "\"resource\": \"cuda\"");
  EXPECT_CONTAINS(text, "\"upstream\"");
  CHECK(occurrences(text, "\"upstream\"") == 2); /* statistics -> pool -> cuda */
  EXPECT_CONTAINS(text, "\"reserved_bytes\"");
  EXPECT_CONTAINS(text, "\"used_bytes\"");
  EXPECT_CONTAINS(text, "\"free_bytes\"");
  EXPECT_CONTAINS(text, "\"largest_free_block\"");
  EXPECT_CONTAINS(text, "\"fragmentation\"");
  EXPECT_CONTAINS(text, "\"chunks\"");
  EXPECT_CONTAINS(text, "\"blocks\"");
  EXPECT_CONTAINS(text, "76000"); /* the statistics: 1000 + 70000 + 5000 bytes live */
  EXPECT_ADDRESS(text, a);
  EXPECT_ADDRESS(text, b);
  EXPECT_ADDRESS(text, c);
  /* Starts and ends as one JSON object. */
  CHECK(text[0] == '{');
  CHECK(text[length - 1] == '}');

  /* The pool alone: no statistics, one upstream. */
  {
    char *pool_text = snapshot_of(pool);
    CHECK(strstr(pool_text, "\"resource\": \"statistics\"") == NULL);
    EXPECT_CONTAINS(pool_text, "\"resource\": \"pool\"");
    CHECK(occurrences(pool_text, "\"upstream\"") == 1);
    EXPECT_ADDRESS(pool_text, b);
    free(pool_text);
  }

  /* A buffer too small (no room for the NUL): refused, nothing written. */
  small = (char *)malloc(length + 1);
  CHECK(small != NULL);
  memset(small, 'X', length + 1);
  CHECK_RMM(rmmResourceGetSnapshot(stats, small, length, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(small[0] == 'X' && small[length - 1] == 'X' && small[length] == 'X');
  CHECK_RMM(rmmResourceGetSnapshot(stats, small, 1, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(small[0] == 'X');
  CHECK_RMM(rmmResourceGetSnapshot(stats, small, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(small[0] == 'X');
  /* Both buffer and length NULL. */
  CHECK_RMM(rmmResourceGetSnapshot(stats, NULL, 0, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceGetSnapshot(stats, NULL, 100, NULL), RMM_ERROR_INVALID_ARGUMENT);
  free(small);
  /* A buffer and no length: the text. */
  small = (char *)malloc(length + 1);
  CHECK(small != NULL);
  CHECK_OK(rmmResourceGetSnapshot(stats, small, length + 1, NULL));
  CHECK_STR(small, text);
  free(small);

  /* rmmResourceWriteSnapshot: the same text and a newline. */
  rmm_test_temp_file(path, sizeof path, "snapshot");
  CHECK_OK(rmmResourceWriteSnapshot(stats, path));
  file_text = rmm_test_read_file(path);
  CHECK(file_text != NULL);
  CHECK(strlen(file_text) == length + 1);
  CHECK(strncmp(file_text, text, length) == 0);
  CHECK(file_text[length] == '\n');
  free(file_text);
  CHECK_RMM(rmmResourceWriteSnapshot(stats, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmResourceWriteSnapshot(stats, "/nonexistent-dir/x.json"), RMM_ERROR_IO);

  /* After the frees the blocks are no longer used. */
  CHECK(occurrences(text, "\"used\"") == 3);
  free(text);
  CHECK_OK(rmmFree(a, 0, __FILE__, __LINE__));
  CHECK_OK(rmmResourceDeallocate(stats, b, 70000, 0));
  CHECK_OK(rmmFree(c, stream, __FILE__, __LINE__));
  text = snapshot_of(stats);
  CHECK(occurrences(text, "\"used\"") == 0);
  EXPECT_CONTAINS(text, "\"free\"");
  /* Written again over the same file: replaced, not appended. */
  CHECK_OK(rmmResourceWriteSnapshot(stats, path));
  file_text = rmm_test_read_file(path);
  CHECK(file_text != NULL);
  CHECK(strlen(file_text) == strlen(text) + 1);
  CHECK(strncmp(file_text, text, strlen(text)) == 0);
  free(file_text);
  free(text);
  CHECK(remove(path) == 0);

  /* Invalid handles. */
  CHECK_RMM(rmmResourceGetSnapshot(NULL, NULL, 0, &other), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceWriteSnapshot(NULL, "/tmp/rmm-test-snapshot-never.json"),
            RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmCudaResourceCreate(&dead));
  CHECK_OK(rmmResourceDestroy(dead));
  CHECK_RMM(rmmResourceGetSnapshot(dead, NULL, 0, &other), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmResourceWriteSnapshot(dead, "/tmp/rmm-test-snapshot-never.json"),
            RMM_ERROR_INVALID_HANDLE);
  CHECK(other == 77);
  CHECK_RMM(rmmResourceGetSnapshot((rmmResource_t)(uintptr_t)0x1234, NULL, 0, &other),
            RMM_ERROR_INVALID_HANDLE);
  (void)remove("/tmp/rmm-test-snapshot-never.json");

  CHECK_OK(rmmResourceDestroy(stats));
  CHECK_RMM(rmmResourceGetSnapshot(stats, NULL, 0, &other), RMM_ERROR_INVALID_HANDLE);
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
}

static bool no_retry(size_t bytes, void *arg) {
  (void)bytes;
  (void)arg;
  return false;
}

/* Every other suballocator and adaptor describes itself and nests its upstream. */
static void check_kinds(rmmResource_t cuda) {
  rmmResource_t arena = NULL, binning = NULL, fixed = NULL, limiting = NULL, tracking = NULL,
                callback = NULL, aligned = NULL, prefetch = NULL, logging = NULL;
  void *p = NULL, *q = NULL, *r = NULL;
  char *text, path[128];

  CHECK_OK(rmmArenaResourceCreate(&arena, cuda, 8 * MIB));
  CHECK_OK(rmmResourceAllocate(arena, &p, 4096, 0));
  text = snapshot_of(arena);
  EXPECT_CONTAINS(text, "\"resource\": \"arena\"");
  EXPECT_CONTAINS(text, "\"resource\": \"cuda\"");
  EXPECT_CONTAINS(text, "\"largest_free_block\"");
  EXPECT_CONTAINS(text, "\"chunks\"");
  free(text);
  CHECK_OK(rmmFree(p, 0, __FILE__, __LINE__));

  CHECK_OK(rmmFixedSizeResourceCreate(&fixed, cuda, 65536, 4));
  CHECK_OK(rmmResourceAllocate(fixed, &q, 1000, 0));
  text = snapshot_of(fixed);
  EXPECT_CONTAINS(text, "\"resource\": \"fixed_size\"");
  EXPECT_CONTAINS(text, "\"chunks\"");
  EXPECT_ADDRESS(text, q);
  free(text);
  CHECK_OK(rmmFree(q, 0, __FILE__, __LINE__));

  CHECK_OK(rmmBinningResourceCreate(&binning, arena, 8, 12));
  text = snapshot_of(binning);
  EXPECT_CONTAINS(text, "\"resource\": \"binning\"");
  EXPECT_CONTAINS(text, "\"resource\": \"arena\"");
  free(text);

  /* logging -> limiting -> tracking -> failure_callback -> aligned -> prefetch -> binning */
  rmm_test_temp_file(path, sizeof path, "snapshot");
  CHECK_OK(rmmPrefetchAdaptorCreate(&prefetch, binning));
  CHECK_OK(rmmAlignedAdaptorCreate(&aligned, prefetch, 4096, 65536));
  CHECK_OK(rmmFailureCallbackAdaptorCreate(&callback, aligned, no_retry, NULL));
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, callback, false));
  CHECK_OK(rmmLimitingAdaptorCreate(&limiting, tracking, 16 * MIB));
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, limiting, path));
  CHECK_OK(rmmResourceAllocate(logging, &r, 100000, 0));
  text = snapshot_of(logging);
  EXPECT_CONTAINS(text, "\"resource\": \"logging\"");
  EXPECT_CONTAINS(text, "\"resource\": \"limiting\"");
  EXPECT_CONTAINS(text, "\"resource\": \"tracking\"");
  EXPECT_CONTAINS(text, "\"resource\": \"failure_callback\"");
  EXPECT_CONTAINS(text, "\"resource\": \"aligned\"");
  EXPECT_CONTAINS(text, "\"resource\": \"prefetch\"");
  EXPECT_CONTAINS(text, "\"resource\": \"binning\"");
  EXPECT_CONTAINS(text, "\"resource\": \"arena\"");
  EXPECT_CONTAINS(text, "\"resource\": \"cuda\"");
  CHECK(occurrences(text, "\"upstream\"") >= 8); /* bins and arenas nest theirs too */
  EXPECT_CONTAINS(text, "16777216"); /* the limit */
  EXPECT_ADDRESS(text, r);           /* the tracking adaptor's outstanding allocation */
  free(text);
  CHECK_OK(rmmFree(r, 0, __FILE__, __LINE__));

  CHECK_OK(rmmResourceDestroy(logging));
  CHECK_OK(rmmResourceDestroy(limiting));
  CHECK_OK(rmmResourceDestroy(tracking));
  CHECK_OK(rmmResourceDestroy(callback));
  CHECK_OK(rmmResourceDestroy(aligned));
  CHECK_OK(rmmResourceDestroy(prefetch));
  CHECK_OK(rmmResourceDestroy(binning));
  CHECK_OK(rmmResourceDestroy(fixed));
  CHECK_OK(rmmResourceDestroy(arena));
  CHECK(remove(path) == 0);
}

int main(void) {
  rmmResource_t cuda = NULL;
  char *text;
  (void)rmm_test_simulated();
  CHECK_OK(rmmCudaResourceCreate(&cuda));

  text = snapshot_of(cuda);
  EXPECT_CONTAINS(text, "\"resource\": \"cuda\"");
  CHECK(strstr(text, "\"upstream\"") == NULL);
  free(text);

  check_stack(cuda);
  check_kinds(cuda);

  CHECK_OK(rmmResourceDestroy(cuda));
  return rmm_test_finish("snapshot");
}
