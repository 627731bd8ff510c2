// rmm::default_logger(), rapids_logger's sinks and the logging and tracking adaptors' sinks, as
// code written for RAPIDS RMM 26.x uses them, built against rmm-rs's headers and run on
// simulated devices: rmm-rs's own diagnostics reach the default logger's sinks at its level,
// the C API sees the same level, patterns and printf-style messages come out as in
// rapids_logger, the logging adaptor's header comes out first and its lines reach every sink
// (from threads too), a sink that fails is an error at flush, and tracked allocations carry
// their stacks.
#define RMM_LOG_ACTIVE_LEVEL RAPIDS_LOGGER_LOG_LEVEL_DEBUG

#include <rmm/cuda_stream_view.hpp>
#include <rmm/error.hpp>
#include <rmm/logger.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "rmm_test.h"

namespace {

bool contains(std::string const &text, std::string const &part) { return text.find(part) != std::string::npos; }

std::vector<std::string> lines_of(std::string const &text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string read_file(std::string const &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The default logger is rmm-rs's diagnostics: its sinks get rmm-rs's lines, its level is the
// C API's, both ways.
void default_logger_carries_rmm_rs_diagnostics() {
  auto &logger = rmm::default_logger();
  CHECK(logger.name() == "RMM");
  auto const old_level = logger.level();
  std::ostringstream out;
  auto sink = std::make_shared<rapids_logger::ostream_sink_mt>(out);
  logger.sinks().push_back(sink);

  logger.set_level(rapids_logger::level_enum::debug);
  int level = -1;
  CHECK_OK(rmmLogGetLevel(&level));
  CHECK(level == RMM_LOG_LEVEL_DEBUG);
  CHECK(logger.should_log(rapids_logger::level_enum::debug));
  CHECK(!logger.should_log(rapids_logger::level_enum::trace));
  // A failed call writes its message at debug: it reaches the sink, in spdlog's default
  // pattern (the sink came after set_pattern).
  CHECK_RMM(rmmLogGetLevel(nullptr), RMM_ERROR_INVALID_ARGUMENT);
  auto const lines = lines_of(out.str());
  CHECK(lines.size() == 1);
  CHECK(contains(lines[0], "] [RMM] [debug] rmmLogGetLevel: invalid argument: level is NULL"));
  CHECK(lines[0][0] == '[' && lines[0][5] == '-' && lines[0][24] == ']');  // [YYYY-mm-dd HH:MM:SS.eee]

  CHECK_OK(rmmLogSetLevel(RMM_LOG_LEVEL_ERROR));
  CHECK(logger.level() == rapids_logger::level_enum::error);
  CHECK_RMM(rmmLogGetLevel(nullptr), RMM_ERROR_INVALID_ARGUMENT);  // debug: below error
  RMM_LOG_WARN("below the level: %d", 1);
  CHECK(lines_of(out.str()).size() == 1);

  // The macros, printf-style as rapids_logger formats (a std::string as %s), and a pattern.
  logger.set_level(rapids_logger::level_enum::trace);
  sink->set_pattern("%l|%L|%n|%-5v|");
  out.str("");
  RMM_LOG_TRACE("compiled out: RMM_LOG_ACTIVE_LEVEL is debug");
  logger.trace("t %d", 1);
  RMM_LOG_DEBUG("d %s", std::string("two"));
  RMM_LOG_INFO("i %zu %s", std::size_t{3}, "x");
  RMM_LOG_WARN("w");
  RMM_LOG_ERROR("e%%");
  RMM_LOG_CRITICAL("c %5.1f", 2.25);
  CHECK(out.str() ==
        "trace|T|RMM|t 1  |\ndebug|D|RMM|d two|\ninfo|I|RMM|i 3 x|\nwarning|W|RMM|w    |\n"
        "error|E|RMM|e%%  |\ncritical|C|RMM|c   2.2|\n");

  // flush_on: a sink that counts its flushes.
  struct counting_sink : rapids_logger::sink {
    int lines = 0;
    int flushes = 0;

   protected:
    void write(std::string_view) override { ++lines; }
    void flush_() override { ++flushes; }
  };
  auto counting = std::make_shared<counting_sink>();
  logger.sinks().push_back(counting);
  logger.flush_on(rapids_logger::level_enum::error);
  RMM_LOG_INFO("no flush");
  RMM_LOG_ERROR("flush");
  CHECK(counting->lines == 2 && counting->flushes == 1);
  logger.flush_on(rapids_logger::level_enum::off);
  logger.sinks().pop_back();

  // Threads log while the sinks change.
  out.str("");
  sink->set_pattern("%v");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i) RMM_LOG_INFO("thread %d line %d", t, i);
    });
  }
  for (int i = 0; i < 100; ++i) {
    logger.sinks().push_back(std::make_shared<rapids_logger::null_sink_mt>());
    logger.sinks().pop_back();
  }
  for (auto &thread : threads) thread.join();
  CHECK(lines_of(out.str()).size() == 800);

  { rapids_logger::log_level_setter quiet{logger, rapids_logger::level_enum::off}; CHECK(logger.level() == rapids_logger::level_enum::off); }
  CHECK(logger.level() == rapids_logger::level_enum::trace);
  logger.sinks().pop_back();
  logger.set_level(old_level);
}

// A logger of one's own, to a file and through a callback.
int callback_calls = 0;
void count_callback(int lvl, const char *msg) {
  CHECK(lvl == static_cast<int>(rapids_logger::level_enum::warn));
  CHECK(std::string(msg) == "[warning] x=7\n");
  ++callback_calls;
}

void loggers_of_ones_own(std::string const &dir) {
  std::string const path = dir + "/own.log";
  {
    rapids_logger::logger own{"own", path};
    own.set_pattern("%n:%v");
    own.info("to %s", "file");
    own.debug("dropped: below info, the default level");
    own.flush();
    CHECK(read_file(path) == "own:to file\n");
  }
  rapids_logger::logger calls{"calls", {std::make_shared<rapids_logger::callback_sink_mt>(&count_callback)}};
  calls.set_pattern("[%l] %v");
  calls.warn("x=%d", 7);
  CHECK(callback_calls == 1);
  rapids_logger::logger moved = std::move(calls);
  moved.warn("x=%d", 7);
  CHECK(callback_calls == 2);
  bool refused = false;
  try {
    rapids_logger::basic_file_sink_mt unopenable{dir + "/no/such/dir/x.log"};
  } catch (std::runtime_error const &) {
    refused = true;
  }
  CHECK(refused);
}

// The logging adaptor to a std::ostream and to several sinks: the header first, at once;
// every line to every sink; auto_flush.
void logging_adaptor_sinks(std::string const &dir) {
  rmm::mr::cuda_memory_resource cuda;
  std::ostringstream out;
  {
    rmm::mr::logging_resource_adaptor log_mr{cuda, out};
    CHECK(out.str() == log_mr.header() + "\n");
    std::vector<void *> blocks;
    for (int i = 0; i < 5; ++i) blocks.push_back(log_mr.allocate_sync(1000));
    for (void *block : blocks) log_mr.deallocate_sync(block, 1000);
    log_mr.flush();
    auto const lines = lines_of(out.str());
    CHECK(lines.size() == 11);
    CHECK(contains(lines[1], ",allocate,") && contains(lines[1], ",1000,"));
    CHECK(contains(lines[10], ",free,"));
  }
  std::string const path = dir + "/sinks.csv";
  auto file = std::make_shared<rapids_logger::basic_file_sink_mt>(path, true);
  std::ostringstream second;
  auto stream = std::make_shared<rapids_logger::ostream_sink_mt>(second);
  {
    rmm::mr::logging_resource_adaptor log_mr{cuda, {file, stream}, true};
    // Lines from threads, over a pool over the adaptor too.
    rmm::mr::pool_memory_resource pool{log_mr, 1 << 20, 1 << 24};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&log_mr] {
        for (int i = 0; i < 100; ++i) log_mr.deallocate_sync(log_mr.allocate_sync(512), 512);
      });
    }
    for (auto &thread : threads) thread.join();
    // auto_flush: every line is out without flush().
    auto const lines = lines_of(second.str());
    CHECK(lines.size() == 1 + 1 + 800);  // header, the pool's chunk, 400 allocations and frees
    CHECK(lines[0] == log_mr.header());
  }
  // The pool gave its chunk back through the adaptor as it went.
  CHECK(read_file(path) == second.str());
  CHECK(lines_of(second.str()).size() == 803);
}

// A sink that fails: the adaptor's flush() reports it.
void failing_sink_is_an_error_at_flush() {
  struct failing_sink : rapids_logger::sink {
    int seen = 0;

   protected:
    void write(std::string_view) override {
      if (++seen > 1) throw std::runtime_error("disk full");
    }
    void flush_() override {}
  };
  rmm::mr::cuda_memory_resource cuda;
  auto failing = std::make_shared<failing_sink>();
  rmm::mr::logging_resource_adaptor log_mr{cuda, {failing}};
  log_mr.deallocate_sync(log_mr.allocate_sync(256), 256);
  bool thrown = false;
  try {
    log_mr.flush();
  } catch (std::exception const &error) {
    thrown = contains(error.what(), "rmmLoggingAdaptorFlush");
  }
  CHECK(thrown);
  CHECK(failing->seen == 3);
  log_mr.flush();  // reported once
}

// Tracking: stacks as allocation_info::strace; log_outstanding_allocations at debug.
void tracking_stacks_and_log() {
  rmm::mr::cuda_memory_resource cuda;
  for (bool capture : {true, false}) {
    rmm::mr::tracking_resource_adaptor mr{cuda, capture};
    void *ptr = mr.allocate_sync(4096);
    auto const &outstanding = mr.get_outstanding_allocations();
    CHECK(outstanding.size() == 1);
    auto const &info = outstanding.at(ptr);
    CHECK(info.allocation_size == 4096);
    CHECK((info.strace != nullptr) == capture);
    if (capture) {
      std::ostringstream printed;
      printed << *info.strace;
      CHECK(!printed.str().empty() && printed.str() == info.strace->str());
    }
    std::ostringstream out;
    auto sink = std::make_shared<rapids_logger::ostream_sink_mt>(out);
    auto &logger = rmm::default_logger();
    auto const old_level = logger.level();
    logger.sinks().push_back(sink);
    logger.set_level(rapids_logger::level_enum::info);
    mr.log_outstanding_allocations();
    CHECK(out.str().empty());  // debug is below info
    logger.set_level(rapids_logger::level_enum::debug);
    mr.log_outstanding_allocations();
    CHECK(contains(out.str(), "[debug] Outstanding Allocations: "));
    CHECK(contains(out.str(), "4096 bytes"));
    logger.sinks().pop_back();
    logger.set_level(old_level);
    mr.deallocate_sync(ptr, 4096);
  }
  // A stack captured in C++.
  rmm::detail::stack_trace here;
  std::ostringstream printed;
  printed << here;
  CHECK(!printed.str().empty());
}

}  // namespace

int main() {
  try {
    char dir_template[] = "/tmp/rmm_logging_XXXXXX";
    char *dir = mkdtemp(dir_template);
    CHECK(dir != nullptr);
    default_logger_carries_rmm_rs_diagnostics();
    loggers_of_ones_own(dir);
    logging_adaptor_sinks(dir);
    failing_sink_is_an_error_at_flush();
    tracking_stacks_and_log();
    (void)std::remove((std::string(dir) + "/own.log").c_str());
    (void)std::remove((std::string(dir) + "/sinks.csv").c_str());
    (void)std::remove(dir);
  } catch (std::exception const &error) {
    std::fprintf(stderr, "FAILED: exception: %s\n", error.what());
    return 1;
  }
  return rmm_test_finish("cxx.rapids_logging");
}
