// A program written the way code for legacy RMM (0.9 to 0.14) was written, changed in nothing
// to build against rmm-rs: it includes only <rmm/rmm.h> and relies on it for the CUDA runtime
// (cudaStreamCreate, cudaMemcpy), the C and C++ standard library legacy RMM's header brought
// in (std::vector, std::string, std::cout, std::chrono, std::mutex, exit, atoi ...), uses the
// positional rmmOptions_t initializer, assigns a std::vector<int> to options.devices, and
// expects legacy RMM's answers: refused before rmmInitialize, size 0 always fine, the four
// allocation modes each initialized and finalized in turn.
//
//   legacy_program [rounds]      (exit 0: every check held)
#include <rmm/rmm.h>

namespace {

int failures = 0;

#define EXPECT(cond)                                                                    \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::cout << __FILE__ << ":" << __LINE__ << ": FAILED: " #cond << " ("           \
                << rmmGetLastErrorMessage() << ")" << std::endl;                        \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

constexpr size_t size_word{4};
constexpr size_t size_kb{size_t{1} << 10};
constexpr size_t size_mb{size_t{1} << 20};
constexpr size_t size_pb{size_t{1} << 50};

template <rmmAllocationMode_t mode>
struct ModeType {
  static constexpr rmmAllocationMode_t alloc_mode{mode};
};

void refused_before_initialize(cudaStream_t stream) {
  char *a = nullptr;
  EXPECT(!rmmIsInitialized(nullptr));
  EXPECT(RMM_ALLOC(&a, size_kb, stream) == RMM_ERROR_NOT_INITIALIZED);
  EXPECT(a == nullptr);
  EXPECT(RMM_FREE(a, stream) != RMM_SUCCESS);
  size_t free_bytes = 0, total_bytes = 0;
  EXPECT(rmmGetInfo(&free_bytes, &total_bytes, stream) != RMM_SUCCESS);
  EXPECT(rmmFinalize() != RMM_SUCCESS);
}

void realloc_keeps(cudaStream_t stream, size_t from, size_t to) {
  int *a = nullptr;
  std::vector<int> input(from, 1234);
  EXPECT(RMM_ALLOC(&a, from * sizeof(int), stream) == RMM_SUCCESS);
  EXPECT(cudaMemcpy(a, input.data(), from * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  EXPECT(RMM_REALLOC(&a, to * sizeof(int), stream) == RMM_SUCCESS);
  std::vector<int> output(to);
  EXPECT(cudaMemcpy(output.data(), a, to * sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess);
  for (size_t i = 0; i < (from < to ? from : to); ++i) {
    if (output[i] != 1234) {
      EXPECT(output[i] == 1234);
      break;
    }
  }
  EXPECT(RMM_FREE(a, stream) == RMM_SUCCESS);
}

template <typename Mode>
void run_mode(cudaStream_t stream, bool every_device) {
  rmmOptions_t options{Mode::alloc_mode, 0, false};  // as legacy code wrote it
  if (every_device) {
    int count = 0;
    EXPECT(cudaGetDeviceCount(&count) == cudaSuccess);
    std::vector<int> devices;
    for (int device = 0; device < count; ++device) devices.push_back(device);
    options.devices = devices;
    EXPECT(options.devices.size() == devices.size());
  }
  EXPECT(rmmInitialize(&options) == RMM_SUCCESS);
  rmmOptions_t in_force;
  EXPECT(rmmIsInitialized(&in_force));
  EXPECT(in_force.allocation_mode == options.allocation_mode);
  EXPECT(in_force.initial_pool_size == options.initial_pool_size);
  EXPECT(in_force.enable_logging == options.enable_logging);
  EXPECT(rmmInitialize(&in_force) != RMM_SUCCESS);  // a second one changes nothing
  EXPECT(rmmIsInitialized(nullptr));

  char *a = nullptr;
  EXPECT(RMM_ALLOC(&a, 0, stream) == RMM_SUCCESS);
  EXPECT(a == nullptr);
  char **p{nullptr};
  EXPECT(RMM_ALLOC(p, 0, stream) == RMM_SUCCESS);
  EXPECT(RMM_ALLOC(p, 4, stream) == RMM_ERROR_INVALID_ARGUMENT);
  EXPECT(RMM_FREE(nullptr, stream) == RMM_SUCCESS);
  EXPECT(RMM_FREE(0, stream) == RMM_SUCCESS);

  for (size_t size : {size_word, size_kb, size_mb, 64 * size_mb}) {
    EXPECT(RMM_ALLOC(&a, size, stream) == RMM_SUCCESS);
    EXPECT(a != nullptr);
    EXPECT(RMM_FREE(a, stream) == RMM_SUCCESS);
  }
  a = nullptr;
  EXPECT(RMM_ALLOC(&a, size_pb, stream) != RMM_SUCCESS);
  EXPECT(RMM_FREE(a, stream) == RMM_SUCCESS);

  realloc_keeps(stream, 2000, 1000);
  realloc_keeps(stream, 1000, 2000);

  char *b = nullptr;
  ptrdiff_t offset = -1;
  EXPECT(rmm::alloc(&a, size_mb, stream, __FILE__, __LINE__) == RMM_SUCCESS);
  EXPECT(RMM_ALLOC(&b, size_mb, stream) == RMM_SUCCESS);
  EXPECT(rmmGetAllocationOffset(&offset, a, stream) == RMM_SUCCESS && offset >= 0);
  EXPECT(rmmGetAllocationOffset(&offset, b, stream) == RMM_SUCCESS && offset >= 0);
  EXPECT(rmm::free(a, stream, __FILE__, __LINE__) == RMM_SUCCESS);
  EXPECT(RMM_FREE(b, stream) == RMM_SUCCESS);

  size_t free_bytes = 0, total_bytes = 0;
  EXPECT(rmmGetInfo(&free_bytes, &total_bytes, stream) == RMM_SUCCESS);
  EXPECT(total_bytes >= free_bytes && total_bytes > 0);

  EXPECT(rmmFinalize() == RMM_SUCCESS);
  EXPECT(!rmmIsInitialized(nullptr));
}

template <typename Mode>
void run_both(cudaStream_t stream) {
  run_mode<Mode>(stream, false);
  run_mode<Mode>(stream, true);
}

}  // namespace

// Written as v0.14's tests/performance/random_allocate.cpp was: a random plan of sizes from
// srand/rand, each allocate and free timed with std::chrono, live allocations in a std::set
// under a std::mutex, averages printed with <iomanip>, std::runtime_error for a failed call,
// and exit() on a broken plan; everything from <rmm/rmm.h> alone.
void random_allocate_style(cudaStream_t stream) {
  rmmOptions_t options{};
  options.allocation_mode = PoolAllocation;
  EXPECT(rmmInitialize(&options) == RMM_SUCCESS);
  srand(123898464);
  const int count = 200;
  unsigned *sizes = static_cast<unsigned *>(malloc(count * sizeof(unsigned)));
  if (sizes == nullptr) exit(1);
  for (int i = 0; i < count; ++i) sizes[i] = static_cast<unsigned>(rand() % (1 << 20)) + 1024;
  std::vector<void *> buffers(count, nullptr);
  std::set<int> live;
  std::mutex live_lock;
  auto allocating = std::chrono::duration<double>::zero();
  try {
    for (int i = 0; i < count; ++i) {
      auto start = std::chrono::high_resolution_clock::now();
      if (RMM_ALLOC(&buffers[i], sizes[i], stream) != RMM_SUCCESS) throw std::runtime_error(std::string("RMM_ALLOC failed"));
      allocating += std::chrono::high_resolution_clock::now() - start;
      std::lock_guard<std::mutex> guard(live_lock);
      live.insert(i);
      if (rand() % 3 == 0) {
        int victim = *live.begin();
        if (RMM_FREE(buffers[victim], stream) != RMM_SUCCESS) throw std::runtime_error("RMM_FREE failed");
        live.erase(victim);
      }
    }
  } catch (const std::exception &error) {
    std::cout << "random_allocate_style: " << error.what() << std::endl;
    ++failures;
  }
  for (int index : live) EXPECT(RMM_FREE(buffers[index], stream) == RMM_SUCCESS);
  std::cout << "random_allocate_style: " << count << " allocations, average " << std::fixed << std::setprecision(2)
            << std::chrono::duration_cast<std::chrono::duration<double, std::micro>>(allocating).count() / count
            << " us, at " << std::time(nullptr) << std::endl;
  assert(live.size() <= static_cast<size_t>(count));
  free(sizes);
  EXPECT(rmmFinalize() == RMM_SUCCESS);
}

int main(int argc, char **argv) {
  const std::string name = argv[0];
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  cudaStream_t stream = nullptr;  // legacy tests used it before creating it, too
  refused_before_initialize(stream);
  EXPECT(cudaStreamCreate(&stream) == cudaSuccess);
  random_allocate_style(stream);
  for (int round = 0; round < rounds; ++round) {
    run_both<ModeType<CudaDefaultAllocation>>(stream);
    run_both<ModeType<PoolAllocation>>(stream);
    run_both<ModeType<CudaManagedMemory>>(stream);
    run_both<ModeType<static_cast<rmmAllocationMode_t>(PoolAllocation | CudaManagedMemory)>>(stream);
  }
  // The other ways legacy code filled the device list.
  rmmOptions_t options{};
  options.devices = {0};
  options.devices.push_back(0);
  EXPECT(options.devices.size() == 2 && options.devices[1] == 0);
  EXPECT(rmmInitialize(&options) == RMM_ERROR_INVALID_ARGUMENT);  // listed twice
  options.devices.clear();
  EXPECT(options.devices.empty());
  std::vector<int> too_many(RMM_MAX_DEVICES + 1, 0);
  options.devices = too_many;
  EXPECT(options.devices.size() == too_many.size());
  EXPECT(rmmInitialize(&options) == RMM_ERROR_INVALID_ARGUMENT);  // more than it can hold
  EXPECT(!rmmIsInitialized(nullptr));
  refused_before_initialize(stream);
  EXPECT(cudaStreamDestroy(stream) == cudaSuccess);
  if (failures > 0) {
    std::cout << "FAIL: " << name << ": " << failures << " check(s) failed" << std::endl;
    return 1;
  }
  std::cout << "PASS: " << name << std::endl;
  return 0;
}
