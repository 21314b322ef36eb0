// LruBlockSet: a bounded set of block hashes ordered by last touch, for routers that index
// their own routing decisions (llm-d's approximate prefix cache, SGLang's approximate tree).
// touch() inserts a hash or makes it the most recent; when the set grows past its capacity the
// least recently touched hash leaves. Recency is a counter, not a clock, so the order depends
// only on the sequence of touches.
//
// Invariants (check_invariants):
//   1. size() <= capacity();
//   2. stamp_ and by_stamp_ hold the same hashes, each with one stamp, all stamps distinct.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>

#include "model/block_hash.h"

namespace kv::fleet {

class LruBlockSet {
 public:
  explicit LruBlockSet(std::int64_t capacity);

  void touch(const BlockHash& hash);
  bool contains(const BlockHash& hash) const { return stamp_.contains(hash); }
  // The longest prefix of `hashes` in the set (the first miss ends it).
  int matched_blocks(std::span<const BlockHash> hashes) const;
  std::int64_t size() const { return static_cast<std::int64_t>(stamp_.size()); }
  std::int64_t capacity() const { return capacity_; }

  void check_invariants() const;

 private:
  std::int64_t capacity_;
  std::uint64_t next_stamp_ = 0;
  std::unordered_map<BlockHash, std::uint64_t, BlockHashHasher> stamp_;  // hash -> its last touch
  std::map<std::uint64_t, BlockHash> by_stamp_;                          // last touch -> hash, oldest first
};

}  // namespace kv::fleet
