// Two GPUs: memory of device 0's expandable resource used from device 1 as cudaMalloc memory
// with peer access is (a model split over two GPUs): copied to and from device 1
// (cudaMemcpyPeer), read and written by kernels on device 1 after cudaDeviceEnablePeerAccess,
// the bytes checked on the host. Then the cost of access: the same map-heavy loop (every
// allocation maps pages, every free unmaps them) on a resource made while one device is
// visible and one made while two are, with the snapshot's cuMemSetAccess count and time.
// Exits 77 (skipped) with fewer than 2 GPUs; `cuda_peer_access --cost` prints the cost alone,
// with however many GPUs are visible (scripts/gpu-multi-gpu.sh runs it with 1 and with 2).
#include "cuda_test.cuh"

#include <algorithm>
#include <chrono>
#include <string>

static std::string snapshot_of(rmmResource_t resource) {
  size_t length = 0;
  CHECK_OK(rmmResourceGetSnapshot(resource, nullptr, 0, &length));
  std::string text(length + 1, '\0');
  CHECK_OK(rmmResourceGetSnapshot(resource, &text[0], text.size(), nullptr));
  text.resize(length);
  return text;
}

// The devices with access to the expandable resource's mappings, as the snapshot lists them.
static std::string access_list(const std::string &snapshot) {
  const size_t at = snapshot.find("\"access\"");
  if (at == std::string::npos) return "?";
  const size_t open = snapshot.find('[', at), close = snapshot.find(']', at);
  return snapshot.substr(open, close - open + 1);
}

// The number after `"key":` in the snapshot's first `activity` object (both parts together).
static double activity_figure(const std::string &snapshot, const char *key) {
  const size_t activity = snapshot.find("\"activity\"");
  CHECK(activity != std::string::npos);
  const std::string quoted = std::string("\"") + key + "\":";
  const size_t at = snapshot.find(quoted, activity);
  CHECK(at != std::string::npos);
  return std::strtod(snapshot.c_str() + at + quoted.size(), nullptr);
}

// Allocations that each map pages and frees that each unmap them (release_free_pages with a
// threshold of 0), `rounds` times: prints what access cost.
static void measure_access_cost(int rounds) {
  int visible = 0;
  CUDA_CHECK(cudaGetDeviceCount(&visible));
  CUDA_CHECK(cudaSetDevice(0));
  rmmExpandableOptions_t options;
  std::memset(&options, 0, sizeof options);
  options.release_free_pages = 1;
  options.release_threshold = 0;
  options.page_size = size_t(20) << 20;
  rmmResource_t resource = nullptr;
  CHECK_OK(rmmExpandableResourceCreateWithOptions(&resource, &options));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  const size_t bytes = size_t(64) << 20;
  const auto start = std::chrono::steady_clock::now();
  for (int round = 0; round < rounds; ++round) {
    void *ptr = nullptr;
    CHECK_OK(rmmResourceAllocate(resource, &ptr, bytes, stream));
    CUDA_CHECK(cudaMemsetAsync(ptr, round & 0xFF, bytes, stream));
    CHECK_OK(rmmResourceDeallocate(resource, ptr, bytes, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string snapshot = snapshot_of(resource);
  std::printf("access cost, %d visible GPU(s): access for devices %s; %d rounds of 64 MiB in "
              "%.3f s; maps %.0f, cuMemSetAccess calls %.0f taking %.3f ms (%.1f us each), all "
              "page calls %.3f ms\n",
              visible, access_list(snapshot).c_str(), rounds, seconds, activity_figure(snapshot, "maps"), activity_figure(snapshot, "set_access_calls"),
              activity_figure(snapshot, "set_access_ms"),
              1000.0 * activity_figure(snapshot, "set_access_ms") / std::max(1.0, activity_figure(snapshot, "set_access_calls")),
              activity_figure(snapshot, "device_call_ms"));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CHECK_OK(rmmResourceDestroy(resource));
}

// A kernel on the current device that copies `words` words from `src` to `dst`.
__global__ void copy_kernel(unsigned *dst, const unsigned *src, size_t words) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && std::strcmp(argv[1], "--cost") == 0) {
    measure_access_cost(argc > 2 ? std::atoi(argv[2]) : 200);
    return 0;
  }
  cuda_test_require_gpus(2);
  CHECK(!rmm_test_simulated());
  int reaches = 0;
  CUDA_CHECK(cudaDeviceCanAccessPeer(&reaches, 1, 0));
  std::printf("device 1 %s device 0's memory\n", reaches ? "can reach" : "cannot reach");

  const size_t bytes = size_t(96) << 20, small = 4096;
  CUDA_CHECK(cudaSetDevice(0));
  rmmResource_t expandable = nullptr;
  CHECK_OK(rmmExpandableResourceCreate(&expandable, 0));
  void *large_block = nullptr, *small_block = nullptr;
  CHECK_OK(rmmResourceAllocate(expandable, &large_block, bytes, nullptr));
  CHECK_OK(rmmResourceAllocate(expandable, &small_block, small, nullptr));
  gpu_fill(large_block, bytes, 11, nullptr);
  gpu_fill(small_block, small, 12, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::printf("device 0's expandable resource gives access to devices %s\n",
              access_list(snapshot_of(expandable)).c_str());

  // Device 1's own memory, the other end of every copy.
  CUDA_CHECK(cudaSetDevice(1));
  void *on_device_1 = nullptr;
  CUDA_CHECK(cudaMalloc(&on_device_1, bytes));
  cudaStream_t stream1 = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream1));

  // cudaMemcpyPeer both ways (the driver stages the copy through the host where the devices
  // do not reach each other).
  CUDA_CHECK(cudaMemcpyPeer(on_device_1, 1, large_block, 0, bytes));
  CHECK(gpu_mismatches(on_device_1, bytes, 11, stream1) == 0);
  CUDA_CHECK(cudaMemcpyPeerAsync(on_device_1, 1, small_block, 0, small, stream1));
  CHECK(gpu_mismatches(on_device_1, small, 12, stream1) == 0);
  gpu_fill(on_device_1, bytes, 13, stream1);
  CUDA_CHECK(cudaStreamSynchronize(stream1));
  CUDA_CHECK(cudaMemcpyPeer(large_block, 0, on_device_1, 1, bytes));
  CHECK(host_copy_matches(large_block, bytes, 13));
  std::printf("cudaMemcpyPeer: device 0's expandable memory to device 1 and back: bytes match\n");

  if (!reaches) {
    std::printf("no peer access between the devices: the kernels on device 1 are skipped\n");
  } else {
    // A kernel on device 1 reads device 0's expandable memory and writes it, as PyTorch's
    // kernels do on a tensor of another GPU once peer access is enabled.
    cudaError_t enabled = cudaDeviceEnablePeerAccess(0, 0);
    CHECK(enabled == cudaSuccess || enabled == cudaErrorPeerAccessAlreadyEnabled);
    (void)cudaGetLastError();
    const size_t words = bytes / sizeof(unsigned);
    copy_kernel<<<256, 256, 0, stream1>>>(static_cast<unsigned *>(on_device_1), static_cast<const unsigned *>(large_block), words);
    CUDA_CHECK(cudaGetLastError());
    CHECK(gpu_mismatches(on_device_1, bytes, 13, stream1) == 0);
    CHECK(gpu_mismatches(large_block, bytes, 13, stream1) == 0);
    fill_kernel<<<128, 256, 0, stream1>>>(static_cast<unsigned *>(small_block), small / sizeof(unsigned), 14);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(stream1));
    CHECK(host_copy_matches(small_block, small, 14));
    std::printf("kernels on device 1 read and wrote device 0's expandable memory: bytes match\n");
  }

  // A block mapped after the first ones (a growth) is reachable too.
  CUDA_CHECK(cudaSetDevice(0));
  void *grown = nullptr;
  CHECK_OK(rmmResourceAllocate(expandable, &grown, bytes, nullptr));
  gpu_fill(grown, bytes, 15, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaSetDevice(1));
  CUDA_CHECK(cudaMemcpyPeerAsync(on_device_1, 1, grown, 0, bytes, stream1));
  CHECK(gpu_mismatches(on_device_1, bytes, 15, stream1) == 0);
  // Granting a device that has access already does nothing.
  CHECK_OK(rmmExpandableResourceGrantPeerAccess(expandable, reaches ? 1 : 0));

  CUDA_CHECK(cudaStreamDestroy(stream1));
  CUDA_CHECK(cudaFree(on_device_1));
  CUDA_CHECK(cudaSetDevice(0));
  CHECK_OK(rmmResourceDeallocate(expandable, large_block, bytes, nullptr));
  CHECK_OK(rmmResourceDeallocate(expandable, small_block, small, nullptr));
  CHECK_OK(rmmResourceDeallocate(expandable, grown, bytes, nullptr));
  CHECK_OK(rmmResourceDestroy(expandable));
  measure_access_cost(50);
  return rmm_test_finish("cuda_peer_access");
}
