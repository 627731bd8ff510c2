/* Threads allocate, fill and free through RMM_ALLOC while the main thread replaces the current
 * device's resource over and over (a new pool each time, its handles destroyed at once). Every
 * block comes back intact; once the threads wait idle (alive), the original resource goes back
 * and, on simulated devices, the device has every byte back: no replaced pool waits for the
 * threads that allocated from it. Under AddressSanitizer this also watches the per-thread
 * copies of the device's resource being let go of while other threads allocate. Bounded
 * iterations. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "rmm_test.h"

#define THREADS 6
#define REPLACEMENTS 300
#define MIN_ROUNDS 200
#define MAX_ROUNDS 200000

static bool simulated;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static bool replacing = true;
static long rounds_during_replacements;
static pthread_barrier_t idle, go_on;

static bool still_replacing(void) {
  bool answer;
  pthread_mutex_lock(&state_lock);
  answer = replacing;
  pthread_mutex_unlock(&state_lock);
  return answer;
}

static void *worker(void *arg) {
  unsigned state = 2463534242u + (unsigned)(intptr_t)arg * 977u;
  void *held[4] = {NULL, NULL, NULL, NULL};
  size_t sizes[4] = {0, 0, 0, 0};
  unsigned seeds[4] = {0, 0, 0, 0};
  long round, counted = 0;
  int slot;

  for (round = 0; round < MAX_ROUNDS && (round < MIN_ROUNDS || still_replacing()); ++round) {
    slot = (int)(round % 4);
    if (held[slot] != NULL) {
      if (simulated) CHECK(rmm_test_verify(held[slot], sizes[slot], seeds[slot]));
      CHECK_OK(RMM_FREE(held[slot], 0));
    }
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    sizes[slot] = 1 + (size_t)(state % 8192u);
    seeds[slot] = state;
    CHECK_OK(RMM_ALLOC(&held[slot], sizes[slot], 0));
    CHECK(rmm_test_aligned(held[slot], 256));
    if (simulated) rmm_test_fill(held[slot], sizes[slot], seeds[slot]);
    ++counted;
  }
  for (slot = 0; slot < 4; ++slot) {
    if (held[slot] == NULL) continue;
    if (simulated) CHECK(rmm_test_verify(held[slot], sizes[slot], seeds[slot]));
    CHECK_OK(RMM_FREE(held[slot], 0));
  }
  pthread_mutex_lock(&state_lock);
  rounds_during_replacements += counted;
  pthread_mutex_unlock(&state_lock);
  pthread_barrier_wait(&idle);
  pthread_barrier_wait(&go_on);
  return NULL;
}

int main(void) {
  pthread_t threads[THREADS];
  rmmResource_t original, cuda, pool, previous;
  size_t free_before = 0, free_after = 0, total = 0;
  int i;

  simulated = rmm_test_simulated();
  CHECK_OK(rmmGetCurrentDeviceResource(&original));
  CHECK_OK(rmmCudaResourceCreate(&cuda));
  /* A resource the program set: RMM_ALLOC (and rmmGetInfo) use it without rmmInitialize. */
  CHECK_OK(rmmSetCurrentDeviceResource(cuda, NULL));
  CHECK_OK(rmmGetInfo(&free_before, &total, 0));
  CHECK(pthread_barrier_init(&idle, NULL, THREADS + 1) == 0);
  CHECK(pthread_barrier_init(&go_on, NULL, THREADS + 1) == 0);
  for (i = 0; i < THREADS; ++i) {
    CHECK(pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i) == 0);
  }
  for (i = 0; i < REPLACEMENTS; ++i) {
    CHECK_OK(rmmPoolResourceCreate(&pool, cuda, 1u << 20, 0));
    CHECK_OK(rmmSetCurrentDeviceResource(pool, &previous));
    CHECK_OK(rmmResourceDestroy(previous));
    CHECK_OK(rmmResourceDestroy(pool));
  }
  pthread_mutex_lock(&state_lock);
  replacing = false;
  pthread_mutex_unlock(&state_lock);

  pthread_barrier_wait(&idle);
  CHECK_OK(rmmSetCurrentDeviceResource(original, &previous));
  CHECK_OK(rmmResourceDestroy(previous));
  CHECK_OK(rmmGetInfo(&free_after, &total, 0));
  printf("%ld allocations by %d threads during %d replacements; free %zu of %zu bytes before, %zu after\n",
         rounds_during_replacements, THREADS, REPLACEMENTS, free_before, total, free_after);
  /* Read while the threads wait idle: the last pool's memory is back already. */
  if (simulated) CHECK(free_after == free_before);
  pthread_barrier_wait(&go_on);
  for (i = 0; i < THREADS; ++i) CHECK(pthread_join(threads[i], NULL) == 0);

  CHECK_OK(rmmResourceDestroy(cuda));
  CHECK_OK(rmmResourceDestroy(original));
  CHECK(pthread_barrier_destroy(&idle) == 0);
  CHECK(pthread_barrier_destroy(&go_on) == 0);
  return rmm_test_finish("replace_resource");
}
