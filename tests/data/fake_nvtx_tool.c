/*
 * A fake NVTX injection tool for tests/nvtx_registration.rs: it implements the NVTX v3
 * injection entry points a tool exports (the core's InitializeInjectionNvtx2 and the
 * extensions' InitializeInjectionNvtxExtension), checks what rmm-rs hands it against the
 * layouts of NVIDIA's nvtx3 headers, fills the Mem extension's slots with functions that
 * record heaps and regions, and answers the test's queries (fake_nvtx_*).
 *
 * It is strict where compute-sanitizer's guide states a rule (regions lie inside their heap,
 * a region is unregistered by the pointer it was registered at, names are 1 to 49 printable
 * characters) and where rmm-rs promises one: heaps do not overlap (a suballocator over a pool
 * registers no heap of its own: its blocks are regions of the pool's heap), live regions do
 * not overlap, no call names another domain than the one rmm-rs made. Every breach is counted
 * as an error, the first one described. Unregistering a heap drops the regions it still holds
 * (the header says their unregistration is then unnecessary): counted apart.
 *
 * Written for the test alone (no NVTX header needed): built with cc -shared -fPIC -Wall
 * -Wextra -Werror.
 */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- The core protocol (nvtxTypes.h) ---- */

typedef void (*fake_fn)(void);
typedef const void *(*get_export_table_t)(uint32_t id);

struct callbacks_table {
  size_t struct_size;
  int (*get_module_function_table)(uint32_t module, fake_fn ***out_table, unsigned int *out_size);
};

struct version_info_table {
  size_t struct_size;
  uint32_t version;
  uint32_t reserved0;
  void (*set_injection_nvtx_version)(uint32_t version);
};

/* ---- The extension protocol (nvtxExtTypes.h) and the Mem structures (nvToolsExtMem.h) ---- */

struct module_segment {
  size_t segment_id;
  size_t slot_count;
  intptr_t *function_slots;
};

struct module_info {
  uint16_t nvtx_ver;
  uint16_t struct_size;
  uint16_t module_id;
  uint16_t compat_id;
  size_t segments_count;
  struct module_segment *segments;
  void *get_export_function;
  const void *ext_info;
};

struct virtual_range {
  size_t size;
  const void *ptr;
};

struct heap_desc {
  uint16_t ext_compat_id;
  uint16_t struct_size;
  uint32_t reserved0;
  uint32_t usage;
  uint32_t type;
  size_t type_specific_desc_size;
  const void *type_specific_desc;
  uint32_t category;
  uint32_t message_type;
  const char *message;
};

struct regions_register_batch {
  uint16_t ext_compat_id;
  uint16_t struct_size;
  uint32_t region_type;
  const void *heap;
  size_t region_count;
  size_t region_desc_element_size;
  const void *region_desc_elements;
  void **region_handle_elements_out;
};

struct regions_unregister_batch {
  uint16_t ext_compat_id;
  uint16_t struct_size;
  uint32_t ref_type;
  size_t ref_count;
  size_t ref_element_size;
  const void *const *ref_elements;
};

struct region_name_desc {
  uint32_t region_ref_type;
  uint32_t name_type;
  const void *region;
  const char *name;
  uint32_t category;
  uint32_t reserved0;
};

struct regions_name_batch {
  uint16_t ext_compat_id;
  uint16_t struct_size;
  uint32_t reserved0;
  size_t region_count;
  size_t region_element_size;
  const struct region_name_desc *region_elements;
  size_t reserved1;
};

#define COMPAT_ID_MEM 0x0102
#define MAX_HEAPS 4096
#define MAX_REGIONS 65536
#define NAME_LEN 64

struct heap {
  uintptr_t base, size, handle;
  int live;
  char name[NAME_LEN];
};

struct region {
  uintptr_t addr, size, heap;
  int live;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct heap heaps[MAX_HEAPS];
static size_t heap_count;
static struct region regions[MAX_REGIONS];
static size_t region_count;
static uintptr_t next_handle = 0x7e57000;
static unsigned long errors, implicit_drops, names, calls[8];
static char first_error[256];
static char domain_name[NAME_LEN];
static int domain_token;
static int core_initialized, extension_initialized;

static void error(const char *what, uintptr_t a, uintptr_t b) {
  if (errors++ == 0) snprintf(first_error, sizeof first_error, "%s (%#lx, %#lx)", what, (unsigned long)a, (unsigned long)b);
}

static int name_ok(const char *name) {
  size_t n = 0;
  if (!name) return 0;
  for (; name[n]; n++)
    if (name[n] < 0x20 || name[n] > 0x7e) return 0;
  return n >= 1 && n <= 49;
}

static struct heap *heap_of_handle(const void *handle) {
  for (size_t i = 0; i < heap_count; i++)
    if (heaps[i].live && heaps[i].handle == (uintptr_t)handle) return &heaps[i];
  return NULL;
}

static int check_domain(const void *domain) {
  /* rmm-rs must pass the domain it made (or the default one, NULL, when it made none). */
  if (domain != (core_initialized ? (const void *)&domain_token : NULL)) {
    error("call with another domain", (uintptr_t)domain, 0);
    return 0;
  }
  return 1;
}

/* ---- The Mem functions ---- */

static void *heap_register(const void *domain, const struct heap_desc *desc) {
  void *handle = NULL;
  pthread_mutex_lock(&lock);
  calls[1]++;
  if (!check_domain(domain)) goto out;
  if (desc->ext_compat_id != COMPAT_ID_MEM || desc->struct_size != sizeof *desc || desc->usage != 1 || desc->type != 1 ||
      desc->type_specific_desc_size != sizeof(struct virtual_range) || desc->reserved0 != 0) {
    error("malformed heap descriptor", desc->usage, desc->type);
    goto out;
  }
  const struct virtual_range *range = desc->type_specific_desc;
  uintptr_t base = (uintptr_t)range->ptr, size = range->size;
  if (size == 0 || heap_count == MAX_HEAPS) {
    error("empty heap or too many heaps", base, size);
    goto out;
  }
  for (size_t i = 0; i < heap_count; i++)
    if (heaps[i].live && base < heaps[i].base + heaps[i].size && heaps[i].base < base + size) {
      error("heap overlaps a live heap", base, heaps[i].base);
      goto out;
    }
  if (desc->message_type != 1 || !name_ok(desc->message)) error("heap name is not 1-49 printable ASCII characters", base, 0);
  struct heap *h = &heaps[heap_count++];
  h->base = base;
  h->size = size;
  h->handle = next_handle += 16;
  h->live = 1;
  snprintf(h->name, sizeof h->name, "%s", desc->message ? desc->message : "");
  handle = (void *)h->handle;
out:
  pthread_mutex_unlock(&lock);
  return handle;
}

static void heap_unregister(const void *domain, const void *handle) {
  pthread_mutex_lock(&lock);
  calls[2]++;
  struct heap *h = heap_of_handle(handle);
  if (check_domain(domain) && !h) error("unregister of an unknown heap", (uintptr_t)handle, 0);
  if (h) {
    h->live = 0;
    for (size_t i = 0; i < region_count; i++)
      if (regions[i].live && regions[i].heap == h->handle) {
        regions[i].live = 0;
        implicit_drops++;
      }
  }
  pthread_mutex_unlock(&lock);
}

static void regions_register(const void *domain, const struct regions_register_batch *batch) {
  pthread_mutex_lock(&lock);
  calls[4]++;
  if (!check_domain(domain)) goto out;
  if (batch->ext_compat_id != COMPAT_ID_MEM || batch->struct_size != sizeof *batch || batch->region_type != 1 ||
      batch->region_desc_element_size != sizeof(struct virtual_range)) {
    error("malformed region batch", batch->region_type, batch->region_desc_element_size);
    goto out;
  }
  struct heap *h = heap_of_handle(batch->heap);
  if (!h) {
    error("regions in an unknown heap", (uintptr_t)batch->heap, 0);
    goto out;
  }
  const struct virtual_range *ranges = batch->region_desc_elements;
  for (size_t r = 0; r < batch->region_count; r++) {
    uintptr_t addr = (uintptr_t)ranges[r].ptr, size = ranges[r].size;
    if (size == 0 || addr < h->base || addr + size > h->base + h->size) {
      error("region outside its heap", addr, size);
      continue;
    }
    int overlap = 0;
    for (size_t i = 0; i < region_count && !overlap; i++)
      if (regions[i].live && addr < regions[i].addr + regions[i].size && regions[i].addr < addr + size) overlap = 1;
    if (overlap) {
      error("region overlaps a live region", addr, size);
      continue;
    }
    size_t slot = region_count;
    for (size_t i = 0; i < region_count; i++)
      if (!regions[i].live) {
        slot = i;
        break;
      }
    if (slot == MAX_REGIONS) {
      error("too many regions", addr, size);
      continue;
    }
    if (slot == region_count) region_count++;
    regions[slot] = (struct region){addr, size, h->handle, 1};
  }
out:
  pthread_mutex_unlock(&lock);
}

static void regions_unregister(const void *domain, const struct regions_unregister_batch *batch) {
  pthread_mutex_lock(&lock);
  calls[6]++;
  if (!check_domain(domain)) goto out;
  if (batch->ext_compat_id != COMPAT_ID_MEM || batch->struct_size != sizeof *batch || batch->ref_type != 1 ||
      batch->ref_element_size != sizeof(void *)) {
    error("malformed unregister batch", batch->ref_type, batch->ref_element_size);
    goto out;
  }
  for (size_t r = 0; r < batch->ref_count; r++) {
    uintptr_t addr = (uintptr_t)batch->ref_elements[r];
    size_t i = 0;
    while (i < region_count && !(regions[i].live && regions[i].addr == addr)) i++;
    if (i == region_count)
      error("unregister of a pointer that starts no live region", addr, 0);
    else
      regions[i].live = 0;
  }
out:
  pthread_mutex_unlock(&lock);
}

static void regions_name(const void *domain, const struct regions_name_batch *batch) {
  pthread_mutex_lock(&lock);
  calls[7]++;
  if (check_domain(domain)) {
    if (batch->ext_compat_id != COMPAT_ID_MEM || batch->struct_size != sizeof *batch ||
        batch->region_element_size != sizeof(struct region_name_desc))
      error("malformed name batch", batch->region_element_size, 0);
    else
      for (size_t r = 0; r < batch->region_count; r++) {
        const struct region_name_desc *d = &batch->region_elements[r];
        if (d->region_ref_type != 1 || d->name_type != 1 || !name_ok(d->name))
          error("malformed name", (uintptr_t)d->region, d->name_type);
        else
          names++;
      }
  }
  pthread_mutex_unlock(&lock);
}

/* ---- The core protocol: a domain ---- */

static const void *domain_create_a(const char *name) {
  pthread_mutex_lock(&lock);
  snprintf(domain_name, sizeof domain_name, "%s", name ? name : "");
  pthread_mutex_unlock(&lock);
  return &domain_token;
}

/* The CALLBACK modules' SIZEs (nvtxTypes.h): CORE, CUDA, OPENCL, CUDART, CORE2, SYNC. */
static const unsigned int module_sizes[7] = {0, 16, 9, 15, 7, 16, 7};

EXPORT int InitializeInjectionNvtx2(get_export_table_t get_export_table) {
  const struct callbacks_table *callbacks = get_export_table(1);
  const struct version_info_table *version = get_export_table(3);
  if (!callbacks || callbacks->struct_size < sizeof *callbacks || !version || version->struct_size < sizeof *version ||
      version->version != 3 || get_export_table(2) != NULL) {
    error("malformed export tables", (uintptr_t)callbacks, (uintptr_t)version);
    return 0;
  }
  version->set_injection_nvtx_version(3);
  fake_fn **core2 = NULL;
  for (uint32_t module = 1; module <= 6; module++) {
    fake_fn **table = NULL;
    unsigned int size = 0;
    if (!callbacks->get_module_function_table(module, &table, &size) || size != module_sizes[module] || !table ||
        table[0] != NULL || table[size] != NULL) {
      error("malformed module table", module, size);
      return 0;
    }
    for (unsigned int i = 1; i < size; i++)
      if (!table[i] || *table[i] != NULL) {
        error("module slot missing or not empty", module, i);
        return 0;
      }
    if (module == 5) core2 = table;
  }
  if (callbacks->get_module_function_table(7, NULL, NULL) != 0) error("a module that does not exist was answered", 7, 0);
  *core2[12] = (fake_fn)domain_create_a; /* NVTX_CBID_CORE2_DomainCreateA */
  core_initialized = 1;
  return 1;
}

EXPORT int InitializeInjectionNvtxExtension(struct module_info *info) {
  if (info->nvtx_ver != 3 || info->struct_size != sizeof *info || info->module_id != 1 || info->compat_id != COMPAT_ID_MEM ||
      info->segments_count != 1 || info->segments[0].segment_id != 1 || info->segments[0].slot_count != 63 ||
      info->get_export_function != NULL || info->ext_info != NULL) {
    error("malformed module info", info->module_id, info->compat_id);
    return 0;
  }
  intptr_t *slots = info->segments[0].function_slots;
  for (size_t i = 0; i < 63; i++)
    if (slots[i] != 0) {
      error("extension slot not fresh", i, (uintptr_t)slots[i]);
      return 0;
    }
  /* NVTX3EXT_CBID_nvtxMem*: 1 HeapRegister, 2 HeapUnregister, 4 RegionsRegister,
     6 RegionsUnregister, 7 RegionsName, in slot CBID as NVTX's headers read them; with
     FAKE_NVTX_SLOTS_FROM_ZERO set, in slot CBID - 1, as compute-sanitizer 2025.3 fills them. */
  const char *from_zero = getenv("FAKE_NVTX_SLOTS_FROM_ZERO");
  intptr_t *first = slots + (from_zero != NULL && from_zero[0] == '1' ? 0 : 1);
  first[0] = (intptr_t)heap_register;
  first[1] = (intptr_t)heap_unregister;
  first[3] = (intptr_t)regions_register;
  first[5] = (intptr_t)regions_unregister;
  first[6] = (intptr_t)regions_name;
  extension_initialized = 1;
  return 1;
}

/* ---- What the test asks ---- */

/* Errors so far; the first one described in `out` (`len` bytes). */
EXPORT unsigned long fake_nvtx_errors(char *out, size_t len) {
  pthread_mutex_lock(&lock);
  unsigned long n = errors;
  if (out && len) snprintf(out, len, "%s", first_error);
  pthread_mutex_unlock(&lock);
  return n;
}

/* Live heaps as (base, size) pairs, at most `max`; their count. */
EXPORT size_t fake_nvtx_heaps(uintptr_t *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < heap_count; i++)
    if (heaps[i].live) {
      if (n < max) {
        out[2 * n] = heaps[i].base;
        out[2 * n + 1] = heaps[i].size;
      }
      n++;
    }
  pthread_mutex_unlock(&lock);
  return n;
}

/* Live regions as (address, size, base of their heap) triples, at most `max`; their count. */
EXPORT size_t fake_nvtx_regions(uintptr_t *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < region_count; i++)
    if (regions[i].live) {
      if (n < max) {
        struct heap *h = heap_of_handle((const void *)regions[i].heap);
        out[3 * n] = regions[i].addr;
        out[3 * n + 1] = regions[i].size;
        out[3 * n + 2] = h ? h->base : 0;
      }
      n++;
    }
  pthread_mutex_unlock(&lock);
  return n;
}

/* The name of the live heap at `base` into `out`; 0 when there is none. */
EXPORT int fake_nvtx_heap_name(uintptr_t base, char *out, size_t len) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < heap_count; i++)
    if (heaps[i].live && heaps[i].base == base) {
      snprintf(out, len, "%s", heaps[i].name);
      found = 1;
    }
  pthread_mutex_unlock(&lock);
  return found;
}

/* Calls of Mem callback id `id` (1 to 7) so far; id 0: names accepted; 8: regions dropped by a
   heap's unregistration; 9: whether both initializations ran (core * 2 + extension). */
EXPORT unsigned long fake_nvtx_count(unsigned int id) {
  unsigned long n = 0;
  pthread_mutex_lock(&lock);
  if (id >= 1 && id <= 7)
    n = calls[id];
  else if (id == 0)
    n = names;
  else if (id == 8)
    n = implicit_drops;
  else if (id == 9)
    n = (unsigned long)(core_initialized * 2 + extension_initialized);
  pthread_mutex_unlock(&lock);
  return n;
}

/* The name the domain was made with ("" before). */
EXPORT void fake_nvtx_domain_name(char *out, size_t len) {
  pthread_mutex_lock(&lock);
  snprintf(out, len, "%s", domain_name);
  pthread_mutex_unlock(&lock);
}
