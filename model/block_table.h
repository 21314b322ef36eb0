// BlockTable: one request's KV blocks, one list per KV-cache group, and the slot mapping
// through them. The scheduler's plans carry block-id deltas; every executor of a plan (the
// shadow memory, the CUDA device's host side, the CPU reference) keeps one of these per live
// request and maps positions to slots with it.
// Invariants:
//   1. num_groups() >= 1 and never changes; group g's list holds that group's blocks in logical
//      order: entry i holds positions [i * B, (i + 1) * B) (B = the group's block size).
//   2. kNullBlock marks an entry with no block behind it (positions a sliding-window or
//      chunked-local group dropped, or skipped by a hit); slot() of such a position is
//      kPaddingSlot, so nothing is ever written to or read from the null block's slots.
//   3. slot() of a position beyond the table is a bug in the caller (KV_CHECK).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/slot.h"
#include "model/types.h"
#include "model/util/check.h"

namespace kv {

inline constexpr BlockId kNullBlock = 0;

class BlockTable {
 public:
  explicit BlockTable(int num_groups = 1) : groups_(static_cast<std::size_t>(num_groups)) {
    KV_CHECK(num_groups >= 1, "a block table needs at least one group");
  }

  int num_groups() const { return static_cast<int>(groups_.size()); }
  std::span<const BlockId> group(int g = 0) const { return groups_[index(g)]; }
  std::size_t size(int g = 0) const { return groups_[index(g)].size(); }

  void append(std::span<const BlockId> ids, int g = 0) {
    auto& list = groups_[index(g)];
    list.insert(list.end(), ids.begin(), ids.end());
  }
  void assign(std::span<const BlockId> ids, int g = 0) { groups_[index(g)].assign(ids.begin(), ids.end()); }
  void swap_entries(std::size_t i, std::size_t j, int g = 0) { std::swap(groups_[index(g)][i], groups_[index(g)][j]); }
  void clear() {
    for (auto& list : groups_) list.clear();
  }

  // Tokens the group's blocks can hold.
  std::int64_t capacity_tokens(int block_size, int g = 0) const {
    return static_cast<std::int64_t>(size(g)) * block_size;
  }

  // The slot of `position` in group g (kPaddingSlot where the entry is the null block).
  std::int64_t slot(std::int64_t position, int block_size, int g = 0) const {
    const auto i = static_cast<std::size_t>(block_index(position, block_size));
    const auto& list = groups_[index(g)];
    KV_CHECK(i < list.size(), "position " << position << " is beyond the block table (" << list.size() << " blocks)");
    return list[i] == kNullBlock ? kPaddingSlot : slot_in_block(list[i], block_size, position);
  }

 private:
  std::size_t index(int g) const {
    KV_CHECK(g >= 0 && g < num_groups(), "group " << g << " of " << num_groups());
    return static_cast<std::size_t>(g);
  }
  std::vector<std::vector<BlockId>> groups_;
};

}  // namespace kv
