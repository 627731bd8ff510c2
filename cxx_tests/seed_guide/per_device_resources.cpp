// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Memory Resources / Per-Device Resources": its C++ tab (line 134), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper uses what the fragment only shows (-Werror=unused-variable).
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/cuda_device.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
// Get per-device resource ref
rmm::device_async_resource_ref mr0 = rmm::mr::get_per_device_resource_ref(rmm::cuda_device_id{0});

// Set per-device resource ref
rmm::mr::cuda_async_memory_resource async_mr;
rmm::mr::set_per_device_resource_ref(rmm::cuda_device_id{0}, async_mr);
// ---- END seed snippet (statements) ----
  (void)mr0;
  return 0;
}
