// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Memory Resources / Available Resources": its C++ tab (line 89), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// ---- BEGIN seed snippet (includes) ----
#include <rmm/mr/device/cuda_memory_resource.hpp>
#include <rmm/mr/device/cuda_async_memory_resource.hpp>
#include <rmm/mr/device/managed_memory_resource.hpp>
#include <rmm/mr/device/pool_memory_resource.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
// CudaMemoryResource - uses cudaMalloc/cudaFree
auto cuda_mr = rmm::mr::cuda_memory_resource{};

// CudaAsyncMemoryResource - uses cudaMallocAsync (recommended)
auto async_mr = rmm::mr::cuda_async_memory_resource{};

// ManagedMemoryResource - uses cudaMallocManaged
auto managed_mr = rmm::mr::managed_memory_resource{};

// PoolMemoryResource - coalescing pool with 1 GiB initial size
rmm::mr::pool_memory_resource pool_mr{cuda_mr, 1ULL << 30};
// ---- END seed snippet (statements) ----
  return 0;
}
