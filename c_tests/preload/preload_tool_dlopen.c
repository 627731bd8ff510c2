/* A tool that interposes dlopen and looks symbols up from inside it, as compute-sanitizer's
 * injection does while the driver loads it: its dlopen is not re-entrant (the sanitizer's spins
 * on its own lock), so a dlsym hook that loads a library from there hangs the program before
 * the tool attaches. Built twice: as the tool (RMM_TEST_TOOL, a shared library preloaded after
 * librmm_preload.so) and as the program, which dlopens a library through the tool. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef RMM_TEST_TOOL
typedef void *(*dlopen_t)(const char *, int);
static __thread int inside_dlopen;

void *dlopen(const char *file, int mode) {
  if (inside_dlopen) {
    fprintf(stderr, "FAILED: dlopen(%s) re-entered from a lookup made inside dlopen\n", file ? file : "NULL");
    exit(1);
  }
  static dlopen_t real;
  if (real == NULL) real = (dlopen_t)dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
  if (real == NULL) real = (dlopen_t)dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
  if (real == NULL) real = (dlopen_t)dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.17");
  inside_dlopen = 1;
  /* What a tool looks up while it loads: plain names, and the driver's entry point. */
  void *found = dlsym(RTLD_DEFAULT, "malloc");
  void *driver = dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
  void *handle = real(file, mode);
  inside_dlopen = 0;
  if (found == NULL) {
    fprintf(stderr, "FAILED: dlsym(malloc) inside dlopen found nothing\n");
    exit(1);
  }
  (void)driver;
  return handle;
}
#else
int main(void) {
  void *library = dlopen("libm.so.6", RTLD_NOW);
  if (library == NULL) {
    fprintf(stderr, "FAILED: dlopen(libm.so.6): %s\n", dlerror());
    return 1;
  }
  void *cosine = dlsym(library, "cos");
  if (cosine == NULL) {
    fprintf(stderr, "FAILED: dlsym(cos)\n");
    return 1;
  }
  printf("PASS: a tool's dlopen was not re-entered\n");
  return 0;
}
#endif
