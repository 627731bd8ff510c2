/*
 * rmm/mr/polymorphic_allocator.hpp: RAPIDS RMM's stream-ordered allocators:
 * polymorphic_allocator<T> (allocate(n, stream) from any device resource) and
 * stream_allocator_adaptor<A> (a standard allocator bound to one stream, for containers).
 */
#ifndef RMM_MR_POLYMORPHIC_ALLOCATOR_HPP
#define RMM_MR_POLYMORPHIC_ALLOCATOR_HPP

#include "per_device_resource.hpp"

#include <memory>
#include <utility>

namespace rmm {
namespace mr {

template <typename T>
class polymorphic_allocator {
 public:
  using value_type = T;

  /// Over the current device's resource at construction.
  polymorphic_allocator() : mr_(get_current_device_resource_ref()) {}
  polymorphic_allocator(cuda::mr::any_resource<cuda::mr::device_accessible> mr) : mr_(std::move(mr)) {}  // NOLINT
  template <typename U>
  polymorphic_allocator(polymorphic_allocator<U> const &other) noexcept  // NOLINT: rebinding converts
      : mr_(other.get_upstream_resource()) {}

  value_type *allocate(std::size_t count, cuda_stream_view stream) {
    return static_cast<value_type *>(mr_.allocate(stream, count * sizeof(T), CUDA_ALLOCATION_ALIGNMENT));
  }
  void deallocate(value_type *ptr, std::size_t count, cuda_stream_view stream) noexcept {
    mr_.deallocate(stream, ptr, count * sizeof(T), CUDA_ALLOCATION_ALIGNMENT);
  }
  device_async_resource_ref get_upstream_resource() const noexcept { return device_async_resource_ref{mr_}; }

 private:
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> mr_;
};

template <typename T, typename U>
bool operator==(polymorphic_allocator<T> const &a, polymorphic_allocator<U> const &b) {
  return a.get_upstream_resource() == b.get_upstream_resource();
}
template <typename T, typename U>
bool operator!=(polymorphic_allocator<T> const &a, polymorphic_allocator<U> const &b) {
  return !(a == b);
}

/// `Allocator` (allocate(n, stream), deallocate(p, n, stream)) as a standard allocator whose
/// every call is ordered on one stream.
template <typename Allocator>
class stream_allocator_adaptor {
 public:
  using value_type = typename std::allocator_traits<Allocator>::value_type;

  stream_allocator_adaptor() = delete;
  stream_allocator_adaptor(Allocator const &allocator, cuda_stream_view stream) : allocator_(allocator), stream_(stream) {}
  template <typename Other>
  stream_allocator_adaptor(stream_allocator_adaptor<Other> const &other)  // NOLINT: rebinding converts
      : stream_allocator_adaptor(Allocator(other.underlying_allocator()), other.stream()) {}

  template <typename U>
  struct rebind {
    using other = stream_allocator_adaptor<typename std::allocator_traits<Allocator>::template rebind_alloc<U>>;
  };

  value_type *allocate(std::size_t count) { return allocator_.allocate(count, stream_); }
  void deallocate(value_type *ptr, std::size_t count) noexcept { allocator_.deallocate(ptr, count, stream_); }
  cuda_stream_view stream() const noexcept { return stream_; }
  Allocator underlying_allocator() const noexcept { return allocator_; }

 private:
  Allocator allocator_;
  cuda_stream_view stream_;
};

template <typename A, typename B>
bool operator==(stream_allocator_adaptor<A> const &a, stream_allocator_adaptor<B> const &b) {
  return a.underlying_allocator() == b.underlying_allocator();
}
template <typename A, typename B>
bool operator!=(stream_allocator_adaptor<A> const &a, stream_allocator_adaptor<B> const &b) {
  return !(a == b);
}

/// A stream_allocator_adaptor of `allocator` on `stream`.
template <typename Allocator>
auto stream_allocator_adaptor_factory(Allocator const &allocator, cuda_stream_view stream) {
  return stream_allocator_adaptor<Allocator>{allocator, stream};
}

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_POLYMORPHIC_ALLOCATOR_HPP
