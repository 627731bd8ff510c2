/* A program that knows nothing of rmm-rs but the two symbols it looks up: under the preload
 * library with RMM_ALLOC_CONF=expandable, it puts the device's memory to sleep with
 * rmmDeviceSleep (found with dlsym once its first cudaMalloc has loaded librmm.so), is refused
 * allocations while asleep, and finds its block at the same address, with its bytes, after
 * rmmDeviceWake. Links librmm_preload.so only (no rmm.h, no librmm.so, no CUDA headers). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);

typedef int (*device_sleep_fn)(int device, unsigned mode, void *stream);
typedef int (*device_wake_fn)(int device, void *stream);
typedef int (*is_simulated_fn)(bool *simulated);

#define CHECK(cond)                                              \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                  \
    }                                                            \
  } while (0)

int main(void) {
  const size_t bytes = 8u << 20;
  void *block = NULL, *refused = NULL;
  CHECK(cudaMalloc(&block, bytes) == 0 && block != NULL);
  device_sleep_fn device_sleep = (device_sleep_fn)dlsym(RTLD_DEFAULT, "rmmDeviceSleep");
  device_wake_fn device_wake = (device_wake_fn)dlsym(RTLD_DEFAULT, "rmmDeviceWake");
  is_simulated_fn is_simulated = (is_simulated_fn)dlsym(RTLD_DEFAULT, "rmmIsSimulated");
  CHECK(device_sleep != NULL && device_wake != NULL && is_simulated != NULL);
  bool simulated = false;
  CHECK(is_simulated(&simulated) == 0);
  /* Simulated device memory is host memory: the bytes can be checked from here. */
  if (simulated) memset(block, 0x5a, bytes);

  CHECK(device_sleep(0, 1 /* RMM_SLEEP_KEEP */, NULL) == 0);
  CHECK(cudaMalloc(&refused, 4096) != 0);
  CHECK(device_sleep(0, 1, NULL) != 0); /* already asleep */
  CHECK(device_wake(0, NULL) == 0);
  CHECK(device_wake(0, NULL) != 0); /* awake */
  if (simulated) {
    const unsigned char *bytes_back = block;
    for (size_t i = 0; i < bytes; ++i) CHECK(bytes_back[i] == 0x5a);
  }
  CHECK(cudaMalloc(&refused, 4096) == 0);
  CHECK(cudaFree(refused) == 0);
  CHECK(cudaFree(block) == 0);
  printf("PASS: preload_sleep\n");
  return 0;
}
