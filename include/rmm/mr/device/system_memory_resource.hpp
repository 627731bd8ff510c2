/*
 * rmm/mr/device/system_memory_resource.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/system_memory_resource.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_SYSTEM_MEMORY_RESOURCE_HPP
#define RMM_MR_DEVICE_SYSTEM_MEMORY_RESOURCE_HPP

#include "../system_memory_resource.hpp"

#endif  // RMM_MR_DEVICE_SYSTEM_MEMORY_RESOURCE_HPP
