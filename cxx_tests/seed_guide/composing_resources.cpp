// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Resource Adaptors / Composing Resources": its C++ tab (line 335), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper adds what the fragment leaves to its surroundings (RAPIDS RMM brings
// none of these transitively either):
#include <rmm/mr/device/cuda_async_memory_resource.hpp>
#include <rmm/mr/device/pool_memory_resource.hpp>
#include <rmm/mr/device/statistics_resource_adaptor.hpp>
#include <rmm/mr/device/logging_resource_adaptor.hpp>
#include <rmm/mr/per_device_resource.hpp>
// ---- BEGIN seed snippet (includes) ----
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
// Base resource
rmm::mr::cuda_async_memory_resource cuda_mr;

// Add pool
rmm::mr::pool_memory_resource pool_mr{cuda_mr, 1ULL << 30};

// Add statistics
rmm::mr::statistics_resource_adaptor stats_mr{pool_mr};

// Add logging
rmm::mr::logging_resource_adaptor log_mr{stats_mr, "log.csv"};

// Set as current
rmm::mr::set_current_device_resource_ref(log_mr);
// ---- END seed snippet (statements) ----
  return 0;
}
