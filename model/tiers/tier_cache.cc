#include "model/tiers/tier_cache.h"

#include "model/util/check.h"

namespace kv {

TierCache::TierCache(std::int64_t capacity_blocks) : capacity_(capacity_blocks) {
  KV_CHECK(capacity_blocks > 0, "a tier needs room for at least one block, got " << capacity_blocks);
}

void TierCache::unlink(std::int32_t i) {
  Slot& s = slots_[static_cast<std::size_t>(i)];
  if (s.prev != kNone)
    slots_[static_cast<std::size_t>(s.prev)].next = s.next;
  else
    oldest_ = s.next;
  if (s.next != kNone)
    slots_[static_cast<std::size_t>(s.next)].prev = s.prev;
  else
    newest_ = s.prev;
  s.prev = s.next = kNone;
}

void TierCache::link_newest(std::int32_t i) {
  Slot& s = slots_[static_cast<std::size_t>(i)];
  s.prev = newest_;
  s.next = kNone;
  if (newest_ != kNone)
    slots_[static_cast<std::size_t>(newest_)].next = i;
  else
    oldest_ = i;
  newest_ = i;
}

bool TierCache::touch(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return false;
  unlink(it->second);
  link_newest(it->second);
  return true;
}

std::optional<BlockHash> TierCache::insert(const BlockHash& hash) {
  KV_CHECK(!hash.empty(), "a tier entry needs a block hash");
  if (touch(hash)) return std::nullopt;
  std::optional<BlockHash> evicted;
  if (size() >= capacity_) {
    evicted = slots_[static_cast<std::size_t>(oldest_)].hash;
    erase(*evicted);
  }
  std::int32_t i;
  if (!free_slots_.empty()) {
    i = free_slots_.back();
    free_slots_.pop_back();
  } else {
    i = static_cast<std::int32_t>(slots_.size());
    slots_.emplace_back();
  }
  slots_[static_cast<std::size_t>(i)].hash = hash;
  link_newest(i);
  index_.emplace(hash, i);
  return evicted;
}

bool TierCache::erase(const BlockHash& hash) {
  auto it = index_.find(hash);
  if (it == index_.end()) return false;
  const std::int32_t i = it->second;
  unlink(i);
  slots_[static_cast<std::size_t>(i)].hash = BlockHash{};
  free_slots_.push_back(i);
  index_.erase(it);
  return true;
}

std::vector<BlockHash> TierCache::lru_order() const {
  std::vector<BlockHash> out;
  for (std::int32_t i = oldest_; i != kNone; i = slots_[static_cast<std::size_t>(i)].next) {
    out.push_back(slots_[static_cast<std::size_t>(i)].hash);
  }
  return out;
}

bool TierCache::check_invariants(std::string* why) const {
  if (size() > capacity_) {
    *why = "tier holds " + std::to_string(size()) + " blocks, capacity " + std::to_string(capacity_);
    return false;
  }
  std::int64_t walked = 0;
  std::int32_t prev = kNone;
  for (std::int32_t i = oldest_; i != kNone; i = slots_[static_cast<std::size_t>(i)].next) {
    const Slot& s = slots_[static_cast<std::size_t>(i)];
    auto it = index_.find(s.hash);
    if (s.prev != prev || it == index_.end() || it->second != i || ++walked > size()) {
      *why = "tier LRU list is broken at slot " + std::to_string(i);
      return false;
    }
    prev = i;
  }
  if (walked != size() || prev != newest_) {
    *why = "tier LRU list has " + std::to_string(walked) + " entries, the index " + std::to_string(size());
    return false;
  }
  return true;
}

}  // namespace kv
