/*
 * rapids_logger/log_levels.h: the log levels of rapids_logger (RAPIDS RMM 25.x-26.x's logging
 * library) as preprocessor values, for C and C++: the values of rapids_logger::level_enum and
 * of rmm-rs's RMM_LOG_LEVEL_* (rmm.h). spdlog's values.
 */
#ifndef RAPIDS_LOGGER_LOG_LEVELS_H
#define RAPIDS_LOGGER_LOG_LEVELS_H

#define RAPIDS_LOGGER_LOG_LEVEL_TRACE 0
#define RAPIDS_LOGGER_LOG_LEVEL_DEBUG 1
#define RAPIDS_LOGGER_LOG_LEVEL_INFO 2
#define RAPIDS_LOGGER_LOG_LEVEL_WARN 3
#define RAPIDS_LOGGER_LOG_LEVEL_ERROR 4
#define RAPIDS_LOGGER_LOG_LEVEL_CRITICAL 5
#define RAPIDS_LOGGER_LOG_LEVEL_OFF 6

#endif  // RAPIDS_LOGGER_LOG_LEVELS_H
