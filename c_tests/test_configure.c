/* rmmConfigure (the RMM_ALLOC_CONF string), rmmGetReport and rmmPoolResourceGetFree: a bad
 * string changes nothing; a good one gives each device a stack on first use, whose figures
 * the report shows. */
#define _POSIX_C_SOURCE 200809L
#include "rmm_test.h"

#define MIB ((size_t)1 << 20)

/* rmmParseSize: the one reading of sizes (the spec's, too): SI units are powers of 1000,
 * binary units powers of 1024; a letter alone is ambiguous. */
static void parse_sizes(void) {
  size_t bytes = 7;
  CHECK_OK(rmmParseSize(&bytes, "1GB"));
  CHECK(bytes == 1000000000);
  CHECK_OK(rmmParseSize(&bytes, "1GiB"));
  CHECK(bytes == (size_t)1 << 30);
  CHECK_OK(rmmParseSize(&bytes, " 1.5 kib "));
  CHECK(bytes == 1536);
  CHECK_OK(rmmParseSize(&bytes, "4096"));
  CHECK(bytes == 4096);
  CHECK_RMM(rmmParseSize(&bytes, "4G"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "\"4G\" is not a size: 4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000 bytes)") != NULL);
  CHECK(bytes == 4096); /* unchanged by a failure */
  CHECK_RMM(rmmParseSize(&bytes, "3 parsecs"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "\"parsecs\" is not a unit") != NULL);
  CHECK_RMM(rmmParseSize(&bytes, "17000PiB"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "more than SIZE_MAX") != NULL);
  CHECK_RMM(rmmParseSize(&bytes, ""), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmParseSize(NULL, "1GB"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmParseSize(&bytes, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(bytes == 4096);
}

static char *report_text(void) {
  size_t length = 0;
  char *text = rmm_test_report();
  CHECK_OK(rmmGetReport(NULL, 0, &length));
  CHECK(strlen(text) == length);
  CHECK_RMM(rmmGetReport(text, length, NULL), RMM_ERROR_INVALID_ARGUMENT); /* no room for the NUL */
  return text;
}

int main(void) {
  rmmResource_t current = NULL, cuda = NULL;
  const char *name = NULL;
  size_t reserved = 0, free_bytes = 0;
  void *a = NULL, *b = NULL;
  char *text;

  parse_sizes();

  /* Refused strings change nothing: device 0 still gets the plain cuda resource... later. */
  CHECK_RMM(rmmConfigure("resource:bogus"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "bogus") != NULL);
  CHECK_RMM(rmmConfigure("statistics/pool:initial=lots"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "at column 25 (\"lots\")") != NULL);
  CHECK_RMM(rmmConfigure("initial_pool_size:2GiB,maximum_pool_size:1GiB"), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmConfigure("stats:maybe"), RMM_ERROR_INVALID_ARGUMENT);
  text = report_text();
  CHECK_STR(text, ""); /* nothing configured: no report */
  free(text);

  /* NULL reads RMM_ALLOC_CONF (unset here: the default stack, cuda). */
  CHECK(unsetenv("RMM_ALLOC_CONF") == 0);
  CHECK_OK(rmmConfigure(NULL));
  CHECK_OK(rmmConfigure("resource:pool, initial_pool_size:8MiB, stats:1, report:1"));

  CHECK_OK(RMM_ALLOC(&a, 3 * MIB, 0));
  CHECK_OK(RMM_ALLOC(&b, 1000, 0));
  CHECK_OK(rmmGetCurrentDeviceResource(&current));
  CHECK_OK(rmmResourceGetName(current, &name));
  CHECK_STR(name, "statistics");
  CHECK_OK(rmmPoolResourceGetSize(current, &reserved));
  CHECK(reserved == 8 * MIB);
  CHECK_OK(rmmPoolResourceGetFree(current, &free_bytes));
  CHECK(free_bytes == 8 * MIB - 3 * MIB - 1024); /* 1000 bytes take 1024 */
  CHECK_RMM(rmmPoolResourceGetFree(current, NULL), RMM_ERROR_INVALID_ARGUMENT);

  text = report_text();
  CHECK(strstr(text, "device 0: pool resource, 8.0 MiB reserved from the device (peak 8.0 MiB), 3.0 MiB in use (peak 3.0 MiB)") != NULL);
  CHECK(strstr(text, "largest free block 5.0 MiB, fragmentation 62.5% (1 - in use / reserved)") != NULL);
  CHECK(strstr(text, "2 allocations") != NULL);
  CHECK(strstr(text, "    free but held: default 5.0 MiB\n") != NULL); /* by stream and lane */
  CHECK(strstr(text, "2 allocation(s), 3146728 bytes, outstanding") != NULL);
  free(text);

  CHECK_OK(RMM_FREE(a, 0));
  CHECK_OK(RMM_FREE(b, 0));
  text = report_text();
  CHECK(strstr(text, "0 B in 0 allocations live now") != NULL);
  CHECK(strstr(text, "outstanding") == NULL);
  /* Nothing in use: every free block counts (parked ones too), and no fragmentation figure. */
  CHECK(strstr(text, "0 B in use (peak 3.0 MiB), largest free block 8.0 MiB\n") != NULL);
  CHECK(strstr(text, "fragmentation") == NULL);
  CHECK(strstr(text, "    free but held: default 8.0 MiB\n") != NULL);
  CHECK(strstr(text, "frees waiting") == NULL); /* no async_free */
  free(text);

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_RMM(rmmPoolResourceGetFree(cuda, &free_bytes), RMM_ERROR_NOT_SUPPORTED);
  CHECK_OK(rmmResourceDestroy(cuda));
  /* The configured stack lives to the end of the process: its pool gives its memory back here,
   * or the sanitizer's leak check would count it. */
  CHECK_OK(rmmResourceRelease(current, &free_bytes));
  CHECK(free_bytes == 8 * MIB);
  CHECK_OK(rmmResourceDestroy(current));
  return rmm_test_finish("configure");
}
