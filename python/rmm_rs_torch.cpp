// rmm-rs as a PyTorch CUDA allocator backend: PyTorch's C++ allocator interface
// (c10::cuda::CUDACachingAllocator::CUDAAllocator) implemented over rmm-rs's C API, so that a
// PyTorch program keeps memory statistics, cudnn.benchmark, CUDA graphs, MemPool, snapshots,
// a typed out-of-memory error and IPC, which PyTorch's pluggable-allocator shim cannot give.
//
// rmm_rs.use_for_torch() builds this file against the installed PyTorch (as PyTorch
// extensions are built) and calls rmm_rs_torch_install() before CUDA is initialized. The rmm-rs
// library is not linked: its functions are looked up in the librmm.so the Python module loaded,
// so the backend and the module always use the same library and the same resources.
#include <c10/core/Allocator.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace torch::cuda::CUDAPluggableAllocator {
// Declared in torch/csrc/cuda/CUDAPluggableAllocator.h (libtorch_cuda): checks that PyTorch's
// current allocator is not initialized yet and makes `allocator` the current one.
void changeCurrentAllocator(const std::shared_ptr<c10::cuda::CUDACachingAllocator::CUDAAllocator>& allocator);
}  // namespace torch::cuda::CUDAPluggableAllocator

namespace {

using namespace c10::cuda::CUDACachingAllocator;
using c10::MempoolId_t;
using c10::CachingAllocator::Stat;
using c10::CachingAllocator::StatType;
using c10::CachingDeviceAllocator::DeviceStats;

// ---- the rmm-rs C API, looked up in the loaded library ------------------------------------

struct rmmResource_st;
using rmmResource_t = rmmResource_st *;
struct Footprint {  // rmmFootprint_t
  size_t reserved_bytes, peak_reserved_bytes, live_bytes, peak_live_bytes, largest_free_block;
  double fragmentation;
};
constexpr int kRmmSuccess = 0;
constexpr int kRmmOutOfMemory = 4;  // RMM_ERROR_OUT_OF_MEMORY, checked in rmm_rs_torch_install
constexpr size_t kRmmIpcHandleSize = 128;  // RMM_IPC_HANDLE_SIZE
constexpr int kRmmNotSupported = 7;       // RMM_ERROR_NOT_SUPPORTED
struct IpcMemPages {                      // rmmIpcMemPages_t
  void *first_page;
  size_t page_size, page_count;
};

// PyTorch's shareable handle (c10/cuda/CUDACachingAllocator.cpp, shareIpcHandle; the layout of
// PyTorch 2.11): a version byte (2), a type ('c': a cudaIpcMemHandle_t follows; 'e': pages of
// an expandable segment follow), then for 'e' this header, in the machine's byte order with its
// padding zeroed (PyTorch's receiver caches mappings by the handle's bytes), then one int per
// page: the page's POSIX file descriptor number in the sender, which the receiver takes with
// pidfd_getfd, imports and maps, page after page, from an address range of its own.
constexpr char kTorchHandleVersion = 2;
struct TorchShareHeader {
  int32_t pid;  // pid_t
  size_t segment_size;
  size_t num_handles;
};
static_assert(sizeof(TorchShareHeader) == 24, "PyTorch's ShareHeader: pid_t, padding, two size_t");

struct RmmApi {
  int (*get_per_device_resource)(int, rmmResource_t *);
  int (*create_from_spec)(const char *, int, rmmResource_t *);
  int (*destroy)(rmmResource_t);
  int (*allocate)(rmmResource_t, void **, size_t, cudaStream_t);
  int (*deallocate)(rmmResource_t, void *, size_t, cudaStream_t);
  int (*device_release)(int, size_t *);
  int (*footprint)(rmmResource_t, Footprint *);
  int (*allocation_offset)(ptrdiff_t *, const void *, cudaStream_t);
  // rmmIpcOpenMemHandle / rmmIpcCloseMemHandle; the handle is an rmmIpcMemHandle_t,
  // kRmmIpcHandleSize bytes.
  int (*ipc_open_mem_handle)(void **, const void *);
  int (*ipc_close_mem_handle)(void *);
  // rmmIpcGetMemPages / rmmIpcOpenMemPages: the pages of expandable memory and their file
  // descriptors, PyTorch's expandable-segment handle ('e').
  int (*ipc_get_mem_pages)(IpcMemPages *, int *, size_t, const void *);
  int (*ipc_open_mem_pages)(void **, int, size_t, const int *, size_t);
  const char *(*last_error)();
  const char *(*error_name)(int32_t);
};
RmmApi rmm{};

// A handle of its own to a device's current rmm-rs resource (rmmGetPerDeviceResource: the one
// rmm.mr.set_current_device_resource or rmm_rs.configure set last), destroyed with this object
// unless released; nullptr when the device has none to give.
class CurrentResource {
 public:
  explicit CurrentResource(c10::DeviceIndex device) {
    if (rmm.get_per_device_resource(device, &handle_) != kRmmSuccess) handle_ = nullptr;
  }
  ~CurrentResource() {
    if (handle_ != nullptr) rmm.destroy(handle_);
  }
  CurrentResource(const CurrentResource &) = delete;
  CurrentResource &operator=(const CurrentResource &) = delete;
  rmmResource_t get() const { return handle_; }
  void release() { handle_ = nullptr; }

 private:
  rmmResource_t handle_ = nullptr;
};

std::string rmm_message() {
  const char *message = rmm.last_error();
  return message != nullptr ? message : "";
}

std::string format_bytes(size_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.2f %s", value, units[unit]);
  return text;
}

// While a graph is being captured, rmm-rs may ask the device for memory (cudaMalloc), which
// stream capture forbids in its global mode although the memory is not stream-ordered: relax
// the calling thread's mode around rmm-rs calls, as PyTorch's own allocator does.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(bool needed) : needed_(needed) {
    if (needed_) cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  ~RelaxedCapture() {
    if (needed_) cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  RelaxedCapture(const RelaxedCapture &) = delete;
  RelaxedCapture &operator=(const RelaxedCapture &) = delete;

 private:
  bool needed_;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

bool is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone;
}

struct MempoolHash {
  size_t operator()(const MempoolId_t &id) const noexcept {
    return std::hash<uint64_t>()(id.first) * 31 + std::hash<uint64_t>()(id.second);
  }
};

// A private pool (a CUDA graph's, or a torch.cuda.MemPool): memory of its own, never handed
// to anything else while the pool is in use. Its blocks come from an rmm-rs `cuda` resource of
// the device and stay in the pool until it is emptied or released: a freed block is kept for
// the next request of its stream and rounded size. Nothing here is stream-ordered on the
// device, so a graph under capture can take blocks (growth is a plain device allocation, which
// capture allows in relaxed mode), and a block keeps its address, which cudagraph trees'
// checkpoints need to give a graph's allocations back at the same places.
struct PrivatePool {
  rmmResource_t resource = nullptr;                 // rmm-rs `cuda` resource (no custom allocator)
  std::shared_ptr<CUDAAllocator> custom_allocator;  // MemPool(allocator=...): that allocator
  int use_count = 0;
  size_t live = 0;                                  // allocations not yet freed
  std::multimap<std::pair<cudaStream_t, size_t>, void *> cached;  // free blocks
  std::unordered_map<void *, std::pair<cudaStream_t, size_t>> blocks;  // every block held
  size_t held = 0;                                  // bytes of `blocks`
};

// Private-pool blocks are rounded so that requests of nearby sizes share them.
size_t pool_block_size(size_t size) {
  constexpr size_t small = 512, large = size_t{1} << 20;
  size_t unit = size < large ? small : large;
  return (size + unit - 1) / unit * unit;
}

struct Route {  // allocations that `filter` accepts go to pool `id` (beginAllocateToPool)
  MempoolId_t id;
  std::function<bool(cudaStream_t)> filter;
};

struct Allocation {
  size_t size = 0;
  c10::DeviceIndex device = 0;
  cudaStream_t stream = nullptr;
  MempoolId_t pool{0, 0};        // {0, 0}: the device's rmm-rs resource
  // With pool {0, 0}: a handle of its own to the device's resource when it was allocated,
  // destroyed once the memory went back (give_back); else the private pool's.
  rmmResource_t resource = nullptr;
  size_t block = 0;              // a private pool's block size
  std::shared_ptr<CUDAAllocator> custom_allocator;
  std::vector<cudaStream_t> used_on;  // recordStream
  std::shared_ptr<c10::GatheredContext> context;
};

struct PoolCheckpoint final : AllocatorState {
  struct Block {
    void *ptr;
    size_t size, block;
    cudaStream_t stream;
  };
  c10::DeviceIndex device = 0;
  MempoolId_t id{0, 0};
  std::vector<Block> live;
};

struct DeviceState {
  std::mutex mutex;  // all fields below
  DeviceStats stats;
  size_t reserved_peak = 0;  // since the last peak reset
  double fraction = 1.0;
  size_t total_memory = 0;  // 0 until the first allocation
  std::unordered_map<MempoolId_t, PrivatePool, MempoolHash> pools;
  std::vector<Route> routes;
  std::vector<std::pair<void *, Allocation>> deferred_frees;  // freed on a capturing stream
};

// The history _record_memory_history asks for.
struct History {
  std::mutex mutex;
  bool enabled = false;
  CreateContextFn context_recorder = nullptr;
  RecordContext when = RecordContext::NEVER;
  size_t max_entries = 0;
  std::vector<std::deque<TraceEntry>> traces;  // per device
};

constexpr size_t kShards = 64;
constexpr size_t kNoLimit = ~size_t{0};

class RmmBackend final : public CUDAAllocator {
 public:
  // ---- c10::Allocator ----
  c10::DataPtr allocate(size_t size) override {
    c10::DeviceIndex device = c10::cuda::current_device();
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device).stream();
    void *ptr = size == 0 ? nullptr : allocate_on(size, device, stream);
    return {ptr, ptr, &free_fn, c10::Device(c10::DeviceType::CUDA, device)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_fn; }

  void copy_data(void *dest, const void *src, std::size_t count) const override {
    C10_CUDA_CHECK(cudaMemcpy(dest, src, count, cudaMemcpyDeviceToDevice));
  }

  // ---- c10::DeviceAllocator ----
  bool initialized() override { return initialized_.load(); }

  void emptyCache(MempoolId_t mempool_id) override {
    c10::DeviceIndex device = c10::cuda::current_device();
    for (c10::DeviceIndex d = 0; d < static_cast<c10::DeviceIndex>(devices_.size()); ++d) {
      DeviceState &state = *devices_[d];
      std::lock_guard<std::mutex> lock(state.mutex);
      if (mempool_id.first == 0 && mempool_id.second == 0) {
        for (auto &[id, pool] : state.pools) empty_pool(pool);
        // Then everything rmm-rs holds free on the device, in every resource, stream and
        // lane, deferred frees that are done included (rmmDeviceRelease).
        c10::cuda::CUDAGuard guard(d);
        if (rmm.device_release(d, nullptr) != kRmmSuccess) {
          TORCH_WARN("rmm-rs: giving device ", static_cast<int>(d), "'s free memory back failed: ", rmm_message());
        }
      } else if (d == device) {
        auto found = state.pools.find(mempool_id);
        if (found != state.pools.end()) empty_pool(found->second);
      }
    }
  }

  void recordStream(const c10::DataPtr &data, c10::cuda::CUDAStream stream) override {
    void *ptr = data.get();
    if (ptr == nullptr || data.get_deleter() != &free_fn) return;
    Shard &shard = shard_of(ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto found = shard.live.find(ptr);
    if (found == shard.live.end()) return;
    Allocation &allocation = found->second;
    cudaStream_t used = stream.stream();
    if (used != allocation.stream &&
        std::find(allocation.used_on.begin(), allocation.used_on.end(), used) == allocation.used_on.end()) {
      allocation.used_on.push_back(used);
    }
  }

  DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    refresh_reserved(state, device);
    return state.stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex device) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    for_each_stat(state.stats, [](Stat &stat) { stat.reset_accumulated(); });
    state.stats.num_alloc_retries = 0;
    state.stats.num_ooms = 0;
    state.stats.num_sync_all_streams = 0;
    state.stats.num_device_alloc = 0;
    state.stats.num_device_free = 0;
  }

  void resetPeakStats(c10::DeviceIndex device) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    refresh_reserved(state, device);
    for_each_stat(state.stats, [](Stat &stat) { stat.reset_peak(); });
    state.reserved_peak = static_cast<size_t>(state.stats.reserved_bytes[0].current);
  }

  // ---- CUDAAllocator ----
  void *raw_alloc(size_t size) override {
    c10::DeviceIndex device = c10::cuda::current_device();
    return raw_alloc_with_stream(size, c10::cuda::getCurrentCUDAStream(device).stream());
  }

  void *raw_alloc_with_stream(size_t size, cudaStream_t stream) override {
    if (size == 0) return nullptr;
    return allocate_on(size, c10::cuda::current_device(), stream);
  }

  void raw_delete(void *ptr) override { free_pointer(ptr); }

  void init(int device_count) override {
    std::lock_guard<std::mutex> lock(init_mutex_);
    if (initialized_.load()) return;
    for (int d = static_cast<int>(devices_.size()); d < device_count; ++d) {
      devices_.push_back(std::make_unique<DeviceState>());
    }
    {
      std::lock_guard<std::mutex> history_lock(history_.mutex);
      history_.traces.resize(device_count);
    }
    initialized_.store(true);
  }

  double getMemoryFraction(c10::DeviceIndex device) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    return state.fraction;
  }

  void setMemoryFraction(double fraction, c10::DeviceIndex device) override {
    TORCH_CHECK(fraction >= 0 && fraction <= 1, "rmm-rs: invalid memory fraction ", fraction,
                ", it must be between 0 and 1");
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    state.fraction = fraction;
  }

  std::vector<StreamSegmentSize> getExpandableSegmentSizes(c10::DeviceIndex) override { return {}; }

  void enable(bool value) override { enabled_ = value; }
  bool isEnabled() const override { return enabled_; }

  void cacheInfo(c10::DeviceIndex device, size_t *largest_block) override {
    device_state(device);
    Footprint footprint{};
    CurrentResource resource(device);
    size_t largest = 0;
    if (resource.get() != nullptr && rmm.footprint(resource.get(), &footprint) == kRmmSuccess) {
      largest = footprint.largest_free_block;
    }
    // cudnn.benchmark sizes its workspace from this: what a new block could also take from
    // the device counts too, as PyTorch's allocator counts it.
    size_t free_bytes = 0, total_bytes = 0;
    {
      c10::cuda::CUDAGuard guard(device);
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) free_bytes = 0;
    }
    *largest_block = std::max(largest, free_bytes);
  }

  void *getBaseAllocation(void *ptr, size_t *size) override {
    // Memory CUDA IPC cannot share (the expandable resource's virtual memory) is shared block
    // by block, as the pages that hold it (shareIpcHandle): the block is its own base.
    if (!cuda_ipc_capable(ptr)) {
      if (size != nullptr) *size = base_size(ptr);
      return ptr;
    }
    ptrdiff_t offset = 0;
    TORCH_CHECK(rmm.allocation_offset(&offset, ptr, nullptr) == kRmmSuccess,
                "rmm-rs: no device allocation holds ", ptr, ": ", rmm_message());
    void *base = static_cast<char *>(ptr) - offset;
    if (size != nullptr) *size = base_size(base);
    return base;
  }

  void recordStream(const c10::DataPtr &data, c10::Stream stream) override {
    recordStream(data, c10::cuda::CUDAStream(stream));
  }

  SnapshotInfo snapshot(MempoolId_t mempool_id, bool include_traces) override {
    SnapshotInfo info;
    bool all = mempool_id.first == 0 && mempool_id.second == 0;
    for (Shard &shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mutex);
      for (auto &[ptr, allocation] : shard.live) {
        if (!all && allocation.pool != mempool_id) continue;
        SegmentInfo segment;
        segment.device = allocation.device;
        segment.address = reinterpret_cast<size_t>(ptr);
        segment.total_size = segment.allocated_size = segment.active_size = segment.requested_size =
            allocation.size;
        segment.stream = allocation.stream;
        segment.is_large = allocation.size > (1 << 20);
        segment.owner_private_pool_id = allocation.pool;
        BlockInfo block;
        block.size = block.requested_size = allocation.size;
        block.allocated = block.active = true;
        block.context_when_allocated = allocation.context;
        segment.blocks.push_back(std::move(block));
        segment.context_when_allocated = allocation.context;
        info.segments.push_back(std::move(segment));
      }
    }
    std::sort(info.segments.begin(), info.segments.end(),
              [](const SegmentInfo &a, const SegmentInfo &b) { return a.address < b.address; });
    if (include_traces) {
      std::lock_guard<std::mutex> lock(history_.mutex);
      for (auto &trace : history_.traces) info.device_traces.emplace_back(trace.begin(), trace.end());
    }
    info.config_metadata.last_allocator_settings = "rmm-rs";
    return info;
  }

  void beginAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                           std::function<bool(cudaStream_t)> filter) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    create_or_incref(state, device, mempool_id, nullptr);
    state.routes.push_back(Route{mempool_id, std::move(filter)});
    routing_.fetch_add(1);
  }

  void endAllocateToPool(c10::DeviceIndex device, MempoolId_t mempool_id) override {
    DeviceState &state = device_state(device);
    std::vector<std::pair<void *, Allocation>> deferred;
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      auto found = std::find_if(state.routes.begin(), state.routes.end(),
                                [&](const Route &route) { return route.id == mempool_id; });
      if (found != state.routes.end()) {
        state.routes.erase(found);
        routing_.fetch_sub(1);
      }
      if (state.routes.empty()) deferred.swap(state.deferred_frees);
      // Pools released while a capture was under way go now, once nothing of theirs is live.
      for (auto pool = state.pools.begin(); routing_.load() == 0 && pool != state.pools.end();) {
        auto next = std::next(pool);
        if (pool->second.use_count <= 0 && pool->second.live == 0) destroy_pool(state, pool);
        pool = next;
      }
    }
    for (auto &[ptr, allocation] : deferred) give_back(ptr, allocation);
  }

  void releasePool(c10::DeviceIndex device, MempoolId_t mempool_id) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    auto found = state.pools.find(mempool_id);
    if (found == state.pools.end()) return;
    if (--found->second.use_count <= 0 && found->second.live == 0) destroy_pool(state, found);
  }

  int getPoolUseCount(c10::DeviceIndex device, MempoolId_t mempool_id) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    auto found = state.pools.find(mempool_id);
    return found == state.pools.end() ? 0 : found->second.use_count;
  }

  void createOrIncrefPool(c10::DeviceIndex device, MempoolId_t mempool_id,
                          std::shared_ptr<CUDAAllocator> allocator) override {
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> lock(state.mutex);
    create_or_incref(state, device, mempool_id, std::move(allocator));
  }

  void setUseOnOOM(c10::DeviceIndex, MempoolId_t, bool) override {}
  void setNoSplit(c10::DeviceIndex, MempoolId_t) override {}

  bool checkPoolLiveAllocations(c10::DeviceIndex device, MempoolId_t mempool_id,
                                const std::unordered_set<void *> &expected) override {
    size_t live = 0;
    for (Shard &shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mutex);
      for (auto &[ptr, allocation] : shard.live) {
        if (allocation.device != device || allocation.pool != mempool_id) continue;
        if (expected.count(ptr) == 0) return false;
        ++live;
      }
    }
    return live == expected.size();
  }

  ShareableHandle shareIpcHandle(void *ptr) override {
    // cudaMalloc memory (a pool's chunks) in PyTorch's own format (version 2, 'c', then the
    // handle), so that a process using PyTorch's allocator can open it too.
    ptrdiff_t offset = 0;
    if (cuda_ipc_capable(ptr) && rmm.allocation_offset(&offset, ptr, nullptr) == kRmmSuccess) {
      void *base = static_cast<char *>(ptr) - offset;
      cudaIpcMemHandle_t handle;
      if (cudaIpcGetMemHandle(&handle, base) == cudaSuccess) {
        std::string text;
        text.push_back(kTorchHandleVersion);
        text.push_back('c');
        text.append(reinterpret_cast<const char *>(&handle), sizeof handle);
        return ShareableHandle{offset, text};
      }
      (void)cudaGetLastError();  // the refusal is not the program's error
    }
    // Memory of the virtual-memory API (an expandable resource), which CUDA IPC refuses: the
    // pages that hold the block, as PyTorch's expandable segments share theirs ('e'), so that
    // PyTorch's allocator opens it too. The descriptors stay open in this process while the
    // pages are mapped, and the block stays allocated while a receiver holds the tensor
    // (PyTorch's CUDA IPC reference counting), so the receivers can take them meanwhile. The
    // offset is the block's in its first page.
    IpcMemPages pages{};
    int status = rmm.ipc_get_mem_pages(&pages, nullptr, 0, ptr);
    std::vector<int> fds(status == kRmmSuccess ? pages.page_count : 0);
    if (status == kRmmSuccess) status = rmm.ipc_get_mem_pages(&pages, fds.data(), fds.size(), ptr);
    TORCH_CHECK(status == kRmmSuccess, "rmm-rs: cannot share ", ptr, " with another process: ", rmm_message(),
                status == kRmmNotSupported ? " (memory of a pool or the cuda resource is shared through CUDA IPC)" : "");
    TorchShareHeader header{};
    std::memset(&header, 0, sizeof header);  // the padding too: equal shares are equal bytes
    header.pid = static_cast<int32_t>(getpid());
    header.segment_size = pages.page_size;
    header.num_handles = pages.page_count;
    std::string text;
    text.push_back(kTorchHandleVersion);
    text.push_back('e');
    text.append(reinterpret_cast<const char *>(&header), sizeof header);
    text.append(reinterpret_cast<const char *>(fds.data()), fds.size() * sizeof(int));
    return ShareableHandle{static_cast<char *>(ptr) - static_cast<char *>(pages.first_page), text};
  }

  // Opens what a sender's shareIpcHandle gave, this backend's or PyTorch's own allocator's:
  // 'c' (cudaMalloc memory) with CUDA IPC, 'e' (pages of virtual memory, from this backend or
  // PyTorch's expandable segments) with rmmIpcOpenMemPages, and 'r' (rmm-rs's own handle,
  // which senders on this backend made before they shared pages as 'e') with
  // rmmIpcOpenMemHandle. The same handle opened twice is one mapping while it is in use, as
  // PyTorch's allocator does; the last reference unmaps it.
  std::shared_ptr<void> getIpcDevPtr(std::string handle) override {
    TORCH_CHECK(handle.size() >= 2 && handle[0] == kTorchHandleVersion && (handle[1] == 'c' || handle[1] == 'e' || handle[1] == 'r'),
                "rmm-rs: unsupported CUDA IPC handle (", handle.size(), " bytes",
                handle.size() >= 2 ? ", version " + std::to_string(handle[0]) + ", type '" + std::string(1, handle[1]) + "'" : "",
                ")");
    const char type = handle[1];
    if (type == 'c') {
      TORCH_CHECK(handle.size() == 2 + sizeof(cudaIpcMemHandle_t), "rmm-rs: a CUDA IPC handle of ", handle.size(), " bytes");
    } else if (type == 'r') {
      TORCH_CHECK(handle.size() == 2 + kRmmIpcHandleSize, "rmm-rs: an rmm-rs IPC handle of ", handle.size(), " bytes");
    }
    std::lock_guard<std::mutex> lock(ipc_mutex_);
    auto found = opened_.find(handle);
    if (found != opened_.end()) {
      if (auto alive = found->second.lock()) return alive;
    }
    c10::DeviceIndex device = c10::cuda::current_device();
    void *ptr = nullptr;
    std::shared_ptr<void> opened;
    if (type == 'e') {
      ptr = open_pages(handle);
    } else if (type == 'r') {
      TORCH_CHECK(rmm.ipc_open_mem_handle(&ptr, handle.data() + 2) == kRmmSuccess,
                  "rmm-rs: cannot open the IPC handle: ", rmm_message());
    } else {
      cudaIpcMemHandle_t ipc;
      std::memcpy(&ipc, handle.data() + 2, sizeof ipc);
      C10_CUDA_CHECK(cudaIpcOpenMemHandle(&ptr, ipc, cudaIpcMemLazyEnablePeerAccess));
      opened = std::shared_ptr<void>(ptr, [device](void *p) {
        c10::cuda::CUDAGuard guard(device);
        cudaIpcCloseMemHandle(p);
      });
    }
    if (opened == nullptr) {
      // rmmIpcCloseMemHandle closes what rmmIpcOpenMemPages and rmmIpcOpenMemHandle opened. Like
      // PyTorch's allocator, wait for the device's work on it before it is unmapped.
      opened = std::shared_ptr<void>(ptr, [device](void *p) {
        c10::cuda::CUDAGuard guard(device);
        (void)cudaDeviceSynchronize();
        if (rmm.ipc_close_mem_handle(p) != kRmmSuccess) TORCH_WARN("rmm-rs: closing IPC memory at ", p, ": ", rmm_message());
      });
    }
    opened_[handle] = opened;
    return opened;
  }

  // Maps the pages of a 'e' handle for the current device: what PyTorch's expandable segments
  // do (pidfd_open + pidfd_getfd on each descriptor number, import, map one after the other,
  // access for this device), through rmm-rs.
  static void *open_pages(const std::string &handle) {
    TorchShareHeader header{};
    TORCH_CHECK(handle.size() >= 2 + sizeof header, "rmm-rs: an expandable-segment IPC handle of ", handle.size(),
                " bytes is shorter than its header");
    std::memcpy(&header, handle.data() + 2, sizeof header);
    const size_t count = header.num_handles;
    const size_t fds_bytes = handle.size() - 2 - sizeof header;
    TORCH_CHECK(count > 0 && count <= fds_bytes / sizeof(int) && fds_bytes == count * sizeof(int),
                "rmm-rs: an expandable-segment IPC handle of ", count, " pages has ", fds_bytes,
                " bytes of handles: only POSIX file descriptors (4 bytes a page) can be opened here, not fabric handles");
    std::vector<int> fds(count);
    std::memcpy(fds.data(), handle.data() + 2 + sizeof header, count * sizeof(int));
    void *ptr = nullptr;
    TORCH_CHECK(rmm.ipc_open_mem_pages(&ptr, header.pid, header.segment_size, fds.data(), count) == kRmmSuccess,
                "rmm-rs: cannot open the expandable-segment IPC handle of process ", header.pid, " (", count, " pages of ",
                header.segment_size, " bytes): ", rmm_message());
    return ptr;
  }

  bool isHistoryEnabled() override {
    std::lock_guard<std::mutex> lock(history_.mutex);
    return history_.enabled;
  }

  void recordHistory(bool enabled, CreateContextFn context_recorder, size_t max_entries, RecordContext when,
                     bool clear_history, const std::vector<std::string> &) override {
    std::lock_guard<std::mutex> lock(history_.mutex);
    history_.enabled = enabled;
    history_.context_recorder = context_recorder;
    history_.when = when;
    history_.max_entries = max_entries;
    if (clear_history || !enabled) {
      for (auto &trace : history_.traces) trace.clear();
    }
    history_on_.store(enabled);
  }

  void attachOutOfMemoryObserver(OutOfMemoryObserver observer) override {
    std::lock_guard<std::mutex> lock(observers_mutex_);
    oom_observers_.push_back(std::move(observer));
  }

  void attachAllocatorTraceTracker(AllocatorTraceTracker tracker) override {
    std::lock_guard<std::mutex> lock(observers_mutex_);
    trace_trackers_.push_back(std::move(tracker));
    has_trackers_.store(true);
  }

  void enablePeerAccess(c10::DeviceIndex dev, c10::DeviceIndex dev_to_access) override {
    c10::cuda::CUDAGuard guard(dev);
    cudaError_t status = cudaDeviceEnablePeerAccess(dev_to_access, 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
      (void)cudaGetLastError();
      return;
    }
    C10_CUDA_CHECK(status);
  }

  cudaError_t memcpyAsync(void *dst, int dst_device, const void *src, int src_device, size_t count,
                          cudaStream_t stream, bool) override {
    // Between devices the peer copy works for every kind of memory (virtual-memory mappings
    // of the expandable resource need no peer mapping for it).
    if (dst_device == src_device) return cudaMemcpyAsync(dst, src, count, cudaMemcpyDeviceToDevice, stream);
    return cudaMemcpyPeerAsync(dst, dst_device, src, src_device, count, stream);
  }

  // cudagraph trees (torch.compile's reduce-overhead) save which blocks of a graph pool are
  // live and later return the pool to that state: blocks live now but not then are freed,
  // blocks live then but not now are handed out again at the same addresses. Private-pool
  // blocks keep their addresses in the pool's cache, so they can be.
  std::shared_ptr<AllocatorState> getCheckpointState(c10::DeviceIndex device, MempoolId_t id) override {
    auto checkpoint = std::make_shared<PoolCheckpoint>();
    checkpoint->device = device;
    checkpoint->id = id;
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> device_lock(state.mutex);
    for (Shard &shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mutex);
      for (auto &[ptr, allocation] : shard.live) {
        if (allocation.device == device && allocation.pool == id) {
          checkpoint->live.push_back({ptr, allocation.size, allocation.block, allocation.stream});
        }
      }
    }
    return checkpoint;
  }

  CheckpointDelta setCheckpointPoolState(c10::DeviceIndex device, std::shared_ptr<AllocatorState> saved) override {
    auto checkpoint = std::dynamic_pointer_cast<PoolCheckpoint>(saved);
    TORCH_CHECK(checkpoint != nullptr && checkpoint->device == device, "rmm-rs: not a checkpoint of device ",
                static_cast<int>(device));
    CheckpointDelta delta;
    DeviceState &state = device_state(device);
    std::lock_guard<std::mutex> device_lock(state.mutex);
    auto pool = state.pools.find(checkpoint->id);
    TORCH_CHECK(pool != state.pools.end() && pool->second.custom_allocator == nullptr,
                "rmm-rs: the checkpoint's pool is gone");
    std::unordered_map<void *, const PoolCheckpoint::Block *> wanted;
    for (const auto &block : checkpoint->live) wanted[block.ptr] = &block;
    // Live now, not in the checkpoint: back to the pool's cache (PyTorch drops the storages).
    for (Shard &shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mutex);
      for (auto it = shard.live.begin(); it != shard.live.end();) {
        Allocation &allocation = it->second;
        if (allocation.device != device || allocation.pool != checkpoint->id) {
          ++it;
          continue;
        }
        auto kept = wanted.find(it->first);
        if (kept != wanted.end() && kept->second->block == allocation.block && kept->second->stream == allocation.stream) {
          wanted.erase(kept);
          ++it;
          continue;
        }
        delta.ptrs_freed.push_back(it->first);
        pool->second.cached.emplace(std::make_pair(allocation.stream, allocation.block), it->first);
        --pool->second.live;
        count(state, allocation.size, -1);
        it = shard.live.erase(it);
      }
    }
    // In the checkpoint, not live now: taken from the cache again at the same address.
    for (auto &[ptr, block] : wanted) {
      auto range = pool->second.cached.equal_range({block->stream, block->block});
      auto cached = std::find_if(range.first, range.second, [&](const auto &entry) { return entry.second == ptr; });
      TORCH_CHECK(cached != range.second, "rmm-rs: a checkpointed block at ", ptr, " is no longer in its pool");
      pool->second.cached.erase(cached);
      Allocation allocation;
      allocation.size = block->size;
      allocation.block = block->block;
      allocation.device = device;
      allocation.stream = block->stream;
      allocation.pool = checkpoint->id;
      allocation.resource = pool->second.resource;
      ++pool->second.live;
      count(state, block->size, 1);
      {
        Shard &shard = shard_of(ptr);
        std::lock_guard<std::mutex> lock(shard.mutex);
        shard.live.emplace(ptr, std::move(allocation));
      }
      delta.dataptrs_allocd.emplace_back(ptr, ptr, &free_fn, c10::Device(c10::DeviceType::CUDA, device));
    }
    return delta;
  }

  std::string name() override { return "rmm-rs"; }

 private:
  struct Shard {
    std::mutex mutex;
    std::unordered_map<void *, Allocation> live;
  };

  static void free_fn(void *ptr);

  Shard &shard_of(void *ptr) {
    auto bits = reinterpret_cast<uintptr_t>(ptr) >> 8;
    return shards_[(bits ^ (bits >> 7)) % kShards];
  }

  DeviceState &device_state(c10::DeviceIndex device) {
    if (!initialized_.load()) init(c10::cuda::device_count());
    TORCH_CHECK(device >= 0 && static_cast<size_t>(device) < devices_.size(), "rmm-rs: invalid device ",
                static_cast<int>(device));
    DeviceState &state = *devices_[device];
    return state;
  }

  // The device's memory, learnt at its first allocation (for the memory fraction).
  void learn_total_memory(DeviceState &state, c10::DeviceIndex device) {
    if (state.total_memory == 0) {
      size_t free_bytes = 0;
      c10::cuda::CUDAGuard guard(device);
      C10_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &state.total_memory));
    }
  }

  template <typename F>
  static void for_each_stat(DeviceStats &stats, F f) {
    for (auto *array : {&stats.allocation, &stats.segment, &stats.active, &stats.inactive_split,
                        &stats.allocated_bytes, &stats.reserved_bytes, &stats.active_bytes,
                        &stats.inactive_split_bytes, &stats.requested_bytes}) {
      for (Stat &stat : *array) f(stat);
    }
    f(stats.oversize_allocations);
    f(stats.oversize_segments);
  }

  // Reserved bytes come from the resources themselves (what the pools hold from the device).
  void refresh_reserved(DeviceState &state, c10::DeviceIndex device) {
    size_t reserved = 0;
    Footprint footprint{};
    CurrentResource current(device);
    if (current.get() != nullptr && rmm.footprint(current.get(), &footprint) == kRmmSuccess) {
      reserved += footprint.reserved_bytes;
    } else {
      reserved += static_cast<size_t>(std::max<int64_t>(state.stats.allocated_bytes[0].current, 0));
    }
    for (auto &[id, pool] : state.pools) reserved += pool.held;
    state.reserved_peak = std::max(state.reserved_peak, reserved);
    for (size_t type = 0; type < state.stats.reserved_bytes.size(); ++type) {
      Stat &stat = state.stats.reserved_bytes[type];
      if (type != static_cast<size_t>(StatType::AGGREGATE) &&
          type != static_cast<size_t>(StatType::LARGE_POOL)) {
        continue;
      }
      int64_t now = static_cast<int64_t>(reserved);
      if (now > stat.current) stat.allocated += now - stat.current;
      if (now < stat.current) stat.freed += stat.current - now;
      stat.current = now;
      stat.peak = std::max<int64_t>(stat.peak, static_cast<int64_t>(state.reserved_peak));
    }
    state.stats.segment[0].current = static_cast<int64_t>(reserved > 0);
  }

  PrivatePool &create_or_incref(DeviceState &state, c10::DeviceIndex device, MempoolId_t id,
                                std::shared_ptr<CUDAAllocator> allocator) {
    auto found = state.pools.find(id);
    if (found != state.pools.end()) {
      ++found->second.use_count;
      return found->second;
    }
    PrivatePool pool;
    pool.use_count = 1;
    if (allocator != nullptr && allocator.get() != this) {
      pool.custom_allocator = std::move(allocator);
    } else {
      c10::cuda::CUDAGuard guard(device);
      TORCH_CHECK(rmm.create_from_spec("cuda", device, &pool.resource) == kRmmSuccess,
                  "rmm-rs: cannot create a private pool: ", rmm_message());
    }
    return state.pools.emplace(id, std::move(pool)).first->second;
  }

  // Gives a private pool's free blocks back to the device (not while a graph is captured:
  // freeing device memory synchronizes).
  void empty_pool(PrivatePool &pool) {
    if (pool.resource == nullptr || routing_.load() > 0) return;
    for (auto &[key, ptr] : pool.cached) {
      if (rmm.deallocate(pool.resource, ptr, key.second, key.first) != kRmmSuccess) {
        TORCH_WARN("rmm-rs: a private pool could not free ", ptr, ": ", rmm_message());
      }
      pool.blocks.erase(ptr);
      pool.held -= key.second;
    }
    pool.cached.clear();
  }

  void destroy_pool(DeviceState &state,
                    std::unordered_map<MempoolId_t, PrivatePool, MempoolHash>::iterator pool) {
    if (routing_.load() > 0) return;  // when the capture ends: releasePool or the last free
    empty_pool(pool->second);
    if (pool->second.resource != nullptr) rmm.destroy(pool->second.resource);
    state.pools.erase(pool);
  }

  // A block of private pool `pool` for `size` bytes on `stream`: a cached one of its size, else
  // a new one from the device. Called with the device's mutex held.
  void *take_from_pool(PrivatePool &pool, size_t size, cudaStream_t stream, size_t *block) {
    *block = pool_block_size(size);
    auto cached = pool.cached.find({stream, *block});
    if (cached != pool.cached.end()) {
      void *ptr = cached->second;
      pool.cached.erase(cached);
      return ptr;
    }
    void *ptr = nullptr;
    RelaxedCapture relaxed(is_capturing(stream));
    if (rmm.allocate(pool.resource, &ptr, *block, stream) != kRmmSuccess) {
      empty_pool(pool);
      if (rmm.allocate(pool.resource, &ptr, *block, stream) != kRmmSuccess) return nullptr;
    }
    pool.blocks[ptr] = {stream, *block};
    pool.held += *block;
    return ptr;
  }

  void record_trace(TraceEntry::Action action, c10::DeviceIndex device, void *ptr, size_t size,
                    cudaStream_t stream, MempoolId_t pool, std::shared_ptr<c10::GatheredContext> context) {
    TraceEntry entry(action, device, reinterpret_cast<size_t>(ptr), size, stream, pool,
                     c10::getApproximateTime(), std::move(context));
    {
      std::lock_guard<std::mutex> lock(observers_mutex_);
      for (auto &tracker : trace_trackers_) tracker(entry);
    }
    std::lock_guard<std::mutex> lock(history_.mutex);
    if (!history_.enabled || static_cast<size_t>(device) >= history_.traces.size()) return;
    auto &trace = history_.traces[device];
    trace.push_back(std::move(entry));
    while (history_.max_entries > 0 && trace.size() > history_.max_entries) trace.pop_front();
  }

  std::shared_ptr<c10::GatheredContext> gather_context(bool for_alloc) {
    CreateContextFn recorder = nullptr;
    {
      std::lock_guard<std::mutex> lock(history_.mutex);
      if (!history_.enabled || history_.context_recorder == nullptr) return nullptr;
      RecordContext when = history_.when;
      if (when == RecordContext::NEVER || (!for_alloc && when != RecordContext::ALL)) return nullptr;
      recorder = history_.context_recorder;
    }
    return recorder();
  }

  [[noreturn]] void out_of_memory(DeviceState &state, c10::DeviceIndex device, size_t size,
                                  const std::string &why) {
    size_t free_bytes = 0, total_bytes = 0;
    {
      c10::cuda::CUDAGuard guard(device);
      if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
    }
    size_t allocated = 0, reserved = 0, largest = 0;
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      state.stats.num_ooms += 1;
      refresh_reserved(state, device);
      allocated = static_cast<size_t>(state.stats.allocated_bytes[0].current);
      reserved = static_cast<size_t>(state.stats.reserved_bytes[0].current);
      Footprint footprint{};
      CurrentResource current(device);
      if (current.get() != nullptr && rmm.footprint(current.get(), &footprint) == kRmmSuccess) {
        largest = footprint.largest_free_block;
      }
    }
    {
      std::lock_guard<std::mutex> lock(observers_mutex_);
      for (auto &observer : oom_observers_) observer(device, allocated, total_bytes, free_bytes);
    }
    if (history_on_.load()) {
      record_trace(TraceEntry::OOM, device, reinterpret_cast<void *>(free_bytes), size, nullptr, {0, 0},
                   nullptr);
    }
    std::string message = "CUDA out of memory. Tried to allocate " + format_bytes(size) + ". GPU " +
                          std::to_string(device) + " has a total capacity of " + format_bytes(total_bytes) +
                          " of which " + format_bytes(free_bytes) + " is free. rmm-rs holds " +
                          format_bytes(reserved) + " (" + format_bytes(allocated) +
                          " allocated by PyTorch, largest free block " + format_bytes(largest) + "). rmm-rs: " + why;
    throw c10::OutOfMemoryError(c10::SourceLocation{__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                std::move(message));
  }

  // PyTorch's counts for `size` bytes allocated (`sign` 1) or freed (-1). Device mutex held.
  static void count(DeviceState &state, size_t size, int sign) {
    size_t type = static_cast<size_t>(size > (1 << 20) ? StatType::LARGE_POOL : StatType::SMALL_POOL);
    for (size_t t : {static_cast<size_t>(StatType::AGGREGATE), type}) {
      for (Stat *stat : {&state.stats.allocation[t], &state.stats.active[t]}) {
        sign > 0 ? stat->increase(1) : stat->decrease(1);
      }
      for (Stat *stat : {&state.stats.allocated_bytes[t], &state.stats.active_bytes[t], &state.stats.requested_bytes[t]}) {
        sign > 0 ? stat->increase(size) : stat->decrease(size);
      }
    }
  }

  void *allocate_on(size_t size, c10::DeviceIndex device, cudaStream_t stream) {
    DeviceState &state = device_state(device);
    Allocation allocation;
    allocation.size = size;
    allocation.device = device;
    allocation.stream = stream;
    size_t over_fraction = kNoLimit;
    void *ptr = nullptr;
    bool pool_refused = false;
    // The device's resource now, as RAPIDS' allocator reads it at every allocation: what
    // rmm.mr.set_current_device_resource set last (a handle of the allocation's own, so that
    // the memory goes back to the stack it came from after the device's resource changed).
    CurrentResource current(device);
    TORCH_CHECK(current.get() != nullptr, "rmm-rs: no resource for device ", static_cast<int>(device), ": ",
                rmm_message());
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      learn_total_memory(state, device);
      allocation.resource = current.get();
      if (state.fraction < 1.0) {
        auto allowed = static_cast<size_t>(state.fraction * static_cast<double>(state.total_memory));
        if (static_cast<size_t>(state.stats.allocated_bytes[0].current) + size > allowed) over_fraction = allowed;
      }
      if (routing_.load(std::memory_order_relaxed) > 0 && over_fraction == kNoLimit) {
        for (auto route = state.routes.rbegin(); route != state.routes.rend(); ++route) {
          if (route->filter && !route->filter(stream)) continue;
          PrivatePool &pool = state.pools.at(route->id);
          allocation.pool = route->id;
          allocation.resource = pool.resource;
          allocation.custom_allocator = pool.custom_allocator;
          if (pool.custom_allocator == nullptr) {
            ptr = take_from_pool(pool, size, stream, &allocation.block);
            pool_refused = ptr == nullptr;
          }
          if (!pool_refused) ++pool.live;
          break;
        }
      }
    }
    if (over_fraction != kNoLimit) {
      out_of_memory(state, device, size,
                    "the per-process memory fraction allows " + format_bytes(over_fraction) + " in use");
    }
    if (pool_refused) out_of_memory(state, device, size, "a private pool could not grow: " + rmm_message());
    if (allocation.custom_allocator != nullptr) {
      ptr = allocation.custom_allocator->raw_alloc_with_stream(size, stream);
    } else if (ptr == nullptr) {
      bool capture = routing_.load(std::memory_order_relaxed) > 0 && is_capturing(stream);
      RelaxedCapture relaxed(capture);
      int status = rmm.allocate(allocation.resource, &ptr, size, stream);
      if (status == kRmmOutOfMemory && !capture) {
        // Release what every pool holds unused and try once more before giving up.
        {
          std::lock_guard<std::mutex> lock(state.mutex);
          state.stats.num_alloc_retries += 1;
        }
        emptyCache({0, 0});
        status = rmm.allocate(allocation.resource, &ptr, size, stream);
      }
      if (status != kRmmSuccess) out_of_memory(state, device, size, rmm_message());
      current.release();  // the allocation owns the handle now
    }
    bool tracing = history_on_.load(std::memory_order_relaxed) || has_trackers_.load(std::memory_order_relaxed);
    if (tracing) allocation.context = gather_context(true);
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      count(state, size, 1);
    }
    if (tracing) record_trace(TraceEntry::ALLOC, device, ptr, size, stream, allocation.pool, allocation.context);
    Shard &shard = shard_of(ptr);
    std::lock_guard<std::mutex> lock(shard.mutex);
    shard.live.emplace(ptr, std::move(allocation));
    return ptr;
  }

  void free_pointer(void *ptr) {
    if (ptr == nullptr) return;
    Allocation allocation;
    {
      Shard &shard = shard_of(ptr);
      std::lock_guard<std::mutex> lock(shard.mutex);
      auto found = shard.live.find(ptr);
      if (found == shard.live.end()) {  // a deleter must not throw
        TORCH_WARN("rmm-rs: free of ", ptr, ", which the PyTorch backend did not allocate (or freed already)");
        return;
      }
      allocation = std::move(found->second);
      shard.live.erase(found);
    }
    DeviceState &state = device_state(allocation.device);
    {
      std::lock_guard<std::mutex> lock(state.mutex);
      count(state, allocation.size, -1);
      // Memory of the device's own stack freed on a stream that is being captured would be
      // ordered on a graph, not on the device: it waits until the capture ends.
      if (!state.routes.empty() && allocation.pool == MempoolId_t{0, 0} && allocation.custom_allocator == nullptr &&
          is_capturing(allocation.stream)) {
        state.deferred_frees.emplace_back(ptr, std::move(allocation));
        return;
      }
    }
    if (history_on_.load(std::memory_order_relaxed) || has_trackers_.load(std::memory_order_relaxed)) {
      auto context = gather_context(false);
      record_trace(TraceEntry::FREE_REQUESTED, allocation.device, ptr, allocation.size, allocation.stream,
                   allocation.pool, context);
      record_trace(TraceEntry::FREE_COMPLETED, allocation.device, ptr, allocation.size, allocation.stream,
                   allocation.pool, context);
    }
    give_back(ptr, allocation);
  }

  // Returns the memory in the order of its stream, after the work of every stream it was
  // recorded on (recordStream): that stream waits for an event recorded on each.
  void give_back(void *ptr, Allocation &allocation) {
    c10::cuda::CUDAGuard guard(allocation.device);
    bool capture = routing_.load(std::memory_order_relaxed) > 0 && is_capturing(allocation.stream);
    RelaxedCapture relaxed(capture);
    for (cudaStream_t used : allocation.used_on) {
      cudaEvent_t event = nullptr;
      cudaError_t status = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
      if (status == cudaSuccess) status = cudaEventRecord(event, used);
      if (status == cudaSuccess) status = cudaStreamWaitEvent(allocation.stream, event, 0);
      if (event != nullptr) cudaEventDestroy(event);
      if (status != cudaSuccess) {
        // Without the ordering the block could be reused under the other stream's work: wait.
        TORCH_WARN("rmm-rs: ordering a free after stream ", used, " failed (", cudaGetErrorString(status),
                   "); waiting for the device instead");
        (void)cudaGetLastError();
        cudaDeviceSynchronize();
      }
    }
    if (allocation.pool == MempoolId_t{0, 0}) {
      if (rmm.deallocate(allocation.resource, ptr, allocation.size, allocation.stream) != kRmmSuccess) {
        TORCH_WARN("rmm-rs: freeing ", ptr, " failed: ", rmm_message());
      }
      rmm.destroy(allocation.resource);
      return;
    }
    if (allocation.custom_allocator != nullptr) allocation.custom_allocator->raw_delete(ptr);
    DeviceState &state = device_state(allocation.device);
    std::lock_guard<std::mutex> lock(state.mutex);
    auto pool = state.pools.find(allocation.pool);
    if (pool == state.pools.end()) return;
    if (allocation.custom_allocator == nullptr) pool->second.cached.emplace(std::make_pair(allocation.stream, allocation.block), ptr);
    if (--pool->second.live == 0 && pool->second.use_count <= 0) destroy_pool(state, pool);
  }

  static size_t base_size(void *base);
  static bool cuda_ipc_capable(void *ptr);

  std::atomic<bool> initialized_{false};
  std::mutex init_mutex_;
  std::vector<std::unique_ptr<DeviceState>> devices_;
  std::array<Shard, kShards> shards_;
  std::atomic<int> routing_{0};
  std::atomic<bool> history_on_{false};
  std::atomic<bool> has_trackers_{false};
  History history_;
  std::mutex observers_mutex_;
  std::vector<OutOfMemoryObserver> oom_observers_;
  std::vector<AllocatorTraceTracker> trace_trackers_;
  std::mutex ipc_mutex_;
  std::unordered_map<std::string, std::weak_ptr<void>> opened_;
  bool enabled_ = true;
};

std::shared_ptr<RmmBackend> backend;

void RmmBackend::free_fn(void *ptr) { backend->free_pointer(ptr); }

size_t RmmBackend::base_size(void *base) {
  // cuMemGetAddressRange through the driver the runtime already loaded.
  using Range = int (*)(uintptr_t *, size_t *, uintptr_t);
  static Range range = [] {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver != nullptr ? reinterpret_cast<Range>(dlsym(driver, "cuMemGetAddressRange_v2")) : nullptr;
  }();
  uintptr_t start = 0;
  size_t size = 0;
  if (range == nullptr || range(&start, &size, reinterpret_cast<uintptr_t>(base)) != 0) return 0;
  return size;
}

// Whether CUDA IPC (cudaIpcGetMemHandle) can share the memory at `ptr`: cudaMalloc memory can,
// memory of the virtual-memory API and of driver memory pools cannot
// (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, through the driver the runtime loaded).
bool RmmBackend::cuda_ipc_capable(void *ptr) {
  using Attribute = int (*)(void *, int, uintptr_t);
  static Attribute attribute = [] {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver != nullptr ? reinterpret_cast<Attribute>(dlsym(driver, "cuPointerGetAttribute")) : nullptr;
  }();
  constexpr int kIsLegacyCudaIpcCapable = 10;
  int capable = 1;
  if (attribute == nullptr || attribute(&capable, kIsLegacyCudaIpcCapable, reinterpret_cast<uintptr_t>(ptr)) != 0) {
    return true;  // unknown: CUDA IPC says for itself
  }
  return capable != 0;
}

// RMM_RS_TORCH_CRASH_TRACE=1: a crash prints the native frames (exported names) to stderr.
void print_native_frames(int signal) {
  void *frames[24];
  int count = backtrace(frames, 24);
  const char header[] = "rmm-rs PyTorch backend: native frames at the crash:\n";
  (void)!write(2, header, sizeof header - 1);
  backtrace_symbols_fd(frames, count, 2);
  ::signal(signal, SIG_DFL);
  raise(signal);
}

template <typename F>
bool find_symbol(void *library, const char *name, F &slot, std::string &missing) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  if (slot == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
  return slot != nullptr;
}

}  // namespace

// Makes the backend PyTorch's CUDA allocator. `library` is the path of the librmm.so the Python
// module loaded. Returns 0, or 1 with the reason in `error` (NUL-terminated, at most `size`
// bytes) when the library lacks a function or PyTorch refuses (its allocator already in use).
extern "C" __attribute__((visibility("default"))) int rmm_rs_torch_install(const char *library, char *error,
                                                                           size_t size) {
  auto fail = [&](const std::string &why) {
    if (error != nullptr && size > 0) std::snprintf(error, size, "%s", why.c_str());
    return 1;
  };
  if (backend != nullptr) return 0;
  if (const char *trace = std::getenv("RMM_RS_TORCH_CRASH_TRACE"); trace != nullptr && trace[0] == '1') {
    ::signal(SIGSEGV, print_native_frames);
    ::signal(SIGABRT, print_native_frames);
  }
  void *handle = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) handle = dlopen(library, RTLD_NOW);
  if (handle == nullptr) return fail(std::string("cannot open ") + library + ": " + dlerror());
  std::string missing;
  find_symbol(handle, "rmmGetPerDeviceResource", rmm.get_per_device_resource, missing);
  find_symbol(handle, "rmmResourceCreateFromSpec", rmm.create_from_spec, missing);
  find_symbol(handle, "rmmResourceDestroy", rmm.destroy, missing);
  find_symbol(handle, "rmmResourceAllocate", rmm.allocate, missing);
  find_symbol(handle, "rmmResourceDeallocate", rmm.deallocate, missing);
  find_symbol(handle, "rmmDeviceRelease", rmm.device_release, missing);
  find_symbol(handle, "rmmResourceGetFootprint", rmm.footprint, missing);
  find_symbol(handle, "rmmGetAllocationOffset", rmm.allocation_offset, missing);
  find_symbol(handle, "rmmIpcOpenMemHandle", rmm.ipc_open_mem_handle, missing);
  find_symbol(handle, "rmmIpcCloseMemHandle", rmm.ipc_close_mem_handle, missing);
  find_symbol(handle, "rmmIpcGetMemPages", rmm.ipc_get_mem_pages, missing);
  find_symbol(handle, "rmmIpcOpenMemPages", rmm.ipc_open_mem_pages, missing);
  find_symbol(handle, "rmmGetLastErrorMessage", rmm.last_error, missing);
  find_symbol(handle, "rmmGetErrorName", rmm.error_name, missing);
  if (!missing.empty()) return fail(std::string(library) + " lacks " + missing);
  if (std::strstr(rmm.error_name(kRmmOutOfMemory), "OUT_OF_MEMORY") == nullptr) {
    return fail(std::string(library) + ": its out-of-memory code is not " + std::to_string(kRmmOutOfMemory));
  }
  try {
    auto created = std::make_shared<RmmBackend>();
    torch::cuda::CUDAPluggableAllocator::changeCurrentAllocator(created);
    backend = created;
  } catch (const std::exception &e) {
    return fail(e.what());
  }
  return 0;
}
