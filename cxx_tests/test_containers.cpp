// rmm.hpp containers: device_buffer (host round trips, resize, reserve, shrink, deep copies,
// moves, adopt/release), device_uvector<T> (elements, resize, copies, release) and
// device_scalar<T>. Everything is allocated through statistics adaptors, which must count
// every byte back at the end. Contents are checked through copies to the host, so this runs
// on a GPU as well.
#include "cxx_test.hpp"

#include <cstdint>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> bytes(n);
  for (std::size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(i * 31u + seed);
  return bytes;
}

std::vector<unsigned char> to_host(const rmm::device_buffer &buffer, rmm::cuda_stream_view stream) {
  std::vector<unsigned char> bytes(buffer.size());
  buffer.copy_to_host(bytes.data(), bytes.size(), stream);
  return bytes;
}

bool same_prefix(const std::vector<unsigned char> &a, const std::vector<unsigned char> &b,
                 std::size_t n) {
  return a.size() >= n && b.size() >= n && std::equal(a.begin(), a.begin() + n, b.begin());
}

void check_device_buffer(rmm::statistics_adaptor &stats, rmm::resource_ref other,
                         rmm::cuda_stream_view stream) {
  static_assert(!std::is_copy_constructible<rmm::device_buffer>::value, "no implicit copies");
  static_assert(std::is_nothrow_move_constructible<rmm::device_buffer>::value, "");
  static_assert(std::is_nothrow_move_assignable<rmm::device_buffer>::value, "");

  const std::vector<unsigned char> host = pattern(10000, 7);
  {
    // From host bytes, and back.
    rmm::device_buffer a(host.data(), host.size(), stream, stats);
    CHECK(a.size() == host.size() && a.capacity() == host.size() && !a.is_empty());
    CHECK(a.data() != nullptr && rmm_test_aligned(a.data(), 256));
    CHECK(a.stream() == stream);
    CHECK(to_host(a, stream) == host);
    CHECK(stats.counts().current_bytes == 10000);
    std::vector<unsigned char> small(10);
    EXPECT_THROW_CODE(a.copy_to_host(small.data(), small.size(), stream), rmm::error,
                      RMM_ERROR_INVALID_ARGUMENT);

    // Shrinking the size keeps the memory; shrink_to_fit gives it back; growing keeps the
    // contents.
    void *before = a.data();
    a.resize(1000, stream);
    CHECK(a.size() == 1000 && a.capacity() == 10000 && a.data() == before);
    a.shrink_to_fit(stream);
    CHECK(a.size() == 1000 && a.capacity() == 1000);
    CHECK(stats.counts().current_bytes == 1000);
    a.resize(5000, stream);
    CHECK(a.size() == 5000 && a.capacity() == 5000);
    CHECK(same_prefix(to_host(a, stream), host, 1000));
    a.reserve(8000, stream);
    CHECK(a.size() == 5000 && a.capacity() == 8000);
    CHECK(same_prefix(to_host(a, stream), host, 1000));
    a.reserve(100, stream);  // never shrinks
    CHECK(a.capacity() == 8000);

    // Deep copies: into another resource, and into the source's own (empty mr).
    rmm::device_buffer b(a, stream, other);
    CHECK(b.size() == 5000 && b.data() != a.data());
    CHECK(same_prefix(to_host(b, stream), host, 1000));
    const std::int64_t with_b = stats.counts().current_bytes;
    rmm::device_buffer c(a, stream);
    CHECK(stats.counts().current_bytes == with_b + 5000);
    CHECK(same_prefix(to_host(c, stream), host, 1000));

    // Moves leave the source empty and usable.
    void *moved_data = c.data();
    rmm::device_buffer d(std::move(c));
    CHECK(d.data() == moved_data && d.size() == 5000);
    CHECK(c.is_empty() && c.data() == nullptr && c.capacity() == 0 && c.get() == nullptr);
    CHECK(c.stream() == stream);
    c = std::move(b);  // into a moved-from buffer
    CHECK(c.size() == 5000 && b.is_empty());
    d = std::move(c);  // d's memory is freed
    CHECK(stats.counts().current_bytes == with_b);
    c.resize(300, stream);  // a moved-from buffer allocates again (current device resource)
    CHECK(c.size() == 300 && c.data() != nullptr);
    c.set_stream(rmm::cuda_stream_default);
    CHECK(c.stream() == rmm::cuda_stream_default);

    // Default-constructed: empty, no memory, usable.
    rmm::device_buffer e;
    CHECK(e.is_empty() && e.data() == nullptr && e.get() == nullptr);
    e.shrink_to_fit(stream);
    e.copy_to_host(nullptr, 0, stream);
    e.reserve(512, stream);
    CHECK(e.size() == 0 && e.capacity() == 512);
    rmm::device_buffer f(e, stream);
    CHECK(f.is_empty());
    rmm::device_buffer g(rmm::device_buffer{}, stream);  // a copy of nothing
    CHECK(g.is_empty());

    // Zero bytes: no memory.
    rmm::device_buffer zero(0, stream, stats);
    CHECK(zero.is_empty() && zero.data() == nullptr);
    rmm::device_buffer zero_host(nullptr, 0, stream, stats);
    CHECK(zero_host.is_empty());

    // Handing the C handle out and back.
    rmmDeviceBuffer_t raw = d.release();
    CHECK(raw != nullptr && d.get() == nullptr && d.is_empty());
    std::size_t size = 0;
    CHECK_OK(rmmDeviceBufferSize(raw, &size, nullptr));
    CHECK(size == 5000);
    rmm::device_buffer adopted = rmm::device_buffer::adopt(raw, stream);
    CHECK(adopted.size() == 5000 && adopted.get() == raw && adopted.stream() == stream);
    EXPECT_THROW_CODE(rmm::device_buffer::adopt(reinterpret_cast<rmmDeviceBuffer_t>(std::uintptr_t{0x999}), stream),
                      rmm::error, RMM_ERROR_INVALID_HANDLE);
  }
  CHECK(stats.counts().current_bytes == 0);

  // Out of memory: rmm::out_of_memory from constructors and resize; nothing changes.
  {
    rmm::limiting_adaptor limited(stats, 16 * KiB);
    EXPECT_THROW_CODE(rmm::device_buffer(64 * KiB, stream, limited), rmm::out_of_memory,
                      RMM_ERROR_OUT_OF_MEMORY);
    rmm::device_buffer a(host.data(), 4000, stream, limited);
    EXPECT_THROW(a.resize(32 * KiB, stream), std::bad_alloc);
    CHECK(a.size() == 4000 && a.capacity() == 4000);
    CHECK(same_prefix(to_host(a, stream), host, 4000));
    EXPECT_THROW(rmm::device_buffer(a, stream, limited).resize(20 * KiB, stream), rmm::bad_alloc);
    EXPECT_THROW(a.reserve(20 * KiB, stream), rmm::out_of_memory);
    CHECK(a.capacity() == 4000);
    EXPECT_THROW(rmm::device_buffer(std::size_t{1} << 60, stream, stats), rmm::out_of_memory);
  }
  CHECK(stats.counts().current_bytes == 0);
}

struct point {
  float x;
  float y;
  std::int32_t id;
};

void check_device_uvector(rmm::statistics_adaptor &stats, rmm::cuda_stream_view stream) {
  static_assert(!std::is_copy_constructible<rmm::device_uvector<int>>::value, "");
  static_assert(std::is_nothrow_move_constructible<rmm::device_uvector<int>>::value, "");
  {
    std::vector<int> host(1000);
    std::iota(host.begin(), host.end(), 0);
    rmm::device_uvector<int> v = rmm::make_device_uvector(host, stream, stats);
    CHECK(v.size() == 1000 && v.ssize() == 1000 && v.capacity() == 1000 && !v.is_empty());
    CHECK(stats.counts().current_bytes == 4000);
    CHECK(v.end() - v.begin() == 1000 && v.cend() - v.cbegin() == 1000);
    CHECK(v.element_ptr(10) == v.data() + 10);
    CHECK(v.element(10, stream) == 10);
    CHECK(v.front_element(stream) == 0 && v.back_element(stream) == 999);
    v.set_element(10, -5, stream);
    const int value = 77;
    v.set_element_async(11, value, stream);
    CHECK(v.element(10, stream) == -5 && v.element(11, stream) == 77);
    EXPECT_THROW(v.element(1000, stream), rmm::out_of_range);
    EXPECT_THROW(v.set_element(1000, 1, stream), std::out_of_range);

    // Resize keeps the first elements; reserve and shrink_to_fit.
    v.resize(2000, stream);
    CHECK(v.size() == 2000 && v.capacity() == 2000);
    std::vector<int> back = rmm::make_host_vector(v, stream);
    CHECK(back.size() == 2000 && back[999] == 999 && back[10] == -5);
    v.resize(10, stream);
    CHECK(v.size() == 10 && v.capacity() == 2000);
    v.shrink_to_fit(stream);
    CHECK(v.capacity() == 10 && v.back_element(stream) == 9);
    v.reserve(100, stream);
    CHECK(v.size() == 10 && v.capacity() == 100 && v.element(9, stream) == 9);

    // Copies and moves.
    rmm::device_uvector<int> w(v, stream);
    CHECK(w.size() == 10 && w.data() != v.data() && w.element(0, stream) == 0);
    rmm::device_uvector<int> moved(std::move(w));
    CHECK(w.is_empty() && w.data() == nullptr && moved.size() == 10);
    w = std::move(moved);
    CHECK(w.size() == 10 && moved.is_empty());
    moved.resize(3, stream);
    moved.set_element(2, 42, stream);
    CHECK(moved.element(2, stream) == 42);

    // release() hands the memory over as a device_buffer.
    void *data = v.data();
    rmm::device_buffer buffer = v.release();
    CHECK(v.is_empty() && buffer.data() == data && buffer.size() == 10 * sizeof(int));

    // An empty vector.
    rmm::device_uvector<int> empty(0, stream, stats);
    CHECK(empty.is_empty() && empty.begin() == empty.end());
    EXPECT_THROW(empty.front_element(stream), rmm::out_of_range);
    EXPECT_THROW(empty.back_element(stream), rmm::out_of_range);
    CHECK(rmm::make_host_vector(empty, stream).empty());
  }
  CHECK(stats.counts().current_bytes == 0);
  {
    // A struct element type, on the current device's resource (stats is current here).
    rmm::device_uvector<point> points(3, stream);
    points.set_element(1, point{1.5f, -2.0f, 7}, stream);
    const point p = points.element(1, stream);
    CHECK(p.x == 1.5f && p.y == -2.0f && p.id == 7);
    CHECK(stats.counts().current_bytes == static_cast<std::int64_t>(3 * sizeof(point)));
    // Sizes that overflow size_t are out of memory, before any allocation.
    EXPECT_THROW(points.resize(~std::size_t{0} / 2, stream), rmm::out_of_memory);
    EXPECT_THROW(rmm::device_uvector<double>(~std::size_t{0} / 4, stream), std::bad_alloc);
  }
  CHECK(stats.counts().current_bytes == 0);
}

void check_device_scalar(rmm::statistics_adaptor &stats, rmm::cuda_stream_view stream) {
  {
    rmm::device_scalar<double> s(2.5, stream, stats);
    CHECK(s.value(stream) == 2.5 && s.size() == 1 && s.data() != nullptr);
    s.set_value(-1.25, stream);
    CHECK(s.value(stream) == -1.25);
    const double v = 9.0;
    s.set_value_async(v, stream);
    stream.synchronize();
    CHECK(s.value(stream) == 9.0);
    rmm::device_scalar<double> copy(s, stream);
    CHECK(copy.value(stream) == 9.0 && copy.data() != s.data());
    rmm::device_scalar<double> moved(std::move(copy));
    CHECK(moved.value(stream) == 9.0);
    rmm::device_scalar<std::int64_t> uninitialized(stream, stats);
    uninitialized.set_value(std::int64_t{1} << 40, stream);
    CHECK(uninitialized.value(stream) == std::int64_t{1} << 40);
    CHECK(stats.counts().current_count == 3);
    uninitialized.set_stream(rmm::cuda_stream_default);
    CHECK(uninitialized.stream() == rmm::cuda_stream_default);
  }
  CHECK(stats.counts().current_bytes == 0);
}

}  // namespace

int main() {
  rmm::cuda_resource cuda;
  rmm::pool_resource pool(cuda, std::size_t{4} << 20);
  rmm::statistics_adaptor stats(pool);
  rmm::statistics_adaptor other(cuda);
  rmm::cuda_stream stream;
  {
    // The current device's resource counts too: containers without an mr use it.
    rmm::current_device_resource_scope scope(stats);
    check_device_buffer(stats, other, stream);
    check_device_uvector(stats, stream);
    check_device_scalar(stats, stream);
    check_device_buffer(stats, other, rmm::cuda_stream_default);
  }
  stream.synchronize();
  const rmm::statistics s = stats.counts();
  CHECK(s.current_bytes == 0 && s.current_count == 0 && s.total_count > 20);
  CHECK(other.counts().current_bytes == 0 && other.counts().total_count == 2);
  return rmm_test_finish("cxx containers");
}
