/*
 * rmm/mr/device/fixed_size_memory_resource.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/fixed_size_memory_resource.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_FIXED_SIZE_MEMORY_RESOURCE_HPP
#define RMM_MR_DEVICE_FIXED_SIZE_MEMORY_RESOURCE_HPP

#include "../fixed_size_memory_resource.hpp"

#endif  // RMM_MR_DEVICE_FIXED_SIZE_MEMORY_RESOURCE_HPP
