/*
 * rmm/mr/thread_safe_resource_adaptor.hpp: RAPIDS RMM's thread_safe_resource_adaptor. Every
 * rmm-rs resource is thread-safe already, so over one the adaptor only forwards; over any other
 * resource it calls it under a mutex.
 */
#ifndef RMM_MR_THREAD_SAFE_RESOURCE_ADAPTOR_HPP
#define RMM_MR_THREAD_SAFE_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <memory>
#include <mutex>

namespace rmm {
namespace mr {

namespace detail {
// `Resource`'s calls, one at a time.
template <class Resource>
class serialized_resource {
 public:
  explicit serialized_resource(Resource const &resource) : state_(std::make_shared<state>(resource)) {}
  void *allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment) {
    std::lock_guard<std::mutex> guard(state_->lock);
    return state_->resource.allocate(stream, bytes, alignment);
  }
  void deallocate(cuda::stream_ref stream, void *ptr, std::size_t bytes, std::size_t alignment) noexcept {
    std::lock_guard<std::mutex> guard(state_->lock);
    state_->resource.deallocate(stream, ptr, bytes, alignment);
  }
  void *allocate_sync(std::size_t bytes, std::size_t alignment) {
    std::lock_guard<std::mutex> guard(state_->lock);
    return state_->resource.allocate_sync(bytes, alignment);
  }
  void deallocate_sync(void *ptr, std::size_t bytes, std::size_t alignment) noexcept {
    std::lock_guard<std::mutex> guard(state_->lock);
    state_->resource.deallocate_sync(ptr, bytes, alignment);
  }
  bool operator==(serialized_resource const &other) const noexcept { return state_ == other.state_; }
  bool operator!=(serialized_resource const &other) const noexcept { return state_ != other.state_; }
  friend void get_property(serialized_resource const &, cuda::mr::device_accessible) noexcept {}

 private:
  struct state {
    explicit state(Resource const &r) : resource(r) {}
    std::mutex lock;
    Resource resource;
  };
  std::shared_ptr<state> state_;
};
}  // namespace detail

class thread_safe_resource_adaptor : public rmm_rs_resource {
 public:
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit thread_safe_resource_adaptor(Upstream const &upstream)
      : rmm_rs_resource(calling(serialized(upstream))), upstream_(upstream) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return device_async_resource_ref{upstream_}; }

 private:
  // A resource of its own (two adaptors are never equal, as in RAPIDS RMM), calling an rmm-rs
  // upstream as it is and any other under a mutex.
  template <class Upstream>
  static auto serialized(Upstream const &upstream) {
    if constexpr (detail::is_rmm_rs_resource<Upstream>) {
      return detail::any_device_resource{upstream};
    } else {
      return detail::serialized_resource<Upstream>{upstream};
    }
  }

  mutable detail::any_device_resource upstream_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_THREAD_SAFE_RESOURCE_ADAPTOR_HPP
