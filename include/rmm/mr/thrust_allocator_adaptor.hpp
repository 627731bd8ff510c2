/*
 * rmm/mr/thrust_allocator_adaptor.hpp: RAPIDS RMM's rmm::mr::thrust_allocator<T>, a Thrust
 * allocator over any device resource, in the order of a stream. Needs Thrust (nvcc, or a host
 * compiler with Thrust's CUDA system headers).
 */
#ifndef RMM_MR_THRUST_ALLOCATOR_ADAPTOR_HPP
#define RMM_MR_THRUST_ALLOCATOR_ADAPTOR_HPP

#ifdef RMM_HPP
#error "rmm.hpp and the RAPIDS-shaped <rmm/mr/thrust_allocator_adaptor.hpp> both define rmm::mr::thrust_allocator: include one of them"
#endif

#include "../detail/exec_check_disable.hpp"
#include "per_device_resource.hpp"

#include <thrust/device_malloc_allocator.h>
#include <thrust/device_ptr.h>
#include <thrust/memory.h>

namespace rmm {
namespace mr {

template <typename T>
class thrust_allocator : public thrust::device_malloc_allocator<T> {
 public:
  using Base = thrust::device_malloc_allocator<T>;
  using pointer = typename Base::pointer;
  using size_type = typename Base::size_type;

  template <typename U>
  struct rebind {
    using other = thrust_allocator<U>;
  };

  // Thrust's allocator base has __host__ __device__ special members, so nvcc takes these for
  // __host__ __device__ too; they copy a host-only resource and only ever run on the host.
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator() : mr_(get_current_device_resource_ref()) {}
  RMM_EXEC_CHECK_DISABLE
  explicit thrust_allocator(cuda_stream_view stream) : stream_(stream), mr_(get_current_device_resource_ref()) {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(cuda_stream_view stream, cuda::mr::any_resource<cuda::mr::device_accessible> mr)
      : stream_(stream), mr_(std::move(mr)) {}
  RMM_EXEC_CHECK_DISABLE
  template <typename U>
  thrust_allocator(thrust_allocator<U> const &other)  // NOLINT: rebinding converts
      : stream_(other.stream()), mr_(other.get_upstream_resource()), device_(other.device()) {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator const &other)
      : Base(other), stream_(other.stream_), mr_(other.mr_), device_(other.device_) {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator(thrust_allocator &&other) noexcept
      : Base(other), stream_(other.stream_), mr_(std::move(other.mr_)), device_(other.device_) {}
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator &operator=(thrust_allocator const &other) {
    stream_ = other.stream_;
    mr_ = other.mr_;
    device_ = other.device_;
    return *this;
  }
  RMM_EXEC_CHECK_DISABLE
  thrust_allocator &operator=(thrust_allocator &&other) noexcept {
    stream_ = other.stream_;
    mr_ = std::move(other.mr_);
    device_ = other.device_;
    return *this;
  }
  RMM_EXEC_CHECK_DISABLE
  ~thrust_allocator() = default;

  pointer allocate(size_type count) {
    cuda_set_device_raii on_device{device_};
    return thrust::device_pointer_cast(static_cast<T *>(mr_.allocate(stream_, count * sizeof(T), CUDA_ALLOCATION_ALIGNMENT)));
  }
  void deallocate(pointer ptr, size_type count) noexcept {
    mr_.deallocate(stream_, thrust::raw_pointer_cast(ptr), count * sizeof(T), CUDA_ALLOCATION_ALIGNMENT);
  }

  cuda::mr::any_resource<cuda::mr::device_accessible> const &get_upstream_resource() const noexcept { return mr_; }
  cuda::mr::any_resource<cuda::mr::device_accessible> const &resource() const noexcept { return mr_; }
  cuda_stream_view stream() const noexcept { return stream_; }
  cuda_device_id device() const noexcept { return device_; }

  friend bool operator==(thrust_allocator const &a, thrust_allocator const &b) { return a.mr_ == b.mr_; }
  friend bool operator!=(thrust_allocator const &a, thrust_allocator const &b) { return !(a == b); }

 private:
  cuda_stream_view stream_{};
  mutable cuda::mr::any_resource<cuda::mr::device_accessible> mr_;
  cuda_device_id device_{get_current_cuda_device()};
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_THRUST_ALLOCATOR_ADAPTOR_HPP
