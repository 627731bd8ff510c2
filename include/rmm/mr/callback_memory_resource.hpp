/*
 * rmm/mr/callback_memory_resource.hpp: RAPIDS RMM's callback_memory_resource, an rmm-rs callback
 * resource (rmmCallbackResourceCreate) over the caller's allocate and deallocate functions.
 */
#ifndef RMM_MR_CALLBACK_MEMORY_RESOURCE_HPP
#define RMM_MR_CALLBACK_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <functional>

namespace rmm {
namespace mr {

/// Returns `bytes` bytes aligned to 256 for use on the stream, or nullptr (or throws) when out
/// of memory.
using allocate_callback_t = std::function<void *(std::size_t, cuda_stream_view, void *)>;
/// Gives back memory that the allocate callback returned, with its size.
using deallocate_callback_t = std::function<void(void *, std::size_t, cuda_stream_view, void *)>;

class callback_memory_resource : public rmm_rs_resource {
 public:
  callback_memory_resource(allocate_callback_t allocate_callback, deallocate_callback_t deallocate_callback,
                           void *allocate_callback_arg = nullptr, void *deallocate_callback_arg = nullptr)
      : callback_memory_resource(std::make_shared<state>(state{std::move(allocate_callback), std::move(deallocate_callback),
                                                               allocate_callback_arg, deallocate_callback_arg})) {}

 private:
  struct state {
    allocate_callback_t allocate;
    deallocate_callback_t deallocate;
    void *allocate_arg;
    void *deallocate_arg;
  };

  // The resource holds the callbacks (user_data: a heap reference, deleted by its release),
  // so they outlive every copy of this object for as long as memory from it is live.
  explicit callback_memory_resource(std::shared_ptr<state> callbacks)
      : rmm_rs_resource(create(
            [&](rmmResource_t *out) {
              auto *user = new std::shared_ptr<state>(callbacks);
              rmmError_t const status = rmmCallbackResourceCreateWithRelease(
                  &callback_memory_resource::allocate_callback, &callback_memory_resource::deallocate_callback,
                  &callback_memory_resource::release_callback, user, get_current_cuda_device().value(), out);
              if (status != RMM_SUCCESS) delete user;
              return status;
            },
            "rmmCallbackResourceCreateWithRelease")) {}

  static state &of(void *user) noexcept { return **static_cast<std::shared_ptr<state> *>(user); }
  static void release_callback(void *user) noexcept { delete static_cast<std::shared_ptr<state> *>(user); }

  // Exceptions stop here: rmm-rs takes NULL as out of memory.
  static void *allocate_callback(std::size_t bytes, cudaStream_t stream, void *user) noexcept {
    try {
      state &callbacks = of(user);
      return callbacks.allocate(bytes, cuda_stream_view{stream}, callbacks.allocate_arg);
    } catch (...) {
      return nullptr;
    }
  }
  static void deallocate_callback(void *ptr, std::size_t bytes, cudaStream_t stream, void *user) noexcept {
    try {
      state &callbacks = of(user);
      callbacks.deallocate(ptr, bytes, cuda_stream_view{stream}, callbacks.deallocate_arg);
    } catch (...) {
    }
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_CALLBACK_MEMORY_RESOURCE_HPP
