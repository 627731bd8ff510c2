/* Legacy RMM's event log: rmmInitialize with enable_logging, then RMM_ALLOC / RMM_REALLOC /
 * RMM_FREE; rmmLogSize, rmmGetLog (whole, truncated, bad input) and rmmWriteLog give back
 * legacy RMM's CSV with one line per call, the live allocation count and the call site. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>

#include "rmm_test_files.h"

#define HEADER                                                                                 \
  "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs," \
  "Start,End,Elapsed,Location\n"

#define FIELDS 12
#define MAX_EVENTS 16

struct event {
  char kind[16];
  char device[16];
  uintptr_t address;
  uintptr_t stream;
  char size[32];
  char free_memory[32];
  char total_memory[32];
  char live[16];
  double start, end, elapsed;
  char location[512];
};

/* What each line must say. */
struct expected {
  const char *kind;
  const void *address;
  cudaStream_t stream;
  size_t size;
  int live;
  unsigned line; /* 0: no call site, the location is empty */
};

/* The whole log as a C string, through rmmLogSize and rmmGetLog. */
static char *whole_log(void) {
  size_t size = rmmLogSize();
  char *text = (char *)malloc(size + 2);
  CHECK(text != NULL);
  memset(text, 'X', size + 2);
  CHECK_OK(rmmGetLog(text, size + 1));
  CHECK(text[size] == '\0');
  CHECK(text[size + 1] == 'X'); /* nothing past the size given */
  CHECK(strlen(text) == size);
  return text;
}

static bool all_digits(const char *text) {
  if (*text == '\0') return false;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9') return false;
  }
  return true;
}

static uintptr_t parse_hex(const char *text) {
  char *end = NULL;
  unsigned long long value;
  CHECK(text[0] != '\0');
  value = strtoull(text, &end, 16);
  CHECK(end != NULL && *end == '\0');
  return (uintptr_t)value;
}

static double parse_seconds(const char *text) {
  char *end = NULL;
  double value = strtod(text, &end);
  CHECK(end != text && *end == '\0');
  CHECK(value >= 0.0);
  return value;
}

static void copy_field(char *to, size_t size, const char *from) {
  CHECK(strlen(from) < size);
  strcpy(to, from);
}

/* Checks the header and parses every line; returns how many there are. */
static int parse_log(const char *text, struct event *events, int capacity) {
  const char *at;
  int count = 0;
  if (strncmp(text, HEADER, strlen(HEADER)) != 0) {
    fprintf(stderr, "log:\n%s\n", text);
    CHECK(!"the log starts with legacy RMM's header");
  }
  at = text + strlen(HEADER);
  while (*at != '\0') {
    const char *end = strchr(at, '\n');
    char line[1024], *fields[FIELDS], *cursor;
    size_t length;
    int field = 0;
    struct event *e;
    CHECK(end != NULL);
    length = (size_t)(end - at);
    CHECK(length < sizeof line);
    memcpy(line, at, length);
    line[length] = '\0';
    fields[field++] = line;
    for (cursor = line; *cursor != '\0'; ++cursor) {
      if (*cursor == ',') {
        *cursor = '\0';
        CHECK(field < FIELDS);
        fields[field++] = cursor + 1;
      }
    }
    CHECK(field == FIELDS);
    CHECK(count < capacity);
    e = &events[count++];
    copy_field(e->kind, sizeof e->kind, fields[0]);
    copy_field(e->device, sizeof e->device, fields[1]);
    e->address = parse_hex(fields[2]);
    e->stream = parse_hex(fields[3]);
    copy_field(e->size, sizeof e->size, fields[4]);
    copy_field(e->free_memory, sizeof e->free_memory, fields[5]);
    copy_field(e->total_memory, sizeof e->total_memory, fields[6]);
    copy_field(e->live, sizeof e->live, fields[7]);
    e->start = parse_seconds(fields[8]);
    e->end = parse_seconds(fields[9]);
    e->elapsed = parse_seconds(fields[10]);
    copy_field(e->location, sizeof e->location, fields[11]);
    at = end + 1;
  }
  return count;
}

static bool ends_with(const char *text, const char *suffix) {
  size_t a = strlen(text), b = strlen(suffix);
  return a >= b && strcmp(text + a - b, suffix) == 0;
}

static void check_event(int index, const struct event *e, const struct expected *x) {
  char size[32], live[16], location[64];
  snprintf(size, sizeof size, "%zu", x->size);
  snprintf(live, sizeof live, "%d", x->live);
  if (x->line != 0) {
    snprintf(location, sizeof location, "test_legacy_log.c:%u", x->line);
  } else {
    location[0] = '\0';
  }
  if (strcmp(e->kind, x->kind) != 0 || strcmp(e->device, "0") != 0 ||
      e->address != (uintptr_t)x->address || e->stream != (uintptr_t)x->stream ||
      strcmp(e->size, size) != 0 || strcmp(e->live, live) != 0 ||
      !all_digits(e->free_memory) || !all_digits(e->total_memory) ||
      (x->line != 0 ? !ends_with(e->location, location) : e->location[0] != '\0')) {
    fprintf(stderr,
            "event %d: %s, device %s, address %#" PRIxPTR ", stream %#" PRIxPTR
            ", size %s, memory %s/%s, live %s, location \"%s\"\n"
            "expected: %s, device 0, address %#" PRIxPTR ", stream %#" PRIxPTR
            ", size %s, live %s, location ending \"%s\"\n",
            index, e->kind, e->device, e->address, e->stream, e->size, e->free_memory,
            e->total_memory, e->live, e->location, x->kind, (uintptr_t)x->address,
            (uintptr_t)x->stream, size, live, location);
    CHECK(!"the event matches");
  }
  CHECK(e->start <= e->end);
  {
    double difference = e->elapsed - (e->end - e->start);
    CHECK(difference < 2.5e-6 && difference > -2.5e-6);
  }
}

/* Without enable_logging nothing is recorded. */
static void check_logging_off(void) {
  rmmOptions_t options;
  void *p = NULL;
  char *text;
  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaDefaultAllocation;
  options.enable_logging = false;
  CHECK_OK(rmmInitialize(&options));
  CHECK_OK(RMM_ALLOC(&p, 1000, 0));
  CHECK_OK(RMM_FREE(p, 0));
  text = whole_log();
  CHECK(strstr(text, "Alloc,") == NULL);
  CHECK(strstr(text, "Free,") == NULL);
  free(text);
  CHECK_OK(rmmFinalize());
}

int main(void) {
  rmmOptions_t options, in_force;
  struct event events[MAX_EVENTS];
  struct expected expected[MAX_EVENTS];
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL, *old_a = NULL;
  cudaStream_t stream = NULL;
  char *text, *copy, path[128];
  size_t size;
  int count, n = 0, i;

  (void)rmm_test_simulated();
  check_logging_off();

  memset(&options, 0, sizeof options);
  options.allocation_mode = CudaDefaultAllocation;
  options.enable_logging = true;
  options.devices.count = 0;
  CHECK_OK(rmmInitialize(&options));
  memset(&in_force, 0, sizeof in_force);
  CHECK(rmmIsInitialized(&in_force));
  CHECK(in_force.enable_logging);
  CHECK_OK(rmmStreamCreate(&stream));

  /* A new log: the header alone. */
  CHECK(rmmLogSize() == strlen(HEADER));
  text = whole_log();
  CHECK_STR(text, HEADER);
  free(text);

  /* One line per call, in order. */
  CHECK_OK(RMM_ALLOC(&a, 1000, 0));
  expected[n].kind = "Alloc"; expected[n].address = a; expected[n].stream = NULL;
  expected[n].size = 1000; expected[n].live = 1; expected[n++].line = __LINE__ - 2;
  CHECK_OK(RMM_ALLOC(&b, 2000, 0));
  expected[n].kind = "Alloc"; expected[n].address = b; expected[n].stream = NULL;
  expected[n].size = 2000; expected[n].live = 2; expected[n++].line = __LINE__ - 2;
  old_a = a;
  CHECK_OK(RMM_REALLOC(&a, 3000, 0));
  CHECK(a != old_a);
  expected[n].kind = "Realloc"; expected[n].address = a; expected[n].stream = NULL;
  expected[n].size = 3000; expected[n].live = 2; expected[n++].line = __LINE__ - 3;
  CHECK_OK(RMM_ALLOC(&c, 512, stream));
  expected[n].kind = "Alloc"; expected[n].address = c; expected[n].stream = stream;
  expected[n].size = 512; expected[n].live = 3; expected[n++].line = __LINE__ - 2;
  CHECK_OK(RMM_FREE(b, 0));
  expected[n].kind = "Free"; expected[n].address = b; expected[n].stream = NULL;
  expected[n].size = 2000; expected[n].live = 2; expected[n++].line = __LINE__ - 2;
  CHECK_OK(RMM_FREE(c, stream));
  expected[n].kind = "Free"; expected[n].address = c; expected[n].stream = stream;
  expected[n].size = 512; expected[n].live = 1; expected[n++].line = __LINE__ - 2;
  CHECK_OK(rmmAlloc(&d, 64, 0, NULL, 0)); /* no call site */
  expected[n].kind = "Alloc"; expected[n].address = d; expected[n].stream = NULL;
  expected[n].size = 64; expected[n].live = 2; expected[n++].line = 0;
  CHECK_OK(rmmFree(d, 0, NULL, 0));
  expected[n].kind = "Free"; expected[n].address = d; expected[n].stream = NULL;
  expected[n].size = 64; expected[n].live = 1; expected[n++].line = 0;
  CHECK_OK(RMM_FREE(a, 0));
  expected[n].kind = "Free"; expected[n].address = a; expected[n].stream = NULL;
  expected[n].size = 3000; expected[n].live = 0; expected[n++].line = __LINE__ - 2;

  text = whole_log();
  count = parse_log(text, events, MAX_EVENTS);
  if (count != n) fprintf(stderr, "log:\n%s\n", text);
  CHECK(count == n);
  for (i = 0; i < n; ++i) {
    check_event(i, &events[i], &expected[i]);
    if (i > 0) CHECK(events[i].start >= events[i - 1].end);
  }
  size = strlen(text);
  CHECK(rmmLogSize() == size);

  /* A smaller buffer gets exactly that many bytes and no NUL; nothing beyond it. */
  copy = (char *)malloc(size + 8);
  CHECK(copy != NULL);
  memset(copy, 'X', size + 8);
  CHECK_OK(rmmGetLog(copy, 20));
  CHECK(memcmp(copy, text, 20) == 0);
  CHECK(copy[20] == 'X');
  memset(copy, 'X', size + 8);
  CHECK_OK(rmmGetLog(copy, size)); /* the text without its NUL */
  CHECK(memcmp(copy, text, size) == 0);
  CHECK(copy[size] == 'X');
  memset(copy, 'X', size + 8);
  CHECK_OK(rmmGetLog(copy, 0));
  CHECK(copy[0] == 'X');
  memset(copy, 'X', size + 8);
  CHECK_OK(rmmGetLog(copy, size + 8)); /* a larger buffer: the text and a NUL */
  CHECK_STR(copy, text);
  CHECK(copy[size + 1] == 'X');
  CHECK_RMM(rmmGetLog(NULL, 10), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmGetLog(NULL, size + 1), RMM_ERROR_INVALID_ARGUMENT);
  free(copy);

  /* rmmWriteLog writes the same text. */
  rmm_test_temp_file(path, sizeof path, "legacy-log");
  CHECK_OK(rmmWriteLog(path));
  copy = rmm_test_read_file(path);
  CHECK(copy != NULL);
  CHECK_STR(copy, text);
  free(copy);
  CHECK(remove(path) == 0);
  CHECK_RMM(rmmWriteLog(NULL), RMM_ERROR_INVALID_ARGUMENT);
  CHECK_RMM(rmmWriteLog("/nonexistent-dir/x"), RMM_ERROR_IO);
  free(text);

  /* Failed calls leave the log readable and the process working. */
  CHECK_RMM(RMM_FREE(a, 0), RMM_ERROR_INVALID_ARGUMENT); /* already freed */
  CHECK(rmmLogSize() >= size);

  CHECK_OK(rmmStreamSynchronize(stream));
  CHECK_OK(rmmStreamDestroy(stream));
  CHECK_OK(rmmFinalize());
  return rmm_test_finish("legacy_log");
}
