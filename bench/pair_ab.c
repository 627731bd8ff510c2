// A/B comparison of builds of librmm.so on one host, in one process: each build is dlopen'ed
// privately (RTLD_LOCAL | RTLD_DEEPBIND, so each keeps its own globals), and the builds take
// turns many times, a short batch of 256-byte allocate+free pairs each. A host's speed drifts
// in spells of seconds, more than a small change to the library moves a pair; builds that
// alternate every few milliseconds see the same spells, so the ratio of one build's batch to
// the first build's batch of the same turn is precise where separate processes are not.
//
//   pair_ab LIB.so [LIB.so ...]      (scripts/gpu-pair-ab.sh runs it; also works on RMM_SIM_DEVICES)
//
// Cases per build: a pool through rmmResourceAllocate/rmmResourceDeallocate on the NULL stream
// and on a stream from rmmStreamCreate, and RMM_ALLOC/RMM_FREE (rmmAlloc/rmmFree) with that
// pool as the device's resource (PAIRS=0: none of these); with THREADS=n, n threads at once, each on a stream of
// its own, churning 64 live blocks of log-uniform sizes from 256 B to 1 MiB (a free and an
// allocation a step, as bench/workloads.hpp's `threaded`), timed as ns per allocation in
// aggregate. The threads' streams come from the driver (cuStreamCreate: streams the library
// was not told of, as a program's own) where libcuda is found, else from each build's
// rmmStreamCreate. ROUNDS (default 400) turns, PAIRS (default 20000) pairs a batch, STEPS
// (default 2000) churn steps per thread a batch. Prints, per case and build, the median ns and
// the median and quartiles of its ratio to the first build over the turns. Giving the same
// file twice measures how far two identical builds differ (which should be about 1.000).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmm.h"

enum { MAX_BUILDS = 8, MAX_THREADS = 64, LIVE = 64, PAIR_CASES = 3 };
static const char* const CASE_NAMES[PAIR_CASES + 1] = {"pool pair, NULL stream", "pool pair, created stream",
                                                       "RMM_ALLOC pair, NULL stream", "threads on streams of their own, churn"};

struct Build {
  const char* path;
  rmmError_t (*cuda_create)(rmmResource_t*);
  rmmError_t (*pool_create)(rmmResource_t*, rmmResource_t, size_t, size_t);
  rmmError_t (*allocate)(rmmResource_t, void**, size_t, cudaStream_t);
  rmmError_t (*deallocate)(rmmResource_t, void*, size_t, cudaStream_t);
  rmmError_t (*alloc)(void**, size_t, cudaStream_t, const char*, unsigned int);
  rmmError_t (*free)(void*, cudaStream_t, const char*, unsigned int);
  rmmError_t (*set_current)(rmmResource_t, rmmResource_t*);
  rmmError_t (*stream_create)(cudaStream_t*);
  const char* (*message)(void);
  rmmResource_t pool;
  cudaStream_t stream;
};

static void* must_find(void* lib, const char* path, const char* name) {
  void* symbol = dlsym(lib, name);
  if (symbol == NULL) {
    fprintf(stderr, "pair_ab: %s has no %s\n", path, name);
    exit(1);
  }
  return symbol;
}

static void check(const struct Build* b, rmmError_t error, const char* what) {
  if (error != RMM_SUCCESS) {
    fprintf(stderr, "pair_ab: %s: %s: %s\n", b->path, what, b->message());
    exit(1);
  }
}

static void load(struct Build* b, const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (lib == NULL) {
    fprintf(stderr, "pair_ab: %s\n", dlerror());
    exit(1);
  }
  b->path = path;
  // dlsym answers void*; POSIX guarantees it converts to a function pointer.
  *(void**)&b->cuda_create = must_find(lib, path, "rmmCudaResourceCreate");
  *(void**)&b->pool_create = must_find(lib, path, "rmmPoolResourceCreate");
  *(void**)&b->allocate = must_find(lib, path, "rmmResourceAllocate");
  *(void**)&b->deallocate = must_find(lib, path, "rmmResourceDeallocate");
  *(void**)&b->alloc = must_find(lib, path, "rmmAlloc");
  *(void**)&b->free = must_find(lib, path, "rmmFree");
  *(void**)&b->set_current = must_find(lib, path, "rmmSetCurrentDeviceResource");
  *(void**)&b->stream_create = must_find(lib, path, "rmmStreamCreate");
  *(void**)&b->message = must_find(lib, path, "rmmGetLastErrorMessage");
  rmmResource_t cuda;
  check(b, b->cuda_create(&cuda), "rmmCudaResourceCreate");
  check(b, b->pool_create(&b->pool, cuda, (size_t)64 << 20, 0), "rmmPoolResourceCreate");
  check(b, b->set_current(b->pool, NULL), "rmmSetCurrentDeviceResource");
  check(b, b->stream_create(&b->stream), "rmmStreamCreate");
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

// ns per pair of one batch of `pairs` pairs of case `c` through build `b`.
static double batch(const struct Build* b, int c, long pairs) {
  void* p = NULL;
  double start = now_ns();
  for (long i = 0; i < pairs; ++i) {
    switch (c) {
      case 0:
      case 1: {
        cudaStream_t stream = c == 0 ? NULL : b->stream;
        check(b, b->allocate(b->pool, &p, 256, stream), "rmmResourceAllocate");
        check(b, b->deallocate(b->pool, p, 256, stream), "rmmResourceDeallocate");
        break;
      }
      default:
        check(b, b->alloc(&p, 256, NULL, __FILE__, __LINE__), "rmmAlloc");
        check(b, b->free(p, NULL, __FILE__, __LINE__), "rmmFree");
    }
  }
  return (now_ns() - start) / (double)pairs;
}

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

// The value at fraction `q` of the sorted `values` (sorts them).
static double quantile(double* values, int n, double q) {
  qsort(values, (size_t)n, sizeof *values, by_value);
  return values[(int)(q * (n - 1) + 0.5)];
}

// The driver's own streams, for the threads case: what a program makes with cudaStreamCreate.
static struct {
  int (*stream_create)(void**, unsigned);
  int (*ctx_set_current)(void*);
  void* context;
} driver;

static int load_driver(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL || getenv("RMM_SIM_DEVICES") != NULL) return 0;
  int (*init)(unsigned) = NULL;
  int (*device_get)(int*, int) = NULL;
  int (*retain)(void**, int) = NULL;
  *(void**)&init = dlsym(lib, "cuInit");
  *(void**)&device_get = dlsym(lib, "cuDeviceGet");
  *(void**)&retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&driver.ctx_set_current = dlsym(lib, "cuCtxSetCurrent");
  *(void**)&driver.stream_create = dlsym(lib, "cuStreamCreate");
  int device = 0;
  return init && device_get && retain && driver.ctx_set_current && driver.stream_create && init(0) == 0 &&
         device_get(&device, 0) == 0 && retain(&driver.context, device) == 0 && driver.ctx_set_current(driver.context) == 0;
}

static uint64_t next_random(uint64_t* state) {  // xorshift64*
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1Dull;
}

static size_t log_uniform_size(uint64_t* state) {  // 256 B .. 1 MiB
  double u = (double)(next_random(state) >> 11) * (1.0 / 9007199254740992.0);
  return (size_t)exp(log(256.0) + u * (log(1048576.0) - log(256.0)));
}

struct Churner {
  pthread_t thread;
  int index;
  uint64_t random;
  cudaStream_t streams[MAX_BUILDS];
  void* live[MAX_BUILDS][LIVE];
  size_t sizes[MAX_BUILDS][LIVE];
};

static struct {
  struct Build* builds;
  int threads;
  long steps;
  int build;  // the build of this turn, or -1 to end
  pthread_barrier_t start, done;
  struct Churner churners[MAX_THREADS];
} churn;

static void churn_steps(struct Churner* c, const struct Build* b, int i, long steps) {
  for (long step = 0; step < steps; ++step) {
    int victim = (int)(next_random(&c->random) % LIVE);
    check(b, b->deallocate(b->pool, c->live[i][victim], c->sizes[i][victim], c->streams[i]), "rmmResourceDeallocate");
    c->sizes[i][victim] = log_uniform_size(&c->random);
    check(b, b->allocate(b->pool, &c->live[i][victim], c->sizes[i][victim], c->streams[i]), "rmmResourceAllocate");
  }
}

static void* churner_main(void* arg) {
  struct Churner* c = arg;
  if (driver.context != NULL) driver.ctx_set_current(driver.context);
  for (;;) {
    pthread_barrier_wait(&churn.start);
    int i = churn.build;
    if (i < 0) return NULL;
    churn_steps(c, &churn.builds[i], i, churn.steps);
    pthread_barrier_wait(&churn.done);
  }
}

// Starts the churning threads, each with a stream and 64 live blocks per build.
static void start_churn(struct Build* builds, int count, int threads, long steps) {
  int own_streams = load_driver();
  printf("threads case: %d threads, streams from %s\n", threads, own_streams ? "cuStreamCreate" : "each build's rmmStreamCreate");
  churn.builds = builds;
  churn.threads = threads;
  churn.steps = steps;
  pthread_barrier_init(&churn.start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&churn.done, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; ++t) {
    struct Churner* c = &churn.churners[t];
    c->index = t;
    c->random = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 100) + 1;
    for (int i = 0; i < count; ++i) {
      if (own_streams) {
        if (driver.stream_create((void**)&c->streams[i], 0) != 0) {
          fprintf(stderr, "pair_ab: cuStreamCreate failed\n");
          exit(1);
        }
      } else {
        check(&builds[i], builds[i].stream_create(&c->streams[i]), "rmmStreamCreate");
      }
      for (int k = 0; k < LIVE; ++k) {
        c->sizes[i][k] = log_uniform_size(&c->random);
        check(&builds[i], builds[i].allocate(builds[i].pool, &c->live[i][k], c->sizes[i][k], c->streams[i]), "rmmResourceAllocate");
      }
    }
    if (pthread_create(&c->thread, NULL, churner_main, c) != 0) {
      fprintf(stderr, "pair_ab: pthread_create failed\n");
      exit(1);
    }
  }
}

// ns per allocation, in aggregate, of one batch of every thread's churn through build `i`.
static double churn_batch(int i) {
  churn.build = i;
  double start = now_ns();
  pthread_barrier_wait(&churn.start);
  pthread_barrier_wait(&churn.done);
  return (now_ns() - start) / (double)(churn.steps * churn.threads);
}

static void stop_churn(void) {
  churn.build = -1;
  pthread_barrier_wait(&churn.start);
  for (int t = 0; t < churn.threads; ++t) pthread_join(churn.churners[t].thread, NULL);
}

static void pin_to_first_allowed_cpu(void) {
  cpu_set_t allowed, one;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) return;
  }
}

int main(int argc, char** argv) {
  int builds = argc - 1;
  if (builds < 1 || builds > MAX_BUILDS) {
    fprintf(stderr, "usage: %s LIB.so [LIB.so ...] (at most %d)\n", argv[0], MAX_BUILDS);
    return 2;
  }
  int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 400;
  long pairs = getenv("PAIRS") ? atol(getenv("PAIRS")) : 20000;
  int threads = getenv("THREADS") ? atoi(getenv("THREADS")) : 0;
  long steps = getenv("STEPS") ? atol(getenv("STEPS")) : 2000;
  if (rounds < 4 || pairs < 0 || threads < 0 || threads > MAX_THREADS || steps < 1 || (pairs == 0 && threads == 0)) {
    fprintf(stderr, "pair_ab: ROUNDS must be at least 4, STEPS at least 1, THREADS at most %d, and PAIRS or THREADS above 0\n",
            MAX_THREADS);
    return 2;
  }
  // The pairs and the threads run in separate processes (scripts/gpu-pair-ab.sh): 16 idle
  // threads made the pairs of identical builds differ by a third on the H200.
  const int first_case = pairs > 0 ? 0 : PAIR_CASES, cases = PAIR_CASES + (threads > 0);
  static struct Build b[MAX_BUILDS];
  for (int i = 0; i < builds; ++i) load(&b[i], argv[i + 1]);
  // The churning threads start unpinned (they spread over the processors); then this thread
  // pins itself for the pairs.
  if (threads > 0) start_churn(b, builds, threads, steps);
  pin_to_first_allowed_cpu();
  double* ns = calloc((size_t)rounds * builds * cases, sizeof *ns);
  double* scratch = calloc((size_t)rounds, sizeof *scratch);
  if (ns == NULL || scratch == NULL) return 1;
#define AT(r, i, c) ns[((size_t)(r) * builds + (i)) * cases + (c)]
  for (int i = 0; i < builds; ++i) {  // warm-up: pools grown, caches filled
    for (int c = first_case; c < PAIR_CASES; ++c) batch(&b[i], c, pairs);
    if (threads > 0) churn_batch(i);
  }
  for (int r = 0; r < rounds; ++r) {
    for (int c = first_case; c < cases; ++c) {
      for (int k = 0; k < builds; ++k) {
        int i = (r + k) % builds;  // each build goes first as often as the others
        AT(r, i, c) = c < PAIR_CASES ? batch(&b[i], c, pairs) : churn_batch(i);
      }
    }
  }
  if (threads > 0) stop_churn();
  printf("%d turns of %ld pairs; ratio = build / first build in the same turn\n", rounds, pairs);
  for (int c = first_case; c < cases; ++c) {
    printf("%s\n", CASE_NAMES[c]);
    for (int i = 0; i < builds; ++i) {
      for (int r = 0; r < rounds; ++r) scratch[r] = AT(r, i, c);
      double median_ns = quantile(scratch, rounds, 0.5), fastest = scratch[0];
      for (int r = 0; r < rounds; ++r) scratch[r] = AT(r, i, c) / AT(r, 0, c);
      const char* name = strrchr(b[i].path, '/') ? strrchr(b[i].path, '/') + 1 : b[i].path;
      printf("  %-28s %7.2f ns (fastest %6.2f)  ratio %.4f (quartiles %.4f .. %.4f)\n", name, median_ns, fastest,
             quantile(scratch, rounds, 0.5), quantile(scratch, rounds, 0.25), quantile(scratch, rounds, 0.75));
    }
  }
  free(scratch);
  free(ns);
  return 0;
}
