// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Resource Adaptors / Statistics Tracking": its C++ tab (line 262), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper adds what the fragment leaves to its surroundings (RAPIDS RMM brings
// none of these transitively either):
#include <rmm/device_buffer.hpp>
#include <iostream>
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/device/statistics_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
rmm::mr::cuda_async_memory_resource cuda_mr;
rmm::mr::statistics_resource_adaptor stats_mr{cuda_mr};
rmm::mr::set_current_device_resource_ref(stats_mr);

// Allocate
rmm::cuda_stream stream;
rmm::device_buffer buffer(1024, stream.view());

// Get statistics
auto bytes = stats_mr.get_bytes_counter();
std::cout << "Current bytes: " << bytes.value << "\n";
std::cout << "Peak bytes: " << bytes.peak << "\n";
std::cout << "Total bytes: " << bytes.total << "\n";
// ---- END seed snippet (statements) ----
  return 0;
}
