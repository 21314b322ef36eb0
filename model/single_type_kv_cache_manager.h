// SingleTypeKvCacheManager: the block tables of one KV-cache group, as vLLM's
// SingleTypeKVCacheManager, with one subclass per layer type (FullAttentionManager,
// SlidingWindowManager, ChunkedLocalAttentionManager, CrossAttentionManager, RSwaManager here;
// MambaManager in model/mamba_manager.h). The KvCacheCoordinator owns one per group, all over
// one BlockPool, and calls them in group order.
// The types differ in a few rules: the longest cache hit they accept, the tokens they never
// read again (skipped, whose blocks become the null block and are freed), the slots they need
// (cross attention: the encoder's; Mamba: its state blocks) and what they free early.
// Invariants (check):
//   1. A request's table holds the null block (0) at skipped or null-hit positions, and every
//      other entry holds a reference (ref_cnt). For every type whose nulls_form_prefix(), the
//      nulls form a prefix of the table.
//   2. num_cached <= table length; the non-null entries below num_cached are cached under
//      (the request's hash of that group block, this group).
//   3. A table grows only at its end; entries turn null (never the other way).
//   4. A group block of B tokens, B = m * hash_block_size, is named by the chain hash of its
//      last hash block: group block i uses the request's hash (i + 1) * m - 1.
//   5. num_blocks_in_use() equals the number of non-null entries over all tables.
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

// One allocate_slots call as each group sees it (all in tokens).
struct SlotDemand {
  std::int64_t total_computed = 0;         // computed + hit tokens, capped at max_model_len
  std::int64_t num_tokens = 0;             // slots: total + new + lookahead, capped at max_model_len
  std::int64_t num_tokens_main_model = 0;  // the same without the lookahead slots
  std::int64_t num_encoder_tokens = 0;     // cross attention's slots (encoder-decoder models)
  std::int64_t num_prompt_tokens = 0;      // R-SWA keeps the prompt's blocks
};

class SingleTypeKvCacheManager {
 public:
  // hash_block_size: the block size of the requests' hash chains (0: the group's block size,
  // which must be a multiple of it).
  SingleTypeKvCacheManager(const KvCacheSpec& spec, BlockPool& pool, KvCacheGroupId group_id, int hash_block_size = 0);
  virtual ~SingleTypeKvCacheManager() = default;
  SingleTypeKvCacheManager(const SingleTypeKvCacheManager&) = delete;
  SingleTypeKvCacheManager& operator=(const SingleTypeKvCacheManager&) = delete;

  const KvCacheSpec& spec() const { return spec_; }
  KvCacheGroupId group_id() const { return group_id_; }

  // The hashes of this group's blocks, from the request's chain (invariant 4): the chain
  // itself when the group's block is one hash block, else every m-th hash, in `scratch`.
  std::span<const BlockHash> block_hashes(std::span<const BlockHash> chain, std::vector<BlockHash>& scratch) const;

  // vLLM find_longest_cache_hit for the lookup set `group_ids` (groups with this spec): the
  // hit blocks of each group of the set (null = 0 where the type skips), all of one length,
  // at most max_length tokens. A block counts only if cached for every group of the set.
  // `hashes` are this group's block hashes (block_hashes()).
  // `drop` (eagle): the hit gives up its last block, each type by its own rule; the hit is a
  // multiple of `alignment` tokens (the coordinator's: the group's block size, or the lcm of
  // the groups' block sizes).
  virtual std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes,
                                                                   std::int64_t max_length,
                                                                   std::span<const KvCacheGroupId> group_ids, bool drop,
                                                                   std::int64_t alignment) const = 0;

  // Blocks this group takes from the free queue to give the request its slots (required
  // blocks capped at max_required_blocks); `hit` is the fresh hit of a request not yet
  // running, empty otherwise.
  // Signed: vLLM's Mamba align rule can count less than nothing, which the sum over groups
  // keeps.
  virtual std::int64_t num_blocks_to_allocate(
      const RequestId& id, const SlotDemand& demand, std::span<const BlockId> hit,
      std::int64_t max_required_blocks = std::numeric_limits<std::int64_t>::max()) const;

  // Replaces the request's skipped blocks by the null block, highest index first, stopping at
  // the first null, and frees them in that order (one free call). Returns how many entries
  // turned null (with what the type frees besides, in its own free calls).
  virtual std::size_t remove_skipped_blocks(const RequestId& id, const SlotDemand& demand);

  // Starts a request's table from its hit: nulls for the skipped part, the rest touched.
  void allocate_new_computed_blocks(const RequestId& id, std::span<const BlockId> hit,
                                    std::int64_t total_computed_tokens);

  // Pops blocks until the table covers the slots the type needs; appends the ids it returns
  // (the new blocks; Mamba align: every entry past the old table) to `out`.
  virtual void allocate_new_blocks(const RequestId& id, const SlotDemand& demand, std::vector<BlockId>& out);

  // Caches the table's full non-null blocks from num_cached up to num_tokens / block_size.
  virtual void cache_blocks(const Request& request, std::int64_t num_tokens);

  // Frees the table, last block first (one free_blocks call, with the request's retention),
  // and forgets the request.
  virtual void free(const RequestId& id, const BlockRetention& retention = {});

  // A scheduler step starts (vLLM new_step_starts); only Mamba keeps per-step state.
  virtual void new_step() {}

  std::span<const BlockId> blocks_of(const RequestId& id) const;
  bool is_running(const RequestId& id) const { return find_table(id) != nullptr; }

  // Who holds one block, across the tables of every group (the coordinator's check).
  struct Holders {
    int count = 0;             // table entries naming the block
    KvCacheGroupId group = 0;  // the group of the last one counted
    bool two_groups = false;   // entries of two different groups name it
  };
  // Counts, for every non-null entry of every table, this group in holders[block id].
  void collect_holders(std::vector<Holders>& holders) const;
  // Real (non-null) entries in all tables, counted as they change (check() recounts them).
  std::int64_t num_blocks_in_use() const { return real_entries_; }
  // vLLM get_num_common_prefix_blocks: leading blocks of `id` held by all `num_running`
  // requests (cascade attention); 0 for every type but full attention.
  virtual int num_common_prefix_blocks(const RequestId& /*id*/, int /*num_running*/) const { return 0; }

  bool check(std::string* why) const;

 protected:
  struct Table {
    std::vector<BlockId> blocks;  // 0 = the null block
    std::size_t num_cached = 0;   // entries below this are cached (or null)
  };

  std::int64_t blocks_for(std::int64_t num_tokens) const {
    return (num_tokens + spec_.block_size - 1) / spec_.block_size;
  }
  // The tokens the base rule gives slots for: the demand's slots (cross attention: the
  // encoder's; Mamba none/all: plus its speculative blocks).
  virtual std::int64_t required_tokens(const SlotDemand& demand) const { return demand.num_tokens; }
  // Whether the table's null entries always form its prefix (invariant 1).
  virtual bool nulls_form_prefix() const { return true; }
  // Hit blocks from `first` on that sit in the free queue: touching them costs a free block.
  std::int64_t num_evictable(std::span<const BlockId> hit, std::size_t first) const;
  // Nulls entries hi - 1, hi - 2, ... down to `lo`, stopping at the first null; frees them in
  // that order, in one call (none when nothing turned null). Returns how many.
  std::size_t null_out_down(std::vector<BlockId>& blocks, std::size_t hi, std::size_t lo);
  // Every change to a table's real entries is counted here: n real blocks entered a table,
  // or n real entries turned null.
  void count_entered(std::size_t n) { real_entries_ += static_cast<std::int64_t>(n); }
  void count_nulled(std::size_t n) { real_entries_ -= static_cast<std::int64_t>(n); }
  Table* find_table(const RequestId& id);
  const Table* find_table(const RequestId& id) const;
  // The request's table, created empty if it has none.
  Table& table_of(const RequestId& id);
  // The blocks cached under hash for each of group_ids, or empty if one group misses it.
  bool lookup_all(const BlockHash& hash, std::span<const KvCacheGroupId> group_ids, std::vector<BlockId>& out) const;

  const KvCacheSpec spec_;
  BlockPool& pool_;
  const KvCacheGroupId group_id_;

 private:
  const int hash_stride_;  // group block size / hash block size
  std::unordered_map<RequestId, Table> tables_;
  std::int64_t real_entries_ = 0;  // non-null entries over all tables
  // The table found last and its request: one allocation looks the same request up several
  // times. A node's address is stable until that entry is erased, which clears the memo.
  mutable Table* memo_ = nullptr;
  mutable RequestId memo_id_;
};

class FullAttentionManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  // Left to right; stops at the first block missing from any group of the set. Eagle gives
  // back min(alignment, block) tokens; then the hit is cut down to a multiple of alignment.
  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
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
  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
                                                           std::span<const KvCacheGroupId> group_ids, bool drop,
                                                           std::int64_t alignment) const override;
};

class ChunkedLocalAttentionManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  // Blocks before the chunk holding max_length are a hit as nulls, without a lookup; then
  // left to right within that chunk. Eagle is refused with this type (as vLLM refuses it).
  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
                                                           std::span<const KvCacheGroupId> group_ids, bool drop,
                                                           std::int64_t alignment) const override;
};

// Cross attention (encoder-decoder models): blocks for the encoder tokens only, given by the
// allocate that passes them; no skipped tokens, no prefix caching (vLLM raises on a lookup or
// on caching, and configs with caching on are refused).
class CrossAttentionManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
                                                           std::span<const KvCacheGroupId> group_ids, bool drop,
                                                           std::int64_t alignment) const override;
  void cache_blocks(const Request& request, std::int64_t num_tokens) override;

 protected:
  std::int64_t required_tokens(const SlotDemand& demand) const override { return demand.num_encoder_tokens; }
};

// R-SWA (reference sliding window): full attention over the prompt and over the last
// `window` tokens; the blocks in between (past the prompt's last block, before the window)
// are nulled and freed, highest first, down to the prompt or the first null. Runs with
// prefix caching off (vLLM turns it off for these models; configs with caching on are
// refused).
class RSwaManager final : public SingleTypeKvCacheManager {
 public:
  using SingleTypeKvCacheManager::SingleTypeKvCacheManager;
  std::vector<std::vector<BlockId>> find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length,
                                                           std::span<const KvCacheGroupId> group_ids, bool drop,
                                                           std::int64_t alignment) const override;
  std::size_t remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) override;

 protected:
  bool nulls_form_prefix() const override { return false; }
};

// The manager for spec's type (the spec must pass validate_spec).
std::unique_ptr<SingleTypeKvCacheManager> make_single_type_manager(const KvCacheSpec& spec, BlockPool& pool,
                                                                   KvCacheGroupId group_id, int hash_block_size = 0);

}  // namespace kv
