/*
 * rmm/mr/device/thrust_allocator_adaptor.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/thrust_allocator_adaptor.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_THRUST_ALLOCATOR_ADAPTOR_HPP
#define RMM_MR_DEVICE_THRUST_ALLOCATOR_ADAPTOR_HPP

#include "../thrust_allocator_adaptor.hpp"

#endif  // RMM_MR_DEVICE_THRUST_ALLOCATOR_ADAPTOR_HPP
