// The two CUDA runtime calls of the guide's "Multi-Device Usage" tab (multi_device_usage.cpp),
// over rmm.h, for its build on simulated devices (no libcudart there): the devices they count
// and make current are rmm-rs's, simulated or real.
#include <cuda_runtime_api.h>

#include "rmm.h"

extern "C" cudaError_t cudaGetDeviceCount(int *count) {
  return rmmGetDeviceCount(count) == RMM_SUCCESS ? cudaSuccess : cudaErrorNoDevice;
}

extern "C" cudaError_t cudaSetDevice(int device) {
  return rmmSetDevice(device) == RMM_SUCCESS ? cudaSuccess : cudaErrorInvalidDevice;
}
