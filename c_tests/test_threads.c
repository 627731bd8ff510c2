/* Several threads allocate and free through rmmAlloc and one shared resource handle; part of
 * the memory is handed to other threads and freed there. Bounded iterations. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "rmm_test.h"

#define THREADS 8
#define ITERATIONS 300
#define MAILBOX 64

struct parcel {
  void *ptr;
  size_t bytes;
  int from_resource; /* 1: rmmResourceAllocate(shared), 0: rmmAlloc */
  unsigned seed;
};

static rmmResource_t shared_resource;
static bool simulated;
static int device_count;

/* Memory handed between threads. */
static pthread_mutex_t mailbox_lock = PTHREAD_MUTEX_INITIALIZER;
static struct parcel mailbox[MAILBOX];
static int mailbox_count;
static long cross_thread_frees;

static int post(struct parcel parcel) {
  int posted = 0;
  pthread_mutex_lock(&mailbox_lock);
  if (mailbox_count < MAILBOX) {
    mailbox[mailbox_count++] = parcel;
    posted = 1;
  }
  pthread_mutex_unlock(&mailbox_lock);
  return posted;
}

static int take(struct parcel *parcel) {
  int taken = 0;
  pthread_mutex_lock(&mailbox_lock);
  if (mailbox_count > 0) {
    *parcel = mailbox[--mailbox_count];
    taken = 1;
  }
  pthread_mutex_unlock(&mailbox_lock);
  return taken;
}

static void release(const struct parcel *parcel, cudaStream_t stream) {
  if (simulated) CHECK(rmm_test_verify(parcel->ptr, parcel->bytes, parcel->seed));
  if (parcel->from_resource) {
    CHECK_OK(rmmResourceDeallocate(shared_resource, parcel->ptr, parcel->bytes, stream));
  } else {
    CHECK_OK(rmmFree(parcel->ptr, stream, __FILE__, __LINE__));
  }
}

static void *worker(void *arg) {
  const int id = (int)(intptr_t)arg;
  unsigned state = 2463534242u + (unsigned)id * 977u;
  cudaStream_t stream = NULL;
  int i;

  /* Half the threads work on the last device (device 1 with two simulated devices). */
  CHECK_OK(rmmSetDevice(id % 2 ? device_count - 1 : 0));
  CHECK_OK(rmmStreamCreate(&stream));

  for (i = 0; i < ITERATIONS; ++i) {
    struct parcel parcel;
    /* xorshift32 */
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    parcel.bytes = 1 + (size_t)(state % 65536u);
    parcel.from_resource = (int)((state >> 16) & 1u);
    parcel.seed = state;
    parcel.ptr = NULL;
    if (parcel.from_resource) {
      CHECK_OK(rmmResourceAllocate(shared_resource, &parcel.ptr, parcel.bytes, stream));
    } else {
      CHECK_OK(rmmAlloc(&parcel.ptr, parcel.bytes, stream, __FILE__, (unsigned)__LINE__));
    }
    CHECK(parcel.ptr != NULL);
    CHECK(rmm_test_aligned(parcel.ptr, 256));
    if (simulated) rmm_test_fill(parcel.ptr, parcel.bytes, parcel.seed);

    /* Every third allocation goes to another thread; otherwise free it here. */
    if (i % 3 == 0 && post(parcel)) {
      /* handed over */
    } else {
      release(&parcel, stream);
    }
    /* Free something another thread allocated. */
    if (i % 2 == 0 && take(&parcel)) {
      release(&parcel, stream);
      pthread_mutex_lock(&mailbox_lock);
      ++cross_thread_frees;
      pthread_mutex_unlock(&mailbox_lock);
    }
    /* Errors on this thread do not disturb the others. */
    if (i % 50 == 0) {
      void *bogus = &state;
      CHECK_RMM(rmmFree(bogus, stream, __FILE__, __LINE__), RMM_ERROR_INVALID_ARGUMENT);
      CHECK(rmmGetLastErrorMessage()[0] != '\0');
    }
  }
  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
  return NULL;
}

int main(void) {
  pthread_t threads[THREADS];
  struct parcel parcel;
  size_t free_before = 0, free_after = 0, total = 0;
  int i;

  simulated = rmm_test_simulated();
  device_count = rmm_test_device_count();
  CHECK_OK(rmmInitialize(NULL));
  CHECK_OK(rmmCudaResourceCreate(&shared_resource));
  CHECK_OK(rmmGetInfo(&free_before, &total, 0));

  for (i = 0; i < THREADS; ++i) {
    CHECK(pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i) == 0);
  }
  for (i = 0; i < THREADS; ++i) CHECK(pthread_join(threads[i], NULL) == 0);

  /* What is left in the mailbox is freed by the main thread. */
  while (take(&parcel)) release(&parcel, 0);
  CHECK(cross_thread_frees > 0);
  printf("cross-thread frees: %ld\n", cross_thread_frees);

  CHECK_OK(rmmStreamSynchronize(0));
  if (simulated) {
    /* Every byte of device 0 came back. */
    CHECK_OK(rmmGetInfo(&free_after, &total, 0));
    CHECK(free_after == free_before);
  }
  CHECK_OK(rmmResourceDestroy(shared_resource));
  CHECK_OK(rmmFinalize());
  return rmm_test_finish("threads");
}
