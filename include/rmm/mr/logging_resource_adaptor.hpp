/*
 * rmm/mr/logging_resource_adaptor.hpp: RAPIDS RMM's logging_resource_adaptor, an rmm-rs logging
 * adaptor: one CSV line per allocation and free in RAPIDS RMM's format, readable by rmm-replay
 * and RAPIDS' replay tool, to a file (rmmLoggingAdaptorCreate) or to rapids_logger sinks
 * (rmmLoggingAdaptorCreateWithSink: rmm-rs writes the lines, a logger with the pattern "%v"
 * hands them to the sinks). The header line comes out first, before the constructor returns.
 */
#ifndef RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP

#include "../../rapids_logger/logger.hpp"
#include "detail/rmm_rs_resource.hpp"

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace rmm {
namespace mr {

class logging_resource_adaptor : public rmm_rs_resource {
 public:
  /// Logs to the file `filename` (created or truncated). `auto_flush` writes each line out
  /// as it is logged; otherwise lines are buffered until flush() or the adaptor's end.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit logging_resource_adaptor(Upstream const &upstream, std::string const &filename = get_default_filename(),
                                    bool auto_flush = false)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) { return rmmLoggingAdaptorCreate(out, up, filename.c_str()); },
            "rmmLoggingAdaptorCreate")),
        auto_flush_(auto_flush) {}

  /// Logs to `stream`, which must outlive the adaptor and every resource over it.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  logging_resource_adaptor(Upstream const &upstream, std::ostream &stream, bool auto_flush = false)
      : logging_resource_adaptor(upstream, lines_to({std::make_shared<rapids_logger::ostream_sink_mt>(stream)}, auto_flush),
                                 auto_flush) {}

  /// Logs to each of `sinks`.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  logging_resource_adaptor(Upstream const &upstream, std::initializer_list<rapids_logger::sink_ptr> sinks,
                           bool auto_flush = false)
      : logging_resource_adaptor(upstream, lines_to(std::vector<rapids_logger::sink_ptr>(sinks), auto_flush), auto_flush) {}

  device_async_resource_ref get_upstream_resource() const noexcept { return upstream_ref(); }

  void *allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    void *ptr = rmm_rs_resource::allocate(stream, bytes, alignment);
    if (auto_flush_) (void)rmmLoggingAdaptorFlush(handle());
    return ptr;
  }
  void deallocate(cuda::stream_ref stream, void *ptr, std::size_t bytes,
                  std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const noexcept {
    rmm_rs_resource::deallocate(stream, ptr, bytes, alignment);
    if (auto_flush_) (void)rmmLoggingAdaptorFlush(handle());
  }
  void *allocate_sync(std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const {
    return allocate_sync_through(*this, bytes, alignment);
  }
  void deallocate_sync(void *ptr, std::size_t bytes, std::size_t alignment = CUDA_ALLOCATION_ALIGNMENT) const noexcept {
    deallocate(cuda::stream_ref{cudaStream_t{}}, ptr, bytes, alignment);
  }

  /// Writes every buffered line out (and flushes the sinks).
  void flush() {
    check(rmmLoggingAdaptorFlush(handle()), "rmmLoggingAdaptorFlush");
    if (logger_) logger_->flush();
  }
  /// The CSV header line.
  std::string header() const { return "Thread,Time,Action,Pointer,Size,Stream"; }
  /// The file the environment variable RMM_LOG_FILE names; rmm::logic_error when unset.
  static std::string get_default_filename() {
    char const *name = std::getenv("RMM_LOG_FILE");
    if (name == nullptr || name[0] == '\0') {
      throw logic_error("logging_resource_adaptor: RMM_LOG_FILE is not set and no file was given");
    }
    return name;
  }

 private:
  using shared_logger = std::shared_ptr<rapids_logger::logger>;

  // The logger that hands rmm-rs's lines to the sinks, as they are.
  static shared_logger lines_to(std::vector<rapids_logger::sink_ptr> sinks, bool auto_flush) {
    auto logger = std::make_shared<rapids_logger::logger>("RMM", std::move(sinks));
    logger->set_pattern("%v");
    logger->set_level(rapids_logger::level_enum::info);
    if (auto_flush) logger->flush_on(rapids_logger::level_enum::info);
    return logger;
  }

  template <class Upstream>
  logging_resource_adaptor(Upstream const &upstream, shared_logger logger, bool auto_flush)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) {
              // The adaptor's own reference, dropped by release (not when creation fails).
              auto *held = new shared_logger(logger);
              rmmError_t const status = rmmLoggingAdaptorCreateWithSink(out, up, &write_line, &release, held);
              if (status != RMM_SUCCESS) delete held;
              return status;
            },
            "rmmLoggingAdaptorCreateWithSink")),
        auto_flush_(auto_flush),
        logger_(std::move(logger)) {}

  // One line from rmm-rs (its writer thread, or the constructor's for the header).
  static int write_line(char const *line, std::size_t length, void *user_data) noexcept {
    try {
      (*static_cast<shared_logger *>(user_data))->log(rapids_logger::level_enum::info, std::string(line, length));
      return 0;
    } catch (...) {
      return 1;
    }
  }
  static void release(void *user_data) noexcept { delete static_cast<shared_logger *>(user_data); }

  bool auto_flush_;
  shared_logger logger_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP
