/*
 * rmm/mr/tracking_resource_adaptor.hpp: RAPIDS RMM's tracking_resource_adaptor, an rmm-rs
 * tracking adaptor (every outstanding allocation with its size, stream, thread and call site).
 */
#ifndef RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_TRACKING_RESOURCE_ADAPTOR_HPP

#include "../detail/stack_trace.hpp"
#include "../logger.hpp"
#include "detail/rmm_rs_resource.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rmm {
namespace mr {

class tracking_resource_adaptor : public rmm_rs_resource {
 public:
  /// What the adaptor knows of an outstanding allocation: RAPIDS' strace and allocation_size,
  /// and rmm-rs's stream, thread and call site.
  struct allocation_info {
    /// The stack of the allocating thread, where the adaptor captures stacks; else null.
    std::unique_ptr<rmm::detail::stack_trace> strace;
    std::size_t allocation_size;
    cudaStream_t stream{};
    /// The OS id of the allocating thread.
    std::uint64_t thread{};
    /// The RMM_ALLOC call site ("" and 0 when unknown).
    std::string file;
    std::uint32_t line{};

    allocation_info() = delete;
    /// As RAPIDS makes it: `capture_stack` records the calling thread's stack.
    allocation_info(std::size_t size, bool capture_stack)
        : strace{capture_stack ? std::make_unique<rmm::detail::stack_trace>() : nullptr}, allocation_size{size} {}
  };

  /// `capture_stacks`: record a backtrace with each allocation (slow; for debugging); the
  /// backtraces show in get_outstanding_allocations_str() and as each allocation_info's
  /// strace.
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
        allocation_info info{record.size, false};
        info.stream = record.stream;
        info.thread = record.thread;
        info.file = record.file;
        info.line = record.line;
        std::string stack = stack_of(record.ptr);
        if (!stack.empty()) info.strace = std::make_unique<rmm::detail::stack_trace>(std::move(stack));
        taken.emplace(record.ptr, std::move(info));
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

  /// Logs get_outstanding_allocations_str() through RMM_LOG_DEBUG to rmm::default_logger()
  /// ("Outstanding Allocations: ..."), as RAPIDS does: nothing unless RMM_LOG_ACTIVE_LEVEL is
  /// debug or trace where this is compiled and the logger's level lets debug through.
  void log_outstanding_allocations() const {
#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_DEBUG
    RMM_LOG_DEBUG("Outstanding Allocations: %s", get_outstanding_allocations_str());
#endif
  }

 private:
  // The stack rmm-rs captured with the allocation at `ptr` ("" when none, or when it has
  // been freed since).
  std::string stack_of(void *ptr) const {
    for (;;) {
      std::size_t length = 0;
      if (rmmTrackingAdaptorGetStack(handle(), ptr, nullptr, 0, &length) != RMM_SUCCESS || length == 0) return {};
      std::string text(length + 1, '\0');
      if (rmmTrackingAdaptorGetStack(handle(), ptr, &text[0], text.size(), &length) == RMM_SUCCESS) {
        text.resize(length);
        return text;
      }
    }
  }

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
