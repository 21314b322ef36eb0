#include "replay/pool_sizing.h"

#include <string>

namespace kv::replay {

std::int64_t blocks_for_tokens(std::int64_t tokens, int block_size) {
  return (tokens + block_size - 1) / block_size + 1;
}

namespace {

// Bytes left for the KV cache: memory * utilization - weights - activation workspace.
std::int64_t kv_budget(const ModelShape& m, const sim::GpuSpec& gpu, double utilization,
                       std::int64_t max_num_batched_tokens) {
  const std::int64_t weights = m.weight_bytes();
  // Activation workspace of the largest step: the MLP's gate/up output dominates.
  const std::int64_t activations = max_num_batched_tokens * (2LL * m.intermediate + 4LL * m.hidden) * 4;
  const auto budget = static_cast<std::int64_t>(static_cast<double>(gpu.memory_bytes) * utilization);
  return budget - weights - activations;
}

Status no_room(const ModelShape& m, const sim::GpuSpec& gpu, double utilization) {
  const std::int64_t weights = m.weight_bytes();
  const auto budget = static_cast<std::int64_t>(static_cast<double>(gpu.memory_bytes) * utilization);
  return Status::error("model " + m.name + " (" + std::to_string(weights >> 20) + " MiB of weights) leaves no " +
                       "room for a KV cache in " + std::to_string(budget >> 20) + " MiB of " + gpu.name +
                       " at --gpu-memory-utilization " + std::to_string(utilization));
}

}  // namespace

StatusOr<std::int64_t> blocks_from_gpu_memory(const ModelShape& m, const sim::GpuSpec& gpu, double utilization,
                                              int block_size, std::int64_t max_num_batched_tokens) {
  const std::int64_t per_block = m.kv_bytes_per_token() * block_size;
  const std::int64_t free = kv_budget(m, gpu, utilization, max_num_batched_tokens);
  if (free < per_block * 2) return no_room(m, gpu, utilization);
  return free / per_block;
}

StatusOr<std::int64_t> hybrid_blocks_from_gpu_memory(const ModelShape& m, std::span<const KvCacheGroupSpec> groups,
                                                     const sim::GpuSpec& gpu, double utilization,
                                                     std::int64_t max_num_batched_tokens) {
  const std::int64_t free = kv_budget(m, gpu, utilization, max_num_batched_tokens);
  if (free <= 0) return no_room(m, gpu, utilization);
  auto size = size_pool_for_budget(groups, free);
  if (!size.ok()) return no_room(m, gpu, utilization);
  return std::int64_t{size->num_blocks};
}

}  // namespace kv::replay
