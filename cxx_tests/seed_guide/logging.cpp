// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Resource Adaptors / Logging": its C++ tab (line 302), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper adds what the fragment leaves to its surroundings (RAPIDS RMM brings
// none of these transitively either):
#include <rmm/device_buffer.hpp>
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/device/logging_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
rmm::mr::cuda_async_memory_resource cuda_mr;
rmm::mr::logging_resource_adaptor log_mr{cuda_mr, "allocations.csv"};
rmm::mr::set_current_device_resource_ref(log_mr);

// All allocations logged to CSV
rmm::device_buffer buffer(1024, rmm::cuda_stream_default);
// ---- END seed snippet (statements) ----
  return 0;
}
