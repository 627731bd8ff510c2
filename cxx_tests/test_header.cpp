// rmm.hpp compiles alone, twice, before and after rmm.h, without a warning (-Wall -Wextra
// -Wpedantic -Werror, C++17 and C++20), leaves the Thrust parts out without a CUDA compiler,
// and its classes have the shapes RMM users rely on. Built twice (cxx.header_cxx17 and
// cxx.header_cxx20); it also runs a short program over the current device's resource.
#include "rmm.hpp"
#include "rmm.hpp"
#include "rmm.h"

#include <cstdio>
#include <type_traits>

#if RMM_HPP_THRUST
#error "the Thrust parts must be left out for a plain C++ compiler"
#endif

static_assert(std::is_base_of<rmm::resource, rmm::pool_resource>::value, "kinds are resources");
static_assert(std::is_base_of<rmm::resource, rmm::failure_callback_adaptor>::value, "");
static_assert(std::is_convertible<const rmm::statistics_adaptor &, rmm::resource_ref>::value,
              "a resource converts to a reference");
static_assert(std::is_convertible<rmmResource_t, rmm::resource_ref>::value, "C handles too");
static_assert(!std::is_convertible<rmmResource_t, rmm::resource>::value, "adoption is explicit");
static_assert(std::is_convertible<cudaStream_t, rmm::cuda_stream_view>::value, "");
static_assert(std::is_convertible<rmm::cuda_stream_view, cudaStream_t>::value, "");
static_assert(std::is_same<rmm::device_uvector<int>::iterator, int *>::value, "");
static_assert(std::is_same<decltype(std::declval<rmm::device_scalar<float> &>().data()), float *>::value,
              "");
static_assert(std::is_nothrow_default_constructible<rmm::device_buffer>::value, "");

int main() {
  // A short program: a buffer from the current device's resource, a round trip.
  rmm::cuda_stream stream;
  const int values[4] = {1, 2, 3, 4};
  rmm::device_uvector<int> v = rmm::make_device_uvector(values, 4, stream);
  v.set_element(3, 40, stream);
  const std::vector<int> back = rmm::make_host_vector(v, stream);
  if (back.size() != 4 || back[0] != 1 || back[3] != 40) return 1;
  std::printf("PASS: rmm.hpp from C++%ld\n", static_cast<long>(__cplusplus / 100 % 100));
  return 0;
}
