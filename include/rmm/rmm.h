/*
 * rmm/rmm.h: legacy RMM's include path (`#include <rmm/rmm.h>`) to rmm-rs's C API, rmm.h.
 *
 * In C it is rmm.h. In C++ it also brings in what legacy RMM's header brought in, which
 * legacy programs rely on without including it themselves (std::string, std::vector,
 * std::cout, atoi, malloc), and the rmm::alloc / rmm::realloc / rmm::free function templates
 * that legacy RMM's RMM_ALLOC, RMM_REALLOC and RMM_FREE expanded to.
 */
#ifndef RMM_LEGACY_RMM_H
#define RMM_LEGACY_RMM_H

#include "../rmm.h"

#ifdef __cplusplus
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace rmm {

/* Legacy RMM's typed allocation: `*ptr` becomes `size` bytes from the current device's
   resource, for use on `stream`. */
template <typename T>
inline rmmError_t alloc(T **ptr, std::size_t size, cudaStream_t stream, const char *file, unsigned int line) {
  return rmmAlloc(reinterpret_cast<void **>(ptr), size, stream, file, line);
}

template <typename T>
inline rmmError_t realloc(T **ptr, std::size_t new_size, cudaStream_t stream, const char *file, unsigned int line) {
  return rmmRealloc(reinterpret_cast<void **>(ptr), new_size, stream, file, line);
}

inline rmmError_t free(void *ptr, cudaStream_t stream, const char *file, unsigned int line) {
  return rmmFree(ptr, stream, file, line);
}

}  // namespace rmm
#endif /* __cplusplus */

#endif /* RMM_LEGACY_RMM_H */
