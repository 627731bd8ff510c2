// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Memory Resources / Setting the Current Resource": its C++ tab (line 51), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper uses what the fragment only shows (-Werror=unused-variable).
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/device/cuda_async_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
// Get current device resource ref
rmm::device_async_resource_ref mr = rmm::mr::get_current_device_resource_ref();

// Set current device resource ref
rmm::mr::cuda_async_memory_resource async_mr;
rmm::mr::set_current_device_resource_ref(async_mr);
// ---- END seed snippet (statements) ----
  (void)mr;
  return 0;
}
