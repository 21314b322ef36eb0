// CachedBlockIndex: the prefix cache's hash map, (block hash, group) -> the blocks cached
// under it, oldest first (vLLM's BlockHashToBlockMap, keyed as make_block_hash_with_group_id),
// owned by the BlockPool. A key's 32-bit home key (the hash's low 32 bits, mixed with the group;
// group 0 leaves them as they are) picks its home bucket; its 16-bit way tag (the next bits,
// mixed with the group, never 0) tells it from the other keys there.
// Buckets of one cache line: ten ways of {way tag, oldest block id}, their tags compared at
// once (tag 0: the way is free), a count of the entries that overflowed past the bucket and a
// 16-bit filter of their tags (bit tag & 15 of each, kept until the count falls back to 0). A
// key lives in its home bucket (home key & mask) or, when that bucket was full, in the first
// later bucket with a free way; every bucket passed on the way counts it and sets its filter
// bit. A lookup stops at the first bucket whose filter lacks its key's bit, so an insert whose
// bit is clear at home needs no walk to rule out a duplicate; an erase empties its way in
// place and uncounts the buckets passed: nothing ever moves. A block that a way lists knows that way
// (Block::index_way), so an erase writes the bucket without reading it first, and reads the
// block's hash only when the key lies past its home. The full hash lives in the Block, and
// younger duplicates hang off the oldest block through Block::next_cached (duplicates are rare:
// only requests allocated without a lookup make them).
// The table is sized once, to a power of two of buckets at least a sixth of the blocks: at least
// 1.67 ways per block, so it never fills and never rehashes; 64 bytes per six blocks or fewer
// keeps it small enough to stay in a last-level cache for pools of hundreds of thousands of
// blocks. Only this class touches Block::next_cached and Block::index_way.
// Invariants (check):
//   1. A way's tag is 0 exactly when it names no block (kNoBlock); a used way names a block
//      whose way tag is the way's tag. No two ways name blocks with equal (hash, group) keys.
//   2. Every entry lies in its home bucket or in a later one. A bucket's overflow count equals
//      the number of entries that passed it: those that lie after their home, counted in every
//      bucket from the home up to, not including, their own. Each of those buckets' filters has
//      the entry's bit; a filter is 0 when its count is. So every entry is found from its home.
//   3. Following next_cached from a way's block visits, in insertion order, blocks that all
//      carry that (hash, group); no block is listed twice; size() counts every listed block.
//   4. A block's index_way names the way that lists it (with whether that way's bucket is past
//      the key's home) exactly when a way lists it; every other block has kNoIndexWay.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "model/block.h"
#include "model/util/check.h"

namespace kv {

class CachedBlockIndex {
 public:
  // How many blocks ahead a batch of evictions or insertions loads their buckets: enough misses
  // in flight to hide memory latency, few enough that the lines are still in L1 when used.
  static constexpr std::size_t kPrefetchDistance = 32;

  // Indexes blocks of `blocks` (by id); the span must outlive the index.
  explicit CachedBlockIndex(std::span<Block> blocks);

  // The oldest block cached under (`hash`, `group`), or kNoBlock.
  BlockId find(const BlockHash& hash, KvCacheGroupId group = 0) const;
  // Gives each non-null block ids[i] the hash hashes[i] (same length) and `group`, and lists it
  // under that key after any blocks already there, one after the other. Requires those blocks
  // uncached and the hashes non-empty.
  void cache_all(std::span<const BlockId> ids, std::span<const BlockHash> hashes, KvCacheGroupId group);
  // Unlists `b` (listed under its key, b.hash still set); the next younger duplicate, if any,
  // takes its place.
  void erase(Block& b);
  // Unlists every block.
  void clear();
  // Starts loading the home bucket of `hash`: callers about to touch many random buckets issue
  // these first so that the cache misses overlap.
  void prefetch(const BlockHash& hash, KvCacheGroupId group = 0) const {
    __builtin_prefetch(&buckets_[home_key(hash, group_mix(group)) & mask_], 1);
  }
  // Starts loading the bucket whose way names `b`, which erase(b) will write (none if no way
  // names it).
  void prefetch_way_of(const Block& b) const {
    if (b.index_way != kNoIndexWay) __builtin_prefetch(&buckets_[bucket_of(b.index_way)], 1);
  }
  // Whether `b` is listed under its own key.
  bool contains(const Block& b) const;

  std::size_t size() const { return size_; }
  // How many oldest blocks (distinct keys) the table can hold: kWays per bucket.
  std::size_t capacity() const { return buckets_.size() * kWays; }
  std::size_t num_buckets() const { return buckets_.size(); }
  std::size_t memory_bytes() const { return buckets_.size() * sizeof(Bucket); }

  bool check(std::string* why) const;

 private:
  static constexpr unsigned kWays = 10;
  static constexpr unsigned kWayMask = (1u << kWays) - 1;
  // One cache line: the ten ways' tags, the overflow count and filter, the ten ways' blocks.
  // The tags are compared as twelve 16-bit lanes (the last two are the count and the filter)
  // and those two masked off.
  struct alignas(64) Bucket {
    std::uint16_t tags[kWays] = {};
    std::uint16_t overflow = 0;
    std::uint16_t passed = 0;  // the filter: bit (tag & 15) of every entry counted in overflow
    BlockId blocks[kWays] = {kNoBlock, kNoBlock, kNoBlock, kNoBlock, kNoBlock,
                             kNoBlock, kNoBlock, kNoBlock, kNoBlock, kNoBlock};
  };
  static_assert(sizeof(Bucket) == 64, "a bucket is one cache line");

  // A key's home key and way tag, computed once per key.
  struct Key {
    std::size_t home;  // its home bucket
    std::uint16_t tag;
  };
  static std::uint32_t group_mix(KvCacheGroupId group) { return group * 0x9E3779B9u; }
  static std::uint32_t home_key(const BlockHash& h, std::uint32_t mix) {
    return static_cast<std::uint32_t>(h.prefix64()) ^ mix;
  }
  static std::uint16_t way_tag(const BlockHash& h, std::uint32_t mix) {
    const auto tag = static_cast<std::uint16_t>((h.prefix64() >> 32) ^ (mix >> 16));
    return tag == 0 ? 1 : tag;
  }
  // A key's bit in the filter of the buckets its entry passes.
  static std::uint16_t filter_bit(std::uint16_t tag) { return static_cast<std::uint16_t>(1u << (tag & 15)); }
  // Whether an entry with this tag may lie past bucket `k` (false: it is in k or nowhere).
  static bool may_pass(const Bucket& k, std::uint16_t tag) { return (k.passed & filter_bit(tag)) != 0; }
  // `mask` passed in: cache_all keeps the table's mask in a local.
  static Key key_of(const BlockHash& h, std::uint32_t mix, std::size_t mask) {
    return {home_key(h, mix) & mask, way_tag(h, mix)};
  }
  Key key_of(const BlockHash& h, std::uint32_t mix) const { return key_of(h, mix, mask_); }
  Key key_of(const Block& b) const { return key_of(b.hash, group_mix(b.group)); }
  // cache_all()'s usual case, decided on the home bucket alone: no way carries the tag, no entry
  // with the key's filter bit overflowed past it and a way is free. Then the new key takes that
  // way and this returns true.
  static bool insert_at_home(Bucket& home, std::size_t home_index, Block& b, std::uint16_t tag) {
    const unsigned free_ways = ways_holding_tag(home, 0);
    if (ways_holding_tag(home, tag) != 0 || may_pass(home, tag) || free_ways == 0) return false;
    const auto w = static_cast<unsigned>(__builtin_ctz(free_ways));
    home.tags[w] = tag;
    home.blocks[w] = b.id;
    b.index_way = index_way(home_index, w, false);
    return true;
  }
  // Bit w set for each way w of `k` whose tag is `tag` (0: the free ways).
  static unsigned ways_holding_tag(const Bucket& k, std::uint16_t tag);
  std::size_t next(std::size_t i) const { return (i + 1) & mask_; }
  // Block::index_way packs the bucket (times 32), 16 when that bucket is past the key's home,
  // and the way. Ways stop at 9, so no packed way equals kNoIndexWay.
  static std::uint32_t index_way(std::size_t bucket, unsigned way, bool past_home) {
    return static_cast<std::uint32_t>(bucket * 32 + (past_home ? 16 : 0) + way);
  }
  static std::size_t bucket_of(std::uint32_t index_way) { return index_way / 32; }
  static unsigned way_of(std::uint32_t index_way) { return index_way % 16; }
  static bool past_home(std::uint32_t index_way) { return (index_way & 16) != 0; }
  // Whether way `w` of `k` holds the key (`hash`, `group`); its tag is known to match.
  bool holds(const Bucket& k, unsigned w, const BlockHash& hash, KvCacheGroupId group) const {
    const Block& b = blocks_[static_cast<std::size_t>(k.blocks[w])];
    return b.hash == hash && b.group == group;
  }
  // The way holding (`hash`, `group`), whose key is `key`, searched from its home bucket:
  // *bucket and *way, or false.
  bool locate(const BlockHash& hash, KvCacheGroupId group, Key key, std::size_t* bucket, unsigned* way) const;
  // cache_all() past its home bucket's fast path: lists `b` as a younger duplicate or as a new
  // key's oldest block.
  void insert_the_long_way(Block& b, Key key);
  // Places a new key's oldest block `b` in the first free way from its home bucket, counting
  // it in every full bucket it passes.
  void place(Block& b, Key key);
  // Uncounts an entry of bucket `i` that passed the buckets from `home` up to i; a count that
  // falls to 0 clears its filter.
  void uncount_overflow(std::size_t home, std::size_t i);
  // The rare paths of cache_all and erase, out of line: `b` joins or leaves the chain of younger
  // duplicates listed under `oldest`.
  void append_duplicate(BlockId oldest, Block& b);
  void erase_younger_duplicate(Block& b);

  std::span<Block> blocks_;
  std::vector<Bucket> buckets_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;  // listed blocks, duplicates included
};

inline unsigned CachedBlockIndex::ways_holding_tag(const Bucket& k, std::uint16_t tag) {
#if defined(__SSE2__)
  const __m128i key = _mm_set1_epi16(static_cast<short>(tag));
  const __m128i lo = _mm_cmpeq_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(k.tags)), key);
  const __m128i hi = _mm_cmpeq_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(k.tags + 8)), key);
  return static_cast<unsigned>(_mm_movemask_epi8(_mm_packs_epi16(lo, hi))) & kWayMask;
#else
  unsigned mask = 0;
  for (unsigned w = 0; w < kWays; ++w) mask |= static_cast<unsigned>(k.tags[w] == tag) << w;
  return mask;
#endif
}

inline bool CachedBlockIndex::locate(const BlockHash& hash, KvCacheGroupId group, Key key, std::size_t* bucket,
                                     unsigned* way) const {
  for (std::size_t i = key.home;; i = next(i)) {
    const Bucket& k = buckets_[i];
    for (unsigned m = ways_holding_tag(k, key.tag); m != 0; m &= m - 1) {
      const auto w = static_cast<unsigned>(__builtin_ctz(m));
      if (holds(k, w, hash, group)) {
        *bucket = i;
        *way = w;
        return true;
      }
    }
    if (!may_pass(k, key.tag)) return false;
  }
}

inline BlockId CachedBlockIndex::find(const BlockHash& hash, KvCacheGroupId group) const {
  std::size_t i;
  unsigned w;
  return locate(hash, group, key_of(hash, group_mix(group)), &i, &w) ? buckets_[i].blocks[w] : kNoBlock;
}

inline void CachedBlockIndex::erase(Block& b) {
  // Usually b is the oldest (or only) block under its key and its own index_way names its way:
  // stores alone, with no read of the bucket to wait for. Otherwise b is a younger duplicate.
  const std::uint32_t where = b.index_way;
  if (where == kNoIndexWay) [[unlikely]] {
    erase_younger_duplicate(b);
    return;
  }
  --size_;
  b.index_way = kNoIndexWay;
  Bucket& k = buckets_[bucket_of(where)];
  if (b.next_cached != kNoBlock) [[unlikely]] {
    // The oldest leaves: the next younger duplicate takes its way (same key, same tag).
    Block& next = blocks_[static_cast<std::size_t>(b.next_cached)];
    k.blocks[way_of(where)] = next.id;
    next.index_way = where;
    b.next_cached = kNoBlock;
    return;
  }
  k.tags[way_of(where)] = 0;
  k.blocks[way_of(where)] = kNoBlock;
  if (past_home(where)) [[unlikely]]
    uncount_overflow(key_of(b).home, bucket_of(where));
}

inline void CachedBlockIndex::uncount_overflow(std::size_t home, std::size_t i) {
  for (std::size_t j = home; j != i; j = next(j)) {
    Bucket& k = buckets_[j];
    if (--k.overflow == 0) k.passed = 0;
  }
}

}  // namespace kv
