/*
 * rmm/mr/tracking_resource_adaptor.hpp: RAPIDS RMM's tracking_resource_adaptor, an rmm-rs
 * tracking adaptor (every outstanding allocation with its size, stream, thread and call site).
 */
#ifndef RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <iostream>
#include <map>
#include <vector>

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
            "rmmTrackingAdaptorCreate")) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  /// The outstanding allocations by address, as taken at this call: the map stays valid, and
  /// unchanged, until this thread's next call (each thread has a map of its own).
  std::map<void *, allocation_info> const &get_outstanding_allocations() const noexcept {
    thread_local std::map<void *, allocation_info> taken;
    taken.clear();
    try {
      for (auto const &record : records()) {
        taken.emplace(record.ptr, allocation_info{record.size, record.stream, record.thread, record.file, record.line});
      }
    } catch (...) {
      taken.clear();  // out of host memory: an empty answer rather than an escaping exception
    }
    return taken;
  }

  /// The bytes outstanding.
  std::size_t get_allocated_bytes() const {
    std::size_t bytes = 0;
    for (auto const &record : records()) bytes += record.size;
    return bytes;
  }

  /// The outstanding allocations as text ("" when there are none).
  std::string get_outstanding_allocations_str() const {
    for (;;) {
      std::size_t length = 0;
      check(rmmTrackingAdaptorGetReport(handle(), nullptr, 0, &length), "rmmTrackingAdaptorGetReport");
      std::string text(length + 1, '\0');
      rmmError_t const status = rmmTrackingAdaptorGetReport(handle(), &text[0], text.size(), &length);
      if (status == RMM_SUCCESS) {
        text.resize(length);
        return text;
      }
      // The report grew between the two calls: ask again.
      if (status != RMM_ERROR_INVALID_ARGUMENT) check(status, "rmmTrackingAdaptorGetReport");
    }
  }

  /// Writes get_outstanding_allocations_str() to stderr when anything is outstanding.
  void log_outstanding_allocations() const {
    auto const text = get_outstanding_allocations_str();
    if (!text.empty()) std::cerr << text << std::flush;
  }

 private:
  // The outstanding records, however many there are by the time they are copied.
  std::vector<rmmAllocationRecord_t> records() const {
    std::vector<rmmAllocationRecord_t> taken;
    for (;;) {
      std::size_t count = 0;
      check(rmmTrackingAdaptorGetOutstanding(handle(), taken.data(), taken.size(), &count),
            "rmmTrackingAdaptorGetOutstanding");
      if (count <= taken.size()) {
        taken.resize(count);
        return taken;
      }
      taken.resize(count + count / 4 + 16);
    }
  }
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP
