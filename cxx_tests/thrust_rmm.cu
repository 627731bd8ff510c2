// Thrust on rmm-rs through rmm.hpp, on the real GPU: thrust::sort of 10M ints in a
// thrust::device_vector<int, rmm::thrust_allocator<int>> with rmm::exec_policy(stream),
// checked against std::sort on the host; thrust::reduce; a device_uvector as a Thrust range;
// an exec_policy over an explicit resource. A statistics adaptor, set as the current device's
// resource, must see the allocations (the vector's and Thrust's temporary storage) and get
// every byte back.
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "cuda_test.cuh"
#include "rmm.hpp"

#if !RMM_HPP_THRUST
#error "rmm.hpp must compile its Thrust parts under nvcc"
#endif

namespace {

using rmm_int_vector = thrust::device_vector<int, rmm::thrust_allocator<int>>;

struct add_long_long {
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

struct descending {
  __host__ __device__ bool operator()(std::int64_t a, std::int64_t b) const { return a > b; }
};

void print_counts(const char *what, const rmm::statistics &s) {
  std::printf("%-34s current %lld B in %lld, peak %lld B, total %lld allocations\n", what,
              static_cast<long long>(s.current_bytes), static_cast<long long>(s.current_count),
              static_cast<long long>(s.peak_bytes), static_cast<long long>(s.total_count));
}

void sort_and_reduce(rmm::statistics_adaptor &stats, rmm::cuda_stream_view stream) {
  constexpr std::size_t n = 10000000;
  std::vector<int> host(n);
  std::mt19937 random(12345);
  for (int &value : host) value = static_cast<int>(random());
  const long long expected_sum = std::accumulate(host.begin(), host.end(), 0LL);

  const rmm::statistics start = stats.counts();
  {
    rmm_int_vector values(host.begin(), host.end(), rmm::thrust_allocator<int>(stream));
    const rmm::statistics filled = stats.counts();
    print_counts("device_vector of 10M ints:", filled);
    CHECK(filled.total_count > start.total_count);  // the vector's memory came from rmm
    CHECK(filled.current_bytes - start.current_bytes >= static_cast<std::int64_t>(n * sizeof(int)));

    thrust::sort(rmm::exec_policy(stream), values.begin(), values.end());
    const rmm::statistics sorted_counts = stats.counts();
    print_counts("after thrust::sort:", sorted_counts);
    // The sort's temporary storage came from rmm, in the order of `stream`, and went back.
    CHECK(sorted_counts.total_count > filled.total_count);
    CHECK(sorted_counts.peak_bytes > filled.current_bytes);
    CHECK(sorted_counts.current_bytes == filled.current_bytes);

    CHECK(thrust::is_sorted(rmm::exec_policy(stream), values.begin(), values.end()));
    const long long sum = thrust::reduce(rmm::exec_policy(stream), values.begin(), values.end(),
                                         0LL, add_long_long{});
    const rmm::statistics reduced = stats.counts();
    print_counts("after thrust::reduce:", reduced);
    CHECK(sum == expected_sum);
    CHECK(reduced.total_count > sorted_counts.total_count);
    CHECK(reduced.current_bytes == filled.current_bytes);

    std::vector<int> sorted(n);
    CUDA_CHECK(cudaMemcpyAsync(sorted.data(), thrust::raw_pointer_cast(values.data()),
                               n * sizeof(int), cudaMemcpyDeviceToHost, stream.value()));
    stream.synchronize();
    std::sort(host.begin(), host.end());
    CHECK(sorted == host);

    // A copy of the vector keeps rmm's allocator.
    rmm_int_vector copy(values);
    CHECK(copy.get_allocator().stream() == stream);
    CHECK(stats.counts().current_bytes - filled.current_bytes >=
          static_cast<std::int64_t>(n * sizeof(int)));
  }
  const rmm::statistics end = stats.counts();
  print_counts("vectors destroyed:", end);
  CHECK(end.current_bytes == start.current_bytes && end.current_count == start.current_count);
}

// A device_uvector as a Thrust range, and an exec_policy over an explicit resource (not the
// current one): its statistics see the temporary storage, the current resource's do not.
void uvector_and_explicit_resource(rmm::statistics_adaptor &current, rmm::resource_ref pool,
                                   rmm::cuda_stream_view stream) {
  rmm::statistics_adaptor temporaries(pool);
  const std::size_t n = 1 << 22;
  rmm::device_uvector<std::int64_t> v(n, stream);  // from the current resource
  thrust::sequence(rmm::exec_policy(stream), v.begin(), v.end());
  const rmm::statistics before = current.counts();
  thrust::sort(rmm::exec_policy(stream, temporaries), v.begin(), v.end(), descending{});
  const std::int64_t sum = thrust::reduce(rmm::exec_policy(stream, temporaries), v.begin(),
                                          v.end(), std::int64_t{0});
  CHECK(sum == static_cast<std::int64_t>(n) * static_cast<std::int64_t>(n - 1) / 2);
  CHECK(v.front_element(stream) == static_cast<std::int64_t>(n - 1));
  CHECK(v.back_element(stream) == 0);
  const rmm::statistics used = temporaries.counts();
  print_counts("explicit exec_policy resource:", used);
  CHECK(used.total_count >= 2 && used.current_bytes == 0);
  CHECK(current.counts().total_count == before.total_count);

#if THRUST_VERSION >= 101600
  // exec_policy_nosync: the same storage, fewer synchronizations.
  thrust::sort(rmm::exec_policy_nosync(stream, temporaries), v.begin(), v.end());
  stream.synchronize();
  CHECK(v.front_element(stream) == 0);
  CHECK(temporaries.counts().total_count > used.total_count);
  CHECK(temporaries.counts().current_bytes == 0);
#endif

  // A device_vector whose allocator names a resource of its own.
  {
    thrust::device_vector<float, rmm::thrust_allocator<float>> floats(
        1000, 1.5f, rmm::thrust_allocator<float>(stream, temporaries));
    CHECK(floats.get_allocator().resource() == rmm::resource_ref(temporaries));
    CHECK(temporaries.counts().current_bytes == static_cast<std::int64_t>(1000 * sizeof(float)));
    CHECK(thrust::reduce(rmm::exec_policy(stream), floats.begin(), floats.end()) == 1500.0f);
  }
  CHECK(temporaries.counts().current_bytes == 0);
}

}  // namespace

int main() {
  cuda_test_require_gpus(1);
  rmm::cuda_resource cuda;
  rmm::pool_resource pool(cuda, std::size_t{256} << 20);
  rmm::statistics_adaptor stats(pool);
  rmm::cuda_stream stream;
  {
    rmm::current_device_resource_scope scope(stats);
    sort_and_reduce(stats, stream);
    uvector_and_explicit_resource(stats, pool, stream);
  }
  stream.synchronize();
  const rmm::statistics s = stats.counts();
  print_counts("at the end:", s);
  CHECK(s.total_count > 0);
  CHECK(s.current_bytes == 0 && s.current_count == 0);
  return rmm_test_finish("cxx thrust_rmm");
}
