// A stand-in for the CUDA runtime calls that C++ programs written for RAPIDS RMM make themselves
// (cudaMemcpy, cudaStreamCreate, cudaEventRecord, cudaPointerGetAttributes ...), over rmm.h and
// rmm-rs's simulated devices (RMM_SIM_DEVICES), so that such programs build with a host
// compiler against the CUDA runtime's own headers (scripts/fetch-cccl.sh) and run unchanged
// without a GPU or libcudart: the seed guide's multi-device tab (cxx_tests/seed_guide/) and
// RAPIDS RMM's own test suite (scripts/rapids-suite.sh). On a GPU, link libcudart instead.
//
// What it cannot honour it refuses with a CUDA error, recorded for cudaGetLastError as the
// runtime does; it never pretends. Where the simulator's model is coarser than a GPU it says so:
//  - Simulated work is done when it is enqueued, so a memset (copies from a host pattern) and a
//    copy are complete on return; queries of streams and events succeed after a host
//    synchronization of the stream.
//  - rmm.h has no events: an event here remembers the stream it was recorded on, and waiting
//    for it synchronizes that stream from the host. cudaStreamWaitEvent therefore leaves no
//    ordering edge in the simulator's clocks (rmm-rs's resources order their own reuse of
//    memory with events of their own; the race checker looks only at that).
//  - A non-blocking stream (cudaStreamCreateWithFlags) is a simulated stream that still
//    orders itself after the legacy default stream; cudaStreamGetFlags reports the flags asked.
//  - The simulator records no prefetch location and has no memory-pool attributes:
//    cudaMemRangeGetAttribute and cudaMemPoolGetAttribute are cudaErrorNotSupported. Of the
//    driver API only cuPointerGetAttribute is here, and it answers CUDA_ERROR_NOT_SUPPORTED
//    (the simulator has no decompression engine to say a pointer is capable of).
//  - Device attributes are the simulator's facts (memory pools with POSIX file descriptors,
//    managed memory with prefetch, no access to pageable host memory); others are
//    cudaErrorNotSupported. The driver version is the version of these runtime headers.
//
// Built without CUDA_API_PER_THREAD_DEFAULT_STREAM, it defines both the legacy names and the
// per-thread default stream ones (_ptds, _ptsz) that the headers map calls to when a program
// defines it: there a null stream is the per-thread default stream.
// The legacy names must stay themselves here, whatever the program's build defines.
#undef CUDA_API_PER_THREAD_DEFAULT_STREAM
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "rmm.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <vector>

struct CUevent_st {
  cudaStream_t stream = nullptr;  // the stream of the last record
  bool recorded = false;
};

namespace {

thread_local cudaError_t last_error = cudaSuccess;

// Every result goes through here: a failure is remembered for cudaGetLastError.
cudaError_t result(cudaError_t status) {
  if (status != cudaSuccess) last_error = status;
  return status;
}

cudaError_t from_rmm(rmmError_t status) {
  switch (status) {
    case RMM_SUCCESS: return cudaSuccess;
    case RMM_ERROR_INVALID_ARGUMENT: return result(cudaErrorInvalidValue);
    case RMM_ERROR_OUT_OF_MEMORY: return result(cudaErrorMemoryAllocation);
    case RMM_ERROR_NOT_SUPPORTED: return result(cudaErrorNotSupported);
    case RMM_ERROR_INVALID_HANDLE: return result(cudaErrorInvalidResourceHandle);
    default: return result(cudaErrorUnknown);
  }
}

// Streams: a null stream is the legacy default stream, or this thread's with per-thread
// default streams.
cudaStream_t resolve(cudaStream_t stream, bool per_thread) {
  return stream == nullptr && per_thread ? cudaStreamPerThread : stream;
}

struct State {
  std::mutex lock;
  std::set<cudaEvent_t> events;
  std::map<cudaStream_t, unsigned int> stream_flags;
  // Memory from cudaMalloc, cudaMallocManaged, cudaMallocHost/cudaHostAlloc: the resource
  // (device/managed/pinned resource of the device current then) and size, for the free.
  struct Allocation {
    rmmResource_t resource;
    size_t size;
    bool pinned;
  };
  std::map<void *, Allocation> allocations;
  std::map<std::pair<int, int>, rmmResource_t> resources;  // (device, kind) -> resource
};

State &state() {
  static State *s = new State;  // never destroyed: calls may come from atexit handlers
  return *s;
}

enum Kind { kDevice = 0, kManaged = 1, kPinned = 2 };

cudaError_t allocate(void **ptr, size_t size, Kind kind) {
  if (ptr == nullptr) return result(cudaErrorInvalidValue);
  int device = 0;
  if (rmmGetDevice(&device) != RMM_SUCCESS) return result(cudaErrorNoDevice);
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  rmmResource_t &resource = s.resources[{device, kind}];
  if (resource == nullptr) {
    rmmError_t const made = kind == kDevice    ? rmmCudaResourceCreate(&resource)
                            : kind == kManaged ? rmmManagedResourceCreate(&resource)
                                               : rmmPinnedHostResourceCreate(&resource);
    if (made != RMM_SUCCESS) return from_rmm(made);
  }
  void *allocated = nullptr;
  rmmError_t const status = rmmResourceAllocate(resource, &allocated, size, nullptr);
  if (status != RMM_SUCCESS) return from_rmm(status);
  if (allocated != nullptr) s.allocations[allocated] = {resource, size, kind == kPinned};
  *ptr = allocated;
  return cudaSuccess;
}

cudaError_t deallocate(void *ptr, bool pinned) {
  if (ptr == nullptr) return cudaSuccess;
  State &s = state();
  State::Allocation found{};
  {
    std::lock_guard<std::mutex> guard(s.lock);
    auto at = s.allocations.find(ptr);
    if (at == s.allocations.end() || at->second.pinned != pinned) return result(cudaErrorInvalidValue);
    found = at->second;
    s.allocations.erase(at);
  }
  // cudaFree and cudaFreeHost synchronize with the device first.
  (void)rmmStreamSynchronize(nullptr);
  return from_rmm(rmmResourceDeallocate(found.resource, ptr, found.size, nullptr));
}

// The memory type rmm-rs's simulator knows for `ptr` (cudaMemoryType numbers); -1 off the
// simulator.
int memory_type(const void *ptr, int *device) {
  int type = 0;
  if (rmmSimGetPointerAttributes(&type, device, ptr) != RMM_SUCCESS) return -1;
  return type;
}

cudaError_t memcpy_on(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return result(cudaErrorInvalidMemcpyDirection);
  return from_rmm(rmmMemcpyAsync(dst, src, count, stream));
}

// A memset of simulated device (or managed, or pinned) memory: copies of a host pattern in the
// order of `stream`, which check the range as a copy does. Pageable host memory is refused.
cudaError_t memset_on(void *ptr, int value, size_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  int device = -1;
  int const type = memory_type(ptr, &device);
  if (type < 0) return result(cudaErrorNotSupported);
  if (type == cudaMemoryTypeUnregistered) return result(cudaErrorInvalidValue);
  std::vector<unsigned char> const pattern(std::min<size_t>(count, size_t{1} << 16), static_cast<unsigned char>(value));
  for (size_t done = 0; done < count;) {
    size_t const chunk = std::min(pattern.size(), count - done);
    rmmError_t const status = rmmMemcpyAsync(static_cast<unsigned char *>(ptr) + done, pattern.data(), chunk, stream);
    if (status != RMM_SUCCESS) return from_rmm(status);
    done += chunk;
  }
  return cudaSuccess;
}

cudaError_t stream_flags(cudaStream_t stream, unsigned int *flags) {
  if (flags == nullptr) return result(cudaErrorInvalidValue);
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  auto at = s.stream_flags.find(stream);
  *flags = at == s.stream_flags.end() ? cudaStreamDefault : at->second;
  return cudaSuccess;
}

bool live_event(cudaEvent_t event) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  return s.events.count(event) != 0;
}

cudaError_t event_record(cudaEvent_t event, cudaStream_t stream) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.events.count(event) == 0) return result(cudaErrorInvalidResourceHandle);
  event->stream = stream;
  event->recorded = true;
  return cudaSuccess;
}

// Waits on the host for the work before the event's last record: its stream's, all of it.
cudaError_t event_wait(cudaEvent_t event) {
  cudaStream_t stream = nullptr;
  {
    State &s = state();
    std::lock_guard<std::mutex> guard(s.lock);
    if (s.events.count(event) == 0) return result(cudaErrorInvalidResourceHandle);
    if (!event->recorded) return cudaSuccess;
    stream = event->stream;
  }
  // A stream destroyed since the record has nothing left running (simulated work is done
  // when enqueued).
  rmmError_t const status = rmmStreamSynchronize(stream);
  return status == RMM_ERROR_INVALID_ARGUMENT ? cudaSuccess : from_rmm(status);
}

cudaError_t prefetch(const void *ptr, size_t count, int device) {
  int owner = -1;
  int const type = memory_type(ptr, &owner);
  if (type < 0) return result(cudaErrorNotSupported);
  int devices = 0;
  if (rmmGetDeviceCount(&devices) != RMM_SUCCESS) return result(cudaErrorNoDevice);
  if (device != cudaCpuDeviceId && (device < 0 || device >= devices)) return result(cudaErrorInvalidDevice);
  // Only managed memory migrates; the driver refuses the rest. Nothing moves here.
  if (type != cudaMemoryTypeManaged || count == 0) return result(cudaErrorInvalidValue);
  return cudaSuccess;
}

}  // namespace

extern "C" {

// Declared by the CUDA headers only when a program defines CUDA_API_PER_THREAD_DEFAULT_STREAM.
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemset_ptds(void *ptr, int value, size_t count);
cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream);
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int *flags);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaMemPrefetchAsync_ptsz(const void *ptr, size_t count, struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream);

// --- errors -----------------------------------------------------------------------------------
cudaError_t cudaGetLastError(void) {
  cudaError_t const error = last_error;
  last_error = cudaSuccess;
  return error;
}

cudaError_t cudaPeekAtLastError(void) { return last_error; }

#define RMM_SIM_CUDA_ERRORS(X)                                                                   \
  X(cudaSuccess, "no error")                                                                     \
  X(cudaErrorInvalidValue, "invalid argument")                                                   \
  X(cudaErrorMemoryAllocation, "out of memory")                                                  \
  X(cudaErrorInitializationError, "initialization error")                                        \
  X(cudaErrorCudartUnloading, "driver shutting down")                                            \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")                             \
  X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                        \
  X(cudaErrorInvalidSymbol, "invalid device symbol")                                             \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                        \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                     \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                                            \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                   \
  X(cudaErrorNotReady, "device not ready")                                                       \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                         \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                                        \
  X(cudaErrorNotSupported, "operation not supported")                                            \
  X(cudaErrorNotPermitted, "operation not permitted")                                            \
  X(cudaErrorUnknown, "unknown error")

const char *cudaGetErrorName(cudaError_t error) {
#define RMM_SIM_NAME(code, text) \
  if (error == code) return #code;
  RMM_SIM_CUDA_ERRORS(RMM_SIM_NAME)
#undef RMM_SIM_NAME
  return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t error) {
#define RMM_SIM_TEXT(code, text) \
  if (error == code) return text;
  RMM_SIM_CUDA_ERRORS(RMM_SIM_TEXT)
#undef RMM_SIM_TEXT
  return "unrecognized error code";
}

// --- devices ----------------------------------------------------------------------------------
cudaError_t cudaGetDeviceCount(int *count) {
  if (count == nullptr) return result(cudaErrorInvalidValue);
  return rmmGetDeviceCount(count) == RMM_SUCCESS ? cudaSuccess : result(cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int *device) {
  if (device == nullptr) return result(cudaErrorInvalidValue);
  return rmmGetDevice(device) == RMM_SUCCESS ? cudaSuccess : result(cudaErrorNoDevice);
}

cudaError_t cudaSetDevice(int device) {
  return rmmSetDevice(device) == RMM_SUCCESS ? cudaSuccess : result(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceSynchronize(void) { return from_rmm(rmmStreamSynchronize(nullptr)); }

cudaError_t cudaDriverGetVersion(int *version) {
  if (version == nullptr) return result(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *version) {
  if (version == nullptr) return result(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return result(cudaErrorInvalidValue);
  int device = 0;
  if (rmmGetDevice(&device) != RMM_SUCCESS) return result(cudaErrorNoDevice);
  return from_rmm(rmmGetDeviceMemInfo(free_bytes, total_bytes, device));
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attribute, int device) {
  int count = 0;
  if (value == nullptr) return result(cudaErrorInvalidValue);
  if (rmmGetDeviceCount(&count) != RMM_SUCCESS) return result(cudaErrorNoDevice);
  if (device < 0 || device >= count) return result(cudaErrorInvalidDevice);
  switch (attribute) {
    // Simulated pools export POSIX file descriptors (src/platform/sim.rs, mem_pool_create).
    case cudaDevAttrMemoryPoolsSupported: *value = 1; return cudaSuccess;
    case cudaDevAttrMemoryPoolSupportedHandleTypes: *value = cudaMemHandleTypePosixFileDescriptor; return cudaSuccess;
    // Managed memory, prefetched by the simulator's prefetch (which checks its ranges).
    case cudaDevAttrManagedMemory: *value = 1; return cudaSuccess;
    case cudaDevAttrConcurrentManagedAccess: *value = 1; return cudaSuccess;
    // No access to pageable host memory (no HMM, no ATS), not an integrated GPU.
    case cudaDevAttrPageableMemoryAccess: *value = 0; return cudaSuccess;
    case cudaDevAttrPageableMemoryAccessUsesHostPageTables: *value = 0; return cudaSuccess;
    case cudaDevAttrIntegrated: *value = 0; return cudaSuccess;
    case cudaDevAttrUnifiedAddressing: *value = 1; return cudaSuccess;
    default: return result(cudaErrorNotSupported);
  }
}

// --- memory -----------------------------------------------------------------------------------
cudaError_t cudaMalloc(void **ptr, size_t size) { return allocate(ptr, size, kDevice); }
cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return result(cudaErrorInvalidValue);
  return allocate(ptr, size, kManaged);
}
cudaError_t cudaMallocHost(void **ptr, size_t size) { return allocate(ptr, size, kPinned); }
cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags) {
  (void)flags;  // portable, mapped, write-combined: all the same host memory here
  return allocate(ptr, size, kPinned);
}
cudaError_t cudaFree(void *ptr) { return deallocate(ptr, false); }
cudaError_t cudaFreeHost(void *ptr) { return deallocate(ptr, true); }

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr) {
  if (attributes == nullptr) return result(cudaErrorInvalidValue);
  int device = -1;
  int const type = memory_type(ptr, &device);
  if (type < 0) return result(cudaErrorNotSupported);
  void *const address = const_cast<void *>(ptr);
  attributes->type = static_cast<cudaMemoryType>(type);
  attributes->device = type == cudaMemoryTypeUnregistered ? -2 : device;
  attributes->devicePointer = type == cudaMemoryTypeUnregistered ? nullptr : address;
  attributes->hostPointer = type == cudaMemoryTypeDevice ? nullptr : address;
  return cudaSuccess;
}

cudaError_t cudaMemRangeGetAttribute(void *, size_t, enum cudaMemRangeAttribute, const void *, size_t) {
  return result(cudaErrorNotSupported);  // the simulator records no prefetch location
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t, enum cudaMemPoolAttr, void *) {
  return result(cudaErrorNotSupported);  // simulated pools are handles without attributes
}

CUresult cuPointerGetAttribute(void *, CUpointer_attribute, CUdeviceptr) { return CUDA_ERROR_NOT_SUPPORTED; }

cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t count, struct cudaMemLocation location, unsigned int flags,
                                 cudaStream_t stream) {
  (void)flags;
  (void)stream;
  int const device = location.type == cudaMemLocationTypeHost ? cudaCpuDeviceId : location.id;
  return prefetch(ptr, count, device);
}
cudaError_t cudaMemPrefetchAsync_ptsz(const void *ptr, size_t count, struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream) {
  return cudaMemPrefetchAsync(ptr, count, location, flags, stream);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_on(dst, src, count, kind, resolve(stream, false));
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, cudaMemcpyKind kind, cudaStream_t stream) {
  return memcpy_on(dst, src, count, kind, resolve(stream, true));
}
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  cudaError_t const status = memcpy_on(dst, src, count, kind, nullptr);
  return status != cudaSuccess ? status : from_rmm(rmmStreamSynchronize(nullptr));
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, cudaMemcpyKind kind) {
  cudaError_t const status = memcpy_on(dst, src, count, kind, cudaStreamPerThread);
  return status != cudaSuccess ? status : from_rmm(rmmStreamSynchronize(cudaStreamPerThread));
}

cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream) {
  return memset_on(ptr, value, count, resolve(stream, false));
}
cudaError_t cudaMemsetAsync_ptsz(void *ptr, int value, size_t count, cudaStream_t stream) {
  return memset_on(ptr, value, count, resolve(stream, true));
}
cudaError_t cudaMemset(void *ptr, int value, size_t count) {
  cudaError_t const status = memset_on(ptr, value, count, nullptr);
  return status != cudaSuccess ? status : from_rmm(rmmStreamSynchronize(nullptr));
}
cudaError_t cudaMemset_ptds(void *ptr, int value, size_t count) {
  cudaError_t const status = memset_on(ptr, value, count, cudaStreamPerThread);
  return status != cudaSuccess ? status : from_rmm(rmmStreamSynchronize(cudaStreamPerThread));
}

// --- streams ----------------------------------------------------------------------------------
cudaError_t cudaStreamCreate(cudaStream_t *stream) {
  if (stream == nullptr) return result(cudaErrorInvalidValue);
  return from_rmm(rmmStreamCreate(stream));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags) {
  if (stream == nullptr || (flags & ~static_cast<unsigned int>(cudaStreamNonBlocking)) != 0) return result(cudaErrorInvalidValue);
  cudaStream_t created = nullptr;
  rmmError_t const status = rmmStreamCreate(&created);
  if (status != RMM_SUCCESS) return from_rmm(status);
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  s.stream_flags[created] = flags;
  *stream = created;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  rmmError_t const status = rmmStreamDestroy(stream);
  if (status != RMM_SUCCESS) return result(cudaErrorInvalidResourceHandle);
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  s.stream_flags.erase(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return from_rmm(rmmStreamSynchronize(resolve(stream, false))); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return from_rmm(rmmStreamSynchronize(resolve(stream, true)));
}
// Simulated work is done once enqueued: a query finds it done, and orders the host after it.
cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return cudaStreamSynchronize_ptsz(stream); }
cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int *flags) {
  return stream_flags(resolve(stream, false), flags);
}
cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t stream, unsigned int *flags) {
  return stream_flags(resolve(stream, true), flags);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  (void)stream;
  (void)flags;
  return event_wait(event);
}
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  return cudaStreamWaitEvent(stream, event, flags);
}

// --- events -----------------------------------------------------------------------------------
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  if (event == nullptr) return result(cudaErrorInvalidValue);
  (void)flags;  // timing or not, blocking sync or not: the host waits the same way here
  cudaEvent_t created = new CUevent_st;
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  s.events.insert(created);
  *event = created;
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *event) { return cudaEventCreateWithFlags(event, cudaEventDefault); }

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  State &s = state();
  std::lock_guard<std::mutex> guard(s.lock);
  if (s.events.erase(event) == 0) return result(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) { return event_record(event, resolve(stream, false)); }
cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream) {
  return event_record(event, resolve(stream, true));
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) { return event_wait(event); }
cudaError_t cudaEventQuery(cudaEvent_t event) { return event_wait(event); }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  (void)ms;
  if (!live_event(start) || !live_event(end)) return result(cudaErrorInvalidResourceHandle);
  return result(cudaErrorNotSupported);  // simulated work takes no device time
}

}  // extern "C"
