// A program written against RAPIDS RMM 26.x's C++ API (CCCL memory resources), built against
// rmm-rs's RAPIDS-shaped <rmm/...> headers with no change: a pool over cuda as the current
// device resource, a statistics adaptor over it, containers, adaptors, a user's resource that
// satisfies cuda::mr::resource as a pool's upstream and as the current device resource, and
// (with nvcc) a Thrust sort with rmm::exec_policy.
//
// Built with g++ against CCCL's and the CUDA runtime's headers (the nvidia-cuda-cccl and
// nvidia-cuda-runtime packages) and run on simulated devices in CI; built with nvcc and run on
// the GPU by scripts/gpu-test.sh.
#include <rmm/aligned.hpp>
#include <rmm/cuda_device.hpp>
#include <rmm/cuda_stream.hpp>
#include <rmm/cuda_stream_view.hpp>
#include <rmm/device_buffer.hpp>
#include <rmm/device_scalar.hpp>
#include <rmm/device_uvector.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/arena_memory_resource.hpp>
#include <rmm/mr/binning_memory_resource.hpp>
#include <rmm/mr/callback_memory_resource.hpp>
#include <rmm/mr/cuda_async_managed_memory_resource.hpp>
#include <rmm/mr/cuda_async_memory_resource.hpp>
#include <rmm/mr/cuda_async_pinned_host_memory_resource.hpp>
#include <rmm/mr/cuda_async_view_memory_resource.hpp>
#include <rmm/mr/sam_headroom_memory_resource.hpp>
#include <rmm/mr/system_memory_resource.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/fixed_size_memory_resource.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/managed_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/mr/polymorphic_allocator.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/prefetch_resource_adaptor.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>
#include <rmm/process_is_exiting.hpp>
#include <rmm/resource_ref.hpp>

#if defined(__CUDACC__)
#include <rmm/device_vector.hpp>
#include <rmm/exec_policy.hpp>
#include <rmm/prefetch.hpp>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#endif

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "rmm_test.h"

namespace {

// A user's resource, as RAPIDS code writes them: it counts what it hands out and takes the
// memory from the cuda resource.
class counting_resource {
 public:
  struct counts {
    std::atomic<long> live{0};
    std::atomic<long> allocations{0};
  };

  void *allocate(cuda::stream_ref stream, std::size_t bytes, std::size_t alignment) {
    void *ptr = upstream_.allocate(stream, bytes, alignment);
    ++counts_->live;
    ++counts_->allocations;
    return ptr;
  }
  void deallocate(cuda::stream_ref stream, void *ptr, std::size_t bytes, std::size_t alignment) noexcept {
    upstream_.deallocate(stream, ptr, bytes, alignment);
    --counts_->live;
  }
  void *allocate_sync(std::size_t bytes, std::size_t alignment) {
    return allocate(cuda::stream_ref{cudaStream_t{}}, bytes, alignment);
  }
  void deallocate_sync(void *ptr, std::size_t bytes, std::size_t alignment) noexcept {
    deallocate(cuda::stream_ref{cudaStream_t{}}, ptr, bytes, alignment);
  }
  bool operator==(counting_resource const &other) const noexcept { return counts_ == other.counts_; }
  bool operator!=(counting_resource const &other) const noexcept { return !(*this == other); }
  friend void get_property(counting_resource const &, cuda::mr::device_accessible) noexcept {}

  counts const &seen() const { return *counts_; }

 private:
  rmm::mr::cuda_memory_resource upstream_;
  std::shared_ptr<counts> counts_ = std::make_shared<counts>();
};

static_assert(cuda::mr::resource_with<counting_resource, cuda::mr::device_accessible>);

template <class Exception, class Statement>
bool throws(Statement &&statement) {
  try {
    statement();
  } catch (Exception const &) {
    return true;
  }
  return false;
}

void containers_on_the_current_resource(rmm::mr::statistics_resource_adaptor &stats, rmm::cuda_stream_view stream) {
  {
    rmm::device_uvector<int> values(1000, stream, stats);
    CHECK(values.size() == 1000 && values.capacity() == 1000 && !values.is_empty());
    CHECK(stats.get_bytes_counter().value == 4000);
    CHECK(stats.get_allocations_counter().value == 1);
    for (int i = 0; i < 10; ++i) values.set_element(static_cast<std::size_t>(i), i * i, stream);
    values.set_element_to_zero_async(9, stream);
    CHECK(values.element(3, stream) == 9);
    CHECK(values.element(9, stream) == 0);
    CHECK(values.front_element(stream) == 0);
    CHECK(throws<std::out_of_range>([&] { (void)values.element(1000, stream); }));

    values.resize(2000, stream);  // keeps the first 1000
    CHECK(values.size() == 2000 && values.element(4, stream) == 16);
    values.resize(5, stream);
    values.shrink_to_fit(stream);
    CHECK(values.capacity() == 5 && values.element(2, stream) == 4);
    CHECK(stats.get_bytes_counter().value == 20);
    CHECK(stats.get_bytes_counter().peak >= 12000);

    rmm::device_uvector<int> copy(values, stream);
    CHECK(copy.size() == 5 && copy.element(4, stream) == 16);
    CHECK(copy.memory_resource() == rmm::mr::get_current_device_resource_ref());

    rmm::device_buffer released = values.release();
    CHECK(released.size() == 20 && values.size() == 0);
  }
  CHECK(stats.get_bytes_counter().value == 0);

  // Host data in and out of a device_buffer, on the current device resource.
  std::vector<unsigned char> host(4096);
  rmm_test_fill(host.data(), host.size(), 7);
  rmm::device_buffer buffer(host.data(), host.size(), stream);
  CHECK(buffer.size() == 4096 && rmm::is_pointer_aligned(buffer.data()));
  rmm::device_buffer twin(buffer, stream);
  std::vector<unsigned char> back(4096);
  CHECK_OK(rmmMemcpyAsync(back.data(), twin.data(), back.size(), stream.value()));
  stream.synchronize();
  CHECK(rmm_test_verify(back.data(), back.size(), 7));

  // Alignment: a power of two, kept by moves; the moved-from buffer is empty on the default
  // stream with alignment 1.
  CHECK(throws<rmm::invalid_argument>([&] { rmm::device_buffer odd(100, 3, stream); }));
  rmm::device_buffer aligned(100, 64, stream);
  CHECK(aligned.alignment() == 64 && rmm::is_pointer_aligned(aligned.data(), 64));
  rmm::device_buffer moved(std::move(aligned));
  CHECK(moved.alignment() == 64 && moved.stream() == stream && moved.size() == 100);
  CHECK(aligned.alignment() == 1 && aligned.stream() == rmm::cuda_stream_default && aligned.data() == nullptr);

  // Stream-ordered allocators over the current device resource.
  rmm::mr::polymorphic_allocator<int> ints;
  int *four = ints.allocate(4, stream);
  CHECK(four != nullptr && ints.get_upstream_resource() == rmm::mr::get_current_device_resource_ref());
  ints.deallocate(four, 4, stream);
  auto on_stream = rmm::mr::stream_allocator_adaptor_factory(ints, stream);
  {
    std::vector<int, decltype(on_stream)> empty(on_stream);
    CHECK(empty.get_allocator().stream() == stream);
  }
  CHECK(rmm::mr::polymorphic_allocator<double>{ints} == ints);
  CHECK(!rmm::process_is_exiting());

  rmm::device_scalar<double> scalar(2.5, stream);
  CHECK(scalar.value(stream) == 2.5);
  scalar.set_value_to_zero_async(stream);
  CHECK(scalar.value(stream) == 0.0);
}

void counter_scopes(rmm::mr::statistics_resource_adaptor &stats, rmm::cuda_stream_view stream) {
  void *outer = stats.allocate(stream, 1000);
  auto before = stats.push_counters();
  CHECK(before.first.value == 1000 && before.second.value == 1);
  void *inner = stats.allocate(stream, 300);
  CHECK(stats.get_bytes_counter().value == 300);
  stats.deallocate(stream, inner, 300);
  auto popped = stats.pop_counters();
  CHECK(popped.first.value == 0 && popped.first.peak == 300 && popped.first.total == 300);
  CHECK(stats.get_bytes_counter().peak >= 1300);
  CHECK(throws<std::out_of_range>([&] { (void)stats.pop_counters(); }));
  stats.deallocate(stream, outer, 1000);
}

void users_resource_as_upstream(rmm::cuda_stream_view stream) {
  counting_resource counting;
  {
    rmm::mr::pool_memory_resource pool{counting, 1 << 20};
    CHECK(counting.seen().live == 1);  // the pool's first chunk
    void *ptr = pool.allocate(stream, 4 << 20);  // grows the pool from the user's resource
    CHECK(counting.seen().allocations >= 2);
    rmm::mr::statistics_resource_adaptor stats{pool};
    rmm::device_uvector<float> values(100, stream, stats);
    CHECK(stats.get_allocations_counter().value == 1);
    pool.deallocate(stream, ptr, 4 << 20);
    CHECK(pool.get_upstream_resource() == rmm::device_async_resource_ref{counting});
  }
  stream.synchronize();
  CHECK(counting.seen().live == 0);  // the pool gave everything back when it went

  // A user's resource as the current device resource: the C API allocates from it too.
  auto previous = rmm::mr::set_current_device_resource(counting);
  rmmResource_t current = nullptr;
  CHECK_OK(rmmGetCurrentDeviceResource(&current));
  void *ptr = nullptr;
  long const before = counting.seen().allocations;
  CHECK_OK(rmmResourceAllocate(current, &ptr, 512, stream.value()));
  CHECK(counting.seen().allocations == before + 1);
  CHECK_OK(rmmResourceDeallocate(current, ptr, 512, stream.value()));
  CHECK_OK(rmmResourceDestroy(current));
  rmm::mr::set_current_device_resource(previous);
  CHECK(counting.seen().live == 0);
  // Saving and restoring, again and again and nested, gives the C registry the pool back each
  // time, not a callback resource over it.
  for (int round = 0; round < 3; ++round) {
    auto saved = rmm::mr::set_current_device_resource(counting);
    {
      rmm::mr::cuda_memory_resource inner_mr;
      auto inner = rmm::mr::set_current_device_resource(inner_mr);
      rmm::mr::set_current_device_resource(inner);
    }
    rmm::mr::set_current_device_resource(saved);
    CHECK_OK(rmmGetCurrentDeviceResource(&current));
    const char *kind = nullptr;
    CHECK_OK(rmmResourceGetName(current, &kind));
    CHECK(std::string(kind) == "pool");
    CHECK_OK(rmmResourceDestroy(current));
  }

  // And as a C-style callback resource.
  std::atomic<int> calls{0};
  rmm::mr::cuda_memory_resource cuda_mr;
  rmm::mr::callback_memory_resource callbacks{
      [&](std::size_t bytes, rmm::cuda_stream_view s, void *arg) {
        CHECK(arg == &calls);
        ++calls;
        return cuda_mr.allocate(s, bytes);
      },
      [&](void *p, std::size_t bytes, rmm::cuda_stream_view s, void *) { cuda_mr.deallocate(s, p, bytes); }, &calls,
      nullptr};
  // Memory from a callback resource outlives the C++ object: the C resource keeps the
  // callbacks until its last block is freed.
  void *late = nullptr;
  {
    rmm::mr::cuda_memory_resource by_value;
    rmm::mr::callback_memory_resource scoped{
        [by_value](std::size_t bytes, rmm::cuda_stream_view s, void *) mutable { return by_value.allocate(s, bytes); },
        [by_value](void *p, std::size_t bytes, rmm::cuda_stream_view s, void *) mutable { by_value.deallocate(s, p, bytes); }};
    CHECK_OK(rmmResourceAllocate(scoped.handle(), &late, 1000, stream.value()));
  }
  CHECK_OK(rmmFree(late, stream.value(), nullptr, 0));

  rmm::mr::fixed_size_memory_resource blocks{callbacks, 1 << 16, 4};
  CHECK(blocks.get_block_size() == 1 << 16);
  void *block = blocks.allocate(stream, 1000);
  CHECK(calls == 1);
  blocks.deallocate(stream, block, 1000);
}

void adaptors(rmm::mr::pool_memory_resource &pool, rmm::cuda_stream_view stream) {
  rmm::mr::limiting_resource_adaptor limited{pool, 1 << 20};
  void *ptr = limited.allocate(stream, 1000);
  CHECK(limited.get_allocated_bytes() == 1024 && limited.get_allocation_limit() == 1 << 20);
  CHECK(throws<rmm::out_of_memory>([&] { (void)limited.allocate(stream, 2 << 20); }));
  CHECK(throws<std::bad_alloc>([&] { (void)limited.allocate(stream, 2 << 20); }));
  limited.deallocate(stream, ptr, 1000);

  rmm::mr::tracking_resource_adaptor tracked{pool};
  void *a = tracked.allocate(stream, 100);
  void *b = tracked.allocate(stream, 200);
  auto const &outstanding = tracked.get_outstanding_allocations();
  CHECK(outstanding.size() == 2 && outstanding.at(b).allocation_size == 200);
  CHECK(tracked.get_allocated_bytes() == 300);
  CHECK(!tracked.get_outstanding_allocations_str().empty());
  tracked.deallocate(stream, a, 100);
  tracked.deallocate(stream, b, 200);
  CHECK(tracked.get_outstanding_allocations().empty());

  rmm::mr::aligned_resource_adaptor aligned{pool, 4096, 1024};
  void *wide = aligned.allocate(stream, 5000, 4096);
  CHECK(rmm::is_pointer_aligned(wide, 4096));
  aligned.deallocate(stream, wide, 5000, 4096);
  // A pool places a larger alignment itself; a resource that cannot is rmm::bad_alloc.
  void *placed = pool.allocate(stream, 100, 4096);
  CHECK(rmm::is_pointer_aligned(placed, 4096));
  pool.deallocate(stream, placed, 100, 4096);
  rmm::mr::cuda_memory_resource plain;
  CHECK(throws<rmm::bad_alloc>([&] { (void)plain.allocate(stream, 100, 4096); }));

  int retries = 0;
  rmm::mr::failure_callback_resource_adaptor<> retrying{
      limited, [](std::size_t, void *arg) { return ++*static_cast<int *>(arg) < 3; }, &retries};
  CHECK(throws<rmm::out_of_memory>([&] { (void)retrying.allocate(stream, 4 << 20); }));
  CHECK(retries == 3);

  std::string const log_path = "rapids_style_log.csv";
  {
    rmm::mr::logging_resource_adaptor logged{pool, log_path, true};
    void *p = logged.allocate(stream, 64);
    logged.deallocate(stream, p, 64);
    CHECK(logged.header() == "Thread,Time,Action,Pointer,Size,Stream");
  }
  std::ifstream log(log_path);
  std::string line;
  int lines = 0;
  while (std::getline(log, line)) ++lines;
  CHECK(lines == 3);  // the header, allocate, free
  std::remove(log_path.c_str());

  rmm::mr::binning_memory_resource binned{pool, 10, 16};
  rmm::mr::arena_memory_resource arena{pool};
  binned.add_bin(1 << 20, arena);
  void *small = binned.allocate(stream, 1000);
  void *large = binned.allocate(stream, 1 << 19);
  binned.deallocate(stream, small, 1000);
  binned.deallocate(stream, large, 1 << 19);

  rmm::mr::prefetch_resource_adaptor prefetching{rmm::mr::managed_memory_resource{}};
  void *managed = prefetching.allocate(stream, 4096);
  prefetching.deallocate(stream, managed, 4096);

  // A resource_ref to an rmm-rs resource works as an upstream too (through a callback).
  rmm::mr::statistics_resource_adaptor over_ref{rmm::mr::get_current_device_resource_ref()};
  void *q = over_ref.allocate(stream, 256);
  CHECK(over_ref.get_allocations_counter().value == 1);
  over_ref.deallocate(stream, q, 256);
}

#if defined(__CUDACC__)
void thrust_on_rmm(rmm::cuda_stream_view stream) {
  rmm::device_uvector<int> values(1 << 20, stream);
  // Managed memory migrates; device memory is left as it is.
  rmm::mr::managed_memory_resource managed;
  void *migrating = managed.allocate(stream, 1 << 20);
  rmm::prefetch(migrating, 1 << 20, rmm::get_current_cuda_device(), stream);
  rmm::prefetch(values.data(), values.size() * sizeof(int), rmm::get_current_cuda_device(), stream);
  managed.deallocate(stream, migrating, 1 << 20);
  thrust::sequence(rmm::exec_policy(stream), values.begin(), values.end(), 0);
  thrust::sort(rmm::exec_policy(stream), values.begin(), values.end(), thrust::greater<int>());
  CHECK(values.front_element(stream) == (1 << 20) - 1);
  CHECK(values.back_element(stream) == 0);
  long long const sum = thrust::reduce(rmm::exec_policy_nosync(stream), values.begin(), values.end(), 0LL);
  CHECK(sum == (long long)(1 << 20) * ((1 << 20) - 1) / 2);
  rmm::device_vector<int> vector(1000, 7);
  CHECK(thrust::reduce(vector.begin(), vector.end()) == 7000);
}
#endif

// resource_refs taken as RAPIDS code takes them stay valid when what they refer into moves: a
// buffer's resource after the buffer is moved, and the initial resource after an adaptor over
// it becomes the current device resource (RAPIDS' own test fixtures do both).
// A count whose bytes overflow std::size_t is rmm::invalid_argument (as in RAPIDS RMM 26.x), with
// a message, from the constructor, reserve and resize; the vector is left as it was.
void uvector_size_overflow(rmm::cuda_stream_view stream) {
  struct three_doubles {
    double x, y, z;
  };
  std::size_t const too_many = std::numeric_limits<std::size_t>::max() / sizeof(three_doubles) + 1;
  auto invalid_with_message = [](auto &&statement) {
    try {
      statement();
    } catch (rmm::invalid_argument const &error) {
      return std::string(error.what()).find("overflow") != std::string::npos;
    } catch (...) {
    }
    return false;
  };
  CHECK(invalid_with_message([&] { rmm::device_uvector<three_doubles> v(too_many, stream); }));
  CHECK(invalid_with_message([&] { rmm::device_uvector<std::uint64_t> v(std::numeric_limits<std::size_t>::max(), stream); }));
  rmm::device_uvector<three_doubles> vec(10, stream);
  CHECK(invalid_with_message([&] { vec.reserve(too_many, stream); }));
  CHECK(invalid_with_message([&] { vec.resize(too_many, stream); }));
  CHECK(vec.size() == 10 && vec.capacity() == 10);
  // The largest count that fits is not refused as an argument: it is out of memory.
  CHECK(throws<rmm::bad_alloc>([&] { vec.resize(too_many - 1, stream); }));
  CHECK(vec.size() == 10);
}

void refs_outlive_moves(rmm::cuda_stream_view stream) {
  rmm::mr::reset_current_device_resource();
  {
    rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 1 << 20};
    rmm::device_buffer buffer{100, stream, pool};
    auto ref = buffer.memory_resource();
    rmm::device_buffer moved{std::move(buffer)};
    CHECK(ref == moved.memory_resource());
    void *ptr = ref.allocate(stream, 64, rmm::CUDA_ALLOCATION_ALIGNMENT);
    ref.deallocate(stream, ptr, 64, rmm::CUDA_ALLOCATION_ALIGNMENT);
  }
  rmm::mr::thread_safe_resource_adaptor serialized{rmm::mr::get_current_device_resource_ref()};
  auto before = rmm::mr::set_current_device_resource(rmm::device_async_resource_ref{serialized});
  // The adaptor's upstream is still the initial resource, not the adaptor itself (which would
  // wait on its own lock).
  void *ptr = serialized.allocate(stream, 256);
  serialized.deallocate(stream, ptr, 256);
  auto current = rmm::mr::get_current_device_resource_ref();
  CHECK(current != rmm::device_async_resource_ref{before});
  ptr = current.allocate(stream, 256, rmm::CUDA_ALLOCATION_ALIGNMENT);
  current.deallocate(stream, ptr, 256, rmm::CUDA_ALLOCATION_ALIGNMENT);
  rmm::mr::reset_current_device_resource();
}

}  // namespace

// The resources over driver pools and system memory (simulated devices: a CUDA 13 driver, no
// pageable memory access unless RMM_SIM_PAGEABLE_MEMORY_ACCESS=on).
static void pool_and_system_resources(rmm::cuda_stream_view stream) {
  rmm::mr::cuda_async_memory_resource owner{std::size_t{1} << 20};
  rmm::mr::cuda_async_view_memory_resource view{owner.pool_handle()};
  CHECK(view.pool_handle() == owner.pool_handle() && view != owner);
  view.deallocate(stream, view.allocate(stream, 4096), 4096);
  CHECK(throws<rmm::logic_error>([] { rmm::mr::cuda_async_view_memory_resource none{cudaMemPool_t{}}; }));

  bool simulated = false;
  CHECK_OK(rmmIsSimulated(&simulated));
  CHECK(rmm::detail::runtime_async_managed_alloc::is_supported() || !simulated);
  CHECK(rmm::detail::hwdecompress::is_supported() || !simulated);
  if (!rmm::detail::runtime_async_managed_alloc::is_supported()) {
    CHECK(throws<rmm::logic_error>([] { rmm::mr::cuda_async_managed_memory_resource refused; }));
    return;  // a GPU whose driver is older than CUDA 13: the rest is CUDA 13's
  }
  rmm::mr::cuda_async_managed_memory_resource managed, managed_too;
  CHECK(managed == managed_too && managed.pool_handle() != nullptr);
  auto *values = static_cast<int *>(managed.allocate_sync(100 * sizeof(int)));
  values[99] = 99;  // host accessible
  managed_too.deallocate_sync(values, 100 * sizeof(int));  // equal resources free each other's memory

  int host_pools = 0;
  CHECK_OK(rmmDeviceSupports(&host_pools, RMM_CAPABILITY_HOST_MEMORY_POOLS, rmm::get_current_cuda_device().value()));
  if (host_pools != 0) {
    rmm::mr::cuda_async_pinned_host_memory_resource host{std::size_t{1} << 20};
    host.deallocate(stream, host.allocate(stream, 4096), 4096);
  }
  static_assert(cuda::mr::resource_with<rmm::mr::cuda_async_pinned_host_memory_resource, cuda::mr::host_accessible>);

  bool const system = rmm::mr::detail::is_system_memory_supported(rmm::get_current_cuda_device());
  CHECK(!simulated || system == (std::getenv("RMM_SIM_PAGEABLE_MEMORY_ACCESS") != nullptr));
  if (system) {
    rmm::mr::system_memory_resource sys;
    CHECK(sys == rmm::mr::system_memory_resource{});
    sys.deallocate_sync(sys.allocate_sync(4096), 4096);
    rmm::mr::sam_headroom_memory_resource one{std::size_t{1} << 20}, other{std::size_t{1} << 30};
    CHECK(one != other);
    one.deallocate_sync(one.allocate_sync(4096), 4096);
  } else {
    CHECK(throws<rmm::logic_error>([] { rmm::mr::system_memory_resource sys; }));
    CHECK(throws<rmm::logic_error>([] { rmm::mr::sam_headroom_memory_resource headroom{1}; }));
  }
  std::printf("pool and system resources: view, managed, pinned host, system (%s)\n", system ? "offered" : "refused");
}

int main() {
  try {
    rmm::cuda_stream stream;
    CHECK(stream.is_valid());
    refs_outlive_moves(stream);
    uvector_size_overflow(stream);
    pool_and_system_resources(stream);

    // A pool over cuda as the current device resource, and statistics over the pool.
    rmm::mr::cuda_memory_resource cuda_mr;
    CHECK(cuda_mr == rmm::mr::cuda_memory_resource{});
    rmm::mr::pool_memory_resource pool{cuda_mr, 16 << 20, 1ull << 30};
    CHECK(pool.pool_size() == 16 << 20);
    auto previous = rmm::mr::set_current_device_resource(pool);
    CHECK(rmm::mr::get_current_device_resource_ref() == rmm::device_async_resource_ref{pool});
    // The C API's current device resource is the same pool.
    rmmResource_t current = nullptr;
    CHECK_OK(rmmGetCurrentDeviceResource(&current));
    CHECK(current != nullptr);
    void *ptr = nullptr;
    CHECK_OK(rmmResourceAllocate(current, &ptr, 1000, stream.value()));
    CHECK_OK(rmmResourceDeallocate(pool.handle(), ptr, 1000, stream.value()));
    CHECK_OK(rmmResourceDestroy(current));

    rmm::mr::statistics_resource_adaptor stats{pool};
    containers_on_the_current_resource(stats, stream);
    counter_scopes(stats, stream);
    users_resource_as_upstream(stream);
    adaptors(pool, stream);

    // Out of memory is rmm::out_of_memory (a std::bad_alloc).
    CHECK(throws<rmm::out_of_memory>([&] { (void)pool.allocate(stream, std::size_t{1} << 50); }));
    rmm::mr::cuda_async_memory_resource async_mr;
    CHECK(async_mr.pool_handle() != nullptr);
#if defined(__CUDACC__)
    // As RAPIDS RMM's: the pool keeps all it holds unless told a release threshold.
    std::uint64_t threshold = 0;
    CHECK(cudaMemPoolGetAttribute(async_mr.pool_handle(), cudaMemPoolAttrReleaseThreshold, &threshold) == cudaSuccess);
    CHECK(threshold == UINT64_MAX);
#endif
    void *async_ptr = async_mr.allocate(stream, 1 << 20);
    async_mr.deallocate(stream, async_ptr, 1 << 20);
    void *sync_ptr = pool.allocate_sync(4096);
    pool.deallocate_sync(sync_ptr, 4096);

#if defined(__CUDACC__)
    thrust_on_rmm(stream);
#endif
    stream.synchronize();
    rmm::mr::set_current_device_resource(previous);
    auto reset = rmm::mr::reset_current_device_resource();
    (void)reset;
  } catch (std::exception const &error) {
    std::fprintf(stderr, "FAILED: uncaught exception: %s\n", error.what());
    return 1;
  }
  return rmm_test_finish("rapids_style");
}
