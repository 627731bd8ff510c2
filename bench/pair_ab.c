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
// pool as the device's resource. ROUNDS (default 400) turns, PAIRS (default 20000) pairs a
// batch. Prints, per case and build, the median ns per pair and the median and quartiles of
// its ratio to the first build over the turns. Giving the same file twice measures how far
// two identical builds differ (which should be about 1.000).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmm.h"

enum { MAX_BUILDS = 8, CASES = 3 };
static const char* const CASE_NAMES[CASES] = {"pool pair, NULL stream", "pool pair, created stream", "RMM_ALLOC pair, NULL stream"};

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
  if (rounds < 4 || pairs < 1) {
    fprintf(stderr, "pair_ab: ROUNDS must be at least 4 and PAIRS at least 1\n");
    return 2;
  }
  pin_to_first_allowed_cpu();
  static struct Build b[MAX_BUILDS];
  for (int i = 0; i < builds; ++i) load(&b[i], argv[i + 1]);
  double* ns = calloc((size_t)rounds * builds * CASES, sizeof *ns);
  double* scratch = calloc((size_t)rounds, sizeof *scratch);
  if (ns == NULL || scratch == NULL) return 1;
#define AT(r, i, c) ns[((size_t)(r) * builds + (i)) * CASES + (c)]
  for (int i = 0; i < builds; ++i)
    for (int c = 0; c < CASES; ++c) batch(&b[i], c, pairs);  // warm-up: pools grown, caches filled
  for (int r = 0; r < rounds; ++r) {
    for (int c = 0; c < CASES; ++c) {
      for (int k = 0; k < builds; ++k) {
        int i = (r + k) % builds;  // each build goes first as often as the others
        AT(r, i, c) = batch(&b[i], c, pairs);
      }
    }
  }
  printf("%d turns of %ld pairs; ratio = build / first build in the same turn\n", rounds, pairs);
  for (int c = 0; c < CASES; ++c) {
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
