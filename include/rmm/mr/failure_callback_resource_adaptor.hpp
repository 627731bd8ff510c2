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

/// `ExceptionType`: the failures the callback is called for, as in RAPIDS RMM: what a C++
/// upstream threw when it is one, rmm::out_of_memory when rmm-rs ran out of memory. Other
/// failures reach the caller without a call.
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
    if (!catches_failure()) return false;
    try {
      auto *callback = static_cast<state *>(self);
      return callback->callback(bytes, callback->arg);
    } catch (...) {
      return false;
    }
  }

  // Whether the failure is an ExceptionType: the upstream's exception waiting to be rethrown
  // (it stays pending for the caller), or rmm-rs's own out of memory.
  static bool catches_failure() noexcept {
    try {
      if (auto const &pending = detail::pending_upstream_exception()) std::rethrow_exception(pending);
      throw rmm::out_of_memory("rmm-rs ran out of memory");
    } catch (ExceptionType const &) {
      return true;
    } catch (...) {
      return false;
    }
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP
