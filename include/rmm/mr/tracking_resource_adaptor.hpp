/*
 * rmm/mr/tracking_resource_adaptor.hpp: RAPIDS RMM's tracking_resource_adaptor, an rmm-rs
 * tracking adaptor (every outstanding allocation with its size, stream, thread and call site).
 */
#ifndef RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <iostream>
#include <map>
#include <mutex>

namespace rmm {
namespace mr {

class tracking_resource_adaptor : public rmm_rs_resource {
 public:
  /// What the adaptor knows of an outstanding allocation.
  struct allocation_info {
    std::size_t allocation_size;
    cudaStream_t stream;
    /// The OS id of the allocating thread.
    std::uint64_t thread;
    /// The RMM_ALLOC call site ("" and 0 when unknown).
    std::string file;
    std::uint32_t line;
  };

  /// `capture_stacks`: record a backtrace with each allocation (slow; for debugging); the
  /// backtraces show in get_outstanding_allocations_str().
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit tracking_resource_adaptor(Upstream const &upstream, bool capture_stacks = false)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) { return rmmTrackingAdaptorCreate(out, up, capture_stacks); },
            "rmmTrackingAdaptorCreate")),
        outstanding_(std::make_shared<snapshot>()) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// The outstanding allocations by address, as taken at this call: the map stays valid, and
  /// unchanged, until the next call on this object or a copy of it.
  std::map<void *, allocation_info> const &get_outstanding_allocations() const noexcept {
    std::lock_guard<std::mutex> guard(outstanding_->lock);
    outstanding_->allocations.clear();
    std::size_t count = 0;
    if (rmmTrackingAdaptorGetOutstanding(handle(), nullptr, 0, &count) != RMM_SUCCESS) return outstanding_->allocations;
    std::vector<rmmAllocationRecord_t> records(count + 16);
    if (rmmTrackingAdaptorGetOutstanding(handle(), records.data(), records.size(), &count) != RMM_SUCCESS) {
      return outstanding_->allocations;
    }
    records.resize(std::min(count, records.size()));
    for (auto const &record : records) {
      outstanding_->allocations.emplace(record.ptr,
                                        allocation_info{record.size, record.stream, record.thread, record.file, record.line});
    }
    return outstanding_->allocations;
  }

  /// The bytes outstanding.
  std::size_t get_allocated_bytes() const noexcept {
    std::size_t bytes = 0;
    for (auto const &entry : get_outstanding_allocations()) bytes += entry.second.allocation_size;
    return bytes;
  }

  /// The outstanding allocations as text ("" when there are none).
  std::string get_outstanding_allocations_str() const {
    std::size_t length = 0;
    check(rmmTrackingAdaptorGetReport(handle(), nullptr, 0, &length), "rmmTrackingAdaptorGetReport");
    std::string text(length + 1, '\0');
    check(rmmTrackingAdaptorGetReport(handle(), &text[0], text.size(), &length), "rmmTrackingAdaptorGetReport");
    text.resize(length);
    return text;
  }

  /// Writes get_outstanding_allocations_str() to stderr when anything is outstanding.
  void log_outstanding_allocations() const {
    auto const text = get_outstanding_allocations_str();
    if (!text.empty()) std::cerr << text << std::flush;
  }

 private:
  struct snapshot {
    std::mutex lock;
    std::map<void *, allocation_info> allocations;
  };
  std::shared_ptr<snapshot> outstanding_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP
