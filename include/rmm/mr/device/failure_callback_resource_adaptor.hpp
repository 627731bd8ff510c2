/*
 * rmm/mr/device/failure_callback_resource_adaptor.hpp: where RAPIDS RMM 24.x-25.x kept <rmm/mr/failure_callback_resource_adaptor.hpp>; forwards there, so
 * code written for those releases builds unchanged.
 */
#ifndef RMM_MR_DEVICE_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP
#define RMM_MR_DEVICE_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP

#include "../failure_callback_resource_adaptor.hpp"

#endif  // RMM_MR_DEVICE_FAILURE_CALLBACK_RESOURCE_ADAPTOR_HPP
