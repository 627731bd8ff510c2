// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Multi-Device Usage": its C++ tab (line 462), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main(). It calls the CUDA runtime
// (cudaGetDeviceCount, cudaSetDevice): linked to libcudart with the CUDA tests, and to
// sim_cuda_runtime.cpp (those two over rmm.h) on simulated devices.
// The wrapper adds what the fragment leaves to its surroundings (RAPIDS RMM brings
// none of these transitively either):
#include <rmm/device_buffer.hpp>
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/device/cuda_async_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/cuda_device.hpp>
#include <memory>
#include <vector>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
int num_devices;
cudaGetDeviceCount(&num_devices);

// Store resources to maintain lifetime
std::vector<std::unique_ptr<rmm::mr::cuda_async_memory_resource>> resources;

for (int i = 0; i < num_devices; ++i) {
    // Set device BEFORE creating resource
    cudaSetDevice(i);

    // Create resource for this device
    resources.push_back(std::make_unique<rmm::mr::cuda_async_memory_resource>());

    // Set as per-device resource ref
    rmm::mr::set_per_device_resource_ref(rmm::cuda_device_id{i}, *resources.back());
}

// Use device 0
cudaSetDevice(0);
rmm::cuda_stream stream;
rmm::device_buffer buffer(1024, stream.view());  // Uses device 0's resource
// ---- END seed snippet (statements) ----
  return 0;
}
