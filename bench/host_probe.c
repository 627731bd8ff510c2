// What the host CPU charges for the operations an allocation is made of, so benchmark figures
// from different machines can be compared: an atomic compare-exchange, a thread-local access,
// whether membarrier (for rmm-rs's biased locks) is available, the time-stamp counter reads the
// logging adaptor dates its events with (two per allocate+free pair), and rmm-rs's pool pair
// with and without biased locks. Prints one line per figure.
#define _GNU_SOURCE
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "rmm.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static _Thread_local volatile long tls_counter;

// The two ways a lock is entered: a biased owner's plain stores and loads, and a spin lock's
// compare-exchange (released by a plain store).
static struct {
  _Atomic unsigned long owner;
  _Atomic unsigned char inside;
  _Atomic unsigned char locked;
  long value;
} probe_lock = {1, 0, 0, 0};

static int by_value(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(void) {
  enum { N = 20000000 };
  // Half a second of work first: a shared machine's processor may be clocked down when idle.
  for (double until = now_ns() + 5e8; now_ns() < until;) {
  }
  atomic_long word = 0;
  double start = now_ns();
  for (long i = 0; i < N; ++i) {
    long expected = i;
    atomic_compare_exchange_strong(&word, &expected, i + 1);
  }
  printf("host: lock cmpxchg %.2f ns\n", (now_ns() - start) / N);
  volatile long plain = 0;
  start = now_ns();
  for (long i = 0; i < N; ++i) plain = plain + 1;
  printf("host: plain load+store %.2f ns\n", (now_ns() - start) / N);
  start = now_ns();
  for (long i = 0; i < N; ++i) tls_counter = tls_counter + 1;
  printf("host: thread-local load+store %.2f ns\n", (now_ns() - start) / N);
  start = now_ns();
  for (long i = 0; i < N; ++i) {
    atomic_store_explicit(&probe_lock.inside, 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&probe_lock.owner, memory_order_acquire) == 1) probe_lock.value++;
    atomic_store_explicit(&probe_lock.inside, 0, memory_order_release);
  }
  printf("host: biased enter+leave %.2f ns\n", (now_ns() - start) / N);
  start = now_ns();
  for (long i = 0; i < N; ++i) {
    unsigned char expected = 0;
    while (!atomic_compare_exchange_weak_explicit(&probe_lock.locked, &expected, 1, memory_order_acquire, memory_order_relaxed)) expected = 0;
    probe_lock.value++;
    atomic_store_explicit(&probe_lock.locked, 0, memory_order_release);
  }
  printf("host: spin lock+unlock %.2f ns\n", (now_ns() - start) / N);
#if defined(__x86_64__)
  // Each reading feeds the next through `sum`, as an event's reading feeds its record.
  unsigned long long sum = 0;
  start = now_ns();
  for (long i = 0; i < N; ++i) sum += __rdtsc();
  printf("host: rdtsc %.2f ns\n", (now_ns() - start) / N);
  start = now_ns();
  for (long i = 0; i < N; ++i) {
    _mm_lfence();
    sum += __rdtsc();
  }
  printf("host: lfence+rdtsc %.2f ns (checksum %llu)\n", (now_ns() - start) / N, sum & 1);
#endif
  start = now_ns();
  for (long i = 0; i < N / 10; ++i) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
  }
  printf("host: clock_gettime(CLOCK_REALTIME) %.2f ns\n", (now_ns() - start) / (N / 10));
  long query = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  long registered = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
  printf("host: membarrier query %#lx, private expedited registration %s\n", query, registered == 0 ? "ok" : "refused");

  rmmResource_t cuda, pool;
  if (rmmCudaResourceCreate(&cuda) != RMM_SUCCESS || rmmPoolResourceCreate(&pool, cuda, 64 << 20, 0) != RMM_SUCCESS) {
    fprintf(stderr, "host_probe: %s\n", rmmGetLastErrorMessage());
    return 1;
  }
  double rounds[7];
  for (int round = 0; round < 7; ++round) {
    void* p = NULL;
    start = now_ns();
    for (long i = 0; i < N / 10; ++i) {
      rmmResourceAllocate(pool, &p, 256, NULL);
      rmmResourceDeallocate(pool, p, 256, NULL);
    }
    rounds[round] = (now_ns() - start) / (N / 10);
  }
  qsort(rounds, 7, sizeof rounds[0], by_value);
  printf("host: rmm-rs pool pair (RMM_BIASED_LOCKS=%s) %.1f ns (median of 7, %.1f to %.1f)\n",
         getenv("RMM_BIASED_LOCKS") ? getenv("RMM_BIASED_LOCKS") : "1", rounds[3], rounds[0], rounds[6]);
  rmmResourceDestroy(pool);
  rmmResourceDestroy(cuda);
  return 0;
}
