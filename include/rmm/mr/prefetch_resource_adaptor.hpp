/*
 * rmm/mr/prefetch_resource_adaptor.hpp: RAPIDS RMM's prefetch_resource_adaptor, an rmm-rs
 * prefetch adaptor (managed memory migrates to the device before it is handed out).
 */
#ifndef RMM_MR_PREFETCH_RESOURCE_ADAPTOR_HPP
#define RMM_MR_PREFETCH_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

namespace rmm {
namespace mr {

class prefetch_resource_adaptor : public rmm_rs_resource {
 public:
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit prefetch_resource_adaptor(Upstream const &upstream)
      : rmm_rs_resource(over(
            upstream, [](rmmResource_t up, rmmResource_t *out) { return rmmPrefetchAdaptorCreate(out, up); },
            "rmmPrefetchAdaptorCreate")) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_PREFETCH_RESOURCE_ADAPTOR_HPP
