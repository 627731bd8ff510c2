/* The LD_PRELOAD shim's hooks, called directly (this program links librmm_preload.so), on
 * simulated devices or a GPU: allocations go through rmm (the report counts them), bad input
 * gets CUDA's error codes, pointers rmm did not hand out go to the real functions (absent
 * here: no CUDA runtime is linked), a forked child uses the real functions only, and a child
 * that execs a program gets the shim again (this program, with the argument "exec-child"). */
#define _POSIX_C_SOURCE 200809L
#include <sys/wait.h>
#include <unistd.h>

#include "rmm_test.h"

/* The CUDA runtime and driver functions the shim defines (declared here: no CUDA headers). */
int cudaMalloc(void **ptr, size_t size);
int cudaFree(void *ptr);
int cudaMallocAsync(void **ptr, size_t size, void *stream);
int cudaFreeAsync(void *ptr, void *stream);
int cudaMallocPitch(void **ptr, size_t *pitch, size_t width, size_t height);
int cuMemAlloc_v2(unsigned long long *ptr, size_t size);
int cuMemFree_v2(unsigned long long ptr);
int cuMemAllocAsync(unsigned long long *ptr, size_t size, void *stream);
int cuMemFreeAsync(unsigned long long ptr, void *stream);
int cuMemAllocAsync_ptsz(unsigned long long *ptr, size_t size, void *stream);
int cuMemFreeAsync_ptsz(unsigned long long ptr, void *stream);

/* The exec'd child: a fresh process, served by rmm again. */
static int exec_child(void) {
  void *p = NULL;
  if (cudaMalloc(&p, 100) != 0 || p == NULL) return 1;
  if (cudaFree(p) != 0) return 2;
  if (cudaFree(p) == 0) return 3; /* freed twice: refused, so rmm handed it out */
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "exec-child") == 0) return exec_child();
  void *a = NULL, *b = NULL, *c = NULL;
  unsigned long long d = 0, e = 0, f = 0;
  size_t pitch = 0;
  char *text;
  pid_t child;
  int status = 0;
  /* With RMM_ALLOC_CONF=resource:pool,initial_pool_size:16MiB,report:1, or report alone (the
   * report on the pooled default), the report has figures;
   * with a string the shim refuses, it runs on the defaults, which print no report. */
  const char *conf = getenv("RMM_ALLOC_CONF");
  const bool reporting = conf != NULL && (strstr(conf, "report:1") != NULL || strcmp(conf, "report") == 0);

  CHECK(cudaMalloc(&a, 1000) == 0);
  CHECK(a != NULL && rmm_test_aligned(a, 256));
  /* Every configuration this program runs under pools: the one given, the one unset
   * RMM_ALLOC_CONF means, and the one a string the shim refuses falls back to. */
  {
    rmmResource_t current = NULL;
    const char *name = NULL;
    size_t pooled = 0;
    CHECK_OK(rmmGetCurrentDeviceResource(&current));
    CHECK_OK(rmmResourceGetName(current, &name));
    CHECK_STR(name, "statistics");
    CHECK_OK(rmmPoolResourceGetSize(current, &pooled));
    CHECK(pooled >= 1000);
    CHECK_OK(rmmResourceDestroy(current));
  }
  CHECK(cudaMallocAsync(&b, 5000, NULL) == 0);
  CHECK(cudaMallocPitch(&c, &pitch, 1000, 7) == 0);
  CHECK(pitch == 1024 && c != NULL);
  CHECK(cuMemAlloc_v2(&d, 4096) == 0 && d != 0);
  CHECK(cuMemAllocAsync(&e, 300, NULL) == 0 && e != 0);
  CHECK(cuMemAllocAsync_ptsz(&f, 300, NULL) == 0 && f != 0);

  text = rmm_test_report();
  if (reporting) {
    CHECK(strstr(text, "device 0: pool resource, ") != NULL); /* 16 MiB, and a chunk for the per-thread stream */
    CHECK(strstr(text, "6 allocations") != NULL);
    /* All six outstanding: listed where the key:value form's report tracks each allocation. */
    CHECK(strstr(conf, "report:1") == NULL || strstr(text, "6 allocation(s)") != NULL);
  } else {
    CHECK_STR(text, "");
  }
  free(text);

  /* Bad input: CUDA's codes (1 invalid value, 2 out of memory). */
  CHECK(cudaMalloc(NULL, 10) == 1);
  CHECK(cuMemAlloc_v2(NULL, 10) == 1);
  CHECK(cudaMalloc(&a, (size_t)1 << 60) == 2 || cudaFree(a) == 0);

  /* A fork: the child uses the real functions only (absent here: an error, never a hang). */
  child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    void *p = NULL;
    _exit(cudaMalloc(&p, 100) == 0 ? 1 : 0);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  /* A fork that execs: the new program is served by rmm. */
  child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
    _exit(99);
  }
  CHECK(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  CHECK(cudaFree(a) == 0);
  CHECK(cudaFreeAsync(b, NULL) == 0);
  CHECK(cudaFree(c) == 0);
  CHECK(cuMemFree_v2(d) == 0);
  CHECK(cuMemFreeAsync(e, NULL) == 0);
  CHECK(cuMemFreeAsync_ptsz(f, NULL) == 0);
  /* Freed twice, or never rmm's: handed to the real function, which this program lacks. */
  CHECK(cudaFree(a) != 0);
  CHECK(cuMemFree_v2(0x1000) != 0);
  /* NULL, which programs free to initialise CUDA: a no-op, with or without a real function. */
  CHECK(cudaFree(NULL) == 0);
  CHECK(cudaFreeAsync(NULL, NULL) == 0);
  {
    bool simulated = false;
    CHECK_OK(rmmIsSimulated(&simulated));
    if (simulated) { /* a GPU's driver answers for itself */
      CHECK(cuMemFree_v2(0) == 0);
      CHECK(cuMemFreeAsync(0, NULL) == 0);
    }
  }

  text = rmm_test_report();
  CHECK(reporting ? strstr(text, "0 B in 0 allocations live now") != NULL : strcmp(text, "") == 0);
  CHECK(strstr(text, "outstanding") == NULL);
  free(text);
  return rmm_test_finish("preload_hooks");
}
