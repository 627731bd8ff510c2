// An rmm-rs resource handle as a benchmark allocator (see workloads.hpp), shared by
// bench_rmm_rs.cu and adaptor_probe.cpp. Any failure ends the run with rmm's message.
#pragma once
#include <cstdio>
#include <cstdlib>

#include "rmm.h"
#include "workloads.hpp"

namespace bench {

inline void ok(rmmError_t status, const char* what) {
  if (status != RMM_SUCCESS) {
    std::fprintf(stderr, "%s: %s (%s)\n", what, rmmGetErrorString(status), rmmGetLastErrorMessage());
    std::exit(1);
  }
}

struct RmmRs {
  rmmResource_t resource;
  rmmResource_t pool_for_size;  // the resource whose pool size is the footprint (may be NULL)
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    ok(rmmResourceAllocate(resource, &p, bytes, stream), "rmmResourceAllocate");
    return p;
  }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) {
    ok(rmmResourceDeallocate(resource, p, bytes, stream), "rmmResourceDeallocate");
  }
  size_t reserved() {
    size_t size = 0;
    if (pool_for_size && rmmPoolResourceGetSize(pool_for_size, &size) != RMM_SUCCESS) return 0;
    return size;
  }
};

// Legacy RMM's RMM_ALLOC / RMM_FREE: the current device's resource, and frees that name no
// resource.
struct RmmRsLegacy {
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    ok(RMM_ALLOC(&p, bytes, stream), "RMM_ALLOC");
    return p;
  }
  void deallocate(void* p, size_t, cudaStream_t stream) { ok(RMM_FREE(p, stream), "RMM_FREE"); }
  size_t reserved() { return 0; }
};

}  // namespace bench
