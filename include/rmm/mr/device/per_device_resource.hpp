/*
 * rmm/mr/device/per_device_resource.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/per_device_resource.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_PER_DEVICE_RESOURCE_HPP
#define RMM_MR_DEVICE_PER_DEVICE_RESOURCE_HPP

#include "../per_device_resource.hpp"

#endif  // RMM_MR_DEVICE_PER_DEVICE_RESOURCE_HPP
