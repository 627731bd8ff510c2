/*
 * rmm/exec_policy.hpp: RAPIDS RMM's rmm::exec_policy, the Thrust execution policy that runs on
 * a stream and takes temporary storage from a device resource:
 * `thrust::sort(rmm::exec_policy(stream), v.begin(), v.end())`. Needs nvcc.
 */
#ifndef RMM_EXEC_POLICY_HPP
#define RMM_EXEC_POLICY_HPP

#ifdef RMM_HPP
#error "rmm.hpp and the RAPIDS-shaped <rmm/exec_policy.hpp> both define rmm::exec_policy: include one of them"
#endif

#include "mr/thrust_allocator_adaptor.hpp"

#include <thrust/system/cuda/execution_policy.h>
#include <thrust/version.h>

namespace rmm {

using thrust_exec_policy_t =
    thrust::detail::execute_with_allocator<mr::thrust_allocator<char>, thrust::cuda_cub::execute_on_stream_base>;

class exec_policy : public thrust_exec_policy_t {
 public:
  explicit exec_policy(cuda_stream_view stream = cuda_stream_default,
                       cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : thrust_exec_policy_t(thrust::cuda::par(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.value())) {}
};

using thrust_exec_policy_nosync_t =
    thrust::detail::execute_with_allocator<mr::thrust_allocator<char>, thrust::cuda_cub::execute_on_stream_nosync_base>;

/// exec_policy that lets Thrust skip the stream synchronizations correctness does not need.
class exec_policy_nosync : public thrust_exec_policy_nosync_t {
 public:
  explicit exec_policy_nosync(cuda_stream_view stream = cuda_stream_default,
                              cuda::mr::any_resource<cuda::mr::device_accessible> mr = mr::get_current_device_resource_ref())
      : thrust_exec_policy_nosync_t(
            thrust::cuda::par_nosync(mr::thrust_allocator<char>(stream, std::move(mr))).on(stream.value())) {}
};

}  // namespace rmm

#endif  // RMM_EXEC_POLICY_HPP
