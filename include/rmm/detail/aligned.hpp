/*
 * rmm/detail/aligned.hpp: where RAPIDS RMM code finds the alignment helpers (<rmm/aligned.hpp>)
 * and aligned host allocation.
 */
#ifndef RMM_DETAIL_ALIGNED_HPP
#define RMM_DETAIL_ALIGNED_HPP

#include "../aligned.hpp"

#include <cstdint>
#include <cstring>
#include <memory>

namespace rmm {
namespace detail {

/// `bytes` from `alloc` aligned to `alignment` (a power of two), with the offset to the block
/// `alloc` returned kept just before the aligned address; free with aligned_host_deallocate.
template <typename Alloc>
void *aligned_host_allocate(std::size_t bytes, std::size_t alignment, Alloc alloc) {
  std::size_t const padded = bytes + alignment + sizeof(std::ptrdiff_t);
  char *const original = static_cast<char *>(alloc(padded));
  void *aligned = original + sizeof(std::ptrdiff_t);
  std::size_t space = padded - sizeof(std::ptrdiff_t);
  aligned = std::align(alignment, bytes, aligned, space);
  std::ptrdiff_t const offset = static_cast<char *>(aligned) - original;
  std::memcpy(static_cast<char *>(aligned) - sizeof(std::ptrdiff_t), &offset, sizeof(offset));
  return aligned;
}

template <typename Dealloc>
void aligned_host_deallocate(void *ptr, std::size_t, std::size_t, Dealloc dealloc) {
  std::ptrdiff_t offset = 0;
  std::memcpy(&offset, static_cast<char *>(ptr) - sizeof(std::ptrdiff_t), sizeof(offset));
  dealloc(static_cast<char *>(ptr) - offset);
}

}  // namespace detail
}  // namespace rmm

#endif  // RMM_DETAIL_ALIGNED_HPP
