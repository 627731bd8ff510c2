/*
 * rmm/cuda_stream_pool.hpp: RAPIDS RMM's rmm::cuda_stream_pool, a fixed set of streams handed
 * out round-robin.
 */
#ifndef RMM_CUDA_STREAM_POOL_HPP
#define RMM_CUDA_STREAM_POOL_HPP

#include "cuda_stream.hpp"

#include <atomic>
#include <vector>

namespace rmm {

class cuda_stream_pool {
 public:
  static constexpr std::size_t default_size{16};

  explicit cuda_stream_pool(std::size_t pool_size = default_size) {
    if (pool_size == 0) throw logic_error("cuda_stream_pool: the pool size must be at least 1");
    streams_.reserve(pool_size);
    for (std::size_t i = 0; i < pool_size; ++i) streams_.emplace_back();
  }
  explicit cuda_stream_pool(std::size_t pool_size, cuda_stream::flags flags) {
    if (pool_size == 0) throw logic_error("cuda_stream_pool: the pool size must be at least 1");
    streams_.reserve(pool_size);
    for (std::size_t i = 0; i < pool_size; ++i) streams_.emplace_back(flags);
  }
  cuda_stream_pool(cuda_stream_pool &&) = delete;
  cuda_stream_pool(cuda_stream_pool const &) = delete;
  cuda_stream_pool &operator=(cuda_stream_pool &&) = delete;
  cuda_stream_pool &operator=(cuda_stream_pool const &) = delete;

  /// The next stream, round-robin (thread-safe).
  cuda_stream_view get_stream() const noexcept { return streams_[(next_++) % streams_.size()].view(); }
  /// Stream `stream_id` modulo the pool size.
  cuda_stream_view get_stream(std::size_t stream_id) const { return streams_[stream_id % streams_.size()].view(); }
  std::size_t get_pool_size() const noexcept { return streams_.size(); }

 private:
  std::vector<cuda_stream> streams_;
  mutable std::atomic_size_t next_{0};
};

}  // namespace rmm

#endif  // RMM_CUDA_STREAM_POOL_HPP
