/*
 * rmm/logger.hpp: RAPIDS RMM's logger: rmm::default_logger(), a process-wide
 * rapids_logger::logger named "RMM", with the RMM_LOG_* macros (<rmm/logger_macros.hpp>).
 *
 * rmm-rs's own diagnostics reach it: the first call registers it as a sink of the C API
 * (rmmLogSinkAdd), so rmm-rs's lines go to its sinks (by default the one default_sink()
 * makes) instead of straight to stderr, and its level is rmm-rs's level (rmmLogSetLevel,
 * rmmLogGetLevel; the environment variable RMM_LOG_LEVEL sets it at start, warn by default,
 * where RAPIDS' starts at info). The logger is never destroyed, so lines written while the
 * process exits still reach its sinks.
 */
#ifndef RMM_LOGGER_HPP
#define RMM_LOGGER_HPP

#include "../rapids_logger/logger.hpp"
#include "../rmm.h"
#include "logger_macros.hpp"

#include <cstdlib>
#include <memory>
#include <string>

namespace rmm {

/// The sink default_logger() starts with: the file the environment variable RMM_DEBUG_LOG_FILE
/// names (emptied first), or stderr.
inline rapids_logger::sink_ptr default_sink() {
  char const* filename = std::getenv("RMM_DEBUG_LOG_FILE");
  if (filename != nullptr) return std::make_shared<rapids_logger::basic_file_sink_mt>(filename, true);
  return std::make_shared<rapids_logger::stderr_sink_mt>();
}

/// The pattern of default_logger()'s lines: thread, time, level, message.
inline std::string default_pattern() { return "[%6t][%H:%M:%S:%f][%-6l] %v"; }

namespace detail {

inline rapids_logger::level_enum rmm_rs_log_level() noexcept {
  int level = RMM_LOG_LEVEL_WARN;
  (void)rmmLogGetLevel(&level);
  return static_cast<rapids_logger::level_enum>(level);
}

inline void rmm_rs_set_log_level(rapids_logger::level_enum level) {
  // n_levels is not a level: rmm-rs refuses it, and the level stays as it was.
  (void)rmmLogSetLevel(static_cast<int>(level));
}

// rmm-rs's diagnostics, to the logger's sinks.
inline void rmm_rs_log_line(int level, char const* message, std::size_t length, void* user_data) noexcept {
  try {
    static_cast<rapids_logger::logger*>(user_data)->log(static_cast<rapids_logger::level_enum>(level),
                                                          std::string(message, length));
  } catch (...) {
    // A sink that throws loses the line; nothing unwinds into rmm-rs.
  }
}

inline rapids_logger::logger* make_default_logger() {
  auto* made = new rapids_logger::logger{"RMM", {default_sink()}};
  made->set_pattern(default_pattern());
  rapids_logger::detail::bind_level(*made, {&rmm_rs_log_level, &rmm_rs_set_log_level});
  std::uint64_t sink = 0;
  (void)rmmLogSinkAdd(&sink, &rmm_rs_log_line, made);
  return made;
}

}  // namespace detail

/// The process-wide logger of RMM (and of rmm-rs's own diagnostics; see above).
inline rapids_logger::logger& default_logger() {
  static rapids_logger::logger* const logger = detail::make_default_logger();
  return *logger;
}

}  // namespace rmm

#endif  // RMM_LOGGER_HPP
