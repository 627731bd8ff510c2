/*
 * rmm/rmm.h: legacy RMM's include path (`#include <rmm/rmm.h>`) to rmm-rs's C API, rmm.h.
 *
 * In C it is rmm.h. In C++ it also brings in every standard header legacy RMM's header brought
 * in through its own (rmm.hpp, detail/memory_manager.hpp, detail/error.hpp and the memory
 * resource headers of 0.9 to 0.14), which legacy programs rely on without including them
 * themselves (std::string, std::vector, std::runtime_error, std::mutex, std::chrono, std::cout,
 * exit, atoi, malloc), and the rmm::alloc / rmm::realloc / rmm::free function templates that
 * legacy RMM's RMM_ALLOC, RMM_REALLOC and RMM_FREE expanded to.
 */
#ifndef RMM_LEGACY_RMM_H
#define RMM_LEGACY_RMM_H

#include "../rmm.h"

#ifdef __cplusplus
#include <cassert>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
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
