/*
 * rmm/mr/failure_callback_resource_adaptor.hpp: RAPIDS RMM's failure_callback_resource_adaptor,
 * an rmm-rs failure-callback adaptor: when an allocation runs out of memory the callback runs,
 * and the allocation is retried for as long as it returns true.
 */
#ifndef RMM_MR_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP
#define RMM_MR_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <functional>

namespace rmm {
namespace mr {

/// Called with the bytes that could not be allocated and the adaptor's `arg`; true: retry.
using failure_callback_t = std::function<bool(std::size_t, void *)>;

/// `ExceptionType` is RAPIDS' template parameter; rmm-rs calls the callback on out of memory
/// (rmm::out_of_memory), the failure RAPIDS' default catches.
template <typename ExceptionType = rmm::out_of_memory>
class failure_callback_resource_adaptor : public rmm_rs_resource {
 public:
  using exception_type = ExceptionType;

  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  failure_callback_resource_adaptor(Upstream const &upstream, failure_callback_t callback, void *callback_arg)
      : failure_callback_resource_adaptor(upstream, std::make_shared<state>(state{std::move(callback), callback_arg})) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

 private:
  struct state {
    failure_callback_t callback;
    void *arg;
  };

  template <class Upstream>
  failure_callback_resource_adaptor(Upstream const &upstream, std::shared_ptr<state> callback)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              return rmmFailureCallbackAdaptorCreate(out, up, &failure_callback_resource_adaptor::call, callback.get());
            },
            "rmmFailureCallbackAdaptorCreate")) {
    keep(std::move(callback));
  }

  // No exception may unwind into rmm-rs: one from the callback ends the retries.
  static bool call(std::size_t bytes, void *self) {
    try {
      auto *callback = static_cast<state *>(self);
      return callback->callback(bytes, callback->arg);
    } catch (...) {
      return false;
    }
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP
