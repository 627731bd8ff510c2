/*
 * rmm/mr/per_device_resource.hpp: RAPIDS RMM's per-device resources, kept in step with rmm-rs's
 * own per-device registry, so that code written for RAPIDS, RMM_ALLOC, rmmAlloc and the
 * framework entry points in one process allocate from the same resource.
 *
 * A device whose resource was never set here gets the rmm-rs registry's resource of the device
 * (a cuda resource unless RMM_ALLOC_CONF, rmmConfigure or the C API chose another). Setting a
 * resource here sets it in the registry too: an rmm-rs resource object as it is, any other
 * cuda::mr resource through a callback resource that calls it. A resource set later through the
 * C API alone is not seen by get_*_resource_ref(): set resources through one layer at a time.
 */
#ifndef RMM_MR_PER_DEVICE_RESOURCE_HPP
#define RMM_MR_PER_DEVICE_RESOURCE_HPP

#include "../process_is_exiting.hpp"
// The registry's classes (src/resources/kinds.rs; tests/header.rs writes them):
#include "aligned_resource_adaptor.hpp"
#include "arena_memory_resource.hpp"
#include "binning_memory_resource.hpp"
#include "callback_memory_resource.hpp"
#include "cuda_async_managed_memory_resource.hpp"
#include "cuda_async_memory_resource.hpp"
#include "cuda_async_pinned_host_memory_resource.hpp"
#include "cuda_async_view_memory_resource.hpp"
#include "cuda_memory_resource.hpp"
#include "failure_callback_resource_adaptor.hpp"
#include "fixed_size_memory_resource.hpp"
#include "limiting_resource_adaptor.hpp"
#include "logging_resource_adaptor.hpp"
#include "managed_memory_resource.hpp"
#include "pinned_host_memory_resource.hpp"
#include "pool_memory_resource.hpp"
#include "prefetch_resource_adaptor.hpp"
#include "sam_headroom_memory_resource.hpp"
#include "statistics_resource_adaptor.hpp"
#include "system_memory_resource.hpp"
#include "tracking_resource_adaptor.hpp"
// End of the registry's classes.

#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

namespace rmm {
namespace mr {

namespace detail {

// What the rmm-rs registry holds for a resource of the map: the resource itself, or a callback
// resource over it.
struct registration {
  any_device_resource resource;
  rmm_rs_resource registered;
};

struct per_device_resources {
  std::mutex lock;
  std::map<int, any_device_resource> by_device;
  /// What the registry holds for each device's resource of by_device.
  std::map<int, rmm_rs_resource> registered;
  /// The resource each device had before, and what the registry held for it: setting it back
  /// (RAPIDS' save and restore) reuses that instead of wrapping it once more.
  std::map<int, registration> previous;
  /// Each device's initial_resource(), the object that outlives every setting.
  std::map<int, cuda_memory_resource *> initial;
};

/// The resource the current device starts with, as RAPIDS RMM names it: the device's
/// cuda_memory_resource.
inline cuda_memory_resource &initial_resource() { return cuda_memory_resource::of_current_device(); }

// Lives as long as the process: resources may be used from static destructors.
inline per_device_resources &registry() {
  static auto *resources = new per_device_resources();
  rmm::detail::register_process_exit_hook();
  return *resources;
}

/// The per-device resources by device, as RAPIDS RMM names the map (lock
/// registry().lock to touch it).
inline std::map<int, any_device_resource> &get_ref_map() { return registry().by_device; }

// The registry lock is held.
inline cuda_memory_resource &initial_of(per_device_resources &resources, int device) {
  auto found = resources.initial.find(device);
  if (found == resources.initial.end()) {
    cuda_set_device_raii on_device{cuda_device_id{device}};
    found = resources.initial.emplace(device, &initial_resource()).first;
  }
  return *found->second;
}

// The rmm-rs registry's resource of `device`; where that is a cuda resource (the registry's
// default), the device's initial_resource(), which the registry then holds too. The registry
// lock is held.
inline any_device_resource &entry_of(per_device_resources &resources, int device) {
  auto found = resources.by_device.find(device);
  if (found == resources.by_device.end()) {
    rmmResource_t handle = nullptr;
    check(rmmGetPerDeviceResource(device, &handle), "rmmGetPerDeviceResource");
    rmm_rs_resource registered{handle};
    if (registered.name() == "cuda") {
      registered = initial_of(resources, device);
      check(rmmSetPerDeviceResource(device, registered.handle(), nullptr), "rmmSetPerDeviceResource");
      found = resources.by_device.emplace(device, any_device_resource{initial_of(resources, device)}).first;
    } else {
      found = resources.by_device.emplace(device, any_device_resource{registered}).first;
    }
    resources.registered.insert_or_assign(device, registered);
  }
  return found->second;
}

// A resource that is not rmm-rs's, as the rmm-rs registry holds it: a callback resource over it.
class registered_resource : public rmm_rs_resource {
 public:
  template <class Resource>
  explicit registered_resource(Resource const &resource) : rmm_rs_resource(calling(resource)) {}
};

// The rmm-rs resource an any_resource holds, if it holds one of this layer's classes (what
// set_*_device_resource returned, given back): CCCL 3.4's resource_cast tells; older CCCLs
// cannot, and such a resource is then reached through a callback resource.
inline rmm_rs_resource const *rmm_rs_resource_in([[maybe_unused]] any_device_resource const &resource) {
#if CCCL_VERSION >= 3004000
  rmm_rs_resource const *found = nullptr;
  auto as = [&](auto *kind) {
    using Kind = std::remove_pointer_t<decltype(kind)>;
    if (found == nullptr) found = cuda::mr::resource_cast<Kind>(&resource);
  };
  as(static_cast<rmm_rs_resource *>(nullptr));
  as(static_cast<registered_resource *>(nullptr));
  // The registry's classes (src/resources/kinds.rs; tests/header.rs writes them):
  as(static_cast<statistics_resource_adaptor *>(nullptr));
  as(static_cast<tracking_resource_adaptor *>(nullptr));
  as(static_cast<limiting_resource_adaptor *>(nullptr));
  as(static_cast<aligned_resource_adaptor *>(nullptr));
  as(static_cast<logging_resource_adaptor *>(nullptr));
  as(static_cast<prefetch_resource_adaptor *>(nullptr));
  as(static_cast<failure_callback_resource_adaptor<> *>(nullptr));
  as(static_cast<failure_callback_resource_adaptor<rmm::bad_alloc> *>(nullptr));
  as(static_cast<pool_memory_resource *>(nullptr));
  as(static_cast<binning_memory_resource *>(nullptr));
  as(static_cast<arena_memory_resource *>(nullptr));
  as(static_cast<fixed_size_memory_resource *>(nullptr));
  as(static_cast<callback_memory_resource *>(nullptr));
  as(static_cast<cuda_memory_resource *>(nullptr));
  as(static_cast<managed_memory_resource *>(nullptr));
  as(static_cast<pinned_host_memory_resource *>(nullptr));
  as(static_cast<cuda_async_memory_resource *>(nullptr));
  as(static_cast<cuda_async_view_memory_resource *>(nullptr));
  as(static_cast<cuda_async_managed_memory_resource *>(nullptr));
  as(static_cast<cuda_async_pinned_host_memory_resource *>(nullptr));
  as(static_cast<system_memory_resource *>(nullptr));
  as(static_cast<sam_headroom_memory_resource *>(nullptr));
  // End of the registry's classes.
  return found;
#else
  return nullptr;
#endif
}

}  // namespace detail

/// A reference to the resource of `device`. While that is the initial resource, the reference
/// is to the initial resource itself, which outlives later settings (as RAPIDS RMM's refers to
/// its stateless initial resource): an adaptor made over it keeps working after it is set as
/// the device's resource.
inline device_async_resource_ref get_per_device_resource_ref(cuda_device_id device) {
  auto &resources = detail::registry();
  std::lock_guard<std::mutex> guard(resources.lock);
  auto &entry = detail::entry_of(resources, device.value());
  auto &initial = detail::initial_of(resources, device.value());
  if (resources.registered.at(device.value()) == initial) return device_async_resource_ref{initial};
  return device_async_resource_ref{entry};
}

/// Makes `new_resource` the resource of `device` and returns the one it replaces.
template <class Resource, detail::if_device_resource<Resource> = 0>
cuda::mr::any_resource<cuda::mr::device_accessible> set_per_device_resource(cuda_device_id device,
                                                                           Resource const &new_resource) {
  auto &resources = detail::registry();
  std::lock_guard<std::mutex> guard(resources.lock);
  int const id = device.value();
  auto &entry = detail::entry_of(resources, id);
  detail::any_device_resource replacement{new_resource};
  // What the rmm-rs registry is to hold: an rmm-rs resource itself; the resource the device had
  // before or has now, as it was registered; any other through a new callback resource.
  auto registered = [&]() -> rmm_rs_resource {
    if constexpr (detail::is_rmm_rs_resource<Resource>) {
      return new_resource;
    } else {
      if (auto const *inside = detail::rmm_rs_resource_in(replacement)) return *inside;
      if (replacement == entry) return resources.registered.at(id);
      auto before = resources.previous.find(id);
      if (before != resources.previous.end() && replacement == before->second.resource) return before->second.registered;
      cuda_set_device_raii on_device{device};
      detail::registered_resource wrapped{new_resource};
      replacement = detail::any_device_resource{wrapped};
      return wrapped;
    }
  }();
  check(rmmSetPerDeviceResource(id, registered.handle(), nullptr), "rmmSetPerDeviceResource");
  resources.previous.insert_or_assign(id, detail::registration{entry, resources.registered.at(id)});
  resources.registered.insert_or_assign(id, registered);
  return std::exchange(entry, std::move(replacement));
}

inline device_async_resource_ref get_current_device_resource_ref() {
  return get_per_device_resource_ref(get_current_cuda_device());
}

template <class Resource, detail::if_device_resource<Resource> = 0>
cuda::mr::any_resource<cuda::mr::device_accessible> set_current_device_resource(Resource const &new_resource) {
  return set_per_device_resource(get_current_cuda_device(), new_resource);
}

/// Back to the device's initial resource: a cuda_memory_resource of the device.
inline cuda::mr::any_resource<cuda::mr::device_accessible> reset_per_device_resource(cuda_device_id device) {
  cuda_set_device_raii on_device{device};
  return set_per_device_resource(device, detail::initial_resource());
}

inline cuda::mr::any_resource<cuda::mr::device_accessible> reset_current_device_resource() {
  return reset_per_device_resource(get_current_cuda_device());
}

// RAPIDS RMM 24.x-25.x's names of the setters (26.08 dropped them): the same as
// set_per_device_resource and set_current_device_resource, kept without a deprecation so that
// code written for those releases builds unchanged, -Werror included.

/// Makes `new_resource` the resource of `device` and returns the one it replaces.
template <class Resource, detail::if_device_resource<Resource> = 0>
cuda::mr::any_resource<cuda::mr::device_accessible> set_per_device_resource_ref(cuda_device_id device,
                                                                               Resource const &new_resource) {
  return set_per_device_resource(device, new_resource);
}

/// Makes `new_resource` the resource of the current device and returns the one it replaces.
template <class Resource, detail::if_device_resource<Resource> = 0>
cuda::mr::any_resource<cuda::mr::device_accessible> set_current_device_resource_ref(Resource const &new_resource) {
  return set_per_device_resource(get_current_cuda_device(), new_resource);
}

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_PER_DEVICE_RESOURCE_HPP
