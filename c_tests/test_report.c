/* rmmTimelineReportWrite: the memory timeline page of this process, from the log of a logging
 * adaptor over tracking -> pool -> cuda (figures embedded in the page checked against the
 * allocations made here), and its refusals: NULL arguments, no logging adaptor in the stack,
 * a bad spec, a page that cannot be written. */
#define _POSIX_C_SOURCE 200809L

#include "rmm_test_files.h"

#define MIB ((size_t)1 << 20)

static void expect_in_page(const char *file, int line, const char *page, const char *what) {
  if (strstr(page, what) == NULL) {
    fprintf(stderr, "%s:%d: the page lacks %s\n", file, line, what);
    rmm_test_fail(file, line, "page contents");
  }
}

#define EXPECT_IN_PAGE(page, what) expect_in_page(__FILE__, __LINE__, (page), (what))

int main(void) {
  rmmResource_t cuda = NULL, pool = NULL, tracking = NULL, logging = NULL;
  void *big = NULL, *middle = NULL, *small = NULL;
  char log_path[128], page_path[128], *page;
  (void)rmm_test_simulated();
  rmm_test_temp_file(log_path, sizeof log_path, "report-log");
  rmm_test_temp_file(page_path, sizeof page_path, "report-page");

  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 0, 0));
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, pool, false));
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, tracking, log_path));

  /* Without a logging adaptor there is no log to report on. */
  CHECK_RMM(rmmTimelineReportWrite(pool, NULL, page_path), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "no logging adaptor") != NULL);

  CHECK_OK(rmmResourceAllocate(logging, &big, 8 * MIB, NULL));
  CHECK_OK(rmmResourceAllocate(logging, &middle, 2 * MIB, NULL));
  CHECK_OK(rmmResourceDeallocate(logging, middle, 2 * MIB, NULL));
  CHECK_OK(rmmResourceAllocate(logging, &small, 1 * MIB, NULL));

  /* The log is flushed by the call: the page has the peak of 10 MiB and what was live then. */
  CHECK_OK(rmmTimelineReportWrite(logging, NULL, page_path));
  page = rmm_test_read_file(page_path);
  CHECK(page != NULL);
  EXPECT_IN_PAGE(page, "<!DOCTYPE html>");
  EXPECT_IN_PAGE(page, "\"live_bytes\":10485760");
  EXPECT_IN_PAGE(page, "\"live_allocations\":2");
  EXPECT_IN_PAGE(page, "\"size\":8388608");
  EXPECT_IN_PAGE(page, "\"events\":4");
  EXPECT_IN_PAGE(page, "\"spec\":\"pool\"");
  EXPECT_IN_PAGE(page, "default-src 'none'");
  CHECK(strstr(page, "https://") == NULL && strstr(page, "http://") == NULL);
  free(page);

  /* Another stack to replay against. */
  CHECK_OK(rmmTimelineReportWrite(logging, "binning/pool", page_path));
  page = rmm_test_read_file(page_path);
  CHECK(page != NULL);
  EXPECT_IN_PAGE(page, "\"spec\":\"binning/pool\"");
  EXPECT_IN_PAGE(page, "\"live_bytes\":10485760");
  free(page);

  CHECK_RMM(rmmTimelineReportWrite(logging, "pool:initial=lots", page_path), RMM_ERROR_INVALID_ARGUMENT);
  CHECK(strstr(rmmGetLastErrorMessage(), "initial") != NULL);
  CHECK_RMM(rmmTimelineReportWrite(logging, NULL, NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmTimelineReportWrite(NULL, NULL, page_path), RMM_ERROR_INVALID_HANDLE);
  CHECK_RMM(rmmTimelineReportWrite(logging, NULL, "/nonexistent-rmm-dir/page.html"), RMM_ERROR_IO);
  CHECK(strstr(rmmGetLastErrorMessage(), "/nonexistent-rmm-dir/page.html") != NULL);

  CHECK_OK(rmmResourceDeallocate(logging, big, 8 * MIB, NULL));
  CHECK_OK(rmmResourceDeallocate(logging, small, 1 * MIB, NULL));
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK_OK(rmmResourceDestroy(tracking));
  CHECK_OK(rmmResourceDestroy(pool));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK(remove(log_path) == 0);
  CHECK(remove(page_path) == 0);
  return rmm_test_finish("report");
}
