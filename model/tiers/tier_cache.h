// TierCache: the entries of one second-tier KV store (host memory or disk), as block hashes
// in LRU order with a capacity in blocks. Pure bookkeeping: the bytes live in the device's
// shadow (sim/shadow_kv.h) or nowhere.
// Invariants (check_invariants):
//   1. size() <= capacity(); a hash is held at most once.
//   2. insert() and touch() make an entry the most recent; an insert into a full cache first
//      evicts the least recent entry and returns it.
//   3. Deterministic: the hash map only finds entries; the order lives in intrusive links
//      inside one vector of slots (freed slots are reused, last freed first).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/block_hash.h"

namespace kv {

class TierCache {
 public:
  explicit TierCache(std::int64_t capacity_blocks);

  std::int64_t capacity() const { return capacity_; }
  std::int64_t size() const { return static_cast<std::int64_t>(index_.size()); }
  bool contains(const BlockHash& hash) const { return index_.count(hash) != 0; }

  // Makes a held entry the most recent; false (nothing changed) if it is not held.
  bool touch(const BlockHash& hash);
  // Adds `hash` as the most recent entry (a held one is only touched). When the cache is
  // full, the least recent entry leaves first and is returned.
  std::optional<BlockHash> insert(const BlockHash& hash);
  // Removes an entry; false if it was not held.
  bool erase(const BlockHash& hash);

  // Entries, least recent first.
  std::vector<BlockHash> lru_order() const;
  bool check_invariants(std::string* why) const;

 private:
  static constexpr std::int32_t kNone = -1;
  struct Slot {
    BlockHash hash;
    std::int32_t prev = kNone, next = kNone;  // towards the least / most recent entry
  };
  void unlink(std::int32_t i);
  void link_newest(std::int32_t i);

  std::int64_t capacity_;
  std::vector<Slot> slots_;
  std::vector<std::int32_t> free_slots_;
  std::unordered_map<BlockHash, std::int32_t, BlockHashHasher> index_;  // lookup only
  std::int32_t oldest_ = kNone, newest_ = kNone;
};

}  // namespace kv
