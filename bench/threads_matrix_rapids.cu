// RAPIDS RMM 26.10's pool (the librmm-cu13 wheel) through bench/threads_matrix.hpp's matrix,
// as bench/threads_matrix.cu runs rmm-rs: a program of its own, since its symbols clash with
// rmm-rs's. It has no rmmStreamCreate, so it skips the rmm rows, and no way to give back what
// it holds, so it skips the short-cold rows.
#include "rapids_pool.hpp"
#include "threads_matrix.hpp"

int main() {
  bench::use_device(0);
  rmm::mr::pool_memory_resource pool{rmm::mr::cuda_memory_resource{}, 0};
  bench::RapidsPool a{&pool};
  auto m = bench::matrix_allocator("RAPIDS pool", a, bench::env_number("MATRIX_SLOW", 8));
  m.held = [&a] { return a.reserved(); };  // no give_back: RAPIDS RMM's pool cannot shrink
  bench::run_matrix({m}, 0);
  return 0;
}
