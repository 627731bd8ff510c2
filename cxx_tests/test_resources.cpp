// rmm.hpp resources: every kind and adaptor as an RAII object, stacks whose C++ objects die
// before what was built over them, moves, the per-device registry, and errors as exceptions.
// Device memory is never dereferenced: this runs on a GPU as well.
#include "cxx_test.hpp"

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;

std::string temp_path(const char *tag) {
  return "/tmp/rmm-cxx-test-" + std::string(tag) + "-" + std::to_string(static_cast<long>(getpid()));
}

std::string read_file(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Allocates and frees a block of `bytes` on `stream` through `r`.
template <typename Resource>
void round_trip(const Resource &r, std::size_t bytes, rmm::cuda_stream_view stream) {
  void *p = r.allocate(bytes, stream);
  CHECK(p != nullptr);
  CHECK(rmm_test_aligned(p, 256));
  r.deallocate(p, bytes, stream);
}

void check_kinds(rmm::cuda_stream_view stream) {
  rmm::cuda_resource cuda;
  CHECK_STR(cuda.name(), "cuda");
  CHECK(cuda.device() == 0);
  round_trip(cuda, 4 * KiB, stream);

  rmm::managed_resource managed;
  CHECK_STR(managed.name(), "managed");
  round_trip(managed, 4 * KiB, stream);

  rmm::pinned_host_resource pinned;
  CHECK_STR(pinned.name(), "pinned_host");
  round_trip(pinned, 4 * KiB, stream);

  try {
    rmm::async_resource async(1 * MiB);
    CHECK_STR(async.name(), "cuda_async");
    round_trip(async, 4 * KiB, stream);
  } catch (const rmm::error &e) {
    CHECK(e.code() == RMM_ERROR_NOT_SUPPORTED);
    std::printf("note: async_resource not supported here (%s)\n", e.what());
  }

  rmm::pool_resource pool(cuda, 4 * MiB, 64 * MiB);
  CHECK_STR(pool.name(), "pool");
  round_trip(pool, 1000, stream);
  CHECK(pool.pool_size() >= 4 * MiB);
  CHECK(pool.pool_free_size() == pool.pool_size());
  CHECK(pool.release_unused() <= 4 * MiB);
  round_trip(pool, 2 * MiB, stream);
  CHECK(pool.pool_size() > 0);
  CHECK(rmm::release_device_memory(0) > 0);  // the whole device's free memory, this pool's too
  CHECK(pool.pool_size() == 0);
  EXPECT_THROW_CODE(rmm::release_device_memory(rmm::get_num_devices()), rmm::error, RMM_ERROR_INVALID_ARGUMENT);

  rmm::arena_resource arena(cuda);
  CHECK_STR(arena.name(), "arena");
  round_trip(arena, 1000, stream);

  rmm::binning_resource binning(pool, 8, 12);
  binning.add_bin(64 * KiB);        // a fixed-size bin of its own
  binning.add_bin(256 * KiB, pool); // and one served by the pool
  CHECK_STR(binning.name(), "binning");
  round_trip(binning, 100, stream);
  round_trip(binning, 40 * KiB, stream);
  round_trip(binning, 200 * KiB, stream);
  round_trip(binning, 2 * MiB, stream);
  rmm::binning_resource empty_binning(cuda);
  round_trip(empty_binning, 1000, stream);

  rmm::fixed_size_resource fixed(cuda, 64 * KiB, 4);
  CHECK_STR(fixed.name(), "fixed_size");
  round_trip(fixed, 64 * KiB, stream);
  CHECK(fixed.pool_size() >= 4 * 64 * KiB);

  rmm::aligned_adaptor aligned(cuda, 4096, 64 * KiB);
  CHECK_STR(aligned.name(), "aligned");
  {
    void *p = aligned.allocate(64 * KiB, stream);
    CHECK(rmm_test_aligned(p, 4096));
    aligned.deallocate(p, 64 * KiB, stream);
  }

  rmm::prefetch_adaptor prefetch(managed);
  CHECK_STR(prefetch.name(), "prefetch");
  round_trip(prefetch, 4 * KiB, stream);

  // Not pool-like: NOT_SUPPORTED, as an rmm::error.
  EXPECT_THROW_CODE(cuda.pool_size(), rmm::error, RMM_ERROR_NOT_SUPPORTED);
  // Zero bytes: nullptr, and freeing it is a no-op.
  CHECK(cuda.allocate(0, stream) == nullptr);
  cuda.deallocate(nullptr, 0, stream);
}

// Upstream objects die first: adaptors and pools keep their own references, and memory
// allocated from a resource stays valid after its object is gone.
void check_lifetimes(rmm::cuda_stream_view stream) {
  rmm::statistics_adaptor outer = [] {
    rmm::cuda_resource cuda;
    rmm::pool_resource pool(cuda, 2 * MiB);
    return rmm::statistics_adaptor(rmm::pool_resource(pool, 1 * MiB));  // a temporary upstream
  }();
  void *p = outer.allocate(3 * MiB, stream);
  CHECK(outer.counts().current_bytes == static_cast<std::int64_t>(3 * MiB));
  {
    rmm::statistics_adaptor inner(outer);
    void *q = inner.allocate(1000, stream);
    rmm::resource keep = std::move(inner);  // slices into a plain resource, same handle
    CHECK(!inner);
    keep.deallocate(q, 1000, stream);
  }
  void *after = nullptr;
  {
    rmm::resource moved(std::move(outer));
    CHECK_STR(moved.name(), "statistics");
    after = moved.allocate(100, stream);
    moved.deallocate(after, 100, stream);
    // Freed through rmmFree after the last C++ object is gone: the resource lives while
    // allocations do.
    rmmResource_t raw = moved.release();
    CHECK(!moved);
    CHECK_OK(rmmResourceDestroy(raw));
  }
  CHECK_OK(rmmFree(p, stream.value(), __FILE__, __LINE__));
  (void)after;
}

void check_moves() {
  static_assert(!std::is_copy_constructible<rmm::resource>::value, "move-only");
  static_assert(!std::is_copy_assignable<rmm::pool_resource>::value, "move-only");
  static_assert(std::is_nothrow_move_constructible<rmm::resource>::value, "noexcept moves");
  static_assert(std::is_nothrow_move_assignable<rmm::statistics_adaptor>::value, "noexcept moves");
  static_assert(std::is_nothrow_move_constructible<rmm::cuda_stream>::value, "noexcept moves");
  static_assert(std::is_trivially_copyable<rmm::resource_ref>::value, "a reference is a pointer");
  static_assert(std::is_trivially_copyable<rmm::cuda_stream_view>::value, "a view is a pointer");
  static_assert(!std::is_convertible<int, rmm::cuda_stream_view>::value, "0 is no stream");

  rmm::cuda_resource a;
  rmm::cuda_resource b;
  const rmmResource_t ha = a.get();
  b = std::move(a);  // b's old handle is destroyed
  CHECK(b.get() == ha && !a);
  EXPECT_THROW_CODE((void)a.allocate(16), rmm::error, RMM_ERROR_INVALID_HANDLE);
  EXPECT_THROW_CODE((void)a.name(), rmm::error, RMM_ERROR_INVALID_HANDLE);
  rmm::resource empty;
  EXPECT_THROW_CODE(empty.deallocate(nullptr, 0), rmm::error, RMM_ERROR_INVALID_HANDLE);

  // Adopting a handle from the C API, and a reference to it.
  rmmResource_t raw = nullptr;
  CHECK_OK(rmmCudaResourceCreate(&raw));
  rmm::resource adopted(raw);
  rmm::resource_ref ref = adopted;
  CHECK(ref.handle() == raw && ref == rmm::resource_ref(raw) && ref != rmm::resource_ref{});
  CHECK_STR(ref.name(), "cuda");
  adopted.reset();
  CHECK(!adopted);
  // The reference dangles now: the C API refuses the destroyed handle.
  EXPECT_THROW_CODE((void)ref.name(), rmm::error, RMM_ERROR_INVALID_HANDLE);

  // Owned streams.
  rmm::cuda_stream s1;
  CHECK(s1.is_valid());
  rmm::cuda_stream s2(std::move(s1));
  CHECK(!s1.is_valid() && s2.is_valid());
  rmm::cuda_stream_view view = s2;
  CHECK(view == s2.view() && view != rmm::cuda_stream_default);
  CHECK(!view.is_default() && rmm::cuda_stream_default.is_default());
  CHECK(rmm::cuda_stream_legacy.is_default() && rmm::cuda_stream_per_thread.is_per_thread_default());
  s1 = std::move(s2);
  s1.synchronize();
  rmm::cuda_stream_per_thread.synchronize();
}

void check_statistics(rmm::cuda_stream_view stream) {
  rmm::cuda_resource cuda;
  rmm::statistics_adaptor stats(cuda);
  void *a = stats.allocate(1000, stream);
  stats.push_counters();
  void *b = stats.allocate(500, stream);
  void *c = stats.allocate(300, stream);
  stats.deallocate(c, 300, stream);
  rmm::statistics inner = stats.counts();
  CHECK(inner.current_bytes == 500 && inner.peak_bytes == 800 && inner.total_bytes == 800);
  CHECK(inner.current_count == 1 && inner.peak_count == 2 && inner.total_count == 2);
  const rmm::statistics popped = stats.pop_counters();
  CHECK(popped.total_count == 2 && popped.peak_bytes == 800);
  const auto bytes = stats.get_bytes_counter();
  const auto allocations = stats.get_allocations_counter();
  CHECK(bytes.value == 1500 && bytes.peak == 1800 && bytes.total == 1800);
  CHECK(allocations.value == 2 && allocations.peak == 3 && allocations.total == 3);
  EXPECT_THROW_CODE((void)stats.pop_counters(), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  stats.deallocate(a, 1000, stream);
  stats.deallocate(b, 500, stream);
  CHECK(stats.counts().current_bytes == 0 && stats.counts().current_count == 0);
  CHECK(cxx_test::contains(stats.snapshot(), "\"statistics\""));
  const std::string path = temp_path("snapshot") + ".json";
  stats.write_snapshot(path);
  CHECK(cxx_test::contains(read_file(path), "\"statistics\""));
  std::remove(path.c_str());
}

void check_logging_tracking_limiting(rmm::cuda_stream_view stream) {
  rmm::cuda_resource cuda;
  const std::string path = temp_path("log") + ".csv";
  rmm::logging_adaptor logged(cuda, path);
  rmm::tracking_adaptor tracked(logged);
  rmm::limiting_adaptor limited(tracked, 64 * KiB);
  CHECK(limited.get_allocation_limit() == 64 * KiB);

  void *a = limited.allocate(1000, stream);
  void *b = limited.allocate(10 * KiB, stream);
  CHECK(limited.get_allocated_bytes() == 1024 + 10 * KiB);  // rounded up to 256
  CHECK(tracked.get_outstanding_count() == 2);
  CHECK(tracked.get_allocated_bytes() == 1000 + 10 * KiB);
  const std::vector<rmm::allocation_record> records = tracked.get_outstanding_allocations();
  CHECK(records.size() == 2);
  CHECK((records[0].ptr == a && records[1].ptr == b) || (records[0].ptr == b && records[1].ptr == a));
  CHECK(records[0].stream == stream.value());
  CHECK(!tracked.report().empty());

  // Past the limit: rmm::out_of_memory, which is an rmm::bad_alloc and a std::bad_alloc.
  EXPECT_THROW_THEN((void)limited.allocate(60 * KiB, stream), rmm::out_of_memory, {
    CHECK(caught.code() == RMM_ERROR_OUT_OF_MEMORY);
    CHECK(cxx_test::contains(caught.what(), "rmmResourceAllocate"));
    CHECK(cxx_test::contains(caught.what(), "RMM_ERROR_OUT_OF_MEMORY"));
  });
  EXPECT_THROW((void)limited.allocate(60 * KiB, stream), rmm::bad_alloc);
  EXPECT_THROW((void)limited.allocate(60 * KiB, stream), std::bad_alloc);
  CHECK(limited.get_allocated_bytes() == 1024 + 10 * KiB);  // unchanged

  // A size that does not match, and a pointer never allocated: rmm::error, nothing freed.
  EXPECT_THROW_CODE(limited.deallocate(a, 999, stream), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  int local = 0;
  EXPECT_THROW_CODE(limited.deallocate(&local, 4, stream), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  CHECK(tracked.get_outstanding_count() == 2);

  limited.deallocate(a, 1000, stream);
  limited.deallocate(b, 10 * KiB, stream);
  CHECK(limited.get_allocated_bytes() == 0);
  CHECK(tracked.get_outstanding_count() == 0 && tracked.report().empty());
  EXPECT_THROW((void)logged.allocate(std::size_t{1} << 60, stream), rmm::out_of_memory);
  logged.flush();
  const std::string log = read_file(path);
  CHECK(cxx_test::contains(log, "Thread,Time,Action,Pointer,Size,Stream"));
  CHECK(cxx_test::contains(log, ",allocate,"));
  CHECK(cxx_test::contains(log, ",free,"));
  CHECK(cxx_test::contains(log, "allocate failure"));
  std::remove(path.c_str());
}

void check_failure_callback(rmm::cuda_stream_view stream) {
  rmm::cuda_resource cuda;
  rmm::limiting_adaptor limited(cuda, 8 * KiB);
  void *held = limited.allocate(6 * KiB, stream);
  int calls = 0;
  std::size_t last_bytes = 0;
  // Slicing into a plain rmm::resource keeps the std::function alive.
  rmm::resource spilling = rmm::failure_callback_adaptor(limited, [&](std::size_t bytes) {
    ++calls;
    last_bytes = bytes;
    if (held == nullptr) return false;
    limited.deallocate(held, 6 * KiB, stream);
    held = nullptr;
    return true;
  });
  CHECK_STR(spilling.name(), "failure_callback");
  void *a = spilling.allocate(4 * KiB, stream);  // spills the held block, then succeeds
  CHECK(calls == 1 && last_bytes == 4 * KiB && held == nullptr);
  EXPECT_THROW(spilling.allocate(8 * KiB, stream), rmm::out_of_memory);  // nothing to spill
  CHECK(calls == 2);
  spilling.deallocate(a, 4 * KiB, stream);

  // A callback that throws counts as "do not retry": the exception never crosses the C library.
  rmm::failure_callback_adaptor throwing(limited, [](std::size_t) -> bool {
    throw std::runtime_error("callback failed");
  });
  EXPECT_THROW(throwing.allocate(16 * KiB, stream), rmm::out_of_memory);

  // A plain function pointer and argument.
  struct counter {
    int calls = 0;
  } c;
  rmm::failure_callback_adaptor plain(
      limited,
      [](std::size_t, void *arg) {
        ++static_cast<counter *>(arg)->calls;
        return false;
      },
      &c);
  EXPECT_THROW(plain.allocate(16 * KiB, stream), std::bad_alloc);
  CHECK(c.calls == 1);
  CHECK(limited.get_allocated_bytes() == 0);
}

void check_registry(rmm::cuda_stream_view stream) {
  rmm::cuda_resource cuda;
  rmm::pool_resource pool(cuda, 2 * MiB);
  rmm::statistics_adaptor stats(pool);

  rmm::resource original = rmm::get_current_device_resource();
  CHECK(original);
  {
    rmm::resource previous = rmm::set_current_device_resource(stats);
    CHECK_STR(previous.name(), original.name());
    rmm::resource now = rmm::mr::get_current_device_resource();
    CHECK_STR(now.name(), "statistics");
    // The empty reference is the current device's resource, resolved at each use.
    rmm::resource_ref current{};
    CHECK(current.is_current_device_resource());
    CHECK_STR(current.name(), "statistics");
    CHECK(current.device() == 0);
    void *p = current.allocate(5000, stream);
    CHECK(stats.counts().current_bytes == 5000);
    current.deallocate(p, 5000, stream);
    CHECK(stats.counts().current_bytes == 0 && stats.counts().total_count == 1);
    rmm::set_current_device_resource(previous);
  }
  {
    rmm::current_device_resource_scope scope(stats);
    CHECK_STR(rmm::get_per_device_resource(0).name(), "statistics");
    CHECK_STR(rmm::resource_ref{}.name(), "statistics");
  }
  CHECK_STR(rmm::get_current_device_resource().name(), original.name());

  // Errors of the registry: a device that does not exist, a resource of another device.
  EXPECT_THROW_CODE(rmm::get_per_device_resource(99), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  if (rmm::get_num_devices() >= 2) {
    EXPECT_THROW_CODE(rmm::set_per_device_resource(1, cuda), rmm::error,
                      RMM_ERROR_INVALID_ARGUMENT);
    rmm::set_current_device(1);
    CHECK(rmm::get_current_device() == 1);
    rmm::cuda_resource one;
    CHECK(one.device() == 1);
    rmm::set_current_device(0);
  }
}

void check_errors() {
  // Creation failures throw from the constructor and leak nothing.
  rmm::cuda_resource cuda;
  EXPECT_THROW_CODE(rmm::limiting_adaptor(cuda, 0), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_THROW_CODE(rmm::aligned_adaptor(cuda, 100, 0), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_THROW_CODE(rmm::pool_resource(rmm::resource_ref{}, 0), rmm::error,
                    RMM_ERROR_INVALID_HANDLE);
  EXPECT_THROW_CODE(rmm::logging_adaptor(cuda, "/nonexistent-dir/x/log.csv"), rmm::error,
                    RMM_ERROR_IO);
  EXPECT_THROW_CODE(rmm::pool_resource(cuda, std::size_t{1} << 60), rmm::out_of_memory,
                    RMM_ERROR_OUT_OF_MEMORY);
  rmm::fixed_size_resource fixed(cuda, 4 * KiB, 1);
  EXPECT_THROW_CODE((void)fixed.allocate(8 * KiB), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_THROW_CODE((void)cuda.allocate(std::size_t{1} << 60), rmm::out_of_memory,
                    RMM_ERROR_OUT_OF_MEMORY);

  // check() and RMM_CHECK: the code, its description and the last error message.
  rmm::check(RMM_SUCCESS);
  EXPECT_THROW_THEN(RMM_CHECK(rmmResourceDestroy(reinterpret_cast<rmmResource_t>(std::uintptr_t{0x1234}))),
                    rmm::error, {
                      CHECK(caught.code() == RMM_ERROR_INVALID_HANDLE);
                      CHECK(cxx_test::contains(caught.what(), "rmmResourceDestroy("));
                      CHECK(cxx_test::contains(caught.what(), "RMM_ERROR_INVALID_HANDLE"));
                      CHECK(cxx_test::contains(caught.what(), rmmGetLastErrorMessage()));
                    });
  EXPECT_THROW_CODE(rmm::check(RMM_ERROR_OUT_OF_MEMORY), rmm::out_of_memory, RMM_ERROR_OUT_OF_MEMORY);
  EXPECT_THROW_CODE(rmm::check(RMM_ERROR_CUDA_ERROR), rmm::error, RMM_ERROR_CUDA_ERROR);
  EXPECT_THROW_CODE(rmm::check_alloc(RMM_ERROR_CUDA_ERROR), rmm::bad_alloc, RMM_ERROR_CUDA_ERROR);
  EXPECT_THROW_CODE(rmm::check_alloc(RMM_ERROR_INVALID_ARGUMENT), rmm::error,
                    RMM_ERROR_INVALID_ARGUMENT);
  EXPECT_THROW(rmm::throw_error(RMM_ERROR_IO, "custom"), std::runtime_error);
  static_assert(std::is_base_of<std::bad_alloc, rmm::out_of_memory>::value, "");
  static_assert(std::is_base_of<rmm::bad_alloc, rmm::out_of_memory>::value, "");
  static_assert(std::is_base_of<std::runtime_error, rmm::error>::value, "");
  static_assert(std::is_nothrow_copy_constructible<rmm::bad_alloc>::value, "");
  static_assert(std::is_nothrow_copy_constructible<rmm::error>::value, "");

  // Text the C API returns, through the wrappers.
  (void)rmm::report();  // "" unless rmmConfigure asked for a report
  EXPECT_THROW_CODE(rmm::configure("resource:nonsense"), rmm::error, RMM_ERROR_INVALID_ARGUMENT);
  const auto info = rmm::available_device_memory();
  CHECK(info.second > 0 && info.first <= info.second);
}

// After the legacy rmmInitialize/rmmFinalize, rmmAlloc (and rmmGetInfo) are refused; the
// current device's resource through an empty reference is not, as for device buffers with the
// default resource. Last: the process stays finalized.
void check_after_finalize(rmm::cuda_stream_view stream) {
  CHECK_OK(rmmInitialize(nullptr));
  CHECK_OK(rmmFinalize());
  void *refused = nullptr;
  CHECK_RMM(rmmAlloc(&refused, 256, stream.value(), nullptr, 0), RMM_ERROR_NOT_INITIALIZED);
  void *p = rmm::resource_ref{}.allocate(256, stream);
  CHECK(p != nullptr);
  rmm::resource_ref{}.deallocate(p, 256, stream);
}

}  // namespace

int main() {
  const bool simulated = rmm::is_simulated();
  CHECK(simulated == rmm_test_simulated());
  rmm::cuda_stream stream;
  check_kinds(stream);
  check_kinds(rmm::cuda_stream_default);
  check_lifetimes(stream);
  check_moves();
  check_statistics(stream);
  check_logging_tracking_limiting(stream);
  check_failure_callback(stream);
  check_registry(stream);
  check_errors();
  check_after_finalize(stream);
  stream.synchronize();
  return rmm_test_finish("cxx resources");
}
