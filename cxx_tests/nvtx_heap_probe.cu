// Which memory compute-sanitizer accepts as an NVTX heap, and what the process must have done
// first (scripts/gpu-sanitizer.sh, SANITIZER_DIAGNOSE=heaps). It uses NVTX's own headers and
// the driver API, not rmm-rs, so what the tool answers is about the memory, not about us.
//
//   nvtx_heap_probe INIT KIND
//
// INIT   what runs before the allocation: push (the primary context pushed for the allocation
//        and the registration), popped (pushed for the allocation, popped before the
//        registration: no context current then), setcurrent (cuCtxSetCurrent of the primary
//        context), runtime (cudaFree(nullptr)).
// KIND   device (cuMemAlloc), managed (cuMemAllocManaged), pinned (cuMemHostAlloc), async
//        (cuMemAllocAsync from the device's pool), vmm (one cuMemCreate mapping), vmm2 (two
//        mappings side by side, one heap over both), inner (a heap over 1 MiB in the middle
//        of a cuMemAlloc block).
//
// It registers the heap, one region of 256 bytes at its start, writes the region from a
// kernel, and unregisters both. The tool prints a warning for a call it refuses; the program
// prints the heap handle.
#include <cuda.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExtMem.h>

#include <cstdio>
#include <cstring>

namespace {

__global__ void touch(int *base) {
  if (threadIdx.x == 0) base[0] = 1;
}

int check(CUresult result, const char *what) {
  if (result != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(result, &name);
    std::fprintf(stderr, "nvtx_heap_probe: %s: %s\n", what, name ? name : "?");
    return 1;
  }
  return 0;
}

// Reserves 2 * size bytes and maps `pieces` (1 or 2) allocations of `size` bytes in it.
int map_vmm(CUdevice device, size_t size, int pieces, CUdeviceptr *out) {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  if (check(cuMemAddressReserve(out, 2 * size, 0, 0, 0), "cuMemAddressReserve")) return 1;
  for (int piece = 0; piece < pieces; ++piece) {
    CUmemGenericAllocationHandle handle;
    if (check(cuMemCreate(&handle, size, &prop, 0), "cuMemCreate")) return 1;
    if (check(cuMemMap(*out + piece * size, size, 0, handle, 0), "cuMemMap")) return 1;
    cuMemRelease(handle);
  }
  CUmemAccessDesc access;
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return check(cuMemSetAccess(*out, pieces * size, &access, 1), "cuMemSetAccess");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: nvtx_heap_probe push|popped|setcurrent|runtime KIND\n");
    return 2;
  }
  const char *init = argv[1], *kind = argv[2];
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  CUdevice device;
  CUcontext primary;
  if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&device, 0), "cuDeviceGet") ||
      check(cuDevicePrimaryCtxRetain(&primary, device), "cuDevicePrimaryCtxRetain"))
    return 1;
  if (std::strcmp(init, "runtime") == 0 && cudaFree(nullptr) != cudaSuccess) return 1;
  if (std::strcmp(init, "setcurrent") == 0 && check(cuCtxSetCurrent(primary), "cuCtxSetCurrent")) return 1;
  bool pushed = std::strcmp(init, "push") == 0 || std::strcmp(init, "popped") == 0;
  if (pushed && check(cuCtxPushCurrent(primary), "cuCtxPushCurrent")) return 1;

  const size_t size = 2 << 20;
  CUdeviceptr base = 0;
  size_t heap_size = size;
  int failed = 0;
  if (std::strcmp(kind, "device") == 0 || std::strcmp(kind, "inner") == 0) {
    failed = check(cuMemAlloc(&base, 3 * size), "cuMemAlloc");
    if (kind[0] == 'i') base += size;
  } else if (std::strcmp(kind, "managed") == 0) {
    failed = check(cuMemAllocManaged(&base, size, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  } else if (std::strcmp(kind, "pinned") == 0) {
    void *host = nullptr;
    failed = check(cuMemHostAlloc(&host, size, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
    base = reinterpret_cast<CUdeviceptr>(host);
  } else if (std::strcmp(kind, "async") == 0) {
    failed = check(cuMemAllocAsync(&base, size, nullptr), "cuMemAllocAsync") || check(cuStreamSynchronize(nullptr), "sync");
  } else if (std::strcmp(kind, "vmm") == 0 || std::strcmp(kind, "vmm2") == 0) {
    int pieces = kind[3] == '2' ? 2 : 1;
    failed = map_vmm(device, size, pieces, &base);
    heap_size = pieces * size;
  } else {
    std::fprintf(stderr, "nvtx_heap_probe: unknown kind %s\n", kind);
    return 2;
  }
  if (failed) return 1;
  CUcontext popped;
  if (std::strcmp(init, "popped") == 0 && check(cuCtxPopCurrent(&popped), "cuCtxPopCurrent")) return 1;

  nvtxDomainHandle_t domain = nvtxDomainCreateA("nvtx_heap_probe");
  nvtxMemVirtualRangeDesc_t range = {heap_size, reinterpret_cast<void *>(base)};
  nvtxMemHeapDesc_t desc;
  std::memset(&desc, 0, sizeof desc);
  desc.extCompatID = NVTX_EXT_COMPATID_MEM;
  desc.structSize = sizeof desc;
  desc.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  desc.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  desc.typeSpecificDescSize = sizeof range;
  desc.typeSpecificDesc = &range;
  nvtxMemHeapHandle_t heap = nvtxMemHeapRegister(domain, &desc);
  std::printf("nvtx_heap_probe %s %s: heap %p over %#llx+%zu\n", init, kind, static_cast<void *>(heap),
              static_cast<unsigned long long>(base), heap_size);

  nvtxMemVirtualRangeDesc_t region = {256, reinterpret_cast<void *>(base)};
  nvtxMemRegionsRegisterBatch_t batch;
  std::memset(&batch, 0, sizeof batch);
  batch.extCompatID = NVTX_EXT_COMPATID_MEM;
  batch.structSize = sizeof batch;
  batch.regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  batch.heap = heap;
  batch.regionCount = 1;
  batch.regionDescElementSize = sizeof region;
  batch.regionDescElements = &region;
  nvtxMemRegionsRegister(domain, &batch);
  if (std::strcmp(init, "runtime") != 0) {
    // The kernel needs the runtime; the registrations above ran before it.
    cuCtxSetCurrent(primary);
  }
  touch<<<1, 32>>>(reinterpret_cast<int *>(base));
  cudaError_t launched = cudaDeviceSynchronize();
  std::printf("nvtx_heap_probe %s %s: kernel %s\n", init, kind, cudaGetErrorName(launched));

  nvtxMemRegionRef_t ref;
  ref.pointer = reinterpret_cast<void *>(base);
  nvtxMemRegionsUnregisterBatch_t unregister;
  std::memset(&unregister, 0, sizeof unregister);
  unregister.extCompatID = NVTX_EXT_COMPATID_MEM;
  unregister.structSize = sizeof unregister;
  unregister.refType = NVTX_MEM_REGION_REF_TYPE_POINTER;
  unregister.refCount = 1;
  unregister.refElementSize = sizeof ref;
  unregister.refElements = &ref;
  nvtxMemRegionsUnregister(domain, &unregister);
  nvtxMemHeapUnregister(domain, heap);
  return 0;
}
