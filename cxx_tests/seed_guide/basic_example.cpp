// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Basic Example": its C++ tab (line 8), verbatim between the BEGIN/END marks.
// A whole program: built as it is.
// ---- BEGIN seed snippet ----
#include <rmm/mr/device/cuda_async_memory_resource.hpp>
#include <rmm/mr/per_device_resource.hpp>
#include <rmm/device_buffer.hpp>
#include <iostream>

int main() {
    // Use async MR (recommended)
    rmm::mr::cuda_async_memory_resource async_mr;
    rmm::mr::set_current_device_resource_ref(async_mr);

    // Allocate device memory
    rmm::cuda_stream stream;
    rmm::device_buffer buffer(1024, stream.view());

    std::cout << "Allocated " << buffer.size() << " bytes\n";

    return 0;
}
// ---- END seed snippet ----
