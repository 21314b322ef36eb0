// ModelPolicy: the non-LRU eviction policies of docs/policies.md as naive reference models for
// ManagerModel, written from the docs: per-block facts in plain vectors, and the victim order
// recomputed from scratch by sorting whenever it is asked for (no key sets, no counters).
// Invariants of the model itself (it is the oracle):
//   1. order() holds exactly the free blocks: unhashed ones first, in the order they became
//      free-and-unhashed, then cached ones by (rank, release stamp, id).
//   2. A block's facts (uses, hit, parent link, retention) describe its current content and are
//      reset when it is popped for new content.
#pragma once

#include <cstdint>
#include <vector>

#include "model/policies/block_retention.h"
#include "model/policies/eviction_policy.h"
#include "model/types.h"

namespace kv::props {

class ModelPolicy {
 public:
  ModelPolicy(EvictionPolicyKind kind, int num_blocks);

  // `hashed` tells, per call, whether the block holds a hash right now.
  void popped(BlockId b, bool had_hash);
  void hit(BlockId b, bool was_free);
  void released(const std::vector<BlockId>& blocks, const std::vector<bool>& hashed, const BlockRetention& r);
  void cached(BlockId parent, const std::vector<BlockId>& chain);  // parent kNoBlock: none
  void uncached(BlockId b);
  std::vector<BlockId> order(const std::vector<bool>& hashed) const;

 private:
  struct Facts {
    bool free = false;
    std::int64_t unhashed_since = 0;                  // when it became free and unhashed (FIFO position)
    std::int64_t stamp = 0;                           // cached and free: its release (or demotion) time
    std::int64_t rank_at_release = 0;                 // lfu: L + uses; slru: 0 probation, 1 protected
    std::int64_t uses = 0;                            // lfu
    bool was_hit = false;                             // slru
    BlockId parent = kNoBlock;                        // leaf-lru: parent when cached
    std::int64_t parent_version = 0;                  // the parent's version then
    std::int64_t version = 0;                         // bumped when it loses its hash
    int priority = BlockRetention::kDefaultPriority;  // priority policy
    std::int64_t expiry = 0;
  };
  std::int64_t rank(BlockId b) const;
  bool has_live_child(BlockId b) const;
  void demote_protected(const std::vector<bool>& hashed);

  EvictionPolicyKind kind_;
  std::vector<Facts> f_;
  std::int64_t clock_ = 0;     // stamps
  std::int64_t age_ = 0;       // lfu's L
  std::int64_t releases_ = 0;  // priority's clock
};

}  // namespace kv::props
