/*
 * rmm/cuda_stream.hpp: rmm::cuda_stream, an owning stream of the current device, as RAPIDS RMM
 * names it.
 */
#ifndef RMM_CUDA_STREAM_HPP
#define RMM_CUDA_STREAM_HPP

#include "cuda_stream_view.hpp"

#include <utility>

namespace rmm {

/// An owning stream of the current device (rmmStreamCreate / rmmStreamDestroy). Move-only.
class cuda_stream {
 public:
  /// As RAPIDS RMM: whether the stream synchronizes with the legacy default stream.
  enum class flags : unsigned int { sync_default = 0, non_blocking = 1 };

  cuda_stream() { check(rmmStreamCreate(&stream_), "rmmStreamCreate"); }
  explicit cuda_stream(flags kind) {
    check(rmmStreamCreateWithFlags(&stream_, static_cast<unsigned int>(kind)), "rmmStreamCreateWithFlags");
  }
  cuda_stream(cuda_stream &&other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  cuda_stream &operator=(cuda_stream &&other) noexcept {
    if (this != &other) {
      destroy();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  cuda_stream(const cuda_stream &) = delete;
  cuda_stream &operator=(const cuda_stream &) = delete;
  ~cuda_stream() { destroy(); }

  /// False once moved from.
  bool is_valid() const noexcept { return stream_ != nullptr; }
  cudaStream_t value() const noexcept { return stream_; }
  cuda_stream_view view() const noexcept { return cuda_stream_view{stream_}; }
  operator cuda_stream_view() const noexcept { return view(); }  // NOLINT
  explicit operator cudaStream_t() const noexcept { return stream_; }
#if RMM_HAS_CCCL_STREAM_REF
  operator cuda::stream_ref() const noexcept { return cuda::stream_ref{stream_}; }  // NOLINT
#endif
  void synchronize() const { view().synchronize(); }
  void synchronize_no_throw() const noexcept { view().synchronize_no_throw(); }

 private:
  void destroy() noexcept {
    if (stream_ != nullptr) (void)rmmStreamDestroy(stream_);
    stream_ = nullptr;
  }
  cudaStream_t stream_{nullptr};
};

}  // namespace rmm

#endif  // RMM_CUDA_STREAM_HPP
