// Pool sizing: how many KV blocks a replay gets, from a token capacity or from GPU memory as
// vLLM sizes it. One place for the rule, used by `kvsim replay`, sweeps and calibration.
//   from tokens:  ceil(tokens / block_size) + 1 (the null block)
//   from memory:  (memory * utilization - weights - activation workspace) / bytes per block,
//                 + 1; an error when that leaves room for fewer than 2 blocks. Weights are
//                 ModelShape::weight_bytes() (projections in --dtype, the rest 16-bit); bytes
//                 per block are block_size * kv_bytes_per_token() (in --kv-cache-dtype). With
//                 --tp N the model is one rank's shard (shard_for_tp) and all of this is per
//                 rank: each rank holds the same number of blocks, of its own KV heads.
//   hybrid models: the same memory, laid out as docs/hybrid-groups.md "Pool size" says
//                 (size_pool_for_budget: floor(floor(budget / page) / layers_per_group) blocks,
//                 the null block included).
//   host memory:  the pool's metadata is allocated up front (pool_host_bytes); a pool that
//                 would not fit in the memory this process can take is refused before anything
//                 is allocated (check_pool_fits_host), naming the option and the bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "model/catalog/model_shape.h"
#include "model/kv_cache_groups.h"
#include "model/util/status.h"
#include "sim/hardware_specs.h"

namespace kv::replay {

std::int64_t blocks_for_tokens(std::int64_t tokens, int block_size);

// Usable blocks (the null block not included) that fit the KV cache of `model` on `gpu`.
StatusOr<std::int64_t> blocks_from_gpu_memory(const ModelShape& model, const sim::GpuSpec& gpu, double utilization,
                                              int block_size, std::int64_t max_num_batched_tokens);

// Blocks, the null block included, of a hybrid model's shared pool on `gpu`.
StatusOr<std::int64_t> hybrid_blocks_from_gpu_memory(const ModelShape& model, std::span<const KvCacheGroupSpec> groups,
                                                     const sim::GpuSpec& gpu, double utilization,
                                                     std::int64_t max_num_batched_tokens);

// Host bytes a pool of `blocks` takes up front: one 64-byte Block each (model/block.h), and the
// per-block bookkeeping above it.
std::int64_t pool_host_bytes(std::int64_t blocks);

// Bytes this process may still allocate: the least of the system's MemAvailable, the cgroup's
// memory.max less its usage, and RLIMIT_AS less the current size; -1 if none is known.
std::int64_t available_host_bytes();

// An error naming `option` and the bytes needed when the pool (and 256 MiB for the rest of
// the run) would not fit in available_host_bytes().
Status check_pool_fits_host(std::int64_t blocks, const std::string& option);

}  // namespace kv::replay
