/* Frees from the places a process tears itself down: a pthread-key destructor (which runs
 * after the thread's other thread-locals, rmm's included, are gone), atexit handlers that run
 * before and after rmm's own exit hook, and a forked child of a process using rmm (also of one
 * that logs). Each case runs in a child process of its own, so that an abort, a hang or a
 * wrong exit code shows as that case failing. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rmm_test.h"
#include "rmm_test_files.h"

#define BYTES 4096

/* Exit codes of a case's child process besides 0 (passed) and 1 (a CHECK failed). */
enum { FREE_FAILED = 3 };

static bool simulated;
static rmmResource_t pool, statistics;
static cudaStream_t stream;

/* A free on a thread whose thread-locals are gone, or in a forked child on a real GPU, must
 * still answer with a code. On simulated devices it must succeed. */
static bool acceptable(rmmError_t status) {
  return status == RMM_SUCCESS || (!simulated && status == RMM_ERROR_CUDA_ERROR);
}

/* A pool with a statistics adaptor over it as the current device's resource, and a stream:
 * the frees below reach the thread-locals of the boundary, the per-device registry, the
 * pool's per-stream cache and the adaptor's per-thread counters. */
static void setup(void) {
  rmmResource_t cuda;
  simulated = rmm_test_simulated();
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 1 << 20, 0));
  CHECK_OK(rmmStatisticsAdaptorCreate(&statistics, pool));
  CHECK_OK(rmmSetCurrentDeviceResource(statistics, NULL));
  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmStreamCreate(&stream));
}

/* --- a pthread-key destructor ------------------------------------------------------------- */

struct thread_blocks {
  void *from_alloc;
  void *from_resource;
};

static pthread_key_t key;
static volatile int destructor_ran;
static volatile rmmError_t destructor_status[3];

static void free_at_thread_exit(void *value) {
  struct thread_blocks *blocks = value;
  destructor_status[0] = RMM_FREE(blocks->from_alloc, stream);
  destructor_status[1] = rmmResourceDeallocate(pool, blocks->from_resource, BYTES, stream);
  /* A bad free there is refused as anywhere else, with a message kept or not. */
  destructor_status[2] = RMM_FREE(blocks->from_alloc, stream);
  destructor_ran = 1;
}

static void *allocating_thread(void *unused) {
  static struct thread_blocks blocks;
  void *extra = NULL;
  (void)unused;
  CHECK_OK(RMM_ALLOC(&blocks.from_alloc, BYTES, stream));
  CHECK_OK(rmmResourceAllocate(pool, &blocks.from_resource, BYTES, stream));
  /* Touches what the key destructor touches again once the thread's thread-locals are
   * destroyed: a failed call's message, a free's per-thread counters. */
  CHECK_RMM(RMM_FREE((void *)(uintptr_t)0x1000, stream), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_OK(RMM_ALLOC(&extra, BYTES, stream));
  CHECK_OK(RMM_FREE(extra, stream));
  CHECK(pthread_setspecific(key, &blocks) == 0);
  return NULL;
}

static int free_from_key_destructor(void) {
  pthread_t thread;
  setup();
  CHECK(pthread_key_create(&key, free_at_thread_exit) == 0);
  CHECK(pthread_create(&thread, NULL, allocating_thread, NULL) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(destructor_ran);
  CHECK(acceptable(destructor_status[0]));
  CHECK(acceptable(destructor_status[1]));
  CHECK(destructor_status[2] == RMM_ERROR_INVALID_ARGUMENT);
  /* The memory went back to the pool: the process can go on using it. */
  {
    size_t size = 0, free_bytes = 0;
    CHECK_OK(rmmPoolResourceGetSize(pool, &size));
    CHECK_OK(rmmPoolResourceGetFree(pool, &free_bytes));
    CHECK(free_bytes == size);
  }
  {
    rmmStatistics_t counts;
    CHECK_OK(rmmStatisticsAdaptorGetCounts(statistics, &counts));
    CHECK(counts.current_count == 0 && counts.total_count == 2);
  }
  CHECK_OK(rmmResourceDestroy(statistics));
  CHECK_OK(rmmResourceDestroy(pool));
  return 0;
}

/* --- atexit handlers ---------------------------------------------------------------------- */

static void *live_block;
static void *live_resource_block;

static void free_at_exit(void) {
  if (!acceptable(RMM_FREE(live_block, 0)) || !acceptable(rmmResourceDeallocate(pool, live_resource_block, BYTES, 0))) {
    fprintf(stderr, "a free from an atexit handler failed: %s\n", rmmGetLastErrorMessage());
    _exit(FREE_FAILED);
  }
  if (RMM_FREE(live_block, 0) != RMM_ERROR_INVALID_ARGUMENT) _exit(FREE_FAILED);
}

/* `first`: the handler is registered before rmm's first call, so it runs after rmm's exit
 * hook; otherwise before it. */
static int free_from_atexit(bool first) {
  if (first) CHECK(atexit(free_at_exit) == 0);
  setup();
  CHECK_OK(RMM_ALLOC(&live_block, BYTES, 0));
  CHECK_OK(rmmResourceAllocate(pool, &live_resource_block, BYTES, 0));
  if (!first) CHECK(atexit(free_at_exit) == 0);
  exit(0);
}

/* --- a forked child ----------------------------------------------------------------------- */

static int free_in_forked_child(void) {
  void *parents = NULL;
  pid_t child;
  int status = 0;
  setup();
  CHECK_OK(RMM_ALLOC(&parents, BYTES, 0));
  child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    void *own = NULL;
    rmmError_t freed = RMM_FREE(parents, 0);
    rmmError_t allocated = RMM_ALLOC(&own, BYTES, 0);
    bool ok = acceptable(freed) && acceptable(allocated);
    if (allocated == RMM_SUCCESS) ok = ok && acceptable(RMM_FREE(own, 0));
    _exit(ok ? 0 : FREE_FAILED);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* The parent's own record is untouched by the child's free. */
  CHECK_OK(RMM_FREE(parents, 0));
  CHECK_OK(rmmResourceDestroy(statistics));
  CHECK_OK(rmmResourceDestroy(pool));
  return 0;
}

/* --- a forked child of a process that logs --------------------------------------------------- */

/* A child that leaves with exit(), to run rmm's exit hook, would have LeakSanitizer (in the
 * sanitizer builds) report what the parent's other threads hold, which the child cannot
 * free: leak checking is off in that child, through LeakSanitizer's own hook. */
static volatile int leaving_forked_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return leaving_forked_child; }

static size_t count_lines(const char *path) {
  char *text = rmm_test_read_file(path);
  size_t lines = 0;
  CHECK(text != NULL);
  for (const char *c = text; *c; ++c) lines += *c == '\n';
  free(text);
  return lines;
}

/* The log's writer thread is the parent's: the child neither writes the events it inherited
 * (the parent does, once) nor logs its own, and its flush and its exit do not wait for a
 * writer it does not have. Nor does its exit report the parent's live blocks as its leaks. */
static int log_in_forked_child(void) {
  char path[128], child_stderr[128];
  rmmResource_t cuda, logging, tracking;
  void *block = NULL, *parents = NULL;
  pid_t child;
  int status = 0;
  rmm_test_temp_file(path, sizeof path, "fork-log");
  rmm_test_temp_file(child_stderr, sizeof child_stderr, "fork-stderr");
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 1 << 20, 0));
  CHECK_OK(rmmLoggingAdaptorCreate(&logging, pool, path));
  CHECK_OK(rmmTrackingAdaptorCreate(&tracking, pool, false));
  CHECK_OK(rmmResourceAllocate(tracking, &parents, BYTES, 0));
  CHECK_OK(rmmResourceDestroy(cuda));
  for (int i = 0; i < 10; ++i) {
    CHECK_OK(rmmResourceAllocate(logging, &block, BYTES, 0));
    CHECK_OK(rmmResourceDeallocate(logging, block, BYTES, 0));
  }
  child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    alarm(20); /* a hang shows as SIGALRM */
    if (!freopen(child_stderr, "w", stderr)) _exit(FREE_FAILED);
    if (rmmLoggingAdaptorFlush(logging) != RMM_ERROR_IO) _exit(FREE_FAILED);
    if (rmm_test_simulated()) {
      for (int i = 0; i < 5000; ++i) {
        if (rmmResourceAllocate(logging, &block, BYTES, 0) != RMM_SUCCESS) _exit(FREE_FAILED);
        if (rmmResourceDeallocate(logging, block, BYTES, 0) != RMM_SUCCESS) _exit(FREE_FAILED);
      }
    }
    leaving_forked_child = 1;
    exit(0); /* rmm's exit hook flushes every log */
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  {
    char *said = rmm_test_read_file(child_stderr);
    CHECK(said != NULL);
    CHECK(strstr(said, "outstanding") == NULL);
    free(said);
    unlink(child_stderr);
  }
  CHECK_OK(rmmResourceDeallocate(tracking, parents, BYTES, 0));
  CHECK_OK(rmmResourceDestroy(tracking));
  CHECK_OK(rmmResourceAllocate(logging, &block, BYTES, 0));
  CHECK_OK(rmmResourceDeallocate(logging, block, BYTES, 0));
  CHECK_OK(rmmLoggingAdaptorFlush(logging));
  /* The header and the parent's 22 events, each once. */
  CHECK(count_lines(path) == 23);
  CHECK_OK(rmmResourceDestroy(logging));
  CHECK_OK(rmmResourceDestroy(pool));
  unlink(path);
  return 0;
}

/* --- each case in a child process --------------------------------------------------------- */

static void run_case(const char *name, int (*run)(bool), bool argument) {
  pid_t child;
  int status = 0;
  fflush(stdout);
  child = fork();
  CHECK(child >= 0);
  if (child == 0) _exit(run(argument));
  CHECK(waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status)) {
    fprintf(stderr, "%s: killed by signal %d\n", name, WTERMSIG(status));
    exit(1);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "%s: exit code %d\n", name, WEXITSTATUS(status));
    exit(1);
  }
  printf("PASS: %s\n", name);
}

static int key_destructor_case(bool unused) {
  (void)unused;
  return free_from_key_destructor();
}

static int fork_case(bool unused) {
  (void)unused;
  return free_in_forked_child();
}

static int fork_log_case(bool unused) {
  (void)unused;
  return log_in_forked_child();
}

int main(void) {
  /* Nothing of rmm is used before the cases fork: each starts from a fresh process state. */
  run_case("free from a pthread-key destructor", key_destructor_case, false);
  run_case("free from an atexit handler that runs after rmm's exit hook", free_from_atexit, true);
  run_case("free from an atexit handler that runs before rmm's exit hook", free_from_atexit, false);
  run_case("free in a forked child", fork_case, false);
  run_case("a forked child of a process that logs", fork_log_case, false);
  return 0;
}
