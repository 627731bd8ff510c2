/*
 * rmm/rmm_api.h: legacy RMM's header of the C API declarations. rmm-rs declares them all in
 * rmm.h; this path keeps legacy includes compiling and means the same as <rmm/rmm.h>.
 */
#ifndef RMM_LEGACY_RMM_API_H
#define RMM_LEGACY_RMM_API_H

#include "rmm.h"

#endif /* RMM_LEGACY_RMM_API_H */
