// Allocation workloads shared by bench_rmm_rs.cu and bench_rapids.cu, so rmm-rs, RAPIDS RMM,
// cudaMalloc and cudaMallocAsync run exactly the same sequences. An allocator is any type with
//   void* allocate(size_t bytes, cudaStream_t stream);
//   void deallocate(void* ptr, size_t bytes, cudaStream_t stream);
//   size_t reserved();   // bytes held from the driver (0 when unknown)
#pragma once
#include <cuda_runtime.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace bench {

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}

struct Rng {  // xorshift64*: the same sequence for every allocator
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  size_t below(size_t n) { return next() % n; }
  size_t log_uniform(size_t lo, size_t hi) {  // sizes log-uniform in [lo, hi]
    double u = (next() >> 11) * (1.0 / 9007199254740992.0);
    return (size_t)std::exp(std::log((double)lo) + u * (std::log((double)hi) - std::log((double)lo)));
  }
};

// Keeps the calling thread on one processor while it lives, then restores its affinity. A
// single-threaded workload runs under one. The lent machines are shared: measured there, a
// thread left to the scheduler, or pinned to whichever processor it was on, ran up to twice
// as slow in spells lasting seconds (another tenant on the same core). So the processor is
// chosen by a short calibration loop timed on each allowed processor: the fastest one runs
// the workload, whatever allocator it measures. BENCH_CPU=N picks the processor instead,
// BENCH_PIN=0 turns pinning off.
struct Pinned {
  cpu_set_t saved{};
  bool pinned = false;
  static bool pin_to(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0;
  }
  static double calibration_ns() {
    auto start = std::chrono::steady_clock::now();
    volatile uint64_t x = 1;
    for (int i = 0; i < 20000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  }
  Pinned() {
    const char* off = std::getenv("BENCH_PIN");
    if ((off && std::string(off) == "0") || sched_getaffinity(0, sizeof saved, &saved) != 0) return;
    if (const char* chosen = std::getenv("BENCH_CPU")) {
      pinned = pin_to(std::atoi(chosen));
      return;
    }
    int best = -1;
    double best_ns = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &saved) || !pin_to(cpu)) continue;
      calibration_ns();  // the first loop on a processor warms it up
      double ns = calibration_ns();
      if (best < 0 || ns < best_ns) best = cpu, best_ns = ns;
    }
    pinned = best >= 0 && pin_to(best);
    if (!pinned) sched_setaffinity(0, sizeof saved, &saved);
  }
  ~Pinned() {
    if (pinned) sched_setaffinity(0, sizeof saved, &saved);
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
};

using clock_type = std::chrono::steady_clock;
inline double ns_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
}

struct Result {
  double ns_per_alloc;
  double footprint;  // peak reserved / peak live bytes (0: not measured)
};

// The pairs workload one step at a time (for `added_per_allocation`), on `stream`. With
// `mixed`, the sizes cycle through kMixedSizes instead of `size`.
constexpr size_t kMixedSizes[8] = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
template <class A>
struct PairSteps {
  A& a;
  size_t size;
  int left;
  cudaStream_t stream = 0;
  bool mixed = false;
  bool done() const { return left == 0; }
  void step() {
    size_t bytes = mixed ? kMixedSizes[left & 7] : size;
    a.deallocate(a.allocate(bytes, stream), bytes, stream);
    --left;
  }
};

// Allocate and free one size, `iterations` times: ns per (allocate + free) pair.
template <class A>
Result pairs(A& a, size_t size, int iterations, cudaStream_t stream) {
  for (int i = 0; i < 100; ++i) a.deallocate(a.allocate(size, stream), size, stream);  // warm up
  auto start = clock_type::now();
  for (int i = 0; i < iterations; ++i) a.deallocate(a.allocate(size, stream), size, stream);
  return {ns_since(start) / iterations, 0};
}

// RMM's random_allocations one step at a time: `count` allocations of sizes uniform in
// [1, max_size], randomly interleaved with frees of random live blocks.
template <class A>
struct RandomSteps {
  A& a;
  int count;
  size_t max_size;
  cudaStream_t stream;
  Rng rng{42};
  std::vector<std::pair<void*, size_t>> live;
  int made = 0;
  RandomSteps(A& a, int count, size_t max_size, cudaStream_t stream)
      : a(a), count(count), max_size(max_size), stream(stream) {
    live.reserve(count);
  }
  bool done() const { return made == count && live.empty(); }
  void step() {
    bool allocate = made < count && (live.empty() || rng.below(2) == 0);
    if (allocate) {
      size_t size = 1 + rng.below(max_size);
      live.emplace_back(a.allocate(size, stream), size);
      ++made;
    } else {
      size_t victim = rng.below(live.size());
      a.deallocate(live[victim].first, live[victim].second, stream);
      live[victim] = live.back();
      live.pop_back();
    }
  }
};

// RandomSteps run to the end: ns per allocation (frees included).
template <class A>
Result random_allocations(A& a, int count, size_t max_size, cudaStream_t stream) {
  RandomSteps<A> steps(a, count, max_size, stream);
  auto start = clock_type::now();
  while (!steps.done()) steps.step();
  return {ns_since(start) / count, 0};
}

// Two allocators on the same steps (two PairSteps or RandomSteps) at once: in slices of
// `slice` steps taken in turn, which of the two goes first alternating, each slice timed. A
// slice lasts microseconds and the spells in which a shared machine runs a thread slower last
// milliseconds to seconds, so they fall on both alike; timing the two one after the other,
// such spells moved their difference by more than it was. ns per allocation of each.
template <class First, class Second>
std::pair<double, double> interleaved(First& first, Second& second, int allocations, int slice = 256) {
  double first_ns = 0, second_ns = 0;
  auto run_slice = [&](auto& steps, double& ns) {
    auto start = clock_type::now();
    for (int i = 0; i < slice && !steps.done(); ++i) steps.step();
    ns += ns_since(start);
  };
  for (bool first_first = true; !first.done() || !second.done(); first_first = !first_first) {
    if (first_first) {
      run_slice(first, first_ns);
      run_slice(second, second_ns);
    } else {
      run_slice(second, second_ns);
      run_slice(first, first_ns);
    }
  }
  return {first_ns / allocations, second_ns / allocations};
}

// What `adapted` costs over `bare` per allocation, timed `interleaved`.
template <class Steps>
double added_per_allocation(Steps& bare, Steps& adapted, int allocations, int slice = 256) {
  auto [bare_ns, adapted_ns] = interleaved(bare, adapted, allocations, slice);
  return adapted_ns - bare_ns;
}

// Steady churn: a working set of `working_set` live blocks of log-uniform sizes up to
// `max_size`; each step frees a random block and allocates a new one. Also measures the
// footprint: peak bytes reserved from the driver over peak live bytes.
template <class A>
Result churn(A& a, int working_set, size_t max_size, int steps, cudaStream_t stream) {
  Rng rng(7);
  std::vector<std::pair<void*, size_t>> live;
  size_t live_bytes = 0, peak_live = 0, peak_reserved = 0;
  for (int i = 0; i < working_set; ++i) {
    size_t size = rng.log_uniform(256, max_size);
    live.emplace_back(a.allocate(size, stream), size);
    live_bytes += size;
  }
  peak_live = live_bytes;
  peak_reserved = a.reserved();
  auto start = clock_type::now();
  for (int step = 0; step < steps; ++step) {
    size_t victim = rng.below(live.size());
    a.deallocate(live[victim].first, live[victim].second, stream);
    live_bytes -= live[victim].second;
    size_t size = rng.log_uniform(256, max_size);
    live[victim] = {a.allocate(size, stream), size};
    live_bytes += size;
    peak_live = std::max(peak_live, live_bytes);
    if ((step & 63) == 0) peak_reserved = std::max(peak_reserved, a.reserved());
  }
  double ns = ns_since(start) / steps;
  peak_reserved = std::max(peak_reserved, a.reserved());
  for (auto& [ptr, size] : live) a.deallocate(ptr, size, stream);
  return {ns, peak_reserved ? (double)peak_reserved / (double)peak_live : 0};
}

// `threads` threads, each on its own stream (with `one_stream`, all on the legacy default
// stream, as threads of a program that never made a stream do), each churning a working set
// of 64 blocks of log-uniform sizes up to 1 MiB. ns per allocation in aggregate (wall time /
// allocations).
template <class A>
Result threaded(A& a, int threads, int per_thread, int device, bool one_stream = false) {
  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams) {
    if (!one_stream) check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
  }
  auto work = [&](int t) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    Rng rng(100 + t);
    std::vector<std::pair<void*, size_t>> live;
    for (int i = 0; i < 64; ++i) {
      size_t size = rng.log_uniform(256, 1 << 20);
      live.emplace_back(a.allocate(size, streams[t]), size);
    }
    for (int i = 0; i < per_thread; ++i) {
      size_t victim = rng.below(live.size());
      a.deallocate(live[victim].first, live[victim].second, streams[t]);
      size_t size = rng.log_uniform(256, 1 << 20);
      live[victim] = {a.allocate(size, streams[t]), size};
    }
    for (auto& [ptr, size] : live) a.deallocate(ptr, size, streams[t]);
  };
  for (int t = 0; t < threads; ++t) work(t);  // warm up every stream's state
  auto start = clock_type::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
  for (auto& th : pool) th.join();
  double ns = ns_since(start) / ((double)threads * (per_thread + 64));
  for (auto& s : streams) {
    if (!one_stream) cudaStreamDestroy(s);
  }
  return {ns, 0};
}

// Every timing of the run, by (workload, allocator) in the order first seen: the benchmark
// goes through all its allocators several times (rounds) and reports, for each pair, the
// median of all timed runs with their minimum and maximum, so that a shared machine's
// slow spells fall on every allocator alike instead of on whichever ran during them.
struct Timings {
  std::vector<double> ns;
  double footprint = 0;  // of the first run, when the resource grew from nothing
};

inline std::vector<std::pair<std::string, Timings>>& timings(const std::string& workload) {
  static std::vector<std::pair<std::string, std::vector<std::pair<std::string, Timings>>>> all;
  for (auto& [w, rows] : all)
    if (w == workload) return rows;
  all.push_back({workload, {}});
  return all.back().second;
}

inline std::vector<std::string>& workload_order() {
  static std::vector<std::string> order;
  return order;
}

inline Timings& timings_of(const std::string& workload, const std::string& allocator) {
  auto& order = workload_order();
  if (std::find(order.begin(), order.end(), workload) == order.end()) order.push_back(workload);
  auto& rows = timings(workload);
  for (auto& [a, t] : rows)
    if (a == allocator) return t;
  rows.push_back({allocator, {}});
  rows.back().second.footprint = -1;
  return rows.back().second;
}

// Prints `workload,allocator,ns,footprint,min,max` rows: the median of every timed run.
inline void print_timings() {
  std::printf("workload,allocator,ns_per_alloc,footprint,ns_min,ns_max\n");
  for (const auto& workload : workload_order()) {
    for (auto& [allocator, t] : timings(workload)) {
      std::vector<double> ns = t.ns;
      std::sort(ns.begin(), ns.end());
      std::printf("%s,%s,%.1f,%.3f,%.1f,%.1f\n", workload.c_str(), allocator.c_str(), ns[ns.size() / 2],
                  t.footprint < 0 ? 0 : t.footprint, ns.front(), ns.back());
    }
  }
}

// Runs every workload on one allocator and records its timings. The first run of each
// workload warms up (caches, page tables, the processor's clock) and is not timed, except
// for `slow` allocators, which run once with fewer iterations; five timed runs follow. The
// single-threaded workloads run pinned to one processor (see Pinned).
// `short_list` runs only pair_256B, random_allocations and threads_8 (for adaptors, whose
// cost is the difference).
template <class A>
void run_all(const std::string& name, A& a, bool slow, int device, bool short_list = false) {
  cudaStream_t stream = 0;
  int scale = slow ? 50 : 1;
  auto row = [&](const char* workload, auto run) {
    std::optional<Pinned> pinned;
    if (std::string(workload).rfind("threads_", 0) != 0) pinned.emplace();
    Timings& t = timings_of(workload, name);
    Result first = run();
    if (t.footprint < 0) t.footprint = first.footprint;
    if (slow) t.ns.push_back(first.ns_per_alloc);
    for (int i = 0; i < (slow ? 0 : 5); ++i) t.ns.push_back(run().ns_per_alloc);
  };
  row("pair_256B", [&] { return pairs(a, 256, 200000 / scale, stream); });
  if (!short_list) row("pair_1MiB", [&] { return pairs(a, 1 << 20, 200000 / scale, stream); });
  row("random_allocations", [&] { return random_allocations(a, 20000 / scale, 1 << 20, stream); });
  if (!short_list) row("churn_1000x16MiB", [&] { return churn(a, 1000, 16 << 20, 20000 / scale, stream); });
  row("threads_8", [&] { return threaded(a, 8, 20000 / scale, device); });
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// The threaded churn as programs spread it: one thread on the NULL stream (the reference),
// eight threads sharing it, and eight and sixteen threads on streams of their own. Five timed
// runs after a warm-up, unpinned (the threads spread over the processors).
template <class A>
void thread_rows(const std::string& name, A& a, int device) {
  auto row = [&](const char* workload, int threads, bool one_stream) {
    threaded(a, threads, 20000, device, one_stream);
    Timings& t = timings_of(workload, name);
    for (int i = 0; i < 5; ++i) t.ns.push_back(threaded(a, threads, 20000, device, one_stream).ns_per_alloc);
  };
  row("1 thread on the NULL stream", 1, true);
  row("8 threads on one NULL stream", 8, true);
  row("8 threads on 8 streams", 8, false);
  row("16 threads on 16 streams", 16, false);
}

// The streams programs allocate on, besides the legacy default stream (NULL): one the
// application created with the runtime (non-blocking, as cuDF's and NCCL's are), the
// per-thread default stream, and any the allocator's own API makes (rmmStreamCreate).
struct NamedStream {
  std::string name;
  cudaStream_t stream;
};

inline std::vector<NamedStream> application_streams() {
  cudaStream_t created = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return {{"application stream", created}, {"per-thread default stream", cudaStreamPerThread}};
}

// Allocate+free pairs on each of `streams`, each timed interleaved with the same pairs on the
// NULL stream (so a slow spell of the host falls on both): rows "<pairs>@NULL",
// "<pairs>@<stream>" (ns per pair) and "ratio <pairs>@<stream> / NULL", for 256 B pairs and for
// pairs cycling through 8 sizes from 256 B to 32 KiB. `samples` timed samples after a warm-up.
template <class A>
void stream_pairs(const std::string& name, A& a, const std::vector<NamedStream>& streams, int samples = 9) {
  for (bool mixed : {false, true}) {
    std::string pairs = mixed ? "pair_mixed_256B-32KiB" : "pair_256B";
    for (const auto& s : streams) {
      for (int i = 0; i <= samples; ++i) {
        Pinned pinned;
        PairSteps<A> on_null{a, 256, 100000, nullptr, mixed}, on_stream{a, 256, 100000, s.stream, mixed};
        auto [null_ns, stream_ns] = interleaved(on_null, on_stream, 100000);
        if (i == 0) continue;
        timings_of(pairs + "@NULL", name).ns.push_back(null_ns);
        timings_of(pairs + "@" + s.name, name).ns.push_back(stream_ns);
        timings_of("ratio " + pairs + "@" + s.name + " / NULL", name).ns.push_back(stream_ns / null_ns);
      }
    }
  }
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

// Makes `device` current and says which it is on stderr.
inline void use_device(int device) {
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::fprintf(stderr, "device: %s\n", prop.name);
}

// How many times the benchmark goes through its allocators (BENCH_ROUNDS, default 3).
inline int rounds() {
  const char* text = std::getenv("BENCH_ROUNDS");
  int n = text ? std::atoi(text) : 3;
  return n > 0 ? n : 3;
}

// The two CUDA baselines.
struct CudaMalloc {
  size_t held = 0;
  void* allocate(size_t bytes, cudaStream_t) {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void deallocate(void* p, size_t, cudaStream_t) { check_cuda(cudaFree(p), "cudaFree"); }
  size_t reserved() { return 0; }
};

struct CudaMallocAsync {
  cudaMemPool_t pool{};
  explicit CudaMallocAsync(int device) {
    check_cuda(cudaDeviceGetDefaultMemPool(&pool, device), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = UINT64_MAX;  // keep freed memory, as a pool does
    check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "set threshold");
  }
  void* allocate(size_t bytes, cudaStream_t stream) {
    void* p = nullptr;
    check_cuda(cudaMallocAsync(&p, bytes, stream), "cudaMallocAsync");
    return p;
  }
  void deallocate(void* p, size_t, cudaStream_t stream) { check_cuda(cudaFreeAsync(p, stream), "cudaFreeAsync"); }
  size_t reserved() {
    uint64_t value = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &value);
    return value;
  }
};

}  // namespace bench

// Threads that start together, and rings of live blocks for them (bench/threads_matrix.hpp).
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

namespace bench {

// Threads kept for the whole program, as a program's own workers are, so that what a thread
// sets up once (its per-thread default stream, an allocator's per-thread caches) lasts from
// one run to the next. Each thread makes `device` current once.
class Crew {
 public:
  Crew(int size, int device) : device_(device), ends_(size) {
    for (int t = 0; t < size; ++t) threads_.emplace_back(&Crew::work, this, t);
  }
  ~Crew() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;

  int size() const { return (int)threads_.size(); }

  // Runs job(t) on the first `threads` threads (t = 0 .. threads - 1). Each job prepares
  // what it will not time, calls start() once, which returns when every job has called it,
  // calls stop(t) once at the end of what is timed, and cleans up. Answers the wall time in
  // ns from the moment all started to the last stop.
  double run(int threads, const std::function<void(int)>& job) {
    if (threads < 1 || threads > size()) {
      std::fprintf(stderr, "Crew::run: %d threads asked of a crew of %d\n", threads, size());
      std::exit(1);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      active_ = threads;
      done_ = 0;
      ready_.store(0);
      go_.store(false);
      ++generation_;
    }
    wake_.notify_all();
    while (ready_.load(std::memory_order_acquire) < threads) std::this_thread::yield();
    auto start = clock_type::now();
    go_.store(true, std::memory_order_release);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_ == active_; });
    auto last = *std::max_element(ends_.begin(), ends_.begin() + threads);
    return std::chrono::duration<double, std::nano>(last - start).count();
  }

  // For jobs: waits until every job of the run is ready (yielding, for hosts with fewer
  // processors than threads).
  void start() {
    ready_.fetch_add(1, std::memory_order_acq_rel);
    while (!go_.load(std::memory_order_acquire)) std::this_thread::yield();
  }
  // For jobs: the end of job t's timed part.
  void stop(int t) { ends_[t] = clock_type::now(); }

 private:
  void work(int t) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (t >= active_) continue;
      }
      (*job_)(t);
      std::lock_guard<std::mutex> lock(mutex_);
      if (++done_ == active_) finished_.notify_one();
    }
  }

  int device_;
  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  int active_ = 0, done_ = 0;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<int> ready_{0};
  std::atomic<bool> go_{false};
  std::vector<clock_type::time_point> ends_;
  std::vector<std::thread> threads_;
};

// What a ring allocates: 256 B every time; one of kMixedSizes (256 B to 32 KiB) at random; or
// uniform in [1 B, 4 MiB], as RMM's random_allocations draws.
enum class RingSizes { b256, mixed, random4m };

inline size_t ring_size(RingSizes sizes, Rng& rng) {
  switch (sizes) {
    case RingSizes::b256:
      return 256;
    case RingSizes::mixed:
      return kMixedSizes[rng.below(8)];
    default:
      return 1 + rng.below((size_t)4 << 20);
  }
}

// One thread's ring of 8 live blocks on `stream`: each pair frees the oldest block and
// allocates one in its place. The sizes come from an Rng seeded with the thread's index, so
// every allocator and every build sees the same sequence.
template <class A>
struct Ring {
  static constexpr int kLive = 8;
  A& a;
  cudaStream_t stream;
  RingSizes sizes;
  Rng rng;
  std::pair<void*, size_t> live[kLive];
  Ring(A& a, cudaStream_t stream, RingSizes sizes, int thread)
      : a(a), stream(stream), sizes(sizes), rng(1000 + thread) {
    for (auto& block : live) allocate(block);
  }
  ~Ring() {
    for (auto& [ptr, size] : live) a.deallocate(ptr, size, stream);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
  void allocate(std::pair<void*, size_t>& block) {
    block.second = ring_size(sizes, rng);
    block.first = a.allocate(block.second, stream);
  }
  void pairs(long count) {
    for (long i = 0; i < count; ++i) {
      auto& block = live[i % kLive];
      a.deallocate(block.first, block.second, stream);
      allocate(block);
    }
  }
};

// `threads` threads of `crew`, thread t with a Ring on streams[t], all starting together,
// `per_thread` pairs each: ns per pair in aggregate (wall time over every thread's pairs).
// Filling and emptying the rings is not timed.
template <class A>
double ring_pairs(Crew& crew, A& a, int threads, long per_thread, const std::vector<cudaStream_t>& streams,
                  RingSizes sizes) {
  double ns = crew.run(threads, [&](int t) {
    Ring<A> ring(a, streams[t], sizes, t);
    crew.start();
    ring.pairs(per_thread);
    crew.stop(t);
  });
  return ns / ((double)threads * (double)per_thread);
}

// A single-producer single-consumer queue of blocks (a fixed ring), for the hand-off shape.
struct Handoff {
  static constexpr size_t kSlots = 1024;
  std::pair<void*, size_t> slots[kSlots];
  alignas(64) std::atomic<size_t> head{0};  // written by the consumer
  alignas(64) std::atomic<size_t> tail{0};  // written by the producer
  void push(std::pair<void*, size_t> block) {
    size_t at = tail.load(std::memory_order_relaxed);
    while (at - head.load(std::memory_order_acquire) == kSlots) std::this_thread::yield();
    slots[at % kSlots] = block;
    tail.store(at + 1, std::memory_order_release);
  }
  std::pair<void*, size_t> pop() {
    size_t at = head.load(std::memory_order_relaxed);
    while (tail.load(std::memory_order_acquire) == at) std::this_thread::yield();
    auto block = slots[at % kSlots];
    head.store(at + 1, std::memory_order_release);
    return block;
  }
};

// Producers and consumers (a pipeline's stages, a data loader feeding a trainer): `threads` / 2
// producer threads each allocate `per_thread` blocks on `stream` and hand each to a consumer
// thread of their own, which frees it on the same stream. Every free comes from another thread
// than the allocation. ns per pair in aggregate (wall time over all pairs).
template <class A>
double handoff_pairs(Crew& crew, A& a, int threads, long per_thread, cudaStream_t stream, RingSizes sizes) {
  int pairs_of_threads = threads / 2;
  std::vector<std::unique_ptr<Handoff>> queues;
  for (int p = 0; p < pairs_of_threads; ++p) queues.push_back(std::make_unique<Handoff>());
  double ns = crew.run(2 * pairs_of_threads, [&](int t) {
    Handoff& queue = *queues[t / 2];
    Rng rng(3000 + t / 2);
    crew.start();
    for (long i = 0; i < per_thread; ++i) {
      if (t % 2 == 0) {
        size_t size = ring_size(sizes, rng);
        queue.push({a.allocate(size, stream), size});
      } else {
        auto [ptr, size] = queue.pop();
        a.deallocate(ptr, size, stream);
      }
    }
    crew.stop(t);
  });
  return ns / ((double)pairs_of_threads * (double)per_thread);
}

// One thread's walk on a stream of its own that lives only as long as the walk, as a task of a
// program that makes a stream per task does: `steps` steps, each freeing a live block at random
// or allocating one (a coin flip, allocating when nothing is live), so that the live set
// wanders; then the rest is freed, the stream synchronized and destroyed. The sizes and coins
// come from an Rng seeded with the thread's index. Answers the allocations it made.
template <class A>
long walk_on_short_lived_stream(A& a, long steps, RingSizes sizes, int thread) {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  Rng rng(2000 + thread);
  std::vector<std::pair<void*, size_t>> live;
  long allocations = 0;
  for (long i = 0; i < steps; ++i) {
    if (live.empty() || rng.below(2) == 0) {
      size_t size = ring_size(sizes, rng);
      live.emplace_back(a.allocate(size, stream), size);
      ++allocations;
    } else {
      size_t victim = rng.below(live.size());
      a.deallocate(live[victim].first, live[victim].second, stream);
      live[victim] = live.back();
      live.pop_back();
    }
  }
  for (auto& [ptr, size] : live) a.deallocate(ptr, size, stream);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  check_cuda(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return allocations;
}

// `threads` threads of `crew`, each walking `steps` steps on a short-lived stream, the stream's
// making and destroying timed: ns per allocation in aggregate.
template <class A>
double short_lived_walks(Crew& crew, A& a, int threads, long steps, RingSizes sizes) {
  std::atomic<long> allocations{0};
  double ns = crew.run(threads, [&](int t) {
    crew.start();
    long made = walk_on_short_lived_stream(a, steps, sizes, t);
    crew.stop(t);
    allocations.fetch_add(made, std::memory_order_relaxed);
  });
  return ns / (double)std::max(1L, allocations.load());
}

}  // namespace bench
