/* Temporary files for the C tests that write logs and snapshots (POSIX: the including file
 * defines _POSIX_C_SOURCE before any include). */
#ifndef RMM_TEST_FILES_H
#define RMM_TEST_FILES_H

#include <unistd.h>

#include "rmm_test.h"

/* A fresh, empty temporary file; its path goes to `path` (at least 64 bytes). */
static inline void rmm_test_temp_file(char *path, size_t size, const char *tag) {
  int fd;
  CHECK(size >= 64);
  snprintf(path, size, "/tmp/rmm-test-%s-%ld-XXXXXX", tag, (long)getpid());
  fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
}

/* The whole file as a NUL-terminated string (malloc'ed); NULL when it cannot be read. */
static inline char *rmm_test_read_file(const char *path) {
  FILE *file = fopen(path, "rb");
  char *text;
  size_t used = 0, capacity = 4096, got;
  if (file == NULL) return NULL;
  text = (char *)malloc(capacity);
  CHECK(text != NULL);
  while ((got = fread(text + used, 1, capacity - used - 1, file)) > 0) {
    used += got;
    if (capacity - used - 1 == 0) {
      capacity *= 2;
      text = (char *)realloc(text, capacity);
      CHECK(text != NULL);
    }
  }
  fclose(file);
  text[used] = '\0';
  return text;
}

#endif /* RMM_TEST_FILES_H */
