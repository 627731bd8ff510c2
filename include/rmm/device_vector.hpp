/*
 * rmm/device_vector.hpp: RAPIDS RMM's rmm::device_vector<T>, a thrust::device_vector on
 * rmm::mr::thrust_allocator. Needs Thrust.
 */
#ifndef RMM_DEVICE_VECTOR_HPP
#define RMM_DEVICE_VECTOR_HPP

#include "mr/thrust_allocator_adaptor.hpp"

#include <thrust/device_vector.h>

namespace rmm {

template <typename T>
using device_vector = thrust::device_vector<T, rmm::mr::thrust_allocator<T>>;

}  // namespace rmm

#endif  // RMM_DEVICE_VECTOR_HPP
