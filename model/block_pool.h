// BlockPool: every KV block, the free queue (through an EvictionPolicy) and the prefix-cache
// hash map, as vLLM v1's BlockPool. It owns the blocks (one vector, never resized); requests
// refer to blocks by id. It knows nothing of requests beyond the tokens and hashes it is given.
// Invariants (check_invariants):
//   1. Block 0 is the null block: ref_cnt stays 0 forever, never queued, never hashed, never free.
//   2. num_free_blocks() == the policy's size(); a non-null block is queued exactly when its
//      ref_cnt is 0; no ref_cnt is negative.
//   3. Every block listed under key (h, g) in the map has hash == h and group == g; every block
//      with a hash is listed exactly once. Lookups return the oldest block inserted under a key.
//      With several KV-cache groups (one pool for all) each group caches its own blocks under
//      its own id; a single-group manager uses group 0 only.
//   4. Eviction is lazy: a freed block keeps its hash (and can be hit) until it is popped for
//      reuse, evicted explicitly, or the cache is reset.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"
#include "model/block_hasher.h"
#include "model/cached_block_index.h"
#include "model/kv_events.h"
#include "model/policies/eviction_policy.h"

namespace kv {

// A cached block whose hash the pool dropped to reuse the block (lazy eviction).
struct EvictedBlock {
  BlockId block = kNoBlock;
  BlockHash hash;
};

class BlockPool {
 public:
  // num_blocks includes the null block. make_policy == nullptr selects the LRU free queue.
  BlockPool(int num_blocks, bool enable_caching, FreeOrder free_order, bool enable_events,
            EvictionPolicyFactory make_policy = nullptr);
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  const Block& block(BlockId id) const { return blocks_[static_cast<std::size_t>(id)]; }
  BlockId null_block() const { return 0; }
  std::size_t num_free_blocks() const { return policy_->size(); }
  double usage() const;  // 1 - free / (N - 1)
  bool caching_enabled() const { return caching_; }
  const EvictionPolicy& policy() const { return *policy_; }

  // The oldest block cached under (`hash`, `group`), or kNoBlock.
  BlockId get_cached_block(const BlockHash& hash, KvCacheGroupId group = 0) const { return index_.find(hash, group); }
  // Starts loading where get_cached_block(hash, group) looks first: a lookup of many hashes
  // issues these ahead so that its cache misses overlap.
  void prefetch_cached_block(const BlockHash& hash, KvCacheGroupId group = 0) const { index_.prefetch(hash, group); }

  // Pops n blocks from the head of the free queue (n <= num_free_blocks()), evicting each one's
  // cached hash first; each comes back with ref_cnt 1. Appends the ids to `out`.
  void get_new_blocks(std::size_t n, std::vector<BlockId>& out);

  // Takes hit blocks into use: a free one leaves the queue (keeping its hash); ref_cnt += 1.
  void touch(std::span<const BlockId> ids);

  // Decrements each block's ref_cnt and hands those that reach 0 to the free queue, in the
  // given order (the manager passes a request's blocks last first).
  // `retention` is the releasing request's (only the priority policy reads it).
  void free_blocks(std::span<const BlockId> ordered_ids, const BlockRetention& retention = {});

  // Caches the non-null blocks of blocks[num_cached .. num_full) under (hashes[i], group);
  // null entries (positions a windowed group skips) are skipped. `tokens` and `extras` are
  // the request's (for the stored event: its tokens, LoRA name, the group as group_idx and
  // the extra keys of each block).
  void cache_full_blocks(std::span<const BlockId> blocks, std::span<const BlockHash> hashes, std::size_t num_cached,
                         std::size_t num_full, KvCacheGroupId group, int block_size, std::span<const TokenId> tokens,
                         const HashExtras& extras);

  // Drops the cached hash of each given block that has one (they stay where they are).
  void evict_blocks(std::span<const BlockId> ids);

  // Clears every hash if no non-null block is in use; false (nothing changed) otherwise.
  bool reset_prefix_cache();

  std::vector<KvEvent> take_events();
  std::size_t num_cached_blocks() const { return index_.size(); }
  // Heap bytes of the hash map (fixed at construction: it never grows).
  std::size_t index_memory_bytes() const { return index_.memory_bytes(); }
  // Cached blocks evicted because they were popped for reuse (lazy eviction), since creation.
  std::int64_t num_evictions() const { return num_evictions_; }
  // When on, every eviction by get_new_blocks is also kept, in order, until take_evicted()
  // (a second-tier connector saves those blocks; nothing else changes).
  void set_record_evictions(bool on) { record_evictions_ = on; }
  std::vector<EvictedBlock> take_evicted();

  bool check_invariants(std::string* why) const;

 private:
  Block& mut(BlockId id) { return blocks_[static_cast<std::size_t>(id)]; }
  // Removes b from the map; true if it was cached.
  bool evict_cached(Block& b) {
    if (b.hash.empty()) return false;
    if (events_enabled_) [[unlikely]]
      record_removed(b);
    uncache(b);
    if (hooks_) [[unlikely]]
      policy_->on_uncached(&b);
    return true;
  }
  // Unlists a cached block and clears its hash: no event, no hook, not counted.
  void uncache(Block& b) {
    index_.erase(b);
    b.hash = BlockHash{};
    b.group = 0;
  }
  void record_removed(const Block& b);  // queues the BlockRemoved event of a cached block
  // A cached block popped for reuse loses its hash: counted, and kept for take_evicted()
  // when recording.
  void evict_for_reuse(Block& b) {
    if (b.hash.empty()) return;
    if (record_evictions_) [[unlikely]]
      evicted_.push_back({b.id, b.hash});
    evict_cached(b);
    ++num_evictions_;
  }
  // Queues an empty BlockStored for blocks [num_cached, num_full) (null when events are off);
  // the caller appends, with add_stored_block, each block it caches.
  BlockStored* begin_stored_event(std::span<const BlockHash> hashes, std::size_t num_cached, std::size_t num_full,
                                  int block_size, std::span<const TokenId> tokens, const HashExtras& extras,
                                  KvCacheGroupId group);
  // Lists block `index` of the request (hash `hash`) in `stored` with its extra keys.
  static void add_stored_block(BlockStored& stored, const BlockHash& hash, std::size_t index, const HashExtras& extras);

  std::vector<Block> blocks_;
  std::unique_ptr<EvictionPolicy> policy_;
  CachedBlockIndex index_;  // every block with a hash, under that hash
  std::int64_t num_evictions_ = 0;
  bool record_evictions_ = false;
  std::vector<EvictedBlock> evicted_;  // since the last take_evicted(), when recording
  bool caching_;
  bool events_enabled_;
  std::vector<KvEvent> events_;
  std::vector<Block*> scratch_;
  bool hooks_ = false;  // policy_->wants_hooks(): call its on_hit/on_cached/on_uncached
};

}  // namespace kv
