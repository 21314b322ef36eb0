// KvCacheManager: vLLM v1's KVCacheManager for one full-attention group (docs/semantics.md §3).
// Turns requests into block tables over a BlockPool: lookup finds the longest cached prefix,
// allocate takes hits and new blocks and caches every block that becomes full, free returns a
// request's blocks last first.
// Invariants (check_invariants, on top of the pool's):
//   1. Every block's ref_cnt equals the number of live requests whose block table holds it.
//   2. A request's block table is append-only between its allocation and its free; its first
//      num_cached_blocks blocks are cached under its first hashes.
//   3. A failed allocate changes nothing observable (blocks, queue order, map, statistics).
//   4. Hits are a contiguous prefix of the request's hashes, at most (num_tokens-1)/block_size
//      blocks (one fewer with eagle).
// Not thread-safe: one scheduler drives one manager.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/block_pool.h"
#include "model/request.h"

namespace kv {

struct KvCacheConfig {
  int num_blocks = 0;  // including the null block
  int block_size = 16;
  bool enable_caching = true;
  FreeOrder free_order = FreeOrder::kClassic;
  bool use_eagle = false;  // speculative decoding with eagle: drop the last hit block
  std::int64_t max_model_len = 1 << 20;
  // Blocks kept free when admitting a request (vLLM v0's watermark; 0 as in v1).
  int watermark_blocks = 0;
  bool enable_kv_events = false;
  // Which free block is evicted next (docs/policies.md); kLru is vLLM's queue in free_order.
  // Ignored when the constructor is given a policy factory.
  EvictionPolicyKind eviction_policy = EvictionPolicyKind::kLru;
  bool log_stats = true;
};

// Prefix-cache statistics, as vLLM's PrefixCacheStats. Lookups of requests that were
// preempted before are counted separately.
struct PrefixCacheStats {
  std::int64_t lookups = 0, queries = 0, hits = 0;
  std::int64_t preempted_lookups = 0, preempted_queries = 0, preempted_hits = 0;
};

// The result of a lookup: cached blocks to reuse and the tokens they cover.
struct CacheHit {
  std::vector<BlockId> blocks;
  std::int64_t num_tokens = 0;
};

class KvCacheManager {
 public:
  explicit KvCacheManager(const KvCacheConfig& config,
                          EvictionPolicyFactory make_policy = nullptr);

  const KvCacheConfig& config() const { return config_; }

  // vLLM get_computed_blocks. Call only while the request has computed nothing.
  CacheHit lookup(const Request& request);

  // vLLM allocate_slots. Returns the newly allocated block ids, or nullopt when the pool is
  // short (and then nothing changed). The caller advances num_computed_tokens by
  // hit.num_tokens + num_new_tokens on success.
  std::optional<std::vector<BlockId>> allocate(const Request& request, std::int64_t num_new_tokens,
                                               const CacheHit& hit = {}, std::int64_t lookahead = 0,
                                               bool full_sequence_must_fit = false);

  // Returns the request's blocks, last first. Freeing twice, or a request with no blocks, does
  // nothing.
  void free(const Request& request);

  bool reset_prefix_cache();

  std::span<const BlockId> blocks_of(const RequestId& id) const;
  bool holds_blocks(const RequestId& id) const { return req_blocks_.count(id) != 0; }

  // Leading blocks of `id` held by all `num_running` running requests (cascade attention).
  int num_common_prefix_blocks(const RequestId& id, int num_running) const;

  std::size_t num_free_blocks() const { return pool_.num_free_blocks(); }
  double usage() const { return pool_.usage(); }
  const PrefixCacheStats& stats() const { return stats_; }
  std::vector<KvEvent> take_events() { return pool_.take_events(); }
  void set_record_evictions(bool on) { pool_.set_record_evictions(on); }
  std::vector<EvictedBlock> take_evicted() { return pool_.take_evicted(); }
  const BlockPool& pool() const { return pool_; }

  bool check_invariants(std::string* why) const;

 private:
  // Tests that break the state on purpose, to show check_invariants() catches it, reach the
  // pool through this peer (defined in tests only); no production code can.
  friend class KvCacheManagerTestPeer;

  struct RequestBlocks {
    std::vector<BlockId> blocks;
    std::size_t num_cached = 0;  // leading blocks already in the hash map
  };
  std::size_t blocks_for(std::int64_t num_tokens) const;
  std::size_t blocks_needed(std::int64_t num_tokens, const RequestBlocks* held,
                            const CacheHit& hit) const;

  KvCacheConfig config_;
  BlockPool pool_;
  std::unordered_map<RequestId, RequestBlocks> req_blocks_;
  PrefixCacheStats stats_;
};

}  // namespace kv
