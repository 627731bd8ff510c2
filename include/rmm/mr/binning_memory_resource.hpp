/*
 * rmm/mr/binning_memory_resource.hpp: RAPIDS RMM's binning_memory_resource, an rmm-rs binning
 * resource over any device resource.
 */
#ifndef RMM_MR_BINNING_MEMORY_RESOURCE_HPP
#define RMM_MR_BINNING_MEMORY_RESOURCE_HPP

#include "detail/rmm_rs_resource.hpp"

#include <cstdint>
#include <optional>

namespace rmm {
namespace mr {

class binning_memory_resource : public rmm_rs_resource {
 public:
  /// No bins: everything goes to `upstream` until add_bin().
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit binning_memory_resource(Upstream const &upstream) : binning_memory_resource(upstream, 1, 0) {}

  /// Fixed-size bins of 2^min_size_exponent to 2^max_size_exponent bytes over `upstream`.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  binning_memory_resource(Upstream const &upstream, std::int8_t min_size_exponent, std::int8_t max_size_exponent)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              return rmmBinningResourceCreate(out, up, min_size_exponent, max_size_exponent);
            },
            "rmmBinningResourceCreate")) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// Requests up to `allocation_size` bytes (and above the next smaller bin) go to `bin`, or
  /// to a new fixed-size resource of that size over the upstream. A bin that is not an rmm-rs
  /// resource is reached through a callback resource, and the binning resource keeps a copy
  /// of the reference (the referent must outlive it, as in RAPIDS RMM).
  void add_bin(std::size_t allocation_size, std::optional<device_async_resource_ref> bin_resource = std::nullopt) {
    if (!bin_resource) {
      check(rmmBinningResourceAddBin(handle(), allocation_size, nullptr), "rmmBinningResourceAddBin");
      return;
    }
    auto binding = detail::upstream_binding::of(*bin_resource, get_current_cuda_device().value());
    check(rmmBinningResourceAddBin(handle(), allocation_size, binding->handle()), "rmmBinningResourceAddBin");
    keep(std::move(binding));
  }
  /// An rmm-rs resource as a bin, used as it is.
  void add_bin(std::size_t allocation_size, rmm_rs_resource const &bin_resource) {
    check(rmmBinningResourceAddBin(handle(), allocation_size, bin_resource.handle()), "rmmBinningResourceAddBin");
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_BINNING_MEMORY_RESOURCE_HPP
