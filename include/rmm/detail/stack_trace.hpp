/*
 * rmm/detail/stack_trace.hpp: RAPIDS RMM's rmm::detail::stack_trace, a call stack kept for
 * printing later (`os << trace`). Made with no argument, it records the calling thread's stack
 * (glibc's backtrace(), where the platform has it); rmm-rs's tracking_resource_adaptor makes
 * one from the text of the stack rmm-rs recorded with the allocation
 * (rmmTrackingAdaptorGetStack).
 */
#ifndef RMM_DETAIL_STACK_TRACE_HPP
#define RMM_DETAIL_STACK_TRACE_HPP

#include <cstdlib>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <execinfo.h>
#define RMM_ENABLE_STACK_TRACES
#endif

namespace rmm {
namespace detail {

class stack_trace {
 public:
  /// The calling thread's stack, up to 64 frames.
  stack_trace() {
#if defined(RMM_ENABLE_STACK_TRACES)
    void* frames[64];
    int const depth = ::backtrace(frames, 64);
    if (depth <= 0) return;
    std::unique_ptr<char*, void (*)(void*)> names(::backtrace_symbols(frames, depth), &std::free);
    for (int at = 0; at < depth; ++at) {
      text_ += "#" + std::to_string(at) + " in ";
      text_ += names ? names.get()[at] : "?";
      text_ += '\n';
    }
#endif
  }
  /// rmm-rs: a stack already put in words, one frame a line.
  explicit stack_trace(std::string text) : text_(std::move(text)) {
    if (!text_.empty() && text_.back() != '\n') text_ += '\n';
  }

  /// rmm-rs: the frames, one a line.
  std::string const& str() const noexcept { return text_; }

  friend std::ostream& operator<<(std::ostream& os, stack_trace const& trace) {
    if (trace.text_.empty()) return os << "stack traces disabled" << std::endl;
    return os << trace.text_;
  }

 private:
  std::string text_;
};

}  // namespace detail
}  // namespace rmm

#endif  // RMM_DETAIL_STACK_TRACE_HPP
