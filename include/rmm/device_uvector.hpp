/*
 * rmm/device_uvector.hpp: RAPIDS RMM's rmm::device_uvector<T>, a typed, uninitialized,
 * stream-ordered array in device memory (T trivially copyable), over rmm::device_buffer.
 */
#ifndef RMM_DEVICE_UVECTOR_HPP
#define RMM_DEVICE_UVECTOR_HPP

#include "device_buffer.hpp"

#include <cstring>
#include <iterator>
#include <type_traits>

namespace rmm {

template <typename T>
class device_uvector {
  static_assert(std::is_trivially_copyable<T>::value,
                "device_uvector only supports types that are trivially copyable");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = value_type &;
  using const_reference = value_type const &;
  using pointer = value_type *;
  using const_pointer = value_type const *;
  using iterator = pointer;
  using const_iterator = const_pointer;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  device_uvector(device_uvector &&) noexcept = default;
  device_uvector &operator=(device_uvector &&) noexcept = default;
  device_uvector(device_uvector const &) = delete;
  device_uvector &operator=(device_uvector const &) = delete;
  device_uvector() = delete;

  /// `size` elements, uninitialized, in the order of `stream`, aligned for T: a T aligned past
  /// what `mr` gives (256 bytes, unless it is an aligned_resource_adaptor) is rmm::bad_alloc.
  explicit device_uvector(std::size_t size, cuda_stream_view stream,
                          cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : storage_(bytes_of(size), alignof(T), stream, std::move(mr)) {}

  /// A copy of `other`'s elements.
  explicit device_uvector(device_uvector const &other, cuda_stream_view stream,
                          cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : storage_(other.storage_, stream, std::move(mr)) {}

  pointer element_ptr(std::size_t index) noexcept { return data() + index; }
  const_pointer element_ptr(std::size_t index) const noexcept { return data() + index; }

  /// Copies `value` (host memory that must stay valid until the copy is done) into element
  /// `index`, in the order of `stream`. rmm::out_of_range past the end.
  void set_element_async(std::size_t index, value_type const &value, cuda_stream_view stream) {
    check_index(index, "set_element_async");
    check(rmmMemcpyAsync(element_ptr(index), &value, sizeof(T), stream.value()), "rmmMemcpyAsync");
  }
  /// A temporary can't outlive an asynchronous copy.
  void set_element_async(std::size_t, value_type const &&, cuda_stream_view) = delete;

  /// Zeroes the bytes of element `index`, in the order of `stream`.
  void set_element_to_zero_async(std::size_t index, cuda_stream_view stream) {
    check_index(index, "set_element_to_zero_async");
    static const unsigned char zeros[sizeof(T)] = {};
    check(rmmMemcpyAsync(element_ptr(index), zeros, sizeof(T), stream.value()), "rmmMemcpyAsync");
  }

  /// set_element_async, then waits for `stream`.
  void set_element(std::size_t index, T const &value, cuda_stream_view stream) {
    set_element_async(index, value, stream);
    stream.synchronize();
  }

  /// Element `index`, copied to the host after the work on `stream` before it.
  value_type element(std::size_t index, cuda_stream_view stream) const {
    check_index(index, "element");
    value_type value;
    check(rmmMemcpyAsync(&value, element_ptr(index), sizeof(T), stream.value()), "rmmMemcpyAsync");
    stream.synchronize();
    return value;
  }
  value_type front_element(cuda_stream_view stream) const { return element(0, stream); }
  value_type back_element(cuda_stream_view stream) const { return element(size() - 1, stream); }

  void reserve(std::size_t new_capacity, cuda_stream_view stream) { storage_.reserve(bytes_of(new_capacity), stream); }
  void resize(std::size_t new_size, cuda_stream_view stream) { storage_.resize(bytes_of(new_size), stream); }
  void shrink_to_fit(cuda_stream_view stream) { storage_.shrink_to_fit(stream); }
  /// Gives up the memory as a device_buffer; the vector is empty after.
  device_buffer release() noexcept { return std::move(storage_); }

  std::size_t capacity() const noexcept { return storage_.capacity() / sizeof(T); }
  pointer data() noexcept { return static_cast<pointer>(storage_.data()); }
  const_pointer data() const noexcept { return static_cast<const_pointer>(storage_.data()); }
  iterator begin() noexcept { return data(); }
  const_iterator cbegin() const noexcept { return data(); }
  const_iterator begin() const noexcept { return cbegin(); }
  iterator end() noexcept { return data() + size(); }
  const_iterator cend() const noexcept { return data() + size(); }
  const_iterator end() const noexcept { return cend(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  const_reverse_iterator crbegin() const noexcept { return const_reverse_iterator(cend()); }
  const_reverse_iterator rbegin() const noexcept { return crbegin(); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator crend() const noexcept { return const_reverse_iterator(cbegin()); }
  const_reverse_iterator rend() const noexcept { return crend(); }
  std::size_t size() const noexcept { return storage_.size() / sizeof(T); }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size()); }
  bool is_empty() const noexcept { return size() == 0; }
  device_async_resource_ref memory_resource() const noexcept { return storage_.memory_resource(); }
  cuda_stream_view stream() const noexcept { return storage_.stream(); }
  void set_stream(cuda_stream_view stream) noexcept { storage_.set_stream(stream); }

 private:
  static std::size_t bytes_of(std::size_t count) {
    // As RAPIDS RMM: a count whose bytes overflow std::size_t is a bad argument, refused before
    // anything is allocated (not an allocation failure).
    if (count > static_cast<std::size_t>(-1) / sizeof(T)) {
      throw invalid_argument("device_uvector: " + std::to_string(count) + " elements of " +
                             std::to_string(sizeof(T)) + " bytes overflow std::size_t");
    }
    return count * sizeof(T);
  }
  void check_index(std::size_t index, const char *what) const {
    if (index >= size()) {
      throw out_of_range(std::string("device_uvector::") + what + ": index " + std::to_string(index) +
                         " is past the end (size " + std::to_string(size()) + ")");
    }
  }

  device_buffer storage_;
};

}  // namespace rmm

#endif  // RMM_DEVICE_UVECTOR_HPP
