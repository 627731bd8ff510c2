/*
 * Shared helpers of the rmm-rs C tests: CHECK macros that print file:line, the rmmError_t
 * and rmmGetLastErrorMessage() on failure and exit non-zero, plus device helpers.
 * C99 and C11; every helper is static inline so unused ones cost no warning.
 */
#ifndef RMM_TEST_H
#define RMM_TEST_H

#include "rmm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit code that ctest reports as "skipped" (SKIP_RETURN_CODE). */
#define RMM_TEST_SKIP 77

static inline const char *rmm_test_code_name(int code) { return rmmGetErrorName(code); }

static inline void rmm_test_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: FAILED: %s\n  rmmGetLastErrorMessage(): \"%s\"\n", file, line, what,
          rmmGetLastErrorMessage());
  fflush(stderr);
  exit(1);
}

static inline void rmm_test_expect(const char *file, int line, const char *expr, rmmError_t got,
                                   rmmError_t expected) {
  if (got != expected) {
    fprintf(stderr, "%s:%d: FAILED: %s\n  returned %d (%s), expected %d (%s)\n", file, line, expr,
            (int)got, rmm_test_code_name((int)got), (int)expected,
            rmm_test_code_name((int)expected));
    fprintf(stderr, "  rmmGetLastErrorMessage(): \"%s\"\n", rmmGetLastErrorMessage());
    fflush(stderr);
    exit(1);
  }
  if (expected != RMM_SUCCESS) {
    /* Every failure explains itself. */
    const char *message = rmmGetLastErrorMessage();
    if (message == NULL || message[0] == '\0') {
      fprintf(stderr, "%s:%d: FAILED: %s returned %s but rmmGetLastErrorMessage() is empty\n",
              file, line, expr, rmm_test_code_name((int)got));
      fflush(stderr);
      exit(1);
    }
  }
}

/* A condition that must hold. */
#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) rmm_test_fail(__FILE__, __LINE__, #cond);          \
  } while (0)

/* An rmm call that must return exactly `expected`. */
#define CHECK_RMM(call, expected) rmm_test_expect(__FILE__, __LINE__, #call, (call), (expected))

/* An rmm call that must succeed. */
#define CHECK_OK(call) CHECK_RMM(call, RMM_SUCCESS)

/* Two strings that must be equal. */
#define CHECK_STR(a, b)                                                                     \
  do {                                                                                      \
    const char *rmm_test_a_ = (a), *rmm_test_b_ = (b);                                      \
    if (rmm_test_a_ == NULL || rmm_test_b_ == NULL || strcmp(rmm_test_a_, rmm_test_b_) != 0) { \
      fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__,                      \
              rmm_test_a_ ? rmm_test_a_ : "(null)", rmm_test_b_ ? rmm_test_b_ : "(null)");  \
      rmm_test_fail(__FILE__, __LINE__, #a " == " #b);                                      \
    }                                                                                       \
  } while (0)

/* True when rmm runs on simulated devices: then device memory is host memory and C code may
 * dereference it. On a real GPU device memory must not be touched from the host. When the
 * tests are set up for simulated devices (RMM_SIM_DEVICES set) rmm must agree. */
static inline bool rmm_test_simulated(void) {
  bool simulated = false;
  CHECK_OK(rmmIsSimulated(&simulated));
  CHECK(simulated == (getenv("RMM_SIM_DEVICES") != NULL));
  return simulated;
}

static inline int rmm_test_device_count(void) {
  int count = -1;
  CHECK_OK(rmmGetDeviceCount(&count));
  CHECK(count >= 1);
  return count;
}

/* Exits with RMM_TEST_SKIP (ctest: skipped) when fewer than `needed` devices exist. */
static inline void rmm_test_require_devices(int needed) {
  int count = rmm_test_device_count();
  if (count < needed) {
    printf("SKIP: needs %d devices, found %d\n", needed, count);
    fflush(stdout);
    exit(RMM_TEST_SKIP);
  }
}

/* Fills `bytes` of host-accessible memory with a pattern derived from `seed`. */
static inline void rmm_test_fill(void *ptr, size_t bytes, unsigned seed) {
  unsigned char *p = (unsigned char *)ptr;
  size_t i;
  for (i = 0; i < bytes; ++i) p[i] = (unsigned char)((i * 31u + seed * 7u + 1u) & 0xFFu);
}

/* True when `bytes` of host-accessible memory hold the pattern of `seed`. */
static inline bool rmm_test_verify(const void *ptr, size_t bytes, unsigned seed) {
  const unsigned char *p = (const unsigned char *)ptr;
  size_t i;
  for (i = 0; i < bytes; ++i) {
    if (p[i] != (unsigned char)((i * 31u + seed * 7u + 1u) & 0xFFu)) return false;
  }
  return true;
}

static inline bool rmm_test_aligned(const void *ptr, size_t alignment) {
  return ((uintptr_t)ptr % alignment) == 0;
}

/* The end of every test: on simulated devices the race checker must have found nothing
 * (RMM_SIM_ON_RACE=count); on real devices rmmSimGetRaceCount is not supported. */
/* rmmGetReport's text, in memory the caller frees. */
static inline char *rmm_test_report(void) {
  size_t length = 0;
  char *text;
  CHECK_OK(rmmGetReport(NULL, 0, &length));
  text = (char *)malloc(length + 1);
  CHECK(text != NULL);
  CHECK_OK(rmmGetReport(text, length + 1, NULL));
  return text;
}

static inline int rmm_test_finish(const char *name) {
  size_t races = 12345;
  if (rmm_test_simulated()) {
    CHECK_OK(rmmSimGetRaceCount(&races));
    CHECK(races == 0);
  } else {
    CHECK_RMM(rmmSimGetRaceCount(&races), RMM_ERROR_NOT_SUPPORTED);
    CHECK(races == 12345);
  }
  printf("PASS: %s\n", name);
  fflush(stdout);
  return 0;
}

#endif /* RMM_TEST_H */
