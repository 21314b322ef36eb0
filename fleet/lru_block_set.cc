#include "fleet/lru_block_set.h"

#include "model/util/check.h"

namespace kv::fleet {

LruBlockSet::LruBlockSet(std::int64_t capacity) : capacity_(capacity) {
  KV_CHECK(capacity > 0, "capacity=" << capacity);
}

void LruBlockSet::touch(const BlockHash& hash) {
  auto [it, inserted] = stamp_.try_emplace(hash, next_stamp_);
  if (!inserted) {
    by_stamp_.erase(it->second);
    it->second = next_stamp_;
  }
  by_stamp_.emplace(next_stamp_++, hash);
  if (size() > capacity_) {
    auto oldest = by_stamp_.begin();
    stamp_.erase(oldest->second);
    by_stamp_.erase(oldest);
  }
}

int LruBlockSet::matched_blocks(std::span<const BlockHash> hashes) const {
  int matched = 0;
  for (const BlockHash& h : hashes) {
    if (!contains(h)) break;
    ++matched;
  }
  return matched;
}

void LruBlockSet::check_invariants() const {
  KV_CHECK(size() <= capacity_, "size " << size() << " > capacity " << capacity_);
  KV_CHECK(by_stamp_.size() == stamp_.size(), "by_stamp " << by_stamp_.size() << " != stamp " << stamp_.size());
  for (const auto& [stamp, hash] : by_stamp_) {
    auto it = stamp_.find(hash);
    KV_CHECK(it != stamp_.end() && it->second == stamp, "hash " << hash.hex() << " stamp " << stamp);
  }
}

}  // namespace kv::fleet
