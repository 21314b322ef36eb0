// SingleTypeKvCacheManager: the block tables of one KV-cache group, as vLLM's
// SingleTypeKVCacheManager, with one subclass per attention type (FullAttentionManager,
// SlidingWindowManager, ChunkedLocalAttentionManager). The KvCacheCoordinator owns one per
// group, all over one BlockPool, and calls them in group order.
// Each type differs in two rules only: the longest cache hit it accepts and the tokens it
// never reads again (skipped tokens, whose blocks become the null block and are freed).
// Invariants (check):
//   1. A request's table holds the null block (0) exactly at skipped or null-hit positions,
//      and those form a prefix of the table; every other entry holds a reference (ref_cnt).
//   2. num_cached <= table length; the non-null entries below num_cached are cached under
//      (the request's hash at that index, this group).
//   3. A table grows only at its end; skipped entries turn null from the highest index down.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/block_pool.h"
#include "model/kv_cache_spec.h"
#include "model/request.h"

namespace kv {

class SingleTypeKvCacheManager {
 public:
  SingleTypeKvCacheManager(const KvCacheSpec& spec, BlockPool& pool, KvCacheGroupId group_id);
  virtual ~SingleTypeKvCacheManager() = default;
  SingleTypeKvCacheManager(const SingleTypeKvCacheManager&) = delete;
  SingleTypeKvCacheManager& operator=(const SingleTypeKvCacheManager&) = delete;

  const KvCacheSpec& spec() const { return spec_; }
  KvCacheGroupId group_id() const { return group_id_; }

  // vLLM find_longest_cache_hit for the lookup set `group_ids` (groups with this spec): the
  // hit blocks of each group of the set (null = 0 where the type skips), all of one length,
  // at most max_length tokens. A block counts only if cached for every group of the set.
  // `drop` (eagle): the hit gives up its last block, each type by its own rule; the hit is a
  // multiple of `alignment` tokens (the coordinator's: the group's block size, or the lcm of
  // the groups' block sizes).
  virtual std::vector<std::vector<BlockId>> find_longest_cache_hit(
      std::span<const BlockHash> hashes, std::int64_t max_length,
      std::span<const KvCacheGroupId> group_ids, bool drop, std::int64_t alignment) const = 0;

  // Blocks this group takes from the free queue to give the request num_tokens slots
  // (required blocks capped at max_required_blocks); `hit` is the fresh hit of a request not
  // yet running, empty otherwise.
  std::size_t num_blocks_to_allocate(const RequestId& id, std::int64_t num_tokens,
                                     std::span<const BlockId> hit,
                                     std::int64_t total_computed_tokens,
                                     std::int64_t max_required_blocks =
                                         std::numeric_limits<std::int64_t>::max()) const;

  // Replaces the request's skipped blocks by the null block, highest index first, stopping at
  // the first null, and frees them in that order. Returns how many were replaced.
  std::size_t remove_skipped_blocks(const RequestId& id, std::int64_t total_computed_tokens);

  // Starts a request's table from its hit: nulls for the skipped part, the rest touched.
  void allocate_new_computed_blocks(const RequestId& id, std::span<const BlockId> hit,
                                    std::int64_t total_computed_tokens);

  // Pops blocks until the table covers num_tokens; appends the new ids to `out`.
  void allocate_new_blocks(const RequestId& id, std::int64_t num_tokens, std::vector<BlockId>& out);

  // Caches the table's full non-null blocks from num_cached up to num_tokens / block_size.
  void cache_blocks(const Request& request, std::int64_t num_tokens);

  // Frees the table, last block first (one free_blocks call, with the request's retention),
  // and forgets the request.
  void free(const RequestId& id, const BlockRetention& retention = {});

  std::span<const BlockId> blocks_of(const RequestId& id) const;
  bool is_running(const RequestId& id) const { return tables_.count(id) != 0; }

  // Adds, for every non-null entry of every table, this group's id to holders[block id].
  void collect_holders(std::vector<std::vector<KvCacheGroupId>>& holders) const;
  // Real (non-null) blocks in all tables.
  std::int64_t num_blocks_in_use() const;
  // vLLM get_num_common_prefix_blocks: leading blocks of `id` held by all `num_running`
  // requests (cascade attention); 0 for every type but full attention.
  virtual int num_common_prefix_blocks(const RequestId& /*id*/, int /*num_running*/) const {
    return 0;
  }

  bool check(std::string* why) const;

 protected:
  std::int64_t blocks_for(std::int64_t num_tokens) const {
    return (num_tokens + spec_.block_size - 1) / spec_.block_size;
  }
  // The blocks cached under hash for each of group_ids, or empty if one group misses it.
  bool lookup_all(const BlockHash& hash, std::span<const KvCacheGroupId> group_ids,
                  std::vector<BlockId>& out) const;

  const KvCacheSpec spec_;
  BlockPool& pool_;
  const KvCacheGroupId group_id_;

 private:
  struct Table {
    std::vector<BlockId> blocks;  // 0 = the null block
    std::size_t num_cached = 0;   // entries below this are cached (or null)
  };
  std::unordered_map<RequestId, Table> tables_;
};

class FullAttentionManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  // Left to right; stops at the first block missing from any group of the set. Eagle gives
  // back min(alignment, block) tokens; then the hit is cut down to a multiple of alignment.
  std::vector<std::vector<BlockId>> find_longest_cache_hit(
      std::span<const BlockHash> hashes, std::int64_t max_length,
      std::span<const KvCacheGroupId> group_ids, bool drop,
      std::int64_t alignment) const override;
  int num_common_prefix_blocks(const RequestId& id, int num_running) const override;
};

class SlidingWindowManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  // Right to left; the first run of ceil((window - 1) / block) cached blocks (one more with
  // eagle) ends the hit, with nulls before it. Without such a run, the cached run that
  // reaches block 0. Eagle then drops the hit's last block.
  std::vector<std::vector<BlockId>> find_longest_cache_hit(
      std::span<const BlockHash> hashes, std::int64_t max_length,
      std::span<const KvCacheGroupId> group_ids, bool drop,
      std::int64_t alignment) const override;
};

class ChunkedLocalAttentionManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  // Blocks before the chunk holding max_length are a hit as nulls, without a lookup; then
  // left to right within that chunk. Eagle is refused with this type (as vLLM refuses it).
  std::vector<std::vector<BlockId>> find_longest_cache_hit(
      std::span<const BlockHash> hashes, std::int64_t max_length,
      std::span<const KvCacheGroupId> group_ids, bool drop,
      std::int64_t alignment) const override;
};

// The manager for spec's attention type (the spec must pass validate_spec).
std::unique_ptr<SingleTypeKvCacheManager> make_single_type_manager(const KvCacheSpec& spec,
                                                                   BlockPool& pool,
                                                                   KvCacheGroupId group_id);

}  // namespace kv
