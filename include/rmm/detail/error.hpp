/*
 * rmm/detail/error.hpp: where RAPIDS RMM code finds RMM_EXPECTS, RMM_FAIL, RMM_CUDA_TRY and the
 * exceptions; they live in <rmm/error.hpp>.
 */
#ifndef RMM_DETAIL_ERROR_HPP
#define RMM_DETAIL_ERROR_HPP

#include "../error.hpp"

#endif  // RMM_DETAIL_ERROR_HPP
