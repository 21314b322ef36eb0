#include "replay/pool_sizing.h"

#include <string>

namespace kv::replay {

std::int64_t blocks_for_tokens(std::int64_t tokens, int block_size) {
  return (tokens + block_size - 1) / block_size + 1;
}

StatusOr<std::int64_t> blocks_from_gpu_memory(const ModelShape& m, const sim::GpuSpec& gpu, double utilization,
                                              int block_size, std::int64_t max_num_batched_tokens) {
  const std::int64_t weights = m.num_params() * m.dtype_bytes;
  // Activation workspace of the largest step: the MLP's gate/up output dominates.
  const std::int64_t activations = max_num_batched_tokens * (2LL * m.intermediate + 4LL * m.hidden) * 4;
  const auto budget = static_cast<std::int64_t>(static_cast<double>(gpu.memory_bytes) * utilization);
  const std::int64_t per_block = m.kv_bytes_per_token() * block_size;
  const std::int64_t free = budget - weights - activations;
  if (free < per_block * 2) {
    return Status::error("model " + m.name + " (" + std::to_string(weights >> 20) + " MiB of weights) leaves no " +
                         "room for a KV cache in " + std::to_string(budget >> 20) + " MiB of " + gpu.name +
                         " at --gpu-memory-utilization " + std::to_string(utilization));
  }
  return free / per_block;
}

}  // namespace kv::replay
