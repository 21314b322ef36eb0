// KeyedPolicy: the shared frame of the non-LRU eviction policies (lfu, slru, leaf-lru,
// priority). Free blocks without a hash hold nothing a later request can hit, so they are
// reused first, oldest release first, from a FreeBlockQueue. Every free block with
// a hash carries a key (rank, stamp): the policy computes the rank when the block is released
// (and may change it while the block stays free, keeping the stamp); the stamp is the release
// clock, so ties in rank go to the least recently released block. The next victim is the
// unhashed queue's head, else the smallest key. All operations are O(log n).
// Invariants (check()):
//   1. Every held block is in exactly one of the unhashed queue (hash empty) and the key set
//      (hash non-empty); state_ says which; size() is the sum of the two.
//   2. The key set holds exactly the keys key_[id] of the blocks in state kKeyed.
//   3. Stamps are unique and increase with every release (and every demotion that asks for
//      a new one).
//   4. The subclass's own invariants (check_policy()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "model/free_block_queue.h"
#include "model/policies/eviction_policy.h"

namespace kv {

class KeyedPolicy : public EvictionPolicy {
 public:
  std::size_t size() const override { return unhashed_.size() + keyed_.size(); }
  void on_freed(std::span<Block* const> blocks, const BlockRetention& retention) override;
  void remove(Block* b) override;
  void pop_n(std::size_t n, std::vector<Block*>& out) override;
  bool contains(const Block* b) const override { return state_[index(b)] != State::kOut; }
  std::vector<BlockId> order() const override;
  bool check(std::string* why) const override;
  bool wants_hooks() const override { return true; }
  void on_uncached(Block* b) override;

 protected:
  struct Key {
    std::int64_t rank = 0;
    std::uint64_t stamp = 0;
    BlockId id = kNoBlock;
    auto operator<=>(const Key&) const = default;
  };
  enum class State : std::uint8_t { kOut, kUnhashed, kKeyed };

  // Holds every block, unhashed, in id order.
  explicit KeyedPolicy(std::span<Block> blocks);

  // The rank of a cached block being released by a request with `retention`.
  virtual std::int64_t rank_on_release(const Block& b, const BlockRetention& retention) = 0;
  // Before a release's blocks are queued (one call per on_freed, even with no blocks).
  virtual void before_release() {}
  // After a whole release (every block of the call queued).
  virtual void after_release() {}
  // `b` leaves the policy, popped for reuse or taken by a hit; old_key: its key when it was
  // keyed (erased already), nullptr when it was unhashed.
  virtual void on_leave(Block& /*b*/, const Key* /*old_key*/, bool /*popped*/) {}
  // `b` lost its hash; called after it moved from the key set to the unhashed queue.
  virtual void after_uncached(Block& /*b*/) {}
  // The keyed set changed by one key (for counters the subclass keeps).
  virtual void on_key_added(const Key& /*k*/) {}
  virtual void on_key_erased(const Key& /*k*/) {}
  virtual bool check_policy(std::string* why) const = 0;

  // Gives a free keyed block a new rank (and, with new_stamp, the next stamp).
  void rekey(BlockId id, std::int64_t rank, bool new_stamp);
  bool is_keyed(BlockId id) const { return state_[static_cast<std::size_t>(id)] == State::kKeyed; }
  const Key& key_of(BlockId id) const { return key_[static_cast<std::size_t>(id)]; }
  const std::set<Key>& keys() const { return keyed_; }
  Block& block(BlockId id) { return blocks_[static_cast<std::size_t>(id)]; }
  const Block& block(BlockId id) const { return blocks_[static_cast<std::size_t>(id)]; }
  std::size_t num_blocks() const { return blocks_.size(); }
  std::size_t index(const Block* b) const { return static_cast<std::size_t>(b - blocks_.data()); }

 private:
  void insert_key(const Key& k);
  void erase_key(BlockId id);
  Block* pop_one();

  std::span<Block> blocks_;
  FreeBlockQueue unhashed_;   // free blocks with no hash, oldest release first
  std::set<Key> keyed_;       // free blocks with a hash, next victim first
  std::vector<Key> key_;      // by block id; meaningful while the block is kKeyed
  std::vector<State> state_;  // by block id
  std::uint64_t clock_ = 0;   // the last stamp handed out
};

}  // namespace kv
