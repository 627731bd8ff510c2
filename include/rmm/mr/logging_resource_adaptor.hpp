/*
 * rmm/mr/logging_resource_adaptor.hpp: RAPIDS RMM's logging_resource_adaptor, an rmm-rs logging
 * adaptor: one CSV line per allocation and free in RAPIDS RMM's format, readable by rmm-replay
 * and RAPIDS' replay tool.
 */
#ifndef RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP
#define RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP

#include "detail/rmm_rs_resource.hpp"

#include <cstdlib>
#include <string>

namespace rmm {
namespace mr {

class logging_resource_adaptor : public rmm_rs_resource {
 public:
  /// Logs to the file `filename` (created or truncated). `auto_flush` writes each line out
  /// as it is logged; otherwise lines are buffered until flush() or the adaptor's end.
  /// rmm-rs writes files only: RAPIDS' std::ostream and logger-sink constructors are not
  /// offered.
  template <class Upstream, detail::if_device_resource<Upstream> = 0>
  explicit logging_resource_adaptor(Upstream const &upstream, std::string const &filename = get_default_filename(),
                                    bool auto_flush = false)
      : rmm_rs_resource(over(
            upstream,
            [&](rmmResource_t up, rmmResource_t *out) { return rmmLoggingAdaptorCreate(out, up, filename.c_str()); },
            "rmmLoggingAdaptorCreate")),
        auto_flush_(auto_flush) {}

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

  /// Writes every buffered line out.
  void flush() { check(rmmLoggingAdaptorFlush(handle()), "rmmLoggingAdaptorFlush"); }
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
  bool auto_flush_;
};

}  // namespace mr
}  // namespace rmm

#endif  // RMM_MR_LOGGING_RESOURCE_ADAPTOR_HPP
