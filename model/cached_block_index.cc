#include "model/cached_block_index.h"

#include <bit>
#include <unordered_set>

#include "model/util/check.h"

namespace kv {

CachedBlockIndex::CachedBlockIndex(std::span<Block> blocks) : blocks_(blocks) {
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * blocks.size(), 8));
  slots_.resize(capacity);
  mask_ = capacity - 1;
}

void CachedBlockIndex::append_duplicate(const Slot& s, Block& b) {
  Block* last = &blocks_[static_cast<std::size_t>(s.block)];
  KV_CHECK(last != &b, "block " << b.id << " is already indexed");
  while (last->next_cached != kNoBlock) {
    last = &blocks_[static_cast<std::size_t>(last->next_cached)];
    KV_CHECK(last != &b, "block " << b.id << " is already indexed");
  }
  last->next_cached = b.id;
}

void CachedBlockIndex::unlink_duplicate(Slot& s, Block& b) {
  if (s.block == b.id) {
    // The oldest block leaves: the next younger duplicate takes its slot (same hash, same tag).
    s.block = b.next_cached;
    b.next_cached = kNoBlock;
    return;
  }
  // A younger duplicate: unlink it from the chain.
  Block* prev = &blocks_[static_cast<std::size_t>(s.block)];
  while (prev->next_cached != b.id) {
    KV_CHECK(prev->next_cached != kNoBlock, "block " << b.id << " missing under its own hash");
    prev = &blocks_[static_cast<std::size_t>(prev->next_cached)];
  }
  prev->next_cached = b.next_cached;
  b.next_cached = kNoBlock;
}

// Backward-shift deletion: pull later entries of the probe run into the hole when the hole lies
// between their home slot and where they sit.
void CachedBlockIndex::shift_back(std::size_t i) {
  std::size_t hole = i;
  std::size_t j = i;
  while (true) {
    j = (j + 1) & mask_;
    if (slots_[j].block == kNoBlock) break;
    const std::size_t home = slots_[j].tag & mask_;
    const std::size_t dist_entry = (j - home) & mask_;
    const std::size_t dist_hole = (j - hole) & mask_;
    if (dist_hole <= dist_entry) {
      slots_[hole] = slots_[j];
      hole = j;
    }
  }
  slots_[hole] = Slot{};
}

void CachedBlockIndex::clear() {
  for (Slot& s : slots_) {
    if (s.block == kNoBlock) continue;
    for (BlockId id = s.block; id != kNoBlock;) {
      Block& b = blocks_[static_cast<std::size_t>(id)];
      id = b.next_cached;
      b.next_cached = kNoBlock;
    }
    s = Slot{};
  }
  size_ = 0;
}

bool CachedBlockIndex::contains(const Block& b) const {
  if (b.hash.empty()) return false;
  for (BlockId id = find(b.hash, b.group); id != kNoBlock; id = blocks_[static_cast<std::size_t>(id)].next_cached) {
    if (id == b.id) return true;
  }
  return false;
}

bool CachedBlockIndex::check(std::string* why) const {
  std::unordered_set<BlockId> seen;
  std::size_t listed = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (s.block == kNoBlock) continue;
    if (s.block < 0 || static_cast<std::size_t>(s.block) >= blocks_.size()) {
      *why = "hash map slot " + std::to_string(i) + " names no block";
      return false;
    }
    const BlockHash& hash = blocks_[static_cast<std::size_t>(s.block)].hash;
    const KvCacheGroupId group = blocks_[static_cast<std::size_t>(s.block)].group;
    if (hash.empty() || tag_of(hash, group) != s.tag) {
      *why = "hash map lists block " + std::to_string(s.block) + " under a hash it does not have";
      return false;
    }
    // Reachable from its home slot without crossing an empty slot, and listed only once.
    for (std::size_t k = s.tag & mask_; k != i; k = (k + 1) & mask_) {
      if (slots_[k].block == kNoBlock) {
        *why = "hash map entry for block " + std::to_string(s.block) + " is cut off from its home";
        return false;
      }
      const Block& other = blocks_[static_cast<std::size_t>(slots_[k].block)];
      if (slots_[k].tag == s.tag && other.hash == hash && other.group == group) {
        *why = "hash map lists one hash in two slots";
        return false;
      }
    }
    for (BlockId id = s.block; id != kNoBlock; id = blocks_[static_cast<std::size_t>(id)].next_cached) {
      if (id < 0 || static_cast<std::size_t>(id) >= blocks_.size() ||
          !(blocks_[static_cast<std::size_t>(id)].hash == hash) ||
          blocks_[static_cast<std::size_t>(id)].group != group) {
        *why = "hash map lists block " + std::to_string(id) + " under a hash it does not have";
        return false;
      }
      if (!seen.insert(id).second) {
        *why = "hash map lists block " + std::to_string(id) + " twice";
        return false;
      }
      ++listed;
    }
  }
  if (listed != size_) {
    *why = "hash map lists " + std::to_string(listed) + " blocks but counts " + std::to_string(size_);
    return false;
  }
  return true;
}

}  // namespace kv
