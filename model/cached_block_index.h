// CachedBlockIndex: the prefix cache's hash map, (block hash, group) -> the blocks cached
// under it, oldest first (vLLM's BlockHashToBlockMap, keyed as make_block_hash_with_group_id),
// owned by the BlockPool. With one group every key has group 0 and the tag is the hash's.
// Open addressing with linear probing over 8-byte slots {oldest block id, low 32 bits of its
// hash}; the full hash lives in the Block, and younger duplicates hang off the oldest block
// through Block::next_cached (duplicates are rare: only requests allocated without a lookup
// make them). The table is sized once, to a power of two at least twice the number of blocks,
// so its load never exceeds 1/2 and it never rehashes; erase shifts entries back (no
// tombstones). Only this class touches Block::next_cached.
// Invariants (check):
//   1. A slot is empty or names a block whose tag_of(hash, group) is the slot's tag; no two
//      slots name blocks with equal (hash, group) keys.
//   2. Every entry lies at or after its home slot (tag & mask) with no empty slot in between.
//   3. Following next_cached from a slot's block visits, in insertion order, blocks that all
//      carry that (hash, group); no block is listed twice; size() counts every listed block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"
#include "model/util/check.h"

namespace kv {

class CachedBlockIndex {
 public:
  // Indexes blocks of `blocks` (by id); the span must outlive the index.
  explicit CachedBlockIndex(std::span<Block> blocks);

  // The oldest block cached under (`hash`, `group`), or kNoBlock.
  BlockId find(const BlockHash& hash, KvCacheGroupId group = 0) const {
    return slots_[probe(hash, group, tag_of(hash, group))].block;
  }
  // Lists `b` under (b.hash, b.group), after any blocks already there. Requires b unlisted,
  // hash non-empty.
  void insert(Block& b);
  // Unlists `b` (listed under its key); the next younger duplicate, if any, takes its place.
  void erase(Block& b);
  // Unlists every block.
  void clear();
  // Starts loading the home slot of `hash`: callers about to touch many random slots issue
  // these first so that the cache misses overlap.
  void prefetch(const BlockHash& hash, KvCacheGroupId group = 0) const {
    __builtin_prefetch(&slots_[tag_of(hash, group) & mask_], 1);
  }
  // Whether `b` is listed under its own key.
  bool contains(const Block& b) const;

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }
  std::size_t memory_bytes() const { return slots_.size() * sizeof(Slot); }

  bool check(std::string* why) const;

 private:
  struct Slot {
    BlockId block = kNoBlock;  // the oldest block cached under the hash; kNoBlock = empty
    std::uint32_t tag = 0;     // tag_of its key: the home slot and a cheap filter
  };
  // The hash's low 32 bits, mixed with the group (group 0 leaves them as they are).
  static std::uint32_t tag_of(const BlockHash& h, KvCacheGroupId group) {
    return static_cast<std::uint32_t>(h.prefix64()) ^ (group * 0x9E3779B9u);
  }
  // The slot holding (`hash`, `group`), or the empty slot where it would go.
  std::size_t probe(const BlockHash& hash, KvCacheGroupId group, std::uint32_t tag) const {
    std::size_t i = tag & mask_;
    while (slots_[i].block != kNoBlock && !holds(slots_[i], hash, group, tag)) i = (i + 1) & mask_;
    return i;
  }
  // Whether the occupied slot `s` holds the key (`hash`, `group`) whose tag is `tag`.
  bool holds(const Slot& s, const BlockHash& hash, KvCacheGroupId group, std::uint32_t tag) const {
    if (s.tag != tag) return false;
    const Block& b = blocks_[static_cast<std::size_t>(s.block)];
    return b.hash == hash && b.group == group;
  }
  // The rare paths of insert and erase, out of line: `b` joins or leaves the chain of younger
  // duplicates listed under slot `s`.
  void append_duplicate(const Slot& s, Block& b);
  void unlink_duplicate(Slot& s, Block& b);
  // Empties slot i, pulling later entries of its probe run back (no tombstones).
  void shift_back(std::size_t i);

  std::span<Block> blocks_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;  // listed blocks, duplicates included
};

inline void CachedBlockIndex::insert(Block& b) {
  KV_CHECK(!b.hash.empty(), "block " << b.id << " has no hash to index");
  KV_CHECK(b.next_cached == kNoBlock, "block " << b.id << " is already indexed");
  const std::uint32_t tag = tag_of(b.hash, b.group);
  Slot& s = slots_[probe(b.hash, b.group, tag)];
  ++size_;
  if (s.block != kNoBlock) [[unlikely]] {
    append_duplicate(s, b);
    return;
  }
  s.block = b.id;
  s.tag = tag;
}

inline void CachedBlockIndex::erase(Block& b) {
  // Usually b is the only block under its key, so its slot names it: found without comparing
  // hashes. Otherwise the slot holding its key (b is then a duplicate).
  const std::uint32_t tag = tag_of(b.hash, b.group);
  std::size_t i = tag & mask_;
  while (slots_[i].block != b.id && slots_[i].block != kNoBlock && !holds(slots_[i], b.hash, b.group, tag)) {
    i = (i + 1) & mask_;
  }
  Slot& s = slots_[i];
  KV_CHECK(s.block != kNoBlock, "block " << b.id << " has a hash but is not in the map");
  --size_;
  if (s.block != b.id || b.next_cached != kNoBlock) [[unlikely]] {
    unlink_duplicate(s, b);
    return;
  }
  shift_back(i);
}

}  // namespace kv
