/*
 * rmm/cuda_stream_view.hpp: rmm::cuda_stream_view, a non-owning view of a CUDA stream, as
 * RAPIDS RMM names it. Where CCCL's <cuda/stream_ref> is on the include path (the CUDA
 * toolkit, or the nvidia-cuda-cccl package) it converts to and from cuda::stream_ref, which the
 * RAPIDS-shaped resources take.
 */
#ifndef RMM_CUDA_STREAM_VIEW_HPP
#define RMM_CUDA_STREAM_VIEW_HPP

#include "error.hpp"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <iostream>

#if !defined(RMM_HAS_CCCL_STREAM_REF)
#if defined(__has_include)
#if __has_include(<cuda/stream_ref>) && defined(__CUDA_RUNTIME_API_H__)
#define RMM_HAS_CCCL_STREAM_REF 1
#endif
#endif
#endif
#if !defined(RMM_HAS_CCCL_STREAM_REF)
#define RMM_HAS_CCCL_STREAM_REF 0
#endif
#if RMM_HAS_CCCL_STREAM_REF
#include <cuda/stream_ref>
#endif

namespace rmm {

/// A non-owning view of a CUDA stream. The default is stream 0, the legacy default stream.
class cuda_stream_view {
 public:
  constexpr cuda_stream_view() noexcept = default;
  constexpr cuda_stream_view(cudaStream_t stream) noexcept : stream_(stream) {}  // NOLINT
#if RMM_HAS_CCCL_STREAM_REF
  cuda_stream_view(cuda::stream_ref stream) noexcept : stream_(stream.get()) {}  // NOLINT
  operator cuda::stream_ref() const noexcept { return cuda::stream_ref{stream_}; }  // NOLINT
#endif
  // As in RMM: a literal 0 or nullptr is ambiguous in intent; use cuda_stream_default.
  cuda_stream_view(int) = delete;
  cuda_stream_view(std::nullptr_t) = delete;

  constexpr cudaStream_t value() const noexcept { return stream_; }
  constexpr operator cudaStream_t() const noexcept { return stream_; }  // NOLINT
  /// The legacy default stream (0 or cudaStreamLegacy).
  bool is_default() const noexcept {
    return stream_ == nullptr || stream_ == reinterpret_cast<cudaStream_t>(std::uintptr_t{1});
  }
  /// cudaStreamPerThread.
  bool is_per_thread_default() const noexcept {
    return stream_ == reinterpret_cast<cudaStream_t>(std::uintptr_t{2});
  }
  /// Waits until the work on the stream has finished (rmmStreamSynchronize).
  void synchronize() const { check(rmmStreamSynchronize(stream_), "rmmStreamSynchronize"); }
  /// As synchronize(), without throwing: a failure (a destroyed stream) asserts in a debug
  /// build (NDEBUG unset), as in RAPIDS RMM, and is ignored otherwise.
  void synchronize_no_throw() const noexcept {
    rmmError_t const status = rmmStreamSynchronize(stream_);
    (void)status;
    assert(status == RMM_SUCCESS && "cuda_stream_view::synchronize_no_throw: rmmStreamSynchronize failed");
  }

 private:
  cudaStream_t stream_{nullptr};
};

inline bool operator==(cuda_stream_view a, cuda_stream_view b) noexcept {
  return a.value() == b.value();
}
inline bool operator!=(cuda_stream_view a, cuda_stream_view b) noexcept { return !(a == b); }

/// Stream 0, the legacy default stream.
inline const cuda_stream_view cuda_stream_default{};
/// cudaStreamLegacy.
inline const cuda_stream_view cuda_stream_legacy{reinterpret_cast<cudaStream_t>(std::uintptr_t{1})};
/// cudaStreamPerThread.
inline const cuda_stream_view cuda_stream_per_thread{
    reinterpret_cast<cudaStream_t>(std::uintptr_t{2})};

inline std::ostream &operator<<(std::ostream &os, cuda_stream_view stream) {
  return os << static_cast<const void *>(stream.value());
}

}  // namespace rmm

#endif  // RMM_CUDA_STREAM_VIEW_HPP
