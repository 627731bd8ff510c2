/*
 * rmm/mr/statistics_resource_adaptor.hpp: RAPIDS RMM's statistics_resource_adaptor, an rmm-rs
 * statistics adaptor (bytes and allocations: current, peak, total; nested scopes).
 */
#ifndef RMM_MR_STATISTICS_RESOURCE_ADAPTOR_HPP
#define RMM_MR_STATISTICS_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace rmm {
namespace mr {

class statistics_resource_adaptor : public rmm_rs_resource {
 public:
  /// One figure of the innermost scope, as RAPIDS RMM keeps it.
  struct counter {
    std::int64_t value{0};
    std::int64_t peak{0};
    std::int64_t total{0};

    counter &operator+=(std::int64_t amount) {
      value += amount;
      total += amount;
      peak = std::max(value, peak);
      return *this;
    }
    counter &operator-=(std::int64_t amount) {
      value -= amount;
      return *this;
    }
    /// Folds an ended inner scope into this one: its peak counts on top of this value.
    void add_counters_from_tracked_sub_block(counter const &inner) {
      peak = std::max(value + inner.peak, peak);
      value += inner.value;
      total += inner.total;
    }
  };

  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit statistics_resource_adaptor(Upstream const &upstream)
      : rmm_rs_resource(over(
            upstream, [](rmmResource_t up, rmmResource_t *out) { return rmmStatisticsAdaptorCreate(out, up); },
            "rmmStatisticsAdaptorCreate")) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// Bytes of the innermost scope (as requested, not rounded).
  counter get_bytes_counter() const noexcept { return counters().first; }
  /// Allocations of the innermost scope.
  counter get_allocations_counter() const noexcept { return counters().second; }

  /// Starts a scope whose figures start from zero; returns the (bytes, allocations) of the
  /// scope it nests in, as they were.
  std::pair<counter, counter> push_counters() {
    auto outer = counters();
    check(rmmStatisticsAdaptorPushCounters(handle()), "rmmStatisticsAdaptorPushCounters");
    return outer;
  }
  /// Ends the innermost scope and returns its (bytes, allocations); its figures fold into the
  /// enclosing scope. Without a pushed scope: rmm::out_of_range.
  std::pair<counter, counter> pop_counters() {
    rmmStatistics_t popped{};
    if (rmmStatisticsAdaptorPopCounters(handle(), &popped) != RMM_SUCCESS) {
      throw out_of_range("statistics_resource_adaptor: cannot pop the last counter pair");
    }
    return split(popped);
  }

 private:
  std::pair<counter, counter> counters() const noexcept {
    rmmStatistics_t counts{};
    (void)rmmStatisticsAdaptorGetCounts(handle(), &counts);
    return split(counts);
  }
  static std::pair<counter, counter> split(rmmStatistics_t const &counts) noexcept {
    return {counter{counts.current_bytes, counts.peak_bytes, counts.total_bytes},
            counter{counts.current_count, counts.peak_count, counts.total_count}};
  }
};

static_assert(cuda::mr::resource_with<statistics_resource_adaptor, cuda::mr::device_accessible>);

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_STATISTICS_RESOURCE_ADAPTOR_HPP
