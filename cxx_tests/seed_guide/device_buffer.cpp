// From the seed programming guide (shared/seeds/003_0f306e1fe9c1a347.txt), section
// "Containers / DeviceBuffer": its C++ tab (line 166), verbatim between the BEGIN/END marks.
// A fragment: its includes at file scope, its statements in main().
// The wrapper uses what the fragment only shows (-Werror=unused-variable).
// ---- BEGIN seed snippet (includes) ----
#include <rmm/device_buffer.hpp>
// ---- END seed snippet (includes) ----

int main() {
// ---- BEGIN seed snippet (statements) ----
rmm::cuda_stream stream;

// Allocate 1024 bytes
rmm::device_buffer buffer(1024, stream.view());

// Access pointer and size
void* ptr = buffer.data();
std::size_t size = buffer.size();

// Resize (may reallocate)
buffer.resize(2048, stream.view());

// Copy construct (deep copy)
rmm::device_buffer buffer2(buffer, stream.view());
// ---- END seed snippet (statements) ----
  (void)ptr;
  (void)size;
  return 0;
}
