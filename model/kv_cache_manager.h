// KvCacheManager: vLLM v1's KVCacheManager, the one facade the scheduler talks to for every
// model: one full-attention group or several KV-cache groups of any type (docs/semantics.md
// §3, docs/hybrid-groups.md). It owns the BlockPool and a KvCacheCoordinator (one
// SingleTypeKvCacheManager per group over that pool), keeps vLLM's prefix-cache statistics,
// and adds what vLLM's manager adds around the coordinator: the full-sequence gate, the
// watermark, the rule that a failed allocation changes nothing (beyond freeing blocks that
// fell out of a window, as vLLM does) and the order of its steps. Groups may have different
// block sizes (pages unified by multiplying the attention block); Mamba, cross-attention and
// R-SWA groups run under the same verbs, plus new_step() for Mamba's per-step rule.
// Invariants (check_invariants, on top of the pool's and the coordinator's):
//   1. Every block's ref_cnt equals the number of (live request, group) tables holding it.
//   2. A request's tables grow only at their end between its allocation and its free; their
//      first num_cached blocks are cached under the request's hashes (nulls excepted).
//   3. A hit is a prefix of the request's hashes, the same number of tokens in every group,
//      at most num_tokens - 1 tokens (less with eagle).
//   4. Statistics count every lookup once (preempted requests apart), whatever the layout.
// Not thread-safe: one scheduler drives one manager.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/block_pool.h"
#include "model/kv_cache_coordinator.h"
#include "model/kv_cache_groups.h"
#include "model/request.h"
#include "model/util/status.h"

namespace kv {

struct KvCacheConfig {
  int num_blocks = 0;  // including the null block
  int block_size = 16;
  // The model's KV-cache groups (get_kv_cache_groups). Empty: one full-attention group of
  // block_size tokens.
  std::vector<KvCacheGroupSpec> groups;
  bool enable_caching = true;
  FreeOrder free_order = FreeOrder::kClassic;
  bool use_eagle = false;  // speculative decoding with eagle: drop the last hit block
  std::int64_t max_model_len = 1 << 20;
  // The scheduler's token budget per step: it bounds how many blocks one sliding or chunked
  // request can hold, for the full-sequence gate.
  std::int64_t max_in_flight_tokens = 8192;
  // Blocks kept free when admitting a request (vLLM v0's watermark; 0 as in v1).
  int watermark_blocks = 0;
  bool enable_kv_events = false;
  // Which free block is evicted next (docs/policies.md); kLru is vLLM's queue in free_order.
  // Ignored when the constructor is given a policy factory.
  EvictionPolicyKind eviction_policy = EvictionPolicyKind::kLru;
  bool log_stats = true;

  // Several groups, or one that is not full attention (vLLM's hybrid layout).
  bool is_hybrid() const;
  // The groups the manager runs: `groups`, or the one full-attention group.
  std::vector<KvCacheGroupSpec> effective_groups() const;
  // vLLM's resolved block sizes of the groups (kv_cache_groups.h): the scheduler's (hits and
  // chunk ends are multiples of it) and the requests' hash chains'.
  int scheduler_block_size() const;
  int hash_block_size() const;
  // What no manager can run with, or vLLM refuses: sizes, a block_size other than the
  // smallest group block size, a group block not a whole number of hash blocks, eagle with
  // chunked local attention, cross attention or R-SWA with caching on, and a Mamba mode that
  // does not match the caching setting (none without caching, align or all with it).
  Status validate() const;
};

// Prefix-cache statistics, as vLLM's PrefixCacheStats. Lookups of requests that were
// preempted before are counted separately.
struct PrefixCacheStats {
  std::int64_t lookups = 0, queries = 0, hits = 0;
  std::int64_t preempted_lookups = 0, preempted_queries = 0, preempted_hits = 0;
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config, EvictionPolicyFactory make_policy = nullptr);

  const KvCacheConfig& config() const { return config_; }
  std::size_t num_groups() const { return coordinator_->num_groups(); }
  const KvCacheCoordinator& coordinator() const { return *coordinator_; }
  // The hybrid lookup's sets of group ids (lookup_sets of the groups).
  std::vector<std::vector<int>> lookup_order() const { return lookup_sets(config_.effective_groups()); }

  // vLLM get_computed_blocks (counted in stats()). Call only while the request has computed
  // nothing.
  CacheHit get_computed_blocks(const Request& request);

  // vLLM allocate_slots. Returns the newly allocated block ids per group, or nullopt when the
  // pool is short (then nothing changed but the blocks vLLM frees first). The caller advances
  // num_computed_tokens by hit.num_tokens + num_new_tokens on success. num_new_tokens may
  // include draft tokens (never cached); num_lookahead_tokens are slots past them;
  // num_encoder_tokens gives cross-attention groups their blocks (encoder-decoder models).
  std::optional<GroupBlockIds> allocate_slots(const Request& request, std::int64_t num_new_tokens,
                                              const CacheHit& hit = {}, std::int64_t num_lookahead_tokens = 0,
                                              bool full_sequence_must_fit = false, std::int64_t num_encoder_tokens = 0);

  // A scheduler step starts (vLLM new_step_starts; schedule() calls it first): a Mamba group
  // forgets which states it cached in the last step, so they can be hit from now on.
  void new_step() { coordinator_->new_step(); }
  // Mamba groups cache a recurrent state only at a block end ("align" mode): the scheduler
  // ends prefill chunks on that group's block boundaries (docs/semantics.md §5.9). The block
  // size of such a group, or 0 when the layout has none.
  int mamba_align_block_size() const;

  // Returns the request's blocks: group 0 first, each table last block first. Freeing twice,
  // or a request with no blocks, does nothing.
  void free(const Request& request);

  bool reset_prefix_cache() { return pool_.reset_prefix_cache(); }

  std::span<const BlockId> blocks_of(const RequestId& id, std::size_t group = 0) const {
    return coordinator_->blocks_of(id, group);
  }
  bool holds_blocks(const RequestId& id) const { return coordinator_->holds_blocks(id); }
  // The most blocks a request of num_tokens tokens holds at once (all groups).
  std::int64_t max_blocks_per_request(std::int64_t num_tokens) const {
    return coordinator_->max_blocks_per_request(num_tokens);
  }

  // Cascade attention's shared prefix: leading blocks of `id` held by all `num_running`
  // running requests, for one full-attention group; 0 with several groups (kvsim, as vLLM's
  // runner, runs no cascade attention there).
  int num_common_prefix_blocks(const RequestId& id, int num_running) const;
  // A step plan carries one table per group (vLLM's hybrid layout), or one flat table.
  bool tables_per_group() const { return config_.is_hybrid(); }
  // Per group, the tokens one of its layers reads before a query position (StepPlan's
  // group_windows): 0 for all earlier tokens, w for a window, -c for c-token chunks.
  std::vector<std::int64_t> group_reaches() const;
  // Per group, 0 for attention, the block size of a Mamba group (StepPlan::group_state_block_sizes).
  std::vector<int> group_state_block_sizes() const;
  // Per group, true for cross attention (StepPlan::group_cross_attention); empty if none is.
  std::vector<bool> group_cross_attention() const;

  std::size_t num_free_blocks() const { return pool_.num_free_blocks(); }
  double usage() const { return pool_.usage(); }
  const PrefixCacheStats& stats() const { return stats_; }
  // Per group, the hit tokens of real (non-null) blocks reused by admitted requests.
  const std::vector<std::int64_t>& hit_tokens_per_group() const { return group_hit_tokens_; }
  // Per group, the real blocks all requests hold now.
  std::vector<std::int64_t> blocks_in_use_per_group() const;

  std::vector<KvEvent> take_events() { return pool_.take_events(); }
  void set_record_evictions(bool on) { pool_.set_record_evictions(on); }
  std::vector<EvictedBlock> take_evicted() { return pool_.take_evicted(); }
  const BlockPool& pool() const { return pool_; }

  bool check_invariants(std::string* why) const;

 private:
  // Tests that break the state on purpose, to show check_invariants() catches it, reach the
  // pool through this peer (defined in tests only); no production code can.
  friend class KvCacheManagerTestPeer;

  void count_lookup(const Request& request, const CacheHit& hit);
  void count_group_hits(const CacheHit& hit);

  KvCacheConfig config_;
  BlockPool pool_;
  std::unique_ptr<KvCacheCoordinator> coordinator_;
  PrefixCacheStats stats_;
  std::vector<std::int64_t> group_hit_tokens_;  // index = group id
};

}  // namespace kv
