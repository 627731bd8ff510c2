/*
 * rmm/mr/device/polymorphic_allocator.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/polymorphic_allocator.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_POLYMORPHIC_ALLOCATOR_HPP
#define RMM_MR_DEVICE_POLYMORPHIC_ALLOCATOR_HPP

#include "../polymorphic_allocator.hpp"

#endif  // RMM_MR_DEVICE_POLYMORPHIC_ALLOCATOR_HPP
