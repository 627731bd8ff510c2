/*
 * rmm/logger_macros.hpp: RAPIDS RMM's logging macros over rmm::default_logger():
 * RMM_LOG_TRACE .. RMM_LOG_CRITICAL take a printf-style format and its arguments. A macro below
 * RMM_LOG_ACTIVE_LEVEL (default RAPIDS_LOGGER_LOG_LEVEL_INFO; define it before including, as
 * RAPIDS' builds do with -DRMM_LOG_ACTIVE_LEVEL=RAPIDS_LOGGER_LOG_LEVEL_DEBUG) compiles to
 * nothing; the others log when the logger's level lets them.
 *
 * RMM_LOG_LEVEL_TRACE .. RMM_LOG_LEVEL_OFF (0 .. 6) come from rmm.h, with the values RAPIDS RMM
 * 25.02 gave them. (RAPIDS RMM 25.04-26.x no longer define them, so that there
 * `#if RMM_LOG_ACTIVE_LEVEL <= RMM_LOG_LEVEL_DEBUG` compares with 0; here it means what it says.)
 */
#ifndef RMM_LOGGER_MACROS_HPP
#define RMM_LOGGER_MACROS_HPP

#include "../rapids_logger/log_levels.h"
#include "../rmm.h"

#if !defined(RMM_LOG_ACTIVE_LEVEL)
#define RMM_LOG_ACTIVE_LEVEL RAPIDS_LOGGER_LOG_LEVEL_INFO
#endif

#define RMM_LOGGER_CALL(logger, level, ...) (logger).log(level, __VA_ARGS__)

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_TRACE
#define RMM_LOG_TRACE(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::trace, __VA_ARGS__)
#else
#define RMM_LOG_TRACE(...) (void)0
#endif

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_DEBUG
#define RMM_LOG_DEBUG(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::debug, __VA_ARGS__)
#else
#define RMM_LOG_DEBUG(...) (void)0
#endif

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_INFO
#define RMM_LOG_INFO(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::info, __VA_ARGS__)
#else
#define RMM_LOG_INFO(...) (void)0
#endif

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_WARN
#define RMM_LOG_WARN(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::warn, __VA_ARGS__)
#else
#define RMM_LOG_WARN(...) (void)0
#endif

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_ERROR
#define RMM_LOG_ERROR(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::error, __VA_ARGS__)
#else
#define RMM_LOG_ERROR(...) (void)0
#endif

#if RMM_LOG_ACTIVE_LEVEL <= RAPIDS_LOGGER_LOG_LEVEL_CRITICAL
#define RMM_LOG_CRITICAL(...) RMM_LOGGER_CALL(rmm::default_logger(), rapids_logger::level_enum::critical, __VA_ARGS__)
#else
#define RMM_LOG_CRITICAL(...) (void)0
#endif

#endif  // RMM_LOGGER_MACROS_HPP
