// The threads matrix, shared by bench/threads_matrix.cu (builds of rmm-rs, cudaMallocAsync) and
// bench/threads_matrix_rapids.cu (RAPIDS RMM's pool): every cell is a number of threads, the
// streams they allocate on and the sizes they draw, and each thread of a cell runs a ring of
// 8 live blocks (bench::Ring: free the oldest, allocate in its place) with its own fixed seed.
// Threads come from one Crew for the whole program and start together; ns per pair in
// aggregate (wall time over all pairs of all threads). The short-lived rows run another shape
// (bench::Walk, as programs that make a stream per task do): each thread makes a non-blocking
// stream inside the timing, allocates or frees at random (the live set wanders), frees the
// rest, synchronizes and destroys the stream; ns per allocation in aggregate. In each cell every allocator runs once
// untimed, then BENCH_RUNS (default 5) timed runs, the allocators taking turns run by run
// (which goes first rotating), so that a slow spell of the host falls on all of them.
//
// Environment (comma-separated subsets; unknown names end the run):
//   MATRIX_THREADS  1,2,4,8,16 (the cells run by threads, fewest first, so one thread's rows
//                   run before the program had more threads)
//   MATRIX_STREAMS  null (the legacy default stream, shared), ptds (cudaStreamPerThread),
//                   rmm (rmmStreamCreate, one each; rmm-rs only), app (one application stream,
//                   cudaStreamCreateWithFlags non-blocking, shared), own (cudaStreamCreate,
//                   one each, not announced to rmm-rs), short (bench::Walk on a stream each
//                   thread makes and destroys inside the timing, the pool warm), short-cold
//                   (the same, each run after the allocator gave back its free memory),
//                   handoff (threads / 2 producers allocate on NULL and hand each block to a
//                   consumer thread of their own, which frees it; 2 threads or more)
//   MATRIX_SIZES    256 (256 B), mixed (256 B to 32 KiB), random4m (uniform up to 4 MiB)
//   MATRIX_APIS     resource, legacy, async, rapids (which columns; see the two programs)
//   MATRIX_PAIRS    pairs per cell and run in aggregate (default 160000), split over the
//                   threads; MATRIX_SLOW (default 8) divides them for the slow baselines
//                   (cudaMallocAsync, RAPIDS RMM's pool), whose rings draw a prefix of the
//                   same sequences
// Prints the CSV rows of bench::print_timings (workload "threads=T stream=S sizes=Z";
// "ratio% threads=T ..." for an allocator with a baseline: 100 times its ns over the
// baseline's in the same run; "held_MiB threads=T ...": what the allocator held from the
// driver after each run of the cell, for allocators that say); the progress goes to stderr.
#pragma once
#include <set>
#include <sstream>

#include "workloads.hpp"

namespace bench {

// One column of the matrix: how to run the rings on an allocator and, for allocators with
// streams of their own making (rmmStreamCreate), how to make and destroy one.
struct MatrixAllocator {
  std::string name;
  std::function<double(Crew&, int threads, long per_thread, const std::vector<cudaStream_t>&, RingSizes)> run;
  std::function<double(Crew&, int threads, long per_thread, RingSizes)> run_short_lived;
  std::function<double(Crew&, int threads, long per_thread, RingSizes)> run_handoff;
  std::function<size_t()> held;         // bytes held from the driver; unset: not measured
  std::function<void()> give_back;      // frees what it holds unused; unset: skips short-cold
  long divisor = 1;  // pairs / divisor: MATRIX_SLOW for the slow baselines
  std::function<cudaStream_t()> create_stream;  // unset: the allocator skips the rmm rows
  std::function<void(cudaStream_t)> destroy_stream;
  int streams_from = -1;  // an earlier allocator whose streams of the rmm rows this one shares
  int baseline = -1;  // the first build's allocator of the same kind: rows "ratio% <workload>" too
};

template <class A>
MatrixAllocator matrix_allocator(std::string name, A& a, long divisor = 1) {
  MatrixAllocator m;
  m.name = std::move(name);
  m.run = [&a](Crew& crew, int threads, long per_thread, const std::vector<cudaStream_t>& streams, RingSizes sizes) {
    return ring_pairs(crew, a, threads, per_thread, streams, sizes);
  };
  m.run_short_lived = [&a](Crew& crew, int threads, long per_thread, RingSizes sizes) {
    return short_lived_walks(crew, a, threads, per_thread, sizes);
  };
  m.run_handoff = [&a](Crew& crew, int threads, long per_thread, RingSizes sizes) {
    return handoff_pairs(crew, a, threads, per_thread, nullptr, sizes);
  };
  m.divisor = divisor;
  return m;
}

// The positive number in environment variable `name`, or `fallback` when it is unset.
inline long env_number(const char* name, long fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < 1) {
    std::fprintf(stderr, "%s=%s: a positive number is wanted\n", name, text);
    std::exit(2);
  }
  return value;
}

// The comma-separated items of environment variable `name` (or of `fallback`), each once.
inline std::vector<std::string> env_list(const char* name, const std::string& fallback) {
  const char* text = std::getenv(name);
  std::stringstream list(text && *text ? text : fallback);
  std::vector<std::string> items;
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty() && std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
  }
  if (items.empty()) {
    std::fprintf(stderr, "%s: nothing selected\n", name);
    std::exit(2);
  }
  return items;
}

// env_list's names, each one of `known`, or the run ends with a message.
inline std::vector<std::string> env_names(const char* name, const std::string& fallback,
                                          const std::vector<std::string>& known) {
  auto names = env_list(name, fallback);
  for (const auto& item : names) {
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string all;
      for (const auto& k : known) all += (all.empty() ? "" : ",") + k;
      std::fprintf(stderr, "%s: unknown '%s' (known: %s)\n", name, item.c_str(), all.c_str());
      std::exit(2);
    }
  }
  return names;
}

// The columns MATRIX_APIS selects (resource, legacy, async, rapids; default all).
inline bool matrix_api(const std::string& api) {
  static const auto apis =
      env_names("MATRIX_APIS", "resource,legacy,async,rapids", {"resource", "legacy", "async", "rapids"});
  return std::find(apis.begin(), apis.end(), api) != apis.end();
}

// Runs the matrix on `allocators` (device `device` current) and prints the CSV rows.
inline void run_matrix(const std::vector<MatrixAllocator>& allocators, int device) {
  std::set<int> thread_counts;
  for (const auto& t : env_list("MATRIX_THREADS", "1,2,4,8,16")) {
    char* end = nullptr;
    long n = std::strtol(t.c_str(), &end, 10);
    if (*end || n < 1 || n > 256) {
      std::fprintf(stderr, "MATRIX_THREADS: '%s' is not a number of threads from 1 to 256\n", t.c_str());
      std::exit(2);
    }
    thread_counts.insert((int)n);
  }
  const auto stream_kinds = env_names("MATRIX_STREAMS", "null,ptds,rmm,app,own,short,short-cold,handoff",
                                      {"null", "ptds", "rmm", "app", "own", "short", "short-cold", "handoff"});
  const auto size_kinds = env_names("MATRIX_SIZES", "256,mixed,random4m", {"256", "mixed", "random4m"});
  const long pairs = env_number("MATRIX_PAIRS", 160000);
  const int runs = (int)env_number("BENCH_RUNS", 5);
  std::fprintf(stderr, "threads matrix: %ld pairs per cell and run, %d timed runs after a warm-up, %zu allocators\n",
               pairs, runs, allocators.size());
  Crew crew(*thread_counts.rbegin(), device);
  cudaStream_t application = application_streams()[0].stream;
  auto began = clock_type::now();
  for (int threads : thread_counts) {
    for (const auto& kind : stream_kinds) {
      for (const auto& size_kind : size_kinds) {
        auto cell_began = clock_type::now();
        RingSizes sizes = size_kind == "256"     ? RingSizes::b256
                          : size_kind == "mixed" ? RingSizes::mixed
                                                 : RingSizes::random4m;
        // Each allocator's streams, thread by thread; in the rmm rows each build's own (its APIs share them).
        std::vector<cudaStream_t> shared(threads, nullptr);
        std::vector<std::vector<cudaStream_t>> streams(allocators.size());
        for (auto& s : shared) {
          if (kind == "ptds") s = cudaStreamPerThread;
          if (kind == "app") s = application;
          if (kind == "own") check_cuda(cudaStreamCreate(&s), "cudaStreamCreate");
        }
        std::vector<size_t> taking, making;  // the allocators in this cell; those that made streams
        for (size_t i = 0; i < allocators.size(); ++i) {
          int from = allocators[i].streams_from;
          if (kind == "short-cold" && !allocators[i].give_back) continue;
          if (kind == "handoff" && threads < 2) continue;
          if (kind != "rmm") {
            streams[i] = shared;
          } else if (from >= 0 && !streams[from].empty()) {
            streams[i] = streams[from];
          } else if (allocators[i].create_stream) {
            for (int t = 0; t < threads; ++t) streams[i].push_back(allocators[i].create_stream());
            making.push_back(i);
          } else {
            continue;
          }
          taking.push_back(i);
        }
        std::string workload = "threads=" + std::to_string(threads) + " stream=" + kind + " sizes=" + size_kind;
        auto run = [&](size_t i) {
          const auto& a = allocators[i];
          long per_thread = std::max(1L, pairs / a.divisor / threads);
          if (kind == "short-cold") a.give_back();
          if (kind == "short" || kind == "short-cold") return a.run_short_lived(crew, threads, per_thread, sizes);
          if (kind == "handoff") return a.run_handoff(crew, threads, std::max(1L, pairs / a.divisor / (threads / 2)), sizes);
          return a.run(crew, threads, per_thread, streams[i], sizes);
        };
        for (size_t i : taking) run(i);  // warm-up: pools grown, streams and caches met
        for (int r = 0; r < runs && !taking.empty(); ++r) {
          std::vector<double> ns(allocators.size());
          for (size_t k = 0; k < taking.size(); ++k) {
            size_t i = taking[(r + k) % taking.size()];
            ns[i] = run(i);
            timings_of(workload, allocators[i].name).ns.push_back(ns[i]);
            if (allocators[i].held)
              timings_of("held_MiB " + workload, allocators[i].name).ns.push_back(allocators[i].held() / 1048576.0);
          }
          // Each build against the first in the same run, in percent (print_timings prints
          // one decimal).
          for (size_t i : taking) {
            int base = allocators[i].baseline;
            if (base >= 0 && ns[base] > 0)
              timings_of("ratio% " + workload, allocators[i].name).ns.push_back(100 * ns[i] / ns[base]);
          }
        }
        check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        if (kind == "own") {
          for (auto s : shared) check_cuda(cudaStreamDestroy(s), "cudaStreamDestroy");
        }
        if (kind == "rmm") {
          for (size_t i : making)
            for (auto s : streams[i]) allocators[i].destroy_stream(s);
        }
        if (!taking.empty()) std::fprintf(stderr, "%-40s %6.2f s\n", workload.c_str(), ns_since(cell_began) * 1e-9);
      }
    }
  }
  std::fprintf(stderr, "threads matrix: %.1f s\n", ns_since(began) * 1e-9);
  check_cuda(cudaStreamDestroy(application), "cudaStreamDestroy");
  print_timings();
}

}  // namespace bench
