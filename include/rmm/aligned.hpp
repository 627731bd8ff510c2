/*
 * rmm/aligned.hpp: alignment helpers with RAPIDS RMM's names.
 */
#ifndef RMM_ALIGNED_HPP
#define RMM_ALIGNED_HPP

#include <cstddef>
#include <cstdint>

namespace rmm {

/// What every rmm-rs resource aligns its allocations to, as cudaMalloc does.
static constexpr std::size_t CUDA_ALLOCATION_ALIGNMENT{256};
/// RMM's default alignment for host memory.
static constexpr std::size_t RMM_DEFAULT_HOST_ALIGNMENT{alignof(std::max_align_t)};

constexpr bool is_pow2(std::size_t value) noexcept { return value != 0 && (value & (value - 1)) == 0; }
constexpr bool is_supported_alignment(std::size_t alignment) noexcept { return is_pow2(alignment); }
/// `value` rounded up to a multiple of `alignment` (a power of two).
constexpr std::size_t align_up(std::size_t value, std::size_t alignment) noexcept {
  return (value + (alignment - 1)) & ~(alignment - 1);
}
/// `value` rounded down to a multiple of `alignment` (a power of two).
constexpr std::size_t align_down(std::size_t value, std::size_t alignment) noexcept {
  return value & ~(alignment - 1);
}
constexpr bool is_aligned(std::size_t value, std::size_t alignment) noexcept {
  return value == align_down(value, alignment);
}
inline bool is_pointer_aligned(void *ptr, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) noexcept {
  return is_aligned(reinterpret_cast<std::uintptr_t>(ptr), alignment);
}

}  // namespace rmm

#endif  // RMM_ALIGNED_HPP
