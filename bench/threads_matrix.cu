// The threads matrix (bench/threads_matrix.hpp) on builds of rmm-rs and on cudaMallocAsync, all
// in one process: each build's librmm.so is loaded privately (RTLD_LOCAL | RTLD_DEEPBIND, as
// bench/pair_ab.c does, so each keeps its own globals), and in every cell the builds take turns
// run by run with cudaMallocAsync. Per build, one pool (rmmPoolResourceCreate over
// rmmCudaResourceCreate, growing from nothing), through rmmResourceAllocate and
// rmmResourceDeallocate (MATRIX_APIS "resource") and through RMM_ALLOC and RMM_FREE with that
// pool as the current device's resource ("legacy"). bench/threads_matrix_rapids.cu runs RAPIDS
// RMM's pool through the same matrix.
//
//   threads_matrix NAME=LIB.so [NAME=LIB.so ...]     (scripts/gpu-threads-matrix.sh runs it)
#include <dlfcn.h>

#include <memory>
#include <type_traits>

#include "rmm.h"
#include "threads_matrix.hpp"

namespace {

// One build of librmm.so and its pool.
struct Build {
  std::string name;
  decltype(&rmmCudaResourceCreate) cuda_create;
  decltype(&rmmPoolResourceCreate) pool_create;
  decltype(&rmmResourceAllocate) allocate;
  decltype(&rmmResourceDeallocate) deallocate;
  decltype(&rmmAlloc) alloc;
  decltype(&rmmFree) free;
  decltype(&rmmSetCurrentDeviceResource) set_current;
  decltype(&rmmStreamCreate) stream_create;
  decltype(&rmmStreamDestroy) stream_destroy;
  decltype(&rmmPoolResourceGetSize) pool_size;
  decltype(&rmmResourceRelease) release;
  decltype(&rmmGetErrorString) error_string;
  decltype(&rmmGetLastErrorMessage) message;
  rmmResource_t cuda = nullptr, pool = nullptr;

  void ok(rmmError_t status, const char* what) const {
    if (status != RMM_SUCCESS) {
      std::fprintf(stderr, "%s: %s: %s (%s)\n", name.c_str(), what, error_string(status), message());
      std::exit(1);
    }
  }

  Build(std::string build_name, const std::string& path) : name(std::move(build_name)) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!lib) {
      std::fprintf(stderr, "threads_matrix: %s\n", dlerror());
      std::exit(1);
    }
    auto find = [&](auto& function, const char* symbol) {
      void* address = dlsym(lib, symbol);
      if (!address) {
        std::fprintf(stderr, "threads_matrix: %s has no %s\n", path.c_str(), symbol);
        std::exit(1);
      }
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(address);
    };
    find(cuda_create, "rmmCudaResourceCreate");
    find(pool_create, "rmmPoolResourceCreate");
    find(allocate, "rmmResourceAllocate");
    find(deallocate, "rmmResourceDeallocate");
    find(alloc, "rmmAlloc");
    find(free, "rmmFree");
    find(set_current, "rmmSetCurrentDeviceResource");
    find(stream_create, "rmmStreamCreate");
    find(stream_destroy, "rmmStreamDestroy");
    find(pool_size, "rmmPoolResourceGetSize");
    find(release, "rmmResourceRelease");
    find(error_string, "rmmGetErrorString");
    find(message, "rmmGetLastErrorMessage");
    ok(cuda_create(&cuda), "rmmCudaResourceCreate");
    ok(pool_create(&pool, cuda, 0, 0), "rmmPoolResourceCreate");
    ok(set_current(pool, nullptr), "rmmSetCurrentDeviceResource");
  }
};

// The pool through the resource API.
struct ResourceApi {
  const Build& b;
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    b.ok(b.allocate(b.pool, &p, bytes, stream), "rmmResourceAllocate");
    return p;
  }
  void deallocate(void* p, size_t bytes, cudaStream_t stream) {
    b.ok(b.deallocate(b.pool, p, bytes, stream), "rmmResourceDeallocate");
  }
};

// The pool as the current device's resource, through RMM_ALLOC and RMM_FREE (what the macros
// expand to: rmmAlloc and rmmFree with the caller's file and line).
struct LegacyApi {
  const Build& b;
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    b.ok(b.alloc(&p, bytes, stream, __FILE__, __LINE__), "RMM_ALLOC");
    return p;
  }
  void deallocate(void* p, size_t, cudaStream_t stream) { b.ok(b.free(p, stream, __FILE__, __LINE__), "RMM_FREE"); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s NAME=LIB.so [NAME=LIB.so ...]\n", argv[0]);
    return 2;
  }
  const int device = 0;
  bench::use_device(device);
  std::vector<std::unique_ptr<Build>> builds;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t equals = arg.find('=');
    if (equals == std::string::npos || equals == 0) {
      std::fprintf(stderr, "threads_matrix: '%s' is not NAME=LIB.so\n", argv[i]);
      return 2;
    }
    builds.push_back(std::make_unique<Build>(arg.substr(0, equals), arg.substr(equals + 1)));
  }
  std::vector<ResourceApi> resource_apis;
  std::vector<LegacyApi> legacy_apis;
  resource_apis.reserve(builds.size());
  legacy_apis.reserve(builds.size());
  std::vector<bench::MatrixAllocator> allocators;
  int first_resource = -1, first_legacy = -1;  // the first build's, which the others are compared to
  for (const auto& b : builds) {
    auto add = [&](bench::MatrixAllocator m, int& first) {
      const Build* build = b.get();
      m.create_stream = [build] {
        cudaStream_t s = nullptr;
        build->ok(build->stream_create(&s), "rmmStreamCreate");
        return s;
      };
      m.destroy_stream = [build](cudaStream_t s) { build->ok(build->stream_destroy(s), "rmmStreamDestroy"); };
      m.held = [build] {
        size_t bytes = 0;
        build->ok(build->pool_size(build->pool, &bytes), "rmmPoolResourceGetSize");
        return bytes;
      };
      m.give_back = [build] { build->ok(build->release(build->pool, nullptr), "rmmResourceRelease"); };
      m.baseline = first;
      if (first < 0) first = (int)allocators.size();
      allocators.push_back(std::move(m));
    };
    std::string prefix = "rmm-rs[" + b->name + "] pool: ";
    int resource = -1;  // this build's resource API column, whose rmmStreamCreate streams RMM_ALLOC shares
    if (bench::matrix_api("resource")) {
      resource_apis.push_back({*b});
      resource = (int)allocators.size();
      add(bench::matrix_allocator(prefix + "rmmResourceAllocate", resource_apis.back()), first_resource);
    }
    if (bench::matrix_api("legacy")) {
      legacy_apis.push_back({*b});
      auto m = bench::matrix_allocator(prefix + "RMM_ALLOC", legacy_apis.back());
      m.streams_from = resource;
      add(std::move(m), first_legacy);
    }
  }
  std::optional<bench::CudaMallocAsync> cuda_async;
  if (bench::matrix_api("async")) {
    cuda_async.emplace(device);
    auto m = bench::matrix_allocator("cudaMallocAsync", *cuda_async, bench::env_number("MATRIX_SLOW", 8));
    m.held = [&cuda_async] { return cuda_async->reserved(); };
    m.give_back = [&cuda_async] {
      bench::check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      bench::check_cuda(cudaMemPoolTrimTo(cuda_async->pool, 0), "cudaMemPoolTrimTo");
    };
    allocators.push_back(std::move(m));
  }
  if (allocators.empty()) {
    std::fprintf(stderr, "threads_matrix: MATRIX_APIS selects none of resource, legacy, async\n");
    return 2;
  }
  bench::run_matrix(allocators, device);
  return 0;
}
