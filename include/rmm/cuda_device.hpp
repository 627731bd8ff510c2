/*
 * rmm/cuda_device.hpp: devices with RAPIDS RMM's names, over rmm-rs's device calls (which the
 * simulated devices answer too).
 */
#ifndef RMM_CUDA_DEVICE_HPP
#define RMM_CUDA_DEVICE_HPP

#include "aligned.hpp"
#include "error.hpp"

#include <cstddef>
#include <utility>

namespace rmm {

/// A device ordinal, as RAPIDS RMM types it.
struct cuda_device_id {
  using value_type = int;
  cuda_device_id() noexcept = default;
  explicit constexpr cuda_device_id(value_type id) noexcept : id_(id) {}
  constexpr value_type value() const noexcept { return id_; }
  friend constexpr bool operator==(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ == b.id_; }
  friend constexpr bool operator!=(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ != b.id_; }
  friend constexpr bool operator<(cuda_device_id a, cuda_device_id b) noexcept { return a.id_ < b.id_; }

 private:
  value_type id_{0};
};

/// The calling thread's current device.
inline cuda_device_id get_current_cuda_device() {
  int device = 0;
  check(rmmGetDevice(&device), "rmmGetDevice");
  return cuda_device_id{device};
}

/// The number of devices.
inline int get_num_cuda_devices() {
  int count = 0;
  check(rmmGetDeviceCount(&count), "rmmGetDeviceCount");
  return count;
}

/// Makes a device current for its lifetime and restores the previous one after.
struct cuda_set_device_raii {
  explicit cuda_set_device_raii(cuda_device_id device)
      : old_(get_current_cuda_device()), needs_reset_(device.value() >= 0 && old_ != device) {
    if (needs_reset_) check(rmmSetDevice(device.value()), "rmmSetDevice");
  }
  ~cuda_set_device_raii() noexcept {
    if (needs_reset_) (void)rmmSetDevice(old_.value());
  }
  cuda_set_device_raii(cuda_set_device_raii const &) = delete;
  cuda_set_device_raii &operator=(cuda_set_device_raii const &) = delete;

 private:
  cuda_device_id old_;
  bool needs_reset_;
};

#if defined(__CUDA_RUNTIME_API_H__)
/// The free and total bytes of the current device (cudaMemGetInfo).
inline std::pair<std::size_t, std::size_t> available_device_memory() {
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    throw cuda_error("cudaMemGetInfo failed");
  }
  return {free_bytes, total_bytes};
}

/// `percent` of the current device's free memory, rounded down to a multiple of 256 bytes.
inline std::size_t percent_of_free_device_memory(int percent) {
  auto const free_bytes = available_device_memory().first;
  return align_down(static_cast<std::size_t>(static_cast<double>(free_bytes) * percent / 100.0),
                    CUDA_ALLOCATION_ALIGNMENT);
}
#endif

}  // namespace rmm

#endif  // RMM_CUDA_DEVICE_HPP
