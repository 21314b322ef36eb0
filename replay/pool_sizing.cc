#include "replay/pool_sizing.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "model/block.h"

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

namespace {

// A number read from the first line of a /sys or /proc file; -1 if absent or "max".
std::int64_t read_number(const std::string& path, const std::string& key = "") {
  std::ifstream in(path);
  std::string word;
  while (in >> word) {
    if (!key.empty() && word != key) continue;
    if (!key.empty() && !(in >> word)) return -1;
    try {
      return std::stoll(word) * (key.empty() ? 1 : 1024);  // /proc/meminfo counts kB
    } catch (const std::exception&) {
      return -1;
    }
  }
  return -1;
}

std::int64_t least_known(std::int64_t a, std::int64_t b) {
  if (a < 0) return b;
  if (b < 0) return a;
  return std::min(a, b);
}

std::string gib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

}  // namespace

std::int64_t pool_host_bytes(std::int64_t blocks) {
  // Measured with kvsim replay at --num-blocks 2^22 and 2^24: 80 bytes a block in all.
  constexpr std::int64_t kBookkeeping = 16;
  return blocks * (static_cast<std::int64_t>(sizeof(Block)) + kBookkeeping);
}

std::int64_t available_host_bytes() {
  std::int64_t avail = read_number("/proc/meminfo", "MemAvailable:");
  const std::int64_t cg_max = read_number("/sys/fs/cgroup/memory.max");
  const std::int64_t cg_used = read_number("/sys/fs/cgroup/memory.current");
  if (cg_max >= 0 && cg_used >= 0) avail = least_known(avail, std::max<std::int64_t>(cg_max - cg_used, 0));
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const std::int64_t vm_size = read_number("/proc/self/status", "VmSize:");
    avail = least_known(
        avail, std::max<std::int64_t>(static_cast<std::int64_t>(as.rlim_cur) - std::max<std::int64_t>(vm_size, 0), 0));
  }
  return avail;
}

Status check_pool_fits_host(std::int64_t blocks, const std::string& option) {
  constexpr std::int64_t kRestOfTheRun = 256LL << 20;  // the program, the trace reader, the run's state
  const std::int64_t need = pool_host_bytes(blocks) + kRestOfTheRun;
  const std::int64_t avail = available_host_bytes();
  if (avail < 0 || need <= avail) return {};
  return Status::error(option + ": a pool of " + std::to_string(blocks) + " blocks needs " + std::to_string(need) +
                       " bytes (" + gib(need) + ") of host memory up front, but only " + std::to_string(avail) +
                       " bytes (" + gib(avail) + ") are available; lower " + option + " (or raise --block-size)");
}

}  // namespace kv::replay
