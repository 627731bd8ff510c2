/*
 * rmm/process_is_exiting.hpp: rmm::process_is_exiting(), as RAPIDS RMM names it: true once the
 * process has begun to exit (exit() or a return from main), for destructors that must not
 * call into CUDA then.
 */
#ifndef RMM_PROCESS_IS_EXITING_HPP
#define RMM_PROCESS_IS_EXITING_HPP

#include <atomic>
#include <cstdlib>

namespace rmm {

namespace detail {
inline std::atomic<bool> &process_exit_flag() noexcept {
  static std::atomic<bool> exiting{false};
  return exiting;
}

// Registered on first use (of the per-device resources, or of process_is_exiting): exit
// handlers run last-registered first, so handlers and static objects set up before that see
// the flag set, as in RAPIDS RMM.
inline void register_process_exit_hook() noexcept {
  static bool const registered = std::atexit([] { process_exit_flag().store(true, std::memory_order_release); }) == 0;
  (void)registered;
}
}  // namespace detail

inline bool process_is_exiting() noexcept {
  detail::register_process_exit_hook();
  return detail::process_exit_flag().load(std::memory_order_acquire);
}

}  // namespace rmm

#endif  // RMM_PROCESS_IS_EXITING_HPP
