// KvCacheCoordinator: the KV-cache groups of one model over one BlockPool, as vLLM's
// KVCacheCoordinator. It owns one SingleTypeKvCacheManager per group and runs each manager
// operation on every group, in group order; the three coordinators differ only in the lookup:
//   - NoPrefixCache (caching off, any number of groups): no hit, nothing cached;
//   - Unitary (one group, caching on): the group's own longest hit (the fast path);
//   - Hybrid (several groups, caching on): the fixed point over the lookup sets, so that the
//     hit is the same number of tokens in every group.
// Pick one with make_kv_cache_coordinator; KvCacheManager is its only user.
// Invariants (check, on top of the pool's and each group's):
//   1. Every block's ref_cnt equals the number of (request, group) tables holding it, and a
//      block is in at most one group's tables at a time.
//   2. A hit is one length in tokens for every group; each group's list covers it in the
//      group's own block size (nulls where the group never reads again).
//   3. Groups are always visited in group order (group 0 first): frees, allocations and
//      caching, so the free queue sees vLLM's order.
//   4. Hybrid hits and the tokens each group caches are multiples of the scheduler's block
//      size (an eagle group caches up to one block more); a group block spans whole hash
//      blocks of the requests' chain.
// Not thread-safe.
#pragma once

#include <boost/container/small_vector.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/block_pool.h"
#include "model/kv_cache_groups.h"
#include "model/request.h"
#include "model/single_type_kv_cache_manager.h"

namespace kv {

// Block ids per KV-cache group, in group order (0 = the null block). The per-group lists of one
// or two groups live inline: the scheduler asks for new blocks once per running request and
// step, and most of those calls allocate nothing.
using GroupBlockIds = boost::container::small_vector<std::vector<BlockId>, 2>;

// A lookup result: per group the hit blocks, all covering num_tokens tokens.
struct CacheHit {
  GroupBlockIds blocks;  // empty when nothing was looked up (caching off or a running request)
  std::int64_t num_tokens = 0;
  // Hybrid: the longest hit one lookup set had before the sets were reconciled, when it is
  // longer than num_tokens (vLLM's shared-prefix boundary); 0 otherwise.
  std::int64_t shared_prefix_boundary = 0;

  // Group g's hit blocks (empty when nothing was looked up).
  std::span<const BlockId> group(std::size_t g) const {
    return g < blocks.size() ? std::span<const BlockId>(blocks[g]) : std::span<const BlockId>();
  }
};

// What an allocation needs from the free queue, summed over the groups.
struct BlockNeed {
  // vLLM's sum: a Mamba align group can count less than nothing (after rolled-back drafts),
  // which lowers the sum; allocate_slots fails when this is above the free blocks.
  std::int64_t counted = 0;
  // The blocks actually taken (each group's count, floored at 0). Above the free blocks while
  // `counted` is not, vLLM raises in the middle of the allocation; kvsim fails it first.
  std::int64_t taken = 0;
};

struct CoordinatorOptions {
  bool enable_caching = true;
  bool use_eagle = false;  // drop the last hit block (per group type)
  std::int64_t max_model_len = 1 << 20;
  std::int64_t max_in_flight_tokens = 8192;  // per-request cap of windowed groups
  // The scheduler's block size (hybrid hits and caching are multiples of it) and the block
  // size of the requests' hash chains; 0: derived from the groups (kv_cache_groups.h).
  int scheduler_block_size = 0;
  int hash_block_size = 0;
};

class KvCacheCoordinator {
 public:
  KvCacheCoordinator(std::span<const KvCacheGroupSpec> groups, BlockPool& pool, const CoordinatorOptions& options);
  virtual ~KvCacheCoordinator() = default;
  KvCacheCoordinator(const KvCacheCoordinator&) = delete;
  KvCacheCoordinator& operator=(const KvCacheCoordinator&) = delete;

  std::size_t num_groups() const { return managers_.size(); }
  const SingleTypeKvCacheManager& group(std::size_t g) const { return *managers_[g]; }
  virtual const char* name() const = 0;  // vLLM's class name

  // vLLM find_longest_cache_hit over every group, at most max_length tokens.
  virtual CacheHit find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length) const = 0;

  // Free blocks the request needs for `demand` with `hit` (a new request's), summed over the
  // groups; `capped`: a sliding or chunked group's required blocks are capped at its
  // per-request maximum.
  BlockNeed num_blocks_to_allocate(const RequestId& id, const SlotDemand& demand, const CacheHit& hit,
                                   bool capped) const;
  // Frees what every group no longer reads after demand.total_computed tokens.
  void remove_skipped_blocks(const RequestId& id, const SlotDemand& demand);
  // A new request's tables from its hit (every group before any new block is taken).
  void save_new_computed_blocks(const RequestId& id, const CacheHit& hit, std::int64_t total_computed);
  // Extends every table to the slots its type needs; the new blocks per group.
  GroupBlockIds allocate_new_blocks(const RequestId& id, const SlotDemand& demand);
  // Caches every group's full blocks up to `num_tokens` tokens.
  virtual void cache_blocks(const Request& request, std::int64_t num_tokens);
  void free(const RequestId& id, const BlockRetention& retention);
  // A scheduler step starts: every group hears it (vLLM new_step_starts).
  void new_step();

  std::span<const BlockId> blocks_of(const RequestId& id, std::size_t g) const { return managers_[g]->blocks_of(id); }
  bool holds_blocks(const RequestId& id) const { return managers_.front()->is_running(id); }
  // The most blocks one request of `num_tokens` tokens holds at once, summed over groups.
  std::int64_t max_blocks_per_request(std::int64_t num_tokens) const;

  bool check(std::string* why) const;

 protected:
  std::vector<std::unique_ptr<SingleTypeKvCacheManager>> managers_;  // index = group id
  BlockPool& pool_;
  CoordinatorOptions options_;
};

// NoPrefixCache for caching off, Unitary for one group, Hybrid otherwise.
std::unique_ptr<KvCacheCoordinator> make_kv_cache_coordinator(std::span<const KvCacheGroupSpec> groups, BlockPool& pool,
                                                              const CoordinatorOptions& options);

}  // namespace kv
