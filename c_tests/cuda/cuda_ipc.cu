// IPC on a GPU, two processes: a 1 GiB block of a shareable expandable resource and one of a
// pool over cudaMalloc, each filled by a kernel in the exporting process (the parent), opened
// in the child from its rmmIpcMemHandle_t, checked there by a kernel, written there, and read
// back here. The child measures the bandwidth of a device-to-device copy from the opened block
// against the same copy from its own cudaMalloc memory (target: within 5%). For expandable
// memory the parent also frees the block while the child has it open: it must stay out of the
// pool until the child closes it. First, what a shareable resource costs: the time to map 1 GiB
// of fresh pages with and without exportable pages. The process forks before either side
// touches CUDA (CUDA does not survive a fork). Exits 77 (skipped) without a GPU.
#include "cuda_test.cuh"

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

static const size_t kBytes = size_t(1) << 30;
static const size_t kWritten = size_t(1) << 20;

struct Result {
  int ok;
  double opened_gbps;
  double local_gbps;
};

static void write_all(int fd, const void *data, size_t bytes) {
  const char *at = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t written = write(fd, at, bytes);
    CHECK(written > 0);
    at += written;
    bytes -= static_cast<size_t>(written);
  }
}

// False at the end of the stream (the other process is gone).
static bool read_all(int fd, void *data, size_t bytes) {
  char *at = static_cast<char *>(data);
  while (bytes > 0) {
    ssize_t got = read(fd, at, bytes);
    if (got <= 0) return false;
    at += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

// GB/s of `rounds` copies of kBytes from `src` to `dst` on `stream`, timed with events.
static double copy_gbps(void *dst, const void *src, cudaStream_t stream, int rounds) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice, stream));  // warm up
  CUDA_CHECK(cudaEventRecord(start, stream));
  for (int round = 0; round < rounds; ++round) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice, stream));
  }
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return double(kBytes) * rounds / (ms / 1000.0) / 1e9;
}

// The importer: for each handle the parent sends, opens it, checks it, measures, writes the
// first MiB, reports, and closes it when the parent says so.
static int child(int from_parent, int to_parent) {
  cuda_test_require_gpus(1);
  CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreate(&stream));
  void *local_src = nullptr, *local_dst = nullptr;
  CUDA_CHECK(cudaMalloc(&local_src, kBytes));
  CUDA_CHECK(cudaMalloc(&local_dst, kBytes));
  gpu_fill(local_src, kBytes, 3, stream);
  rmmIpcMemHandle_t handle;
  while (read_all(from_parent, &handle, sizeof handle)) {
    Result result = {0, 0, 0};
    void *opened = nullptr;
    CHECK_OK(rmmIpcOpenMemHandle(&opened, &handle));
    result.ok = gpu_mismatches(opened, kBytes, 21, stream) == 0;
    // Alternate the two, three times each, so that clocks and other tenants weigh on both.
    for (int repeat = 0; repeat < 3; ++repeat) {
      result.opened_gbps = std::max(result.opened_gbps, copy_gbps(local_dst, opened, stream, 10));
      result.local_gbps = std::max(result.local_gbps, copy_gbps(local_dst, local_src, stream, 10));
    }
    result.ok = result.ok && gpu_mismatches(local_dst, kBytes, 3, stream) == 0;
    gpu_fill(opened, kWritten, 22, stream);
    CUDA_CHECK(cudaStreamSynchronize(stream));
    write_all(to_parent, &result, sizeof result);
    char close_now = 0;
    CHECK(read_all(from_parent, &close_now, 1));
    CHECK_OK(rmmIpcCloseMemHandle(opened));
    write_all(to_parent, &close_now, 1);
  }
  CUDA_CHECK(cudaFree(local_src));
  CUDA_CHECK(cudaFree(local_dst));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

// Whether the MiB after the child's writes still holds the parent's fill (seed 21). The
// pattern depends on the word's index from the start of the block, so the check is made here
// rather than by gpu_mismatches, which counts from the pointer it is given.
static bool untouched_after_written(const void *block) {
  const size_t words = kWritten / sizeof(unsigned), first = kWritten / sizeof(unsigned);
  std::vector<unsigned> copy(words);
  CUDA_CHECK(cudaMemcpy(copy.data(), static_cast<const char *>(block) + kWritten, kWritten, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < words; ++i) {
    if (copy[i] != pattern(first + i, 21)) return false;
  }
  return true;
}

static size_t live_bytes(rmmResource_t resource) {
  rmmFootprint_t figures;
  CHECK_OK(rmmResourceGetFootprint(resource, &figures));
  return figures.live_bytes;
}

// Milliseconds to allocate (map) 1 GiB of fresh pages from a new resource, and free it.
static double first_gib_ms(bool shareable) {
  rmmResource_t resource = nullptr;
  if (shareable) {
    CHECK_OK(rmmIpcExpandableResourceCreate(&resource, nullptr));
  } else {
    CHECK_OK(rmmExpandableResourceCreate(&resource, 0));
  }
  void *ptr = nullptr;
  const auto start = std::chrono::steady_clock::now();
  CHECK_OK(rmmResourceAllocate(resource, &ptr, kBytes, nullptr));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK_OK(rmmResourceDeallocate(resource, ptr, kBytes, nullptr));
  size_t released = 0;
  CHECK_OK(rmmResourceRelease(resource, &released));
  CHECK_OK(rmmResourceDestroy(resource));
  return ms;
}

int main() {
  int down[2], up[2];
  CHECK(pipe(down) == 0 && pipe(up) == 0);
  std::fflush(stdout);
  const pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    std::exit(child(down[0], up[1]));
  }
  close(down[0]);
  close(up[1]);
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
    close(down[1]);
    int status = 0;
    waitpid(pid, &status, 0);
    std::printf("SKIP: no GPU\n");
    return RMM_TEST_SKIP;
  }
  CHECK(!rmm_test_simulated());
  CUDA_CHECK(cudaSetDevice(0));
  // Under Yama's ptrace scope 1 the child may take this process's descriptors only once this
  // process allows it.
  CHECK_OK(rmmIpcAllowOpeners());

  (void)first_gib_ms(false);  // the context and the driver's first pages out of the measure
  double plain = 1e30, shareable = 1e30;
  for (int repeat = 0; repeat < 3; ++repeat) {
    plain = std::min(plain, first_gib_ms(false));
    shareable = std::min(shareable, first_gib_ms(true));
  }
  std::printf("mapping 1 GiB of new pages: %.2f ms private, %.2f ms exportable (%.2fx)\n", plain,
              shareable, shareable / plain);

  bool all_ok = true;
  for (int kind = 0; kind < 2; ++kind) {
    const bool expandable = kind == 0;
    rmmResource_t resource = nullptr, cuda = nullptr;
    if (expandable) {
      CHECK_OK(rmmIpcExpandableResourceCreate(&resource, nullptr));
    } else {
      CHECK_OK(rmmCudaResourceCreate(&cuda));
      CHECK_OK(rmmPoolResourceCreate(&resource, cuda, 0, 0));
    }
    void *block = nullptr;
    CHECK_OK(rmmResourceAllocate(resource, &block, kBytes, nullptr));
    gpu_fill(block, kBytes, 21, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    rmmIpcMemHandle_t handle;
    CHECK_OK(rmmIpcGetMemHandle(&handle, block));
    write_all(down[1], &handle, sizeof handle);
    Result result;
    CHECK(read_all(up[0], &result, sizeof result));
    const bool written = gpu_mismatches(block, kWritten, 22, nullptr) == 0 && untouched_after_written(block);
    const double ratio = result.opened_gbps / result.local_gbps;
    std::printf("%s: 1 GiB opened in process %d: content %s, the child's writes %s; copy from the "
                "opened block %.1f GB/s, from cudaMalloc %.1f GB/s: %.3f (target >= 0.95: %s)\n",
                expandable ? "expandable" : "pool", static_cast<int>(pid), result.ok ? "ok" : "WRONG",
                written ? "seen" : "NOT SEEN", result.opened_gbps, result.local_gbps, ratio,
                ratio >= 0.95 ? "met" : "missed");
    all_ok = all_ok && result.ok && written;

    void *other = nullptr;
    if (expandable) {
      // Freed while the child has it open: kept out of the pool until the child closes it.
      CHECK_OK(rmmResourceDeallocate(resource, block, kBytes, nullptr));
      CHECK(live_bytes(resource) == kBytes);
      CHECK_OK(rmmResourceAllocate(resource, &other, kBytes, nullptr));
      CHECK(other != block);
      rmmIpcMemHandle_t stale;
      CHECK_RMM(rmmIpcGetMemHandle(&stale, block), RMM_ERROR_INVALID_ARGUMENT);
    }
    const char close_now = 'c';
    char closed = 0;
    write_all(down[1], &close_now, 1);
    CHECK(read_all(up[0], &closed, 1) && closed == 'c');
    if (expandable) {
      CHECK_OK(rmmResourceDeallocate(resource, other, kBytes, nullptr));
      CHECK(live_bytes(resource) == 0);
      void *again = nullptr;
      CHECK_OK(rmmResourceAllocate(resource, &again, kBytes, nullptr));
      CHECK(again == block);
      CHECK_OK(rmmResourceDeallocate(resource, again, kBytes, nullptr));
      std::printf("expandable: freed while open in the child, kept out of the pool until closed there\n");
    } else {
      CHECK_OK(rmmResourceDeallocate(resource, block, kBytes, nullptr));
    }
    CHECK_OK(rmmResourceDestroy(resource));
    if (cuda != nullptr) CHECK_OK(rmmResourceDestroy(cuda));
  }
  close(down[1]);
  int status = -1;
  CHECK(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(all_ok);
  return rmm_test_finish("cuda_ipc");
}
