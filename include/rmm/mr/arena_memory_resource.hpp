/*
 * rmm/mr/arena_memory_resource.hpp: RAPIDS RMM's arena_memory_resource, an rmm-rs arena
 * (per-thread and per-stream arenas over a global one) over any device resource.
 */
#ifndef RMM_MR_ARENA_MEMORY_RESOURCE_HPP
#define RMM_MR_ARENA_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <optional>

namespace rmm {
namespace mr {

class arena_memory_resource : public rmm_rs_resource {
 public:
  /// `arena_size`: the global arena's size (none: grow on demand). `dump_log_on_failure` is
  /// accepted for RAPIDS' sake: rmm-rs puts what an out-of-memory report needs in the error
  /// message and in rmmResourceGetSnapshot.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit arena_memory_resource(Upstream const &upstream, std::optional<std::size_t> arena_size = std::nullopt,
                                 bool dump_log_on_failure = false)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) { return rmmArenaResourceCreate(out, up, arena_size.value_or(0)); },
            "rmmArenaResourceCreate")) {
    (void)dump_log_on_failure;
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_ARENA_MEMORY_RESOURCE_HPP
