/*
 * rmm/device_scalar.hpp: RAPIDS RMM's rmm::device_scalar<T>, one T in device memory.
 */
#ifndef RMM_DEVICE_SCALAR_HPP
#define RMM_DEVICE_SCALAR_HPP

#include "device_uvector.hpp"

namespace rmm {

template <typename T>
class device_scalar {
 public:
  using value_type = typename device_uvector<T>::value_type;
  using reference = typename device_uvector<T>::reference;
  using const_reference = typename device_uvector<T>::const_reference;
  using pointer = typename device_uvector<T>::pointer;
  using const_pointer = typename device_uvector<T>::const_pointer;

  device_scalar(device_scalar &&) noexcept = default;
  device_scalar &operator=(device_scalar &&) noexcept = default;
  device_scalar(device_scalar const &) = delete;
  device_scalar &operator=(device_scalar const &) = delete;
  device_scalar() = delete;

  /// Uninitialized.
  explicit device_scalar(cuda_stream_view stream, cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : data_(1, stream, std::move(mr)) {}
  /// Set to `initial_value` in the order of `stream`.
  explicit device_scalar(value_type const &initial_value, cuda_stream_view stream,
                         cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : data_(1, stream, std::move(mr)) {
    set_value_async(initial_value, stream);
  }
  device_scalar(device_scalar const &other, cuda_stream_view stream,
                cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : data_(other.data_, stream, std::move(mr)) {}

  /// The value, after the work on `stream` before it.
  value_type value(cuda_stream_view stream) const { return data_.front_element(stream); }
  void set_value_async(value_type const &value, cuda_stream_view stream) { data_.set_element_async(0, value, stream); }
  void set_value_async(value_type &&, cuda_stream_view) = delete;
  void set_value_to_zero_async(cuda_stream_view stream) { data_.set_element_to_zero_async(0, stream); }

  /// One element, as a span over data() counts it.
  static constexpr std::size_t size() noexcept { return 1; }
  pointer data() noexcept { return data_.data(); }
  const_pointer data() const noexcept { return data_.data(); }
  cuda_stream_view stream() const noexcept { return data_.stream(); }
  void set_stream(cuda_stream_view stream) noexcept { data_.set_stream(stream); }

 private:
  device_uvector<T> data_;
};

}  // namespace rmm

#endif  // RMM_DEVICE_SCALAR_HPP
