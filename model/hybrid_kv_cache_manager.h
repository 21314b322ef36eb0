// HybridKvCacheManager: vLLM v1's KVCacheManager with its KVCacheCoordinator for a model whose
// layers form one or more KV-cache groups (full attention, sliding window, chunked local
// attention) sharing one BlockPool. Every group keeps its own block table per request (0 =
// the null block where the group never reads again) and caches its own blocks under
// (hash, group id). The single-group, full-attention KvCacheManager stays the fast path;
// this class is the general one (docs/hybrid-groups.md).
// Invariants (check_invariants, on top of the pool's and each group's):
//   1. Every block's ref_cnt equals the number of (request, group) tables holding it, and a
//      block is in at most one group's tables at a time.
//   2. A hit is the same length (tokens) in every group: the fixed point of the lookup sets.
//   3. A failed allocate changes nothing but what remove_skipped_blocks already did (vLLM
//      frees blocks that fell out of a window before it checks the free count).
// Not thread-safe: one scheduler drives one manager.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/block_pool.h"
#include "model/kv_cache_groups.h"
#include "model/request.h"
#include "model/single_type_kv_cache_manager.h"

namespace kv {

struct HybridKvCacheConfig {
  std::vector<KvCacheGroupSpec> groups;  // from get_kv_cache_groups
  int num_blocks = 0;                    // including the null block
  bool enable_caching = true;
  FreeOrder free_order = FreeOrder::kUnhashedFirst;
  std::int64_t max_model_len = 1 << 20;
  // The scheduler's token budget per step (max_num_batched_tokens): it bounds how many
  // blocks one sliding or chunked request can hold, for full_sequence_must_fit.
  std::int64_t max_in_flight_tokens = 8192;
  bool enable_kv_events = false;  // queue BlockStored/BlockRemoved with each group's index
};

// A lookup result: per group the hit blocks (0 = null), each num_tokens / block_size long.
struct HybridCacheHit {
  std::vector<std::vector<BlockId>> blocks;
  std::int64_t num_tokens = 0;
};

// Its pool always runs vLLM's LRU queue: the Scheduler (and ReplayConfig::validate) refuse any
// other eviction policy for a hybrid model.
class HybridKvCacheManager {
 public:
  // The groups must come from get_kv_cache_groups (valid specs, at least one group).
  explicit HybridKvCacheManager(const HybridKvCacheConfig& config);

  const HybridKvCacheConfig& config() const { return config_; }
  std::size_t num_groups() const { return managers_.size(); }
  const std::vector<std::vector<int>>& lookup_order() const { return lookup_sets_; }

  // vLLM get_computed_blocks. Call only while the request has computed nothing.
  HybridCacheHit get_computed_blocks(const Request& request) const;

  // vLLM allocate_slots: per group the newly allocated blocks, or nullopt when the pool is
  // short. The caller advances num_computed_tokens by hit.num_tokens + num_new_tokens.
  std::optional<std::vector<std::vector<BlockId>>> allocate_slots(
      const Request& request, std::int64_t num_new_tokens, const HybridCacheHit& hit = {},
      std::int64_t num_lookahead_tokens = 0, bool full_sequence_must_fit = false);

  // Frees every group's table (group 0 first, each last block first).
  void free(const RequestId& id);

  std::span<const BlockId> blocks_of(const RequestId& id, std::size_t group) const {
    return managers_[group]->blocks_of(id);
  }
  bool holds_blocks(const RequestId& id) const { return managers_.front()->is_running(id); }

  std::size_t num_free_blocks() const { return pool_.num_free_blocks(); }
  const BlockPool& pool() const { return pool_; }
  std::vector<KvEvent> take_events() { return pool_.take_events(); }
  // vLLM reset_prefix_cache: clears every group's cached hashes if no block is in use.
  bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }

  bool check_invariants(std::string* why) const;

 private:
  // vLLM HybridKVCacheCoordinator.find_longest_cache_hit: the fixed point over lookup sets.
  HybridCacheHit find_longest_cache_hit(std::span<const BlockHash> hashes,
                                        std::int64_t max_length) const;
  std::size_t blocks_needed(const Request& request, std::int64_t num_tokens,
                            const HybridCacheHit& hit, std::int64_t total_computed,
                            bool capped) const;

  HybridKvCacheConfig config_;
  BlockPool pool_;
  std::vector<std::unique_ptr<SingleTypeKvCacheManager>> managers_;  // index = group id
  std::vector<std::vector<int>> lookup_sets_;
};

}  // namespace kv
