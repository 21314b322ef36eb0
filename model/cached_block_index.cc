#include "model/cached_block_index.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "model/util/check.h"

namespace kv {

CachedBlockIndex::CachedBlockIndex(std::span<Block> blocks) : blocks_(blocks) {
  // A power of two of buckets, at least a sixth of the blocks: at least 1.67 ways per block.
  buckets_.resize(std::bit_ceil(std::max<std::size_t>((blocks.size() + 5) / 6, 1)));
  mask_ = buckets_.size() - 1;
  KV_CHECK(buckets_.size() <= kNoIndexWay / 32, "a block index of " << buckets_.size() << " buckets is too large");
}

void CachedBlockIndex::cache_all(std::span<const BlockId> ids, std::span<const BlockHash> hashes,
                                 KvCacheGroupId group) {
  KV_CHECK(ids.size() == hashes.size(), "caching " << ids.size() << " blocks with " << hashes.size() << " hashes");
  // The table's state in locals: the stores of hash bytes below could alias any member, and
  // would make the compiler reload each one on every block.
  Bucket* const buckets = buckets_.data();
  Block* const blocks = blocks_.data();
  const std::size_t mask = mask_;
  const std::uint32_t mix = group_mix(group);
  const BlockHash* const end = hashes.data() + hashes.size();
  // The home buckets are misses to memory: each is loaded kPrefetchDistance blocks ahead.
  const BlockHash* ahead = hashes.data();
  for (; ahead != end && ahead != hashes.data() + kPrefetchDistance; ++ahead) {
    __builtin_prefetch(&buckets[home_key(*ahead, mix) & mask], 1);
  }
  const BlockId* id = ids.data();
  std::size_t listed = 0;
  for (const BlockHash* h = hashes.data(); h != end; ++h, ++id) {
    if (ahead != end) __builtin_prefetch(&buckets[home_key(*ahead++, mix) & mask], 1);
    Block& b = blocks[static_cast<std::size_t>(*id)];
    if (b.is_null) continue;
    KV_CHECK(b.hash.empty() && !h->empty(),
             "block " << b.id << " cached twice, or with no hash (group " << group << ")");
    const Key key = key_of(*h, mix, mask);
    b.hash = *h;
    b.group = group;
    ++listed;
    if (insert_at_home(buckets[key.home], key.home, b, key.tag)) [[likely]]
      continue;
    insert_the_long_way(b, key);
  }
  size_ += listed;
}

void CachedBlockIndex::insert_the_long_way(Block& b, Key key) {
  std::size_t i;
  unsigned w;
  if (locate(b.hash, b.group, key, &i, &w)) {
    append_duplicate(buckets_[i].blocks[w], b);
    return;
  }
  place(b, key);
}

void CachedBlockIndex::place(Block& b, Key key) {
  for (std::size_t i = key.home, passed = 0;; i = next(i), ++passed) {
    Bucket& k = buckets_[i];
    const unsigned free_ways = ways_holding_tag(k, 0);
    if (free_ways != 0) [[likely]] {
      const auto w = static_cast<unsigned>(__builtin_ctz(free_ways));
      k.tags[w] = key.tag;
      k.blocks[w] = b.id;
      b.index_way = index_way(i, w, passed > 0);
      return;
    }
    KV_CHECK(passed < buckets_.size(), "the block index is full");
    KV_CHECK(k.overflow != UINT16_MAX, "block index bucket " << i << " is passed by too many entries");
    ++k.overflow;
    k.passed |= filter_bit(key.tag);
  }
}

void CachedBlockIndex::append_duplicate(BlockId oldest, Block& b) {
  Block* last = &blocks_[static_cast<std::size_t>(oldest)];
  KV_CHECK(last != &b, "block " << b.id << " is already indexed");
  while (last->next_cached != kNoBlock) {
    last = &blocks_[static_cast<std::size_t>(last->next_cached)];
    KV_CHECK(last != &b, "block " << b.id << " is already indexed");
  }
  last->next_cached = b.id;
}

void CachedBlockIndex::erase_younger_duplicate(Block& b) {
  std::size_t i;
  unsigned w;
  KV_CHECK(locate(b.hash, b.group, key_of(b), &i, &w), "block " << b.id << " has a hash but is not in the map");
  Block* prev = &blocks_[static_cast<std::size_t>(buckets_[i].blocks[w])];
  while (prev->next_cached != b.id) {
    KV_CHECK(prev->next_cached != kNoBlock, "block " << b.id << " missing under its own hash");
    prev = &blocks_[static_cast<std::size_t>(prev->next_cached)];
  }
  prev->next_cached = b.next_cached;
  b.next_cached = kNoBlock;
  --size_;
}

void CachedBlockIndex::clear() {
  for (Bucket& k : buckets_) {
    for (unsigned w = 0; w < kWays; ++w) {
      for (BlockId id = k.blocks[w]; id != kNoBlock;) {
        Block& b = blocks_[static_cast<std::size_t>(id)];
        id = b.next_cached;
        b.next_cached = kNoBlock;
        b.index_way = kNoIndexWay;
      }
    }
    k = Bucket{};
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
  std::vector<bool> seen(blocks_.size(), false);            // by block id
  std::vector<std::uint32_t> overflow(buckets_.size(), 0);  // recounted from the entries
  std::vector<std::uint16_t> passed(buckets_.size(), 0);    // the filter bits they need
  std::size_t listed = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    const Bucket& k = buckets_[i];
    for (unsigned w = 0; w < kWays; ++w) {
      const BlockId id = k.blocks[w];
      if ((k.tags[w] == 0) != (id == kNoBlock)) {
        *why = "hash map bucket " + std::to_string(i) + " way " + std::to_string(w) + " has tag " +
               std::to_string(k.tags[w]) + " and block " + std::to_string(id);
        return false;
      }
      if (id == kNoBlock) continue;
      if (id < 0 || static_cast<std::size_t>(id) >= blocks_.size()) {
        *why = "hash map bucket " + std::to_string(i) + " names no block";
        return false;
      }
      const Block& oldest = blocks_[static_cast<std::size_t>(id)];
      const Key key = key_of(oldest);
      if (oldest.hash.empty() || key.tag != k.tags[w]) {
        *why = "hash map lists block " + std::to_string(id) + " under a hash it does not have";
        return false;
      }
      // Counted in every bucket from its home up to its own, found from its home, and the
      // first entry of its key on the way (no key listed twice).
      for (std::size_t j = key.home; j != i; j = next(j)) {
        ++overflow[j];
        passed[j] |= filter_bit(key.tag);
      }
      if (find(oldest.hash, oldest.group) != id) {
        *why = "hash map entry for block " + std::to_string(id) +
               " is not found from its home, or its key is listed twice";
        return false;
      }
      if (oldest.index_way != index_way(i, w, key.home != i)) {
        *why = "block " + std::to_string(id) + " does not know its way in hash map bucket " + std::to_string(i);
        return false;
      }
      for (BlockId b = id; b != kNoBlock; b = blocks_[static_cast<std::size_t>(b)].next_cached) {
        if (b < 0 || static_cast<std::size_t>(b) >= blocks_.size() ||
            !(blocks_[static_cast<std::size_t>(b)].hash == oldest.hash) ||
            blocks_[static_cast<std::size_t>(b)].group != oldest.group) {
          *why = "hash map lists block " + std::to_string(b) + " under a hash it does not have";
          return false;
        }
        if (b != id && blocks_[static_cast<std::size_t>(b)].index_way != kNoIndexWay) {
          *why = "younger duplicate block " + std::to_string(b) + " names a way of the hash map";
          return false;
        }
        if (seen[static_cast<std::size_t>(b)]) {
          *why = "hash map lists block " + std::to_string(b) + " twice";
          return false;
        }
        seen[static_cast<std::size_t>(b)] = true;
        ++listed;
      }
    }
  }
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    if (buckets_[i].overflow != overflow[i]) {
      *why = "hash map bucket " + std::to_string(i) + " counts " + std::to_string(buckets_[i].overflow) +
             " overflowed entries, " + std::to_string(overflow[i]) + " pass it";
      return false;
    }
    if ((buckets_[i].passed & passed[i]) != passed[i] || (overflow[i] == 0 && buckets_[i].passed != 0)) {
      *why = "hash map bucket " + std::to_string(i) + " has the filter " + std::to_string(buckets_[i].passed) +
             ", the entries that pass it need " + std::to_string(passed[i]) + (overflow[i] == 0 ? " (none pass)" : "");
      return false;
    }
  }
  for (const Block& b : blocks_) {
    if (b.index_way != kNoIndexWay && !seen[static_cast<std::size_t>(b.id)]) {
      *why = "block " + std::to_string(b.id) + " names a way of the hash map but is not listed";
      return false;
    }
  }
  if (listed != size_) {
    *why = "hash map lists " + std::to_string(listed) + " blocks but counts " + std::to_string(size_);
    return false;
  }
  return true;
}

}  // namespace kv
