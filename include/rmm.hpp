/*
 * rmm.hpp: C++17 over rmm.h, the C API of rmm-rs (the RAPIDS Memory Manager in Rust).
 * Header-only; link librmm (rmm::rmm in CMake, -lrmm otherwise).
 *
 *   rmm::error, rmm::bad_alloc, rmm::out_of_memory   every failing rmmError_t becomes one
 *   rmm::cuda_stream_view, rmm::cuda_stream          streams (a view; an owning stream)
 *   rmm::resource and its kinds                      RAII resource handles: cuda_resource,
 *     managed_resource, async_resource, pinned_host_resource, pool_resource, arena_resource,
 *     binning_resource, fixed_size_resource, statistics_adaptor, logging_adaptor,
 *     limiting_adaptor, tracking_adaptor, failure_callback_adaptor, aligned_adaptor,
 *     prefetch_adaptor
 *   rmm::resource_ref                                a non-owning handle; empty = the current
 *                                                    device's resource, resolved at each use
 *   rmm::set_current_device_resource(...)            the per-device registry
 *   rmm::device_buffer, rmm::device_uvector<T>,
 *   rmm::device_scalar<T>                            stream-ordered containers
 *   rmm::thrust_allocator<T>, rmm::exec_policy       Thrust integration, only where Thrust can
 *                                                    be compiled (see RMM_HPP_THRUST below)
 *
 * Ownership: each rmm::resource owns one counted reference to its resource. Adaptors, pools,
 * device buffers and the per-device registry keep references of their own, so a resource
 * object may be destroyed while what was built over it, or allocated from it, lives on.
 * Threads: the resources are thread-safe, and a resource object's const members (allocate,
 * deallocate, counts...) may be called from many threads at once; what changes an object
 * (moves, reset, a container's resize) needs one thread at a time, and no object may be
 * destroyed while another thread uses it.
 *
 * Thrust: with nvcc (or clang in CUDA mode) the Thrust parts are compiled; elsewhere they are
 * left out so that a plain C++ compiler builds the rest. Define RMM_HPP_THRUST to 1 to force
 * them on (a host compiler with the CUDA toolkit's include folder) or to 0 to leave them out.
 */
#ifndef RMM_HPP
#define RMM_HPP

#if defined(RMM_DEVICE_BUFFER_HPP) || defined(RMM_MR_THRUST_ALLOCATOR_ADAPTOR_HPP)
#error "rmm.hpp and the RAPIDS-shaped <rmm/device_buffer.hpp>, <rmm/exec_policy.hpp> ... both define rmm::device_buffer and friends: include one of them"
#endif

#if defined(_MSVC_LANG)
#if _MSVC_LANG < 201703L
#error "rmm.hpp needs C++17 or later"
#endif
#elif __cplusplus < 201703L
#error "rmm.hpp needs C++17 or later"
#endif

#include "rmm.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(RMM_HPP_THRUST)
#if defined(__CUDACC__) || defined(__CUDA__)
#define RMM_HPP_THRUST 1
#else
#define RMM_HPP_THRUST 0
#endif
#endif

#include "rmm/error.hpp"
#include "rmm/cuda_stream.hpp"

namespace rmm {

/// Copies `bytes` from `src` to `dst` (host or device memory) in the order of `stream`
/// (rmmMemcpyAsync). Synchronize the stream before reading a host destination.
inline void memcpy_async(void *dst, const void *src, std::size_t bytes, cuda_stream_view stream) {
  check(rmmMemcpyAsync(dst, src, bytes, stream.value()), "rmmMemcpyAsync");
}

// ================================================================================== devices

/// The calling thread's current device (rmmGetDevice).
inline int get_current_device() {
  int device = -1;
  check(rmmGetDevice(&device), "rmmGetDevice");
  return device;
}

/// Makes `device` current on the calling thread (rmmSetDevice).
inline void set_current_device(int device) { check(rmmSetDevice(device), "rmmSetDevice"); }

/// The number of devices (rmmGetDeviceCount).
inline int get_num_devices() {
  int count = 0;
  check(rmmGetDeviceCount(&count), "rmmGetDeviceCount");
  return count;
}

/// True on simulated devices (RMM_SIM_DEVICES), false on the CUDA driver.
inline bool is_simulated() {
  bool simulated = false;
  check(rmmIsSimulated(&simulated), "rmmIsSimulated");
  return simulated;
}

/// Gives back to `device` every byte rmm-rs holds there without using it, in every resource,
/// stream and lane (rmmDeviceRelease); the bytes given back.
inline std::size_t release_device_memory(int device) {
  std::size_t released = 0;
  check(rmmDeviceRelease(device, &released), "rmmDeviceRelease");
  return released;
}

/// The free and total bytes of the current device (rmmGetInfo), as RMM's
/// available_device_memory().
inline std::pair<std::size_t, std::size_t> available_device_memory() {
  std::size_t free_bytes = 0, total_bytes = 0;
  check(rmmGetInfo(&free_bytes, &total_bytes, nullptr), "rmmGetInfo");
  return {free_bytes, total_bytes};
}

// ================================================================================ resources

/// The figures of a statistics adaptor's innermost scope.
using statistics = rmmStatistics_t;

/// One outstanding allocation of a tracking adaptor.
using allocation_record = rmmAllocationRecord_t;

class resource;

namespace detail {

inline void *allocate(rmmResource_t handle, std::size_t bytes, cudaStream_t stream) {
  void *ptr = nullptr;
  if (handle != nullptr) {
    check_alloc(rmmResourceAllocate(handle, &ptr, bytes, stream), "rmmResourceAllocate");
  } else {
    // The current device's resource, as a device buffer with a NULL resource takes it (not
    // rmmAlloc, which is refused after rmmFinalize and writes the legacy event log).
    struct current_resource {
      rmmResource_t handle{nullptr};
      ~current_resource() { (void)rmmResourceDestroy(handle); }
    } current;
    check(rmmGetCurrentDeviceResource(&current.handle), "rmmGetCurrentDeviceResource");
    check_alloc(rmmResourceAllocate(current.handle, &ptr, bytes, stream), "rmmResourceAllocate");
  }
  return ptr;
}

inline void deallocate(rmmResource_t handle, void *ptr, std::size_t bytes, cudaStream_t stream) {
  if (handle != nullptr) {
    check(rmmResourceDeallocate(handle, ptr, bytes, stream), "rmmResourceDeallocate");
  } else {
    // Back to whichever resource made it, also when the current one changed since.
    check(rmmFree(ptr, stream, nullptr, 0), "rmmFree");
  }
}

// Text the C API copies out with a length query first (snapshots, reports). Should the text
// grow between the two calls, the buffer is too small and the query is repeated.
template <typename Call>
std::string read_text(Call &&call, const char *what) {
  for (int attempt = 0;; ++attempt) {
    std::size_t length = 0;
    check(call(static_cast<char *>(nullptr), std::size_t{0}, &length), what);
    std::string text(length + 1, '\0');
    const rmmError_t status = call(&text[0], text.size(), &length);
    if (status == RMM_SUCCESS) {
      text.resize(length);
      return text;
    }
    if (status != RMM_ERROR_INVALID_ARGUMENT || attempt >= 8) throw_error(status, what);
  }
}

// The methods common to an owning resource and a reference, over handle().
template <typename Derived>
class resource_methods {
 public:
  /// `bytes` for use on `stream` (nullptr for 0 bytes). Throws rmm::out_of_memory (a
  /// std::bad_alloc) when the resource cannot satisfy it.
  void *allocate(std::size_t bytes, cuda_stream_view stream = cuda_stream_view{}) const {
    return detail::allocate(self().handle_for_call(), bytes, stream.value());
  }
  /// Returns `ptr` of `bytes` bytes in the order of `stream`: the same size and resource as
  /// allocated.
  void deallocate(void *ptr, std::size_t bytes, cuda_stream_view stream = cuda_stream_view{}) const {
    detail::deallocate(self().handle_for_call(), ptr, bytes, stream.value());
  }
  /// The kind: "cuda", "managed", "cuda_async", "pinned_host", "pool", "arena", "binning",
  /// "fixed_size", "statistics", "logging", "limiting", "tracking", "failure_callback",
  /// "aligned", "prefetch". A static string.
  const char *name() const {
    return self().with_handle([](rmmResource_t handle) {
      const char *name = nullptr;
      check(rmmResourceGetName(handle, &name), "rmmResourceGetName");
      return name;
    });
  }
  /// The device whose memory the resource hands out.
  int device() const {
    return self().with_handle([](rmmResource_t handle) {
      int device = -1;
      check(rmmResourceGetDevice(handle, &device), "rmmResourceGetDevice");
      return device;
    });
  }
  /// The resource stack as JSON (rmmResourceGetSnapshot).
  std::string snapshot() const {
    return self().with_handle([](rmmResource_t handle) {
      return read_text(
          [handle](char *buffer, std::size_t size, std::size_t *length) {
            return rmmResourceGetSnapshot(handle, buffer, size, length);
          },
          "rmmResourceGetSnapshot");
    });
  }
  /// Writes the snapshot to the file `path`.
  void write_snapshot(const std::string &path) const {
    self().with_handle([&path](rmmResource_t handle) {
      check(rmmResourceWriteSnapshot(handle, path.c_str()), "rmmResourceWriteSnapshot");
      return 0;
    });
  }
  /// Gives memory held but unused back upstream (a pool's wholly free chunks); the bytes
  /// released (rmmResourceRelease).
  std::size_t release_unused() const {
    return self().with_handle([](rmmResource_t handle) {
      std::size_t released = 0;
      check(rmmResourceRelease(handle, &released), "rmmResourceRelease");
      return released;
    });
  }
  /// Bytes a pool-like resource (pool, arena, fixed_size) holds from upstream;
  /// rmm::error RMM_ERROR_NOT_SUPPORTED for others.
  std::size_t pool_size() const {
    return self().with_handle([](rmmResource_t handle) {
      std::size_t size = 0;
      check(rmmPoolResourceGetSize(handle, &size), "rmmPoolResourceGetSize");
      return size;
    });
  }
  /// Bytes a pool-like resource (or a stack over one) holds but has free.
  std::size_t pool_free_size() const {
    return self().with_handle([](rmmResource_t handle) {
      std::size_t size = 0;
      check(rmmPoolResourceGetFree(handle, &size), "rmmPoolResourceGetFree");
      return size;
    });
  }

 protected:
  resource_methods() = default;
  ~resource_methods() = default;
  resource_methods(const resource_methods &) = default;
  resource_methods &operator=(const resource_methods &) = default;

 private:
  const Derived &self() const { return static_cast<const Derived &>(*this); }
};

}  // namespace detail

/// An owning, move-only handle of a resource (one counted reference, rmmResourceDestroy'd on
/// destruction). The classes below create the kinds; resource(handle) adopts a handle the C
/// API gave you. An empty resource (default or moved-from) throws rmm::error
/// (RMM_ERROR_INVALID_HANDLE) when used.
class resource : public detail::resource_methods<resource> {
 public:
  resource() noexcept = default;
  /// Adopts `owned` (a handle you would otherwise rmmResourceDestroy).
  explicit resource(rmmResource_t owned) noexcept : handle_(owned) {}
  resource(resource &&other) noexcept
      : detail::resource_methods<resource>(other),
        handle_(std::exchange(other.handle_, nullptr)),
        keep_alive_(std::move(other.keep_alive_)) {}
  resource &operator=(resource &&other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
      keep_alive_ = std::move(other.keep_alive_);
    }
    return *this;
  }
  resource(const resource &) = delete;
  resource &operator=(const resource &) = delete;
  ~resource() { reset(); }

  /// The C handle (still owned by this object).
  rmmResource_t get() const noexcept { return handle_; }
  rmmResource_t handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// Gives up ownership: the caller destroys the returned handle.
  rmmResource_t release() noexcept { return std::exchange(handle_, nullptr); }
  /// Destroys the handle held (if any) and adopts `owned`.
  void reset(rmmResource_t owned = nullptr) noexcept {
    if (handle_ == owned) return;
    if (handle_ != nullptr) (void)rmmResourceDestroy(handle_);
    handle_ = owned;
    keep_alive_.reset();
  }

 protected:
  // State the C resource points into (a failure callback), kept with the handle so that it
  // follows moves, also into a plain rmm::resource.
  void keep_alive(std::shared_ptr<void> state) noexcept { keep_alive_ = std::move(state); }

 private:
  friend class detail::resource_methods<resource>;
  rmmResource_t handle_for_call() const {
    if (handle_ == nullptr) {
      throw error(RMM_ERROR_INVALID_HANDLE, "rmm::resource: the resource is empty (moved from?)");
    }
    return handle_;
  }
  template <typename F>
  auto with_handle(F &&f) const {
    return f(handle_for_call());
  }

  rmmResource_t handle_{nullptr};
  std::shared_ptr<void> keep_alive_;
};

/// A non-owning reference to a resource, as RMM's resource_ref: whoever made it keeps the
/// resource alive while it is used. An empty reference (the default) means the current
/// device's resource, looked up at each use; what it allocates is freed with rmmFree, which
/// returns memory to the resource that made it.
class resource_ref : public detail::resource_methods<resource_ref> {
 public:
  constexpr resource_ref() noexcept = default;
  constexpr resource_ref(std::nullptr_t) noexcept {}                          // NOLINT
  constexpr resource_ref(rmmResource_t handle) noexcept : handle_(handle) {}  // NOLINT
  resource_ref(const resource &r) noexcept : handle_(r.get()) {}              // NOLINT
  /// As RMM's resource_ref from a pointer: `rmm::statistics_adaptor stats(&pool)`.
  resource_ref(const resource *r) noexcept : handle_(r != nullptr ? r->get() : nullptr) {}  // NOLINT

  /// The C handle; nullptr for the current device's resource.
  constexpr rmmResource_t handle() const noexcept { return handle_; }
  constexpr rmmResource_t get() const noexcept { return handle_; }
  /// True for the current device's resource (an empty reference).
  constexpr bool is_current_device_resource() const noexcept { return handle_ == nullptr; }

 private:
  friend class detail::resource_methods<resource_ref>;
  rmmResource_t handle_for_call() const noexcept { return handle_; }
  template <typename F>
  auto with_handle(F &&f) const {
    if (handle_ != nullptr) return f(handle_);
    rmmResource_t current = nullptr;
    check(rmmGetCurrentDeviceResource(&current), "rmmGetCurrentDeviceResource");
    resource owner(current);
    return f(current);
  }

  rmmResource_t handle_{nullptr};
};

inline bool operator==(resource_ref a, resource_ref b) noexcept { return a.handle() == b.handle(); }
inline bool operator!=(resource_ref a, resource_ref b) noexcept { return !(a == b); }

namespace detail {

template <typename Create>
rmmResource_t create(const char *what, Create &&create_call) {
  rmmResource_t handle = nullptr;
  check(create_call(&handle), what);
  return handle;
}

// An lvalue of the kind `Kind` (or one derived from it).
template <typename R, typename Kind>
using if_lvalue_of_kind = std::enable_if_t<std::is_lvalue_reference<R>::value &&
                                           std::is_base_of<Kind, std::decay_t<R>>::value>;

}  // namespace detail

// For the kinds whose constructor takes the upstream alone: without this, `Kind b(a)` with
// `a` a (non-const) Kind would pick the deleted copy constructor instead of stacking b over a.
#define RMM_HPP_OVER_SAME_KIND(Kind)                                          \
  template <typename R, typename = ::rmm::detail::if_lvalue_of_kind<R, Kind>> \
  explicit Kind(R &&upstream)                                                 \
      : Kind(::rmm::resource_ref(static_cast<const ::rmm::resource &>(upstream))) {}

// --- device resources -------------------------------------------------------------------------

/// Device memory of the current device, cudaMalloc semantics (RMM's cuda_memory_resource).
class cuda_resource : public resource {
 public:
  cuda_resource()
      : resource(detail::create("rmmCudaResourceCreate",
                                [](rmmResource_t *r) { return rmmCudaResourceCreate(r); })) {}
};

/// Managed memory (cudaMallocManaged) of the current device.
class managed_resource : public resource {
 public:
  managed_resource()
      : resource(detail::create("rmmManagedResourceCreate",
                                [](rmmResource_t *r) { return rmmManagedResourceCreate(r); })) {}
};

/// A driver memory pool of its own (cudaMallocAsync): `initial_pool_size` bytes up front,
/// `release_threshold` bytes kept across synchronizations (SIZE_MAX: all). RMM_ERROR_NOT_SUPPORTED
/// (rmm::error) where the device has no memory pools.
class async_resource : public resource {
 public:
  explicit async_resource(std::size_t initial_pool_size = 0,
                          std::size_t release_threshold = std::numeric_limits<std::size_t>::max())
      : resource(detail::create("rmmAsyncResourceCreate", [&](rmmResource_t *r) {
          return rmmAsyncResourceCreate(r, initial_pool_size, release_threshold);
        })) {}
};

/// Page-locked host memory (cudaMallocHost), usable from every device.
class pinned_host_resource : public resource {
 public:
  pinned_host_resource()
      : resource(detail::create("rmmPinnedHostResourceCreate",
                                [](rmmResource_t *r) { return rmmPinnedHostResourceCreate(r); })) {}
};

// --- suballocators (each keeps its own reference to its upstream) ---------------------------

/// A coalescing pool over `upstream`: `initial_size` bytes up front, growing up to
/// `maximum_size` (0: no limit).
class pool_resource : public resource {
 public:
  pool_resource(resource_ref upstream, std::size_t initial_size, std::size_t maximum_size = 0)
      : resource(detail::create("rmmPoolResourceCreate", [&](rmmResource_t *r) {
          return rmmPoolResourceCreate(r, upstream.handle(), initial_size, maximum_size);
        })) {}
};

/// A global arena (`arena_size` bytes up front, 0: on demand) with per-thread and per-stream
/// arenas over `upstream`.
class arena_resource : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(arena_resource)
  explicit arena_resource(resource_ref upstream, std::size_t arena_size = 0)
      : resource(detail::create("rmmArenaResourceCreate", [&](rmmResource_t *r) {
          return rmmArenaResourceCreate(r, upstream.handle(), arena_size);
        })) {}
};

/// Fixed-size bins of 2^min_size_exponent .. 2^max_size_exponent bytes over `upstream`;
/// larger requests go to `upstream`. Without exponents: no bins (add them with add_bin).
class binning_resource : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(binning_resource)
  explicit binning_resource(resource_ref upstream)
      : binning_resource(upstream, std::int8_t{1}, std::int8_t{0}) {}
  binning_resource(resource_ref upstream, std::int8_t min_size_exponent,
                   std::int8_t max_size_exponent)
      : resource(detail::create("rmmBinningResourceCreate", [&](rmmResource_t *r) {
          return rmmBinningResourceCreate(r, upstream.handle(), min_size_exponent,
                                          max_size_exponent);
        })) {}
  /// Adds (or replaces) the bin for requests up to `allocation_size` bytes: `bin`, or when
  /// `bin` is empty a new fixed-size resource of that size over the upstream.
  void add_bin(std::size_t allocation_size, resource_ref bin = resource_ref{}) {
    check(rmmBinningResourceAddBin(get(), allocation_size, bin.handle()),
          "rmmBinningResourceAddBin");
  }
};

/// Blocks of `block_size` bytes (rounded up to 256) over `upstream`; `blocks_to_preallocate`
/// up front and per chunk (0: none up front, 128 per chunk). Larger requests: rmm::error
/// RMM_ERROR_INVALID_ARGUMENT.
class fixed_size_resource : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(fixed_size_resource)
  explicit fixed_size_resource(resource_ref upstream, std::size_t block_size = std::size_t{1} << 20,
                               std::size_t blocks_to_preallocate = 128)
      : resource(detail::create("rmmFixedSizeResourceCreate", [&](rmmResource_t *r) {
          return rmmFixedSizeResourceCreate(r, upstream.handle(), block_size,
                                            blocks_to_preallocate);
        })) {}
};

// --- adaptors (each keeps its own reference to its upstream) ---------------------------------

/// Counts bytes and allocations through it: current, peak and total, in nested scopes.
class statistics_adaptor : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(statistics_adaptor)
  /// A counter as RMM's statistics_resource_adaptor reports it.
  struct counter {
    std::int64_t value;  // current
    std::int64_t peak;
    std::int64_t total;
  };

  explicit statistics_adaptor(resource_ref upstream)
      : resource(detail::create("rmmStatisticsAdaptorCreate", [&](rmmResource_t *r) {
          return rmmStatisticsAdaptorCreate(r, upstream.handle());
        })) {}
  /// The figures of the innermost scope.
  statistics counts() const {
    statistics s{};
    check(rmmStatisticsAdaptorGetCounts(get(), &s), "rmmStatisticsAdaptorGetCounts");
    return s;
  }
  counter get_bytes_counter() const {
    const statistics s = counts();
    return counter{s.current_bytes, s.peak_bytes, s.total_bytes};
  }
  counter get_allocations_counter() const {
    const statistics s = counts();
    return counter{s.current_count, s.peak_count, s.total_count};
  }
  /// Starts a nested scope whose figures start from zero.
  void push_counters() {
    check(rmmStatisticsAdaptorPushCounters(get()), "rmmStatisticsAdaptorPushCounters");
  }
  /// Ends the innermost scope and returns its figures (rmm::error without a pushed scope).
  statistics pop_counters() {
    statistics s{};
    check(rmmStatisticsAdaptorPopCounters(get(), &s), "rmmStatisticsAdaptorPopCounters");
    return s;
  }
};

/// Logs every allocation and free to a CSV file in RAPIDS RMM's format.
class logging_adaptor : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(logging_adaptor)
  /// Logs to `path` (created or truncated now); rmm::error RMM_ERROR_IO if it cannot be.
  logging_adaptor(resource_ref upstream, const std::string &path)
      : resource(detail::create("rmmLoggingAdaptorCreate", [&](rmmResource_t *r) {
          return rmmLoggingAdaptorCreate(r, upstream.handle(), path.c_str());
        })) {}
  /// Logs to the file the environment variable RMM_LOG_FILE names.
  explicit logging_adaptor(resource_ref upstream)
      : resource(detail::create("rmmLoggingAdaptorCreate", [&](rmmResource_t *r) {
          return rmmLoggingAdaptorCreate(r, upstream.handle(), nullptr);
        })) {}
  /// Writes the buffered lines out.
  void flush() { check(rmmLoggingAdaptorFlush(get()), "rmmLoggingAdaptorFlush"); }
};

/// Refuses (rmm::out_of_memory) allocations past `limit` bytes (each rounded up to 256).
class limiting_adaptor : public resource {
 public:
  limiting_adaptor(resource_ref upstream, std::size_t limit)
      : resource(detail::create("rmmLimitingAdaptorCreate",
                                [&](rmmResource_t *r) {
                                  return rmmLimitingAdaptorCreate(r, upstream.handle(), limit);
                                })),
        limit_(limit) {}
  /// Bytes counted as allocated through the adaptor.
  std::size_t get_allocated_bytes() const {
    std::size_t bytes = 0;
    check(rmmLimitingAdaptorGetAllocatedBytes(get(), &bytes),
          "rmmLimitingAdaptorGetAllocatedBytes");
    return bytes;
  }
  std::size_t get_allocation_limit() const noexcept { return limit_; }

 private:
  std::size_t limit_;
};

/// Records every outstanding allocation (and a backtrace with `capture_stacks`).
class tracking_adaptor : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(tracking_adaptor)
  explicit tracking_adaptor(resource_ref upstream, bool capture_stacks = false)
      : resource(detail::create("rmmTrackingAdaptorCreate", [&](rmmResource_t *r) {
          return rmmTrackingAdaptorCreate(r, upstream.handle(), capture_stacks);
        })) {}
  /// The outstanding allocations, by address.
  std::vector<allocation_record> get_outstanding_allocations() const {
    for (;;) {
      std::size_t count = 0;
      check(rmmTrackingAdaptorGetOutstanding(get(), nullptr, 0, &count),
            "rmmTrackingAdaptorGetOutstanding");
      std::vector<allocation_record> records(count);
      std::size_t written = 0;
      check(rmmTrackingAdaptorGetOutstanding(get(), records.data(), records.size(), &written),
            "rmmTrackingAdaptorGetOutstanding");
      if (written <= records.size()) {
        records.resize(written);
        return records;
      }
    }
  }
  /// How many allocations are outstanding.
  std::size_t get_outstanding_count() const {
    std::size_t count = 0;
    check(rmmTrackingAdaptorGetOutstanding(get(), nullptr, 0, &count),
          "rmmTrackingAdaptorGetOutstanding");
    return count;
  }
  /// The bytes outstanding.
  std::size_t get_allocated_bytes() const {
    std::size_t bytes = 0;
    for (const allocation_record &record : get_outstanding_allocations()) bytes += record.size;
    return bytes;
  }
  /// The leak report ("" when nothing is outstanding).
  std::string report() const {
    const rmmResource_t handle = get();
    return detail::read_text(
        [handle](char *buffer, std::size_t size, std::size_t *length) {
          return rmmTrackingAdaptorGetReport(handle, buffer, size, length);
        },
        "rmmTrackingAdaptorGetReport");
  }
};

/// On out of memory calls a callback with the bytes asked for, and retries while it returns
/// true (spill, drop caches). The callback runs on the allocating thread and must not
/// allocate through this adaptor.
///
/// Lifetime: a std::function callback lives as long as this object (and whatever it is moved
/// into). The C resource can outlive it (as another resource's upstream, as a device's
/// resource, through device buffers): keep this object alive while anything may allocate
/// through the adaptor, or pass a plain function pointer whose `arg` lives long enough.
class failure_callback_adaptor : public resource {
 public:
  using callback_type = std::function<bool(std::size_t)>;

  failure_callback_adaptor(resource_ref upstream, rmmFailureCallback_t callback, void *arg)
      : resource(detail::create("rmmFailureCallbackAdaptorCreate", [&](rmmResource_t *r) {
          return rmmFailureCallbackAdaptorCreate(r, upstream.handle(), callback, arg);
        })) {}
  failure_callback_adaptor(resource_ref upstream, callback_type callback)
      : failure_callback_adaptor(upstream, std::make_shared<callback_type>(std::move(callback))) {}

 private:
  failure_callback_adaptor(resource_ref upstream, std::shared_ptr<callback_type> callback)
      : failure_callback_adaptor(upstream, &failure_callback_adaptor::trampoline, callback.get()) {
    keep_alive(std::move(callback));
  }
  // Exceptions cannot cross the C library: a throwing callback counts as "do not retry".
  static bool trampoline(std::size_t bytes, void *arg) noexcept {
    try {
      const auto &callback = *static_cast<const callback_type *>(arg);
      return callback ? callback(bytes) : false;
    } catch (...) {
      return false;
    }
  }
};

/// Aligns allocations of at least `threshold` bytes to `alignment` (a power of two >= 256).
class aligned_adaptor : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(aligned_adaptor)
  explicit aligned_adaptor(resource_ref upstream, std::size_t alignment = 256,
                           std::size_t threshold = std::size_t{64} << 10)
      : resource(detail::create("rmmAlignedAdaptorCreate", [&](rmmResource_t *r) {
          return rmmAlignedAdaptorCreate(r, upstream.handle(), alignment, threshold);
        })) {}
};

/// Migrates managed memory to the device in stream order on allocation.
class prefetch_adaptor : public resource {
 public:
  RMM_HPP_OVER_SAME_KIND(prefetch_adaptor)
  explicit prefetch_adaptor(resource_ref upstream)
      : resource(detail::create("rmmPrefetchAdaptorCreate", [&](rmmResource_t *r) {
          return rmmPrefetchAdaptorCreate(r, upstream.handle());
        })) {}
};

#undef RMM_HPP_OVER_SAME_KIND

// --- the per-device registry --------------------------------------------------------------

/// A new owned handle to the current device's resource.
inline resource get_current_device_resource() {
  rmmResource_t handle = nullptr;
  check(rmmGetCurrentDeviceResource(&handle), "rmmGetCurrentDeviceResource");
  return resource(handle);
}

/// Makes `r` the current device's resource (the registry keeps its own reference) and
/// returns the resource it replaces, owned.
inline resource set_current_device_resource(resource_ref r) {
  rmmResource_t previous = nullptr;
  check(rmmSetCurrentDeviceResource(r.handle(), &previous), "rmmSetCurrentDeviceResource");
  return resource(previous);
}

/// A new owned handle to `device`'s resource.
inline resource get_per_device_resource(int device) {
  rmmResource_t handle = nullptr;
  check(rmmGetPerDeviceResource(device, &handle), "rmmGetPerDeviceResource");
  return resource(handle);
}

/// Makes `r` (a resource of `device`) `device`'s resource; returns the one it replaces, owned.
inline resource set_per_device_resource(int device, resource_ref r) {
  rmmResource_t previous = nullptr;
  check(rmmSetPerDeviceResource(device, r.handle(), &previous), "rmmSetPerDeviceResource");
  return resource(previous);
}

/// Sets the current device's resource for a scope and puts the previous one back (on the same
/// device) at the end of it.
class current_device_resource_scope {
 public:
  explicit current_device_resource_scope(resource_ref r)
      : device_(get_current_device()), previous_(set_per_device_resource(device_, r)) {}
  current_device_resource_scope(const current_device_resource_scope &) = delete;
  current_device_resource_scope &operator=(const current_device_resource_scope &) = delete;
  ~current_device_resource_scope() {
    (void)rmmSetPerDeviceResource(device_, previous_.get(), nullptr);
  }

 private:
  int device_;
  resource previous_;
};

// ============================================================================ device_buffer

/// An untyped, uninitialized, stream-ordered device allocation that knows its size, as RMM's
/// rmm::device_buffer, over rmmDeviceBuffer_t. It keeps its own reference to its resource.
/// Move-only; copy with device_buffer(other, stream[, mr]).
///
/// `mr` arguments: an empty resource_ref (the default) is the current device's resource.
class device_buffer {
 public:
  /// Empty; no memory. Its first resize or reserve allocates from the current device's
  /// resource.
  device_buffer() noexcept = default;

  /// `size` bytes (uninitialized) from `mr`, usable in the order of `stream`.
  device_buffer(std::size_t size, cuda_stream_view stream, resource_ref mr = resource_ref{})
      : stream_(stream) {
    check_alloc(rmmDeviceBufferCreate(&handle_.value, size, stream.value(), mr.handle()),
                "rmmDeviceBufferCreate");
    refresh();
  }

  /// A copy of the `size` bytes at `source`, host or device memory (rmmMemcpyAsync), in the
  /// order of `stream`. Complete when this returns (unlike RMM's, which does not wait), so
  /// `source` may be reused at once.
  device_buffer(const void *source, std::size_t size, cuda_stream_view stream,
                resource_ref mr = resource_ref{})
      : device_buffer(size, stream, mr) {
    memcpy_async(data_, source, size, stream);
    stream.synchronize();
  }

  /// A deep copy of `other`, copied in the order of `stream`, from `mr` (empty: `other`'s
  /// resource; RMM's default is the current device's resource instead).
  device_buffer(const device_buffer &other, cuda_stream_view stream,
                resource_ref mr = resource_ref{})
      : stream_(stream) {
    if (other.handle_.value == nullptr) {
      check_alloc(rmmDeviceBufferCreate(&handle_.value, 0, stream.value(), mr.handle()),
                  "rmmDeviceBufferCreate");
    } else {
      check_alloc(rmmDeviceBufferCopy(&handle_.value, other.handle_.value, stream.value(),
                                      mr.handle()),
                  "rmmDeviceBufferCopy");
    }
    refresh();
  }

  /// Adopts a C buffer (from rmmDeviceBufferCreate...; this object destroys it), making
  /// `stream` its stream. A handle that is not a live buffer is destroyed by nobody and throws
  /// rmm::error (RMM_ERROR_INVALID_HANDLE).
  static device_buffer adopt(rmmDeviceBuffer_t owned, cuda_stream_view stream) {
    device_buffer buffer;
    buffer.stream_ = stream;
    if (owned != nullptr) {
      check(rmmDeviceBufferSetStream(owned, stream.value()), "rmmDeviceBufferSetStream");
      buffer.handle_.value = owned;
      buffer.refresh();
    }
    return buffer;
  }

  device_buffer(const device_buffer &) = delete;
  device_buffer &operator=(const device_buffer &) = delete;

  /// Takes `other`'s memory; `other` is left empty, with its stream.
  device_buffer(device_buffer &&other) noexcept
      : handle_(std::move(other.handle_)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)),
        stream_(other.stream_) {}
  device_buffer &operator=(device_buffer &&other) noexcept {
    if (this != &other) {
      handle_ = std::move(other.handle_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }
  /// Frees the memory in the order of stream().
  ~device_buffer() = default;

  void *data() noexcept { return data_; }
  const void *data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size_); }
  std::size_t capacity() const noexcept { return capacity_; }
  bool is_empty() const noexcept { return size_ == 0; }
  /// The stream of the last operation, or the one set: the buffer is freed in its order.
  cuda_stream_view stream() const noexcept { return stream_; }

  void set_stream(cuda_stream_view stream) {
    if (handle_.value != nullptr) {
      check(rmmDeviceBufferSetStream(handle_.value, stream.value()), "rmmDeviceBufferSetStream");
    }
    stream_ = stream;
  }

  /// Sets the size. Within the capacity nothing moves; beyond it the contents move, in the
  /// order of `stream`, to a new allocation of exactly `new_size` bytes (new bytes
  /// uninitialized). On failure nothing changes. The buffer's stream becomes `stream`.
  void resize(std::size_t new_size, cuda_stream_view stream) {
    ensure_handle(stream);
    check_alloc(rmmDeviceBufferResize(handle_.value, new_size, stream.value()),
                "rmmDeviceBufferResize");
    stream_ = stream;
    refresh();
  }

  /// Makes the capacity at least `new_capacity` bytes, keeping size and contents.
  void reserve(std::size_t new_capacity, cuda_stream_view stream) {
    if (new_capacity <= capacity_) return;
    ensure_handle(stream);
    const std::size_t old_size = size_;
    check_alloc(rmmDeviceBufferResize(handle_.value, new_capacity, stream.value()),
                "rmmDeviceBufferResize");
    stream_ = stream;
    // Back to the old size: within the capacity nothing moves, so this cannot fail.
    check(rmmDeviceBufferResize(handle_.value, old_size, stream.value()), "rmmDeviceBufferResize");
    refresh();
  }

  /// Gives back the capacity beyond the size (the contents move), in the order of `stream`.
  void shrink_to_fit(cuda_stream_view stream) {
    if (handle_.value == nullptr) {
      stream_ = stream;
      return;
    }
    check_alloc(rmmDeviceBufferShrinkToFit(handle_.value, stream.value()),
                "rmmDeviceBufferShrinkToFit");
    stream_ = stream;
    refresh();
  }

  /// Copies the contents to `host` (at least size() bytes) in the order of `stream` and waits.
  void copy_to_host(void *host, std::size_t host_size, cuda_stream_view stream) const {
    if (handle_.value == nullptr) return;
    check(rmmDeviceBufferCopyToHost(handle_.value, host, host_size, stream.value()),
          "rmmDeviceBufferCopyToHost");
  }
  /// copy_to_host in the order of the buffer's stream.
  void copy_to_host(void *host, std::size_t host_size) const {
    copy_to_host(host, host_size, stream_);
  }

  /// The C handle (nullptr for a default-constructed or moved-from buffer), still owned here.
  rmmDeviceBuffer_t get() const noexcept { return handle_.value; }
  /// Gives up the C handle: the caller rmmDeviceBufferDestroys it. This buffer is left empty.
  rmmDeviceBuffer_t release() noexcept {
    data_ = nullptr;
    size_ = 0;
    capacity_ = 0;
    return std::exchange(handle_.value, nullptr);
  }

 private:
  // Destroys the C buffer with the object, also when a constructor throws after creating it.
  struct handle_holder {
    rmmDeviceBuffer_t value{nullptr};
    handle_holder() noexcept = default;
    handle_holder(handle_holder &&other) noexcept : value(std::exchange(other.value, nullptr)) {}
    handle_holder &operator=(handle_holder &&other) noexcept {
      if (this != &other) {
        reset();
        value = std::exchange(other.value, nullptr);
      }
      return *this;
    }
    ~handle_holder() { reset(); }
    void reset() noexcept {
      if (value != nullptr) (void)rmmDeviceBufferDestroy(value);
      value = nullptr;
    }
  };

  void ensure_handle(cuda_stream_view stream) {
    if (handle_.value == nullptr) {
      check_alloc(rmmDeviceBufferCreate(&handle_.value, 0, stream.value(), nullptr),
                  "rmmDeviceBufferCreate");
    }
  }

  // The C buffer is this object's alone, so its address and sizes change only through the
  // calls above: they are read back once after each and kept here.
  void refresh() {
    if (handle_.value == nullptr) {
      data_ = nullptr;
      size_ = capacity_ = 0;
      return;
    }
    check(rmmDeviceBufferData(handle_.value, &data_), "rmmDeviceBufferData");
    check(rmmDeviceBufferSize(handle_.value, &size_, &capacity_), "rmmDeviceBufferSize");
  }

  handle_holder handle_;
  void *data_{nullptr};
  std::size_t size_{0};
  std::size_t capacity_{0};
  cuda_stream_view stream_{};
};

// =========================================================================== device_uvector

namespace detail {

template <typename T>
std::size_t bytes_of(std::size_t count) {
  if (count > std::numeric_limits<std::size_t>::max() / sizeof(T)) {
    throw out_of_memory(std::to_string(count) + " elements of " + std::to_string(sizeof(T)) +
                        " bytes do not fit in size_t");
  }
  return count * sizeof(T);
}

}  // namespace detail

/// A typed, uninitialized device vector of trivially copyable T, as RMM's device_uvector:
/// no element is constructed; element access from the host goes through copies.
template <typename T>
class device_uvector {
  static_assert(std::is_trivially_copyable<T>::value,
                "device_uvector holds trivially copyable types only");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using reference = value_type &;
  using const_reference = const value_type &;
  using pointer = value_type *;
  using const_pointer = const value_type *;
  using iterator = pointer;
  using const_iterator = const_pointer;

  device_uvector() noexcept = default;
  /// `size` uninitialized elements from `mr` (empty: the current device's resource).
  device_uvector(std::size_t size, cuda_stream_view stream, resource_ref mr = resource_ref{})
      : storage_(detail::bytes_of<T>(size), stream, mr) {}
  /// A deep copy of `other` in the order of `stream` (empty `mr`: `other`'s resource).
  device_uvector(const device_uvector &other, cuda_stream_view stream,
                 resource_ref mr = resource_ref{})
      : storage_(other.storage_, stream, mr) {}
  device_uvector(const device_uvector &) = delete;
  device_uvector &operator=(const device_uvector &) = delete;
  device_uvector(device_uvector &&) noexcept = default;
  device_uvector &operator=(device_uvector &&) noexcept = default;
  ~device_uvector() = default;

  pointer element_ptr(std::size_t i) noexcept { return data() + i; }
  const_pointer element_ptr(std::size_t i) const noexcept { return data() + i; }

  /// Copies `value` into element `i` in the order of `stream`. `value` must stay alive and
  /// unchanged until the stream has done the copy.
  void set_element_async(std::size_t i, const value_type &value, cuda_stream_view stream) {
    check_index(i);
    memcpy_async(element_ptr(i), &value, sizeof(T), stream);
  }
  // A temporary would be gone before the copy happens.
  void set_element_async(std::size_t, value_type &&, cuda_stream_view) = delete;

  /// Copies `value` into element `i` in the order of `stream` and waits for the stream.
  void set_element(std::size_t i, const value_type &value, cuda_stream_view stream) {
    set_element_async(i, value, stream);
    stream.synchronize();
  }

  /// Element `i`, copied to the host in the order of `stream` (waits for the stream).
  value_type element(std::size_t i, cuda_stream_view stream) const {
    check_index(i);
    value_type value;
    memcpy_async(&value, element_ptr(i), sizeof(T), stream);
    stream.synchronize();
    return value;
  }
  value_type front_element(cuda_stream_view stream) const { return element(0, stream); }
  value_type back_element(cuda_stream_view stream) const {
    if (is_empty()) throw out_of_range("rmm::device_uvector::back_element: the vector is empty");
    return element(size() - 1, stream);
  }

  /// Room for at least `new_capacity` elements; contents kept.
  void reserve(std::size_t new_capacity, cuda_stream_view stream) {
    storage_.reserve(detail::bytes_of<T>(new_capacity), stream);
  }
  /// Sets the size; the first min(old, new) elements are kept, new ones uninitialized.
  void resize(std::size_t new_size, cuda_stream_view stream) {
    storage_.resize(detail::bytes_of<T>(new_size), stream);
  }
  void shrink_to_fit(cuda_stream_view stream) { storage_.shrink_to_fit(stream); }
  /// Hands the memory out as a device_buffer; this vector is left empty.
  device_buffer release() noexcept { return std::move(storage_); }

  std::size_t capacity() const noexcept { return storage_.capacity() / sizeof(T); }
  std::size_t size() const noexcept { return storage_.size() / sizeof(T); }
  std::int64_t ssize() const noexcept { return static_cast<std::int64_t>(size()); }
  bool is_empty() const noexcept { return size() == 0; }

  pointer data() noexcept { return static_cast<pointer>(storage_.data()); }
  const_pointer data() const noexcept { return static_cast<const_pointer>(storage_.data()); }
  iterator begin() noexcept { return data(); }
  const_iterator begin() const noexcept { return data(); }
  const_iterator cbegin() const noexcept { return data(); }
  iterator end() noexcept { return data() + size(); }
  const_iterator end() const noexcept { return data() + size(); }
  const_iterator cend() const noexcept { return data() + size(); }

  cuda_stream_view stream() const noexcept { return storage_.stream(); }
  void set_stream(cuda_stream_view stream) { storage_.set_stream(stream); }

 private:
  void check_index(std::size_t i) const {
    if (i >= size()) {
      throw out_of_range("rmm::device_uvector: element " + std::to_string(i) +
                         " is out of bounds (size " + std::to_string(size()) + ")");
    }
  }

  device_buffer storage_;
};

/// A device_uvector holding a copy of `count` elements at `host`; done when this returns.
template <typename T>
device_uvector<T> make_device_uvector(const T *host, std::size_t count, cuda_stream_view stream,
                                      resource_ref mr = resource_ref{}) {
  device_uvector<T> vector(count, stream, mr);
  memcpy_async(vector.data(), host, detail::bytes_of<T>(count), stream);
  stream.synchronize();
  return vector;
}

/// A device_uvector holding a copy of `host`; done when this returns.
template <typename T, typename Allocator>
device_uvector<T> make_device_uvector(const std::vector<T, Allocator> &host,
                                      cuda_stream_view stream, resource_ref mr = resource_ref{}) {
  return make_device_uvector(host.data(), host.size(), stream, mr);
}

/// The elements of `vector`, copied to the host in the order of `stream` (waits).
template <typename T>
std::vector<T> make_host_vector(const device_uvector<T> &vector, cuda_stream_view stream) {
  std::vector<T> host(vector.size());
  memcpy_async(host.data(), vector.data(), detail::bytes_of<T>(vector.size()), stream);
  stream.synchronize();
  return host;
}

// ============================================================================ device_scalar

/// One T in device memory, as RMM's device_scalar.
template <typename T>
class device_scalar {
 public:
  using value_type = T;
  using pointer = T *;
  using const_pointer = const T *;

  /// Uninitialized.
  explicit device_scalar(cuda_stream_view stream, resource_ref mr = resource_ref{})
      : data_(1, stream, mr) {}
  /// Holding `initial`; done when this returns.
  device_scalar(const value_type &initial, cuda_stream_view stream,
                resource_ref mr = resource_ref{})
      : data_(1, stream, mr) {
    set_value(initial, stream);
  }
  /// A copy of `other` in the order of `stream`.
  device_scalar(const device_scalar &other, cuda_stream_view stream,
                resource_ref mr = resource_ref{})
      : data_(other.data_, stream, mr) {}
  device_scalar(const device_scalar &) = delete;
  device_scalar &operator=(const device_scalar &) = delete;
  device_scalar(device_scalar &&) noexcept = default;
  device_scalar &operator=(device_scalar &&) noexcept = default;
  ~device_scalar() = default;

  /// The value, copied to the host in the order of `stream` (waits).
  value_type value(cuda_stream_view stream) const { return data_.front_element(stream); }
  /// Sets the value in the order of `stream`; `value` must outlive the copy.
  void set_value_async(const value_type &value, cuda_stream_view stream) {
    data_.set_element_async(0, value, stream);
  }
  void set_value_async(value_type &&, cuda_stream_view) = delete;
  /// Sets the value in the order of `stream` and waits.
  void set_value(const value_type &value, cuda_stream_view stream) {
    data_.set_element(0, value, stream);
  }

  pointer data() noexcept { return data_.data(); }
  const_pointer data() const noexcept { return data_.data(); }
  std::size_t size() const noexcept { return 1; }
  cuda_stream_view stream() const noexcept { return data_.stream(); }
  void set_stream(cuda_stream_view stream) { data_.set_stream(stream); }

 private:
  device_uvector<T> data_;
};

// ============================================================================ configuration

/// rmmConfigure: the resource stack each device gets on first use (RMM_ALLOC_CONF syntax);
/// nullptr reads RMM_ALLOC_CONF.
inline void configure(const char *conf = nullptr) { check(rmmConfigure(conf), "rmmConfigure"); }

/// rmmGetReport: what `report:1` prints at exit.
inline std::string report() {
  return detail::read_text(
      [](char *buffer, std::size_t size, std::size_t *length) {
        return rmmGetReport(buffer, size, length);
      },
      "rmmGetReport");
}

}  // namespace rmm

// =================================================================================== Thrust
#if RMM_HPP_THRUST

#include <thrust/device_malloc_allocator.h>
#include <thrust/device_ptr.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/version.h>

namespace rmm {

/// A Thrust allocator over an rmm resource, for `thrust::device_vector<T, thrust_allocator<T>>`:
/// memory from `resource()` in the order of `stream()`. The default resource (an empty
/// resource_ref) is the current device's resource, looked up at each allocation.
template <typename T>
class thrust_allocator : public thrust::device_malloc_allocator<T> {
 public:
  using base = thrust::device_malloc_allocator<T>;
  using pointer = typename base::pointer;
  using size_type = typename base::size_type;

  template <typename U>
  struct rebind {
    using other = thrust_allocator<U>;
  };

  thrust_allocator() = default;
  explicit thrust_allocator(cuda_stream_view stream, resource_ref mr = resource_ref{})
      : stream_(stream), mr_(mr) {}
  template <typename U>
  thrust_allocator(const thrust_allocator<U> &other)  // NOLINT: rebinding converts
      : stream_(other.stream()), mr_(other.resource()) {}

  pointer allocate(size_type count) {
    void *ptr = mr_.allocate(detail::bytes_of<T>(count), stream_);
    return thrust::device_pointer_cast(static_cast<T *>(ptr));
  }
  void deallocate(pointer ptr, size_type count) noexcept {
    try {
      mr_.deallocate(thrust::raw_pointer_cast(ptr), count * sizeof(T), stream_);
    } catch (...) {
      // A deallocation cannot report failure to Thrust; rmmGetLastErrorMessage() keeps it.
    }
  }

  resource_ref resource() const noexcept { return mr_; }
  resource_ref get_upstream_resource() const noexcept { return mr_; }  // RMM's name
  cuda_stream_view stream() const noexcept { return stream_; }

  /// Allocators are equal when memory from one may be returned through the other.
  friend bool operator==(const thrust_allocator &a, const thrust_allocator &b) noexcept {
    return a.mr_ == b.mr_;
  }
  friend bool operator!=(const thrust_allocator &a, const thrust_allocator &b) noexcept {
    return !(a == b);
  }

 private:
  cuda_stream_view stream_{};
  resource_ref mr_{};
};

namespace detail {
// What thrust::cuda::par(allocator).on(stream) is: the allocator held by value.
using thrust_exec_policy_t = std::decay_t<decltype(thrust::cuda::par(
    std::declval<thrust_allocator<char>>()).on(std::declval<cudaStream_t>()))>;
}  // namespace detail

/// A Thrust execution policy that runs on `stream` and takes its temporary storage from `mr`
/// (empty: the current device's resource) in the order of `stream`:
/// `thrust::sort(rmm::exec_policy(stream), v.begin(), v.end())`.
class exec_policy : public detail::thrust_exec_policy_t {
 public:
  explicit exec_policy(cuda_stream_view stream = cuda_stream_default,
                       resource_ref mr = resource_ref{})
      : detail::thrust_exec_policy_t(
            thrust::cuda::par(thrust_allocator<char>(stream, mr)).on(stream.value())) {}
};

#if THRUST_VERSION >= 101600
namespace detail {
using thrust_exec_policy_nosync_t = std::decay_t<decltype(thrust::cuda::par_nosync(
    std::declval<thrust_allocator<char>>()).on(std::declval<cudaStream_t>()))>;
}  // namespace detail

/// exec_policy that lets Thrust skip the stream synchronizations correctness does not need.
class exec_policy_nosync : public detail::thrust_exec_policy_nosync_t {
 public:
  explicit exec_policy_nosync(cuda_stream_view stream = cuda_stream_default,
                              resource_ref mr = resource_ref{})
      : detail::thrust_exec_policy_nosync_t(
            thrust::cuda::par_nosync(thrust_allocator<char>(stream, mr)).on(stream.value())) {}
};
#endif

namespace mr {
using ::rmm::thrust_allocator;
}  // namespace mr

}  // namespace rmm

#endif  // RMM_HPP_THRUST

// RMM's spellings of the registry functions.
namespace rmm {
namespace mr {
using ::rmm::get_current_device_resource;
using ::rmm::get_per_device_resource;
using ::rmm::set_current_device_resource;
using ::rmm::set_per_device_resource;
}  // namespace mr
}  // namespace rmm

#endif  // RMM_HPP
