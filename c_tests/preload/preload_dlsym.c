/* How a program finds the driver under LD_PRELOAD=librmm_preload.so, as the static CUDA
 * runtime does: dlopen("libcuda.so.1"), dlsym "cuGetProcAddress_v2", then every entry point
 * through it, before cuInit. Built twice: against glibc's current dlsym (GLIBC_2.34) and,
 * with a .symver directive, against the old one (GLIBC_2.2.5); both must reach the shim.
 * Also: dlsym(RTLD_NEXT, ...) keeps its meaning (relative to the caller), the per-thread
 * stream flag gives the _ptsz hook, an old CUDA version gives the real cuMemAlloc (v1), and
 * memory allocated through the hooks is rmm's. Run without the preload it checks that the
 * answers are the driver's own. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RMM_TEST_OLD_DLSYM
__asm__(".symver dlsym,dlsym@GLIBC_2.2.5");
#endif

typedef int (*get_proc_address_t)(const char *, void **, int, unsigned long long, int *);
typedef int (*mem_alloc_t)(unsigned long long *, size_t);
typedef int (*mem_free_t)(unsigned long long);
typedef int (*init_t)(unsigned);
typedef int (*ctx_retain_t)(void **, int);
typedef int (*ctx_set_t)(void *);

static int failures = 0;
#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

int main(void) {
  const char *preload = getenv("LD_PRELOAD");
  const int preloaded = preload != NULL && strstr(preload, "librmm_preload") != NULL;
  /* RTLD_NEXT from the program: the next definition after the program. For malloc, libc's; for
   * cuMemAlloc_v2 under the preload, the preload's own (it comes right after the program): a
   * lookup made from inside the shim would skip it. */
  EXPECT(dlsym(RTLD_NEXT, "malloc") == (void *)&malloc);
  if (preloaded) {
    EXPECT(dlsym(RTLD_NEXT, "cuMemAlloc_v2") != NULL);
    EXPECT(dlsym(RTLD_NEXT, "cuMemAlloc_v2") == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  }
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (cuda == NULL) {
    printf("SKIP: no libcuda.so.1\n");
    return failures == 0 ? 77 : 1;
  }

  get_proc_address_t gpa = (get_proc_address_t)dlsym(cuda, "cuGetProcAddress_v2");
  void *shim_gpa = dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2"); /* the preload's, when preloaded */
  void *shim_alloc = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
  void *shim_alloc_ptsz = dlsym(RTLD_DEFAULT, "cuMemAllocAsync_ptsz");
  EXPECT(gpa != NULL);
  if (preloaded) EXPECT((void *)gpa == shim_gpa);

  /* Before cuInit, as the runtime does. */
  void *alloc = NULL, *alloc_ptsz = NULL, *alloc_v1 = NULL;
  int status = -1;
  EXPECT(gpa("cuMemAlloc", &alloc, 12000, 0, &status) == 0 && status == 0 /* CU_GET_PROC_ADDRESS_SUCCESS */);
  EXPECT(gpa("cuMemAllocAsync", &alloc_ptsz, 12000, 2 /* per-thread default stream */, &status) == 0);
  EXPECT(gpa("cuMemAlloc", &alloc_v1, 3000, 0, &status) == 0);
  EXPECT(alloc_v1 != alloc); /* the 32-bit v1 entry point stays the driver's */
  if (preloaded) {
    EXPECT(alloc == shim_alloc);
    EXPECT(alloc_ptsz == shim_alloc_ptsz);
  } else {
    EXPECT(alloc == dlsym(cuda, "cuMemAlloc_v2"));
  }

  void *init = NULL, *retain = NULL, *set = NULL, *free_fn = NULL;
  EXPECT(gpa("cuInit", &init, 12000, 0, &status) == 0);
  EXPECT(gpa("cuDevicePrimaryCtxRetain", &retain, 12000, 0, &status) == 0);
  EXPECT(gpa("cuCtxSetCurrent", &set, 12000, 0, &status) == 0);
  EXPECT(gpa("cuMemFree", &free_fn, 12000, 0, &status) == 0);
  EXPECT(((init_t)init)(0) == 0);
  void *context = NULL;
  EXPECT(((ctx_retain_t)retain)(&context, 0) == 0 && ((ctx_set_t)set)(context) == 0);
  unsigned long long ptr = 0;
  EXPECT(((mem_alloc_t)alloc)(&ptr, 1 << 20) == 0 && ptr != 0);
  EXPECT(((mem_free_t)free_fn)(ptr) == 0);
  if (failures == 0) printf("PASS: %s dlsym%s\n", preloaded ? "preloaded" : "plain",
#ifdef RMM_TEST_OLD_DLSYM
                            "@GLIBC_2.2.5"
#else
                            ""
#endif
  );
  fflush(stdout); /* before the preload's exit report, which ctest's expression expects after */
  return failures == 0 ? 0 : 1;
}
