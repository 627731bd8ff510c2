/*
 * rmm/mr/device/thread_safe_resource_adaptor.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/thread_safe_resource_adaptor.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_THREAD_SAFE_RESOURCE_ADAPTOR_HPP
#define RMM_MR_DEVICE_THREAD_SAFE_RESOURCE_ADAPTOR_HPP

#include "../thread_safe_resource_adaptor.hpp"

#endif  // RMM_MR_DEVICE_THREAD_SAFE_RESOURCE_ADAPTOR_HPP
