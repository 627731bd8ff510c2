/*
 * rapids_logger/logger.hpp: the part of rapids_logger (the logging library of RAPIDS RMM
 * 25.x-26.x) that code written for RAPIDS RMM uses, header-only: rapids_logger::logger with
 * its sinks, levels, patterns and printf-style messages, and the sinks rapids_logger offers
 * (basic_file_sink_mt, ostream_sink_mt, stderr_sink_mt, null_sink_mt, callback_sink_mt).
 *
 * As in rapids_logger (over spdlog): a message below the logger's level is dropped; each sink
 * formats it with its own pattern (spdlog's default, "[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v",
 * until the logger's set_pattern() sets the pattern of the sinks it has then), adds an
 * end-of-line and writes it under its own mutex; a message at or above the flush level
 * (flush_on) flushes every sink. Pattern flags: %v (the message), %n (the logger's name), %l
 * %L (level, long and short), %t (thread id), %P (process id), %Y %m %d %H %M %S (local time),
 * %e %f %F (milli-, micro-, nanoseconds), %+ (spdlog's default) and %%, each with an optional
 * width and alignment ("%6t", "%-6l", "%=6l").
 * Sinks are rmm-rs's own classes: a program may derive from rapids_logger::sink (write() and
 * flush_() are the points to fill in), which rapids_logger's spdlog-backed sinks do not allow.
 */
#ifndef RAPIDS_LOGGER_LOGGER_HPP
#define RAPIDS_LOGGER_LOGGER_HPP

#include "log_levels.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <ostream>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace rapids_logger {

/// The log levels (spdlog's values).
enum class level_enum : std::int32_t {
  trace = RAPIDS_LOGGER_LOG_LEVEL_TRACE,
  debug = RAPIDS_LOGGER_LOG_LEVEL_DEBUG,
  info = RAPIDS_LOGGER_LOG_LEVEL_INFO,
  warn = RAPIDS_LOGGER_LOG_LEVEL_WARN,
  error = RAPIDS_LOGGER_LOG_LEVEL_ERROR,
  critical = RAPIDS_LOGGER_LOG_LEVEL_CRITICAL,
  off = RAPIDS_LOGGER_LOG_LEVEL_OFF,
  n_levels
};

constexpr bool operator<(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) < static_cast<std::int32_t>(b); }
constexpr bool operator<=(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) <= static_cast<std::int32_t>(b); }
constexpr bool operator>(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) > static_cast<std::int32_t>(b); }
constexpr bool operator>=(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) >= static_cast<std::int32_t>(b); }

class logger;

namespace detail {

inline std::string_view level_name(level_enum level) noexcept {
  switch (level) {
    case level_enum::trace: return "trace";
    case level_enum::debug: return "debug";
    case level_enum::info: return "info";
    case level_enum::warn: return "warning";
    case level_enum::error: return "error";
    case level_enum::critical: return "critical";
    default: return "off";
  }
}

inline std::string_view short_level_name(level_enum level) noexcept {
  switch (level) {
    case level_enum::trace: return "T";
    case level_enum::debug: return "D";
    case level_enum::info: return "I";
    case level_enum::warn: return "W";
    case level_enum::error: return "E";
    case level_enum::critical: return "C";
    default: return "O";
  }
}

/// The calling thread's id as spdlog's %t shows it (the OS id on Linux).
inline std::uint64_t thread_id() noexcept {
#if defined(__linux__)
  thread_local std::uint64_t const id = static_cast<std::uint64_t>(::syscall(SYS_gettid));
#else
  thread_local std::uint64_t const id = std::hash<std::thread::id>{}(std::this_thread::get_id());
#endif
  return id;
}

/// A message on its way to the sinks.
struct message {
  level_enum level;
  std::string_view logger_name;
  std::string_view text;
  std::chrono::system_clock::time_point time;
  std::uint64_t thread;
};

/// A pattern, parsed once into literal text and flags with their padding.
class pattern_formatter {
 public:
  explicit pattern_formatter(std::string pattern = "%+") { parse(pattern); }

  void format(message const& msg, std::string& out) const {
    std::tm local{};
    std::time_t const seconds = std::chrono::system_clock::to_time_t(msg.time);
#if defined(_WIN32)
    localtime_s(&local, &seconds);
#else
    localtime_r(&seconds, &local);
#endif
    auto const since_epoch = msg.time.time_since_epoch();
    auto const sub_ns = static_cast<std::uint64_t>(
        (std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch) % std::chrono::seconds{1}).count());
    for (auto const& piece : pieces_) {
      if (piece.flag == '\0') {
        out += piece.literal;
        continue;
      }
      std::string field;
      switch (piece.flag) {
        case 'v': field.assign(msg.text); break;
        case 'n': field.assign(msg.logger_name); break;
        case 'l': field.assign(level_name(msg.level)); break;
        case 'L': field.assign(short_level_name(msg.level)); break;
        case 't': field = std::to_string(msg.thread); break;
#if defined(__linux__)
        case 'P': field = std::to_string(static_cast<long long>(::getpid())); break;
#endif
        case 'Y': field = std::to_string(local.tm_year + 1900); break;
        case 'm': field = two(local.tm_mon + 1); break;
        case 'd': field = two(local.tm_mday); break;
        case 'H': field = two(local.tm_hour); break;
        case 'M': field = two(local.tm_min); break;
        case 'S': field = two(local.tm_sec); break;
        case 'e': field = digits(sub_ns / 1000000U, 3); break;
        case 'f': field = digits(sub_ns / 1000U, 6); break;
        case 'F': field = digits(sub_ns, 9); break;
        case '+': {
          pattern_formatter const full(msg.logger_name.empty() ? "[%Y-%m-%d %H:%M:%S.%e] [%l] %v"
                                                               : "[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
          full.format(msg, field);
          break;
        }
        default: field = std::string{'%', piece.flag}; break;
      }
      pad(field, piece, out);
    }
  }

 private:
  struct piece {
    std::string literal;  // when flag is '\0'
    char flag = '\0';
    char align = '>';  // '>' right, '<' left, '=' centre
    std::size_t width = 0;
  };

  static std::string two(int value) { return digits(static_cast<std::uint64_t>(value), 2); }
  static std::string digits(std::uint64_t value, std::size_t count) {
    std::string text = std::to_string(value);
    if (text.size() < count) text.insert(0, count - text.size(), '0');
    return text;
  }
  static void pad(std::string const& field, piece const& p, std::string& out) {
    std::size_t const fill = p.width > field.size() ? p.width - field.size() : 0;
    std::size_t const before = p.align == '<' ? 0 : (p.align == '=' ? fill / 2 : fill);
    out.append(before, ' ');
    out += field;
    out.append(fill - before, ' ');
  }

  void parse(std::string const& pattern) {
    std::string literal;
    for (std::size_t at = 0; at < pattern.size(); ++at) {
      if (pattern[at] != '%' || at + 1 == pattern.size()) {
        literal += pattern[at];
        continue;
      }
      piece p;
      ++at;
      if (pattern[at] == '-' || pattern[at] == '=') {
        p.align = pattern[at] == '-' ? '<' : '=';
        ++at;
      }
      while (at < pattern.size() && pattern[at] >= '0' && pattern[at] <= '9') {
        p.width = p.width * 10 + static_cast<std::size_t>(pattern[at] - '0');
        ++at;
      }
      if (at == pattern.size()) break;
      if (pattern[at] == '%') {
        literal += '%';
        continue;
      }
      if (!literal.empty()) {
        pieces_.push_back(piece{literal, '\0', '>', 0});
        literal.clear();
      }
      p.flag = pattern[at];
      pieces_.push_back(p);
    }
    if (!literal.empty()) pieces_.push_back(piece{literal, '\0', '>', 0});
  }

  std::vector<piece> pieces_;
};

/// Where a logger keeps its level instead of its own member (rmm::default_logger(): rmm-rs's
/// level, which rmm.h's rmmLogSetLevel sets too).
struct level_hooks {
  level_enum (*get)() noexcept;
  void (*set)(level_enum);
};

void bind_level(logger& to, level_hooks hooks) noexcept;

}  // namespace detail

/// Where a logger's messages go. Each sink formats a message with its own pattern and writes
/// it under its own mutex: one sink may serve several loggers and threads.
class sink {
 public:
  virtual ~sink() = default;
  sink(sink const&) = delete;
  sink& operator=(sink const&) = delete;

  /// rmm-rs: formats `msg` with this sink's pattern, adds an end-of-line and writes it.
  void log(detail::message const& msg) {
    std::string line;
    std::lock_guard<std::mutex> lock(mutex_);
    formatter_.format(msg, line);
    line += '\n';
    level_ = msg.level;
    write(line);
  }
  /// rmm-rs: writes out what the sink buffers.
  void flush() {
    std::lock_guard<std::mutex> lock(mutex_);
    flush_();
  }
  /// rmm-rs: the pattern of this sink's lines (logger::set_pattern sets it on its sinks).
  void set_pattern(std::string const& pattern) {
    detail::pattern_formatter parsed(pattern);
    std::lock_guard<std::mutex> lock(mutex_);
    formatter_ = std::move(parsed);
  }

 protected:
  sink() = default;
  /// Writes one formatted line, end-of-line included (called under the sink's mutex).
  virtual void write(std::string_view line) = 0;
  /// Flushes (called under the sink's mutex).
  virtual void flush_() = 0;
  /// The level of the line write() is writing.
  level_enum level() const noexcept { return level_; }

 private:
  std::mutex mutex_;
  level_enum level_ = level_enum::info;
  detail::pattern_formatter formatter_;
};

using sink_ptr = std::shared_ptr<sink>;

/// Appends to (or, with `truncate`, empties) the file `filename`; std::runtime_error when it
/// cannot be opened.
class basic_file_sink_mt : public sink {
 public:
  explicit basic_file_sink_mt(std::string const& filename, bool truncate = false)
      : file_(std::fopen(filename.c_str(), truncate ? "wb" : "ab")) {
    if (file_ == nullptr) throw std::runtime_error("rapids_logger: cannot open " + filename + " for writing");
  }
  ~basic_file_sink_mt() override {
    if (file_ != nullptr) std::fclose(file_);
  }

 protected:
  void write(std::string_view line) override { (void)std::fwrite(line.data(), 1, line.size(), file_); }
  void flush_() override { (void)std::fflush(file_); }

 private:
  std::FILE* file_;
};

/// Writes to `stream`, which must outlive the sink; `force_flush` flushes it after each line.
class ostream_sink_mt : public sink {
 public:
  explicit ostream_sink_mt(std::ostream& stream, bool force_flush = false) : stream_(stream), force_flush_(force_flush) {}

 protected:
  void write(std::string_view line) override {
    stream_.write(line.data(), static_cast<std::streamsize>(line.size()));
    if (force_flush_) stream_.flush();
  }
  void flush_() override { stream_.flush(); }

 private:
  std::ostream& stream_;
  bool force_flush_;
};

/// Writes nothing.
class null_sink_mt : public sink {
 public:
  null_sink_mt() = default;

 protected:
  void write(std::string_view) override {}
  void flush_() override {}
};

/// Writes to the C stream stderr.
class stderr_sink_mt : public sink {
 public:
  stderr_sink_mt() = default;

 protected:
  void write(std::string_view line) override { (void)std::fwrite(line.data(), 1, line.size(), stderr); }
  void flush_() override { (void)std::fflush(stderr); }
};

typedef void (*log_callback_t)(int lvl, const char* msg);
typedef void (*flush_callback_t)();

/// Calls `callback(level, formatted line)` for each message (std::cout gets it when the
/// callback is NULL) and `flush` on flush (default: flush std::cout).
class callback_sink_mt : public sink {
 public:
  explicit callback_sink_mt(const log_callback_t& callback, const flush_callback_t& flush = nullptr)
      : callback_(callback), flush_callback_(flush) {}

 protected:
  void write(std::string_view line) override {
    if (callback_ != nullptr) {
      std::string const text(line);
      callback_(static_cast<int>(level()), text.c_str());
    } else {
      std::cout << line;
    }
  }
  void flush_() override {
    if (flush_callback_ != nullptr) {
      flush_callback_();
    } else {
      std::cout << std::flush;
    }
  }

 private:
  log_callback_t callback_;
  flush_callback_t flush_callback_;
};

/// A named logger: a level, a flush level and sinks. Thread-safe for logging; its sinks()
/// may be changed while other threads log (rmm-rs: a lock keeps them apart).
class logger {
  struct state {
    explicit state(std::string n) : name(std::move(n)) {}
    std::string name;
    std::atomic<int> level{static_cast<int>(level_enum::info)};
    std::atomic<int> flush_level{static_cast<int>(level_enum::off)};
    detail::level_hooks hooks{nullptr, nullptr};
    mutable std::shared_mutex mutex;
    std::vector<sink_ptr> sinks;
  };

 public:
  logger() = delete;
  logger(logger const&) = delete;
  logger& operator=(logger const&) = delete;

  logger(logger&& other) : state_(std::move(other.state_)), sinks_(*this) {
    other.state_ = std::make_unique<state>(std::string{});
  }
  logger& operator=(logger&& other) {
    if (this != &other) {
      state_ = std::move(other.state_);
      other.state_ = std::make_unique<state>(std::string{});
    }
    return *this;
  }

  /// The sinks, as a vector whose changes reach the logger.
  class sink_vector {
   public:
    using Iterator = std::vector<sink_ptr>::iterator;
    using ConstIterator = std::vector<sink_ptr>::const_iterator;

    explicit sink_vector(logger& parent) : parent_(parent) {}
    sink_vector(sink_vector const&) = delete;
    sink_vector& operator=(sink_vector const&) = delete;

    void push_back(sink_ptr const& added) {
      std::unique_lock<std::shared_mutex> lock(parent_.state_->mutex);
      parent_.state_->sinks.push_back(added);
    }
    void push_back(sink_ptr&& added) {
      std::unique_lock<std::shared_mutex> lock(parent_.state_->mutex);
      parent_.state_->sinks.push_back(std::move(added));
    }
    void pop_back() {
      std::unique_lock<std::shared_mutex> lock(parent_.state_->mutex);
      parent_.state_->sinks.pop_back();
    }
    void clear() {
      std::unique_lock<std::shared_mutex> lock(parent_.state_->mutex);
      parent_.state_->sinks.clear();
    }
    Iterator begin() { return parent_.state_->sinks.begin(); }
    Iterator end() { return parent_.state_->sinks.end(); }
    ConstIterator begin() const { return parent_.state_->sinks.cbegin(); }
    ConstIterator end() const { return parent_.state_->sinks.cend(); }
    ConstIterator cbegin() const { return parent_.state_->sinks.cbegin(); }
    ConstIterator cend() const { return parent_.state_->sinks.cend(); }
    /// rmm-rs: how many sinks there are.
    std::size_t size() const {
      std::shared_lock<std::shared_mutex> lock(parent_.state_->mutex);
      return parent_.state_->sinks.size();
    }

   private:
    logger& parent_;
  };

  /// Logs to the file `filename`, emptied first.
  logger(std::string name, std::string filename) : logger(std::move(name), std::vector<sink_ptr>{}) {
    sinks_.push_back(std::make_shared<basic_file_sink_mt>(filename, true));
  }
  /// Logs to `stream`, which must outlive the logger.
  logger(std::string name, std::ostream& stream) : logger(std::move(name), std::vector<sink_ptr>{}) {
    sinks_.push_back(std::make_shared<ostream_sink_mt>(stream));
  }
  /// Logs to `sinks`.
  logger(std::string name, std::vector<sink_ptr> sinks) : state_(std::make_unique<state>(std::move(name))), sinks_(*this) {
    state_->sinks = std::move(sinks);
  }
  ~logger() = default;

  /// Logs `message` as it is (no formatting of its own) at `lvl`.
  void log(level_enum lvl, std::string const& message) {
    if (!should_log(lvl)) return;
    detail::message const msg{lvl, state_->name, message, std::chrono::system_clock::now(), detail::thread_id()};
    bool const flush_now = lvl >= flush_level() && lvl != level_enum::off;
    std::shared_lock<std::shared_mutex> lock(state_->mutex);
    for (auto const& to : state_->sinks) {
      if (to == nullptr) continue;
      to->log(msg);
      if (flush_now) to->flush();
    }
  }

  /// Formats `format` and `args` as printf does (a std::string argument is taken as its
  /// c_str()) and logs the result at `lvl`. std::runtime_error when the format is refused.
  template <typename... Args>
  void log(level_enum lvl, std::string const& format, Args&&... args) {
    if (!should_log(lvl)) return;
    auto c_string = [](auto&& arg) -> decltype(auto) {
      if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, std::string>) {
        return arg.c_str();
      } else {
        return std::forward<decltype(arg)>(arg);
      }
    };
    int const size = std::snprintf(nullptr, 0, format.c_str(), c_string(args)...);
    if (size < 0) throw std::runtime_error("Error during formatting.");
    std::string text(static_cast<std::size_t>(size) + 1, '\0');
    (void)std::snprintf(&text[0], text.size(), format.c_str(), c_string(args)...);
    text.resize(static_cast<std::size_t>(size));
    log(lvl, text);
  }

  template <typename... Args>
  void trace(std::string const& format, Args&&... args) {
    log(level_enum::trace, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void debug(std::string const& format, Args&&... args) {
    log(level_enum::debug, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(std::string const& format, Args&&... args) {
    log(level_enum::info, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(std::string const& format, Args&&... args) {
    log(level_enum::warn, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(std::string const& format, Args&&... args) {
    log(level_enum::error, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void critical(std::string const& format, Args&&... args) {
    log(level_enum::critical, format, std::forward<Args>(args)...);
  }

  sink_vector const& sinks() const { return sinks_; }
  sink_vector& sinks() { return sinks_; }

  level_enum level() const {
    if (state_->hooks.get != nullptr) return state_->hooks.get();
    return static_cast<level_enum>(state_->level.load(std::memory_order_relaxed));
  }
  void set_level(level_enum log_level) {
    if (state_->hooks.set != nullptr) {
      state_->hooks.set(log_level);
      return;
    }
    state_->level.store(static_cast<int>(log_level), std::memory_order_relaxed);
  }
  bool should_log(level_enum msg_level) const { return msg_level >= level(); }

  /// Flushes every sink.
  void flush() {
    std::shared_lock<std::shared_mutex> lock(state_->mutex);
    for (auto const& to : state_->sinks) {
      if (to != nullptr) to->flush();
    }
  }
  /// Flushes the sinks after each message at `log_level` or above.
  void flush_on(level_enum log_level) { state_->flush_level.store(static_cast<int>(log_level), std::memory_order_relaxed); }
  level_enum flush_level() const { return static_cast<level_enum>(state_->flush_level.load(std::memory_order_relaxed)); }

  /// Sets the pattern of every sink the logger has now (as spdlog does).
  void set_pattern(std::string pattern) {
    std::shared_lock<std::shared_mutex> lock(state_->mutex);
    for (auto const& to : state_->sinks) {
      if (to != nullptr) to->set_pattern(pattern);
    }
  }

  /// rmm-rs: the logger's name.
  std::string const& name() const noexcept { return state_->name; }

 private:
  friend void detail::bind_level(logger& to, detail::level_hooks hooks) noexcept;

  std::unique_ptr<state> state_;
  sink_vector sinks_;
};

namespace detail {

inline void bind_level(logger& to, level_hooks hooks) noexcept { to.state_->hooks = hooks; }

}  // namespace detail

/// Sets a logger's level for the life of this object, then puts the previous one back.
struct log_level_setter {
  explicit log_level_setter(logger& target, level_enum level) : logger_{target}, prev_level_{target.level()} {
    logger_.set_level(level);
  }
  ~log_level_setter() { logger_.set_level(prev_level_); }
  log_level_setter(log_level_setter const&) = delete;
  log_level_setter& operator=(log_level_setter const&) = delete;

 private:
  logger& logger_;
  level_enum prev_level_;
};

}  // namespace rapids_logger

#endif  // RAPIDS_LOGGER_LOGGER_HPP
