/*
 * rmm/detail/exec_check_disable.hpp: RAPIDS RMM's RMM_EXEC_CHECK_DISABLE. Before a function
 * that Thrust may call from __host__ __device__ code (an allocator's constructors), it stops
 * nvcc from warning (#20011-D) that the function calls host-only code: it only ever runs on
 * the host. Empty for a host compiler.
 */
#ifndef RMM_DETAIL_EXEC_CHECK_DISABLE_HPP
#define RMM_DETAIL_EXEC_CHECK_DISABLE_HPP

#ifdef __CUDACC__
#define RMM_EXEC_CHECK_DISABLE _Pragma("nv_exec_check_disable")
/// For a host function that CCCL's __host__ __device__ templates call (with RMM_EXEC_CHECK_DISABLE).
#define RMM_DETAIL_HOST_DEVICE __host__ __device__
#else
#define RMM_EXEC_CHECK_DISABLE
#define RMM_DETAIL_HOST_DEVICE
#endif

#endif  // RMM_DETAIL_EXEC_CHECK_DISABLE_HPP
