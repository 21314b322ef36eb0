#include "fleet/ttl_block_index.h"

#include "model/util/check.h"

namespace kv::fleet {

void TtlBlockIndex::insert(std::span<const BlockHash> hashes, std::int64_t expiry_ns) {
  for (const BlockHash& h : hashes) {
    expiry_[h] = expiry_ns;
    queue_.emplace(expiry_ns, h);
  }
}

void TtlBlockIndex::expire(std::int64_t now_ns) {
  while (!queue_.empty() && queue_.begin()->first <= now_ns) {
    auto front = queue_.begin();
    auto it = expiry_.find(front->second);
    if (it != expiry_.end() && it->second == front->first) expiry_.erase(it);
    queue_.erase(front);
  }
}

int TtlBlockIndex::matched_blocks(std::span<const BlockHash> hashes) const {
  int matched = 0;
  for (const BlockHash& h : hashes) {
    if (!expiry_.contains(h)) break;
    ++matched;
  }
  return matched;
}

void TtlBlockIndex::check_invariants() const {
  for (const auto& [hash, expiry] : expiry_) {
    int live = 0;
    auto [first, last] = queue_.equal_range(expiry);
    for (auto it = first; it != last; ++it) live += it->second == hash ? 1 : 0;
    KV_CHECK(live >= 1, "hash " << hash.hex() << " expiring at " << expiry << " is not queued");
  }
}

}  // namespace kv::fleet
