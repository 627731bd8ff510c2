/*
 * rmm/device_buffer.hpp: RAPIDS RMM's rmm::device_buffer, untyped stream-ordered device memory
 * from a device_async_resource_ref (by default the current device's resource).
 *
 * rmm.hpp has C++ containers of its own under the same names: a translation unit uses either
 * rmm.hpp or these RAPIDS-shaped headers.
 */
#ifndef RMM_DEVICE_BUFFER_HPP
#define RMM_DEVICE_BUFFER_HPP

#ifdef RMM_HPP
#error "rmm.hpp and the RAPIDS-shaped <rmm/device_buffer.hpp> both define rmm::device_buffer: include one of them"
#endif

#include "cuda_device.hpp"
#include "cuda_stream.hpp"  // RAPIDS RMM's device_buffer.hpp brings rmm::cuda_stream too
#include "cuda_stream_view.hpp"
#include "mr/per_device_resource.hpp"
#include "resource_ref.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace rmm {

/// Holds its resource as RAPIDS RMM 26.x does: a cuda::mr::any_resource (an rmm-rs resource or a
/// reference is copied cheaply; the buffer shares ownership of it).
class device_buffer {
  using any_device_resource = cuda::mr::any_resource<cuda::mr::device_accessible>;

 public:
  device_buffer() : mr_(mr::get_current_device_resource_ref()) {}

  /// `size` bytes, uninitialized, allocated in the order of `stream`.
  explicit device_buffer(std::size_t size, cuda_stream_view stream,
                         any_device_resource mr = mr::get_current_device_resource_ref())
      : device_buffer(size, CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)) {}

  /// As above, aligned to `alignment` (a power of two; rmm-rs resources give up to 256 bytes,
  /// more is rmm::bad_alloc unless the resource is an aligned_resource_adaptor).
  explicit device_buffer(std::size_t size, std::size_t alignment, cuda_stream_view stream,
                         any_device_resource mr = mr::get_current_device_resource_ref())
      : stream_(stream), alignment_(valid(alignment)), mr_(std::move(mr)) {
    allocate(size);
  }

  /// A copy of `size` bytes at `source_data` (host or device memory), in the order of `stream`.
  device_buffer(void const *source_data, std::size_t size, cuda_stream_view stream,
                any_device_resource mr = mr::get_current_device_resource_ref())
      : device_buffer(source_data, size, CUDA_ALLOCATION_ALIGNMENT, stream, std::move(mr)) {}

  explicit device_buffer(void const *source_data, std::size_t size, std::size_t alignment, cuda_stream_view stream,
                         any_device_resource mr = mr::get_current_device_resource_ref())
      : stream_(stream), alignment_(valid(alignment)), mr_(std::move(mr)) {
    if (source_data == nullptr && size != 0) {
      throw logic_error("device_buffer: null source of " + std::to_string(size) + " bytes");
    }
    allocate(size);
    try {
      copy_in(source_data, size);
    } catch (...) {
      deallocate();  // a constructor that throws runs no destructor
      throw;
    }
  }

  /// A copy of `other`'s bytes (not its capacity), in the order of `stream`.
  device_buffer(device_buffer const &other, cuda_stream_view stream,
                any_device_resource mr = mr::get_current_device_resource_ref())
      : device_buffer(other.data(), other.size(), other.alignment(), stream, std::move(mr)) {}

  /// Leaves `other` empty, on the default stream, with alignment 1 and no resource (as in
  /// RAPIDS RMM: only destroying or assigning to it is allowed then).
  device_buffer(device_buffer &&other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)),
        stream_(std::exchange(other.stream_, cuda_stream_view{})),
        alignment_(std::exchange(other.alignment_, 1)),
        mr_(std::move(other.mr_)),
        device_(other.device_) {}

  device_buffer &operator=(device_buffer &&other) noexcept {
    if (this != &other) {
      deallocate();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      stream_ = std::exchange(other.stream_, cuda_stream_view{});
      alignment_ = std::exchange(other.alignment_, 1);
      mr_ = std::move(other.mr_);
      device_ = other.device_;
    }
    return *this;
  }

  device_buffer(device_buffer const &) = delete;
  device_buffer &operator=(device_buffer const &) = delete;

  ~device_buffer() noexcept { deallocate(); }

  /// Capacity of at least `new_capacity` bytes, keeping the contents.
  void reserve(std::size_t new_capacity, cuda_stream_view stream) {
    set_stream(stream);
    if (new_capacity > capacity_) reallocate(new_capacity);
  }

  /// `new_size` bytes, keeping the first min(size, new_size); new bytes are uninitialized.
  void resize(std::size_t new_size, cuda_stream_view stream) {
    set_stream(stream);
    if (new_size > capacity_) reallocate(new_size);
    size_ = new_size;
  }

  /// Capacity down to the size, by reallocating and copying.
  void shrink_to_fit(cuda_stream_view stream) {
    set_stream(stream);
    if (size_ != capacity_) reallocate(size_);
  }

  void const *data() const noexcept { return data_; }
  void *data() noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size_); }
  bool is_empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t alignment() const noexcept { return alignment_; }
  cuda_stream_view stream() const noexcept { return stream_; }
  /// The stream later frees and reallocations are ordered on.
  void set_stream(cuda_stream_view stream) noexcept { stream_ = stream; }
  device_async_resource_ref memory_resource() const noexcept { return device_async_resource_ref{mr_}; }

 private:
  static std::size_t valid(std::size_t alignment) {
    if (!is_pow2(alignment)) {
      throw invalid_argument("device_buffer: alignment " + std::to_string(alignment) + " is not a power of two");
    }
    return alignment;
  }

  void allocate(std::size_t bytes) {
    cuda_set_device_raii on_device{device_};
    data_ = bytes == 0 ? nullptr : mr_.allocate(stream_, bytes, alignment_);
    size_ = capacity_ = bytes;
  }

  void deallocate() noexcept {
    if (data_ != nullptr) {
      int current = device_.value();
      (void)rmmGetDevice(&current);
      if (current != device_.value()) (void)rmmSetDevice(device_.value());
      mr_.deallocate(stream_, data_, capacity_, alignment_);
      if (current != device_.value()) (void)rmmSetDevice(current);
    }
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

  void copy_in(void const *source, std::size_t bytes) {
    if (bytes != 0) check(rmmMemcpyAsync(data_, source, bytes, stream_.value()), "rmmMemcpyAsync");
  }

  void reallocate(std::size_t new_capacity) {
    cuda_set_device_raii on_device{device_};
    void *fresh = new_capacity == 0 ? nullptr : mr_.allocate(stream_, new_capacity, alignment_);
    std::size_t const kept = size_ < new_capacity ? size_ : new_capacity;
    if (kept != 0) {
      rmmError_t const copied = rmmMemcpyAsync(fresh, data_, kept, stream_.value());
      if (copied != RMM_SUCCESS) {
        mr_.deallocate(stream_, fresh, new_capacity, alignment_);
        check(copied, "rmmMemcpyAsync");
      }
    }
    deallocate();
    data_ = fresh;
    size_ = kept;
    capacity_ = new_capacity;
  }

  void *data_{nullptr};
  std::size_t size_{0};
  std::size_t capacity_{0};
  cuda_stream_view stream_{};
  std::size_t alignment_{CUDA_ALLOCATION_ALIGNMENT};
  mutable any_device_resource mr_;
  cuda_device_id device_{get_current_cuda_device()};
};

}  // namespace rmm

#endif  // RMM_DEVICE_BUFFER_HPP
