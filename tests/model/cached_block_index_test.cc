// CachedBlockIndex: full buckets overflowing into the next (with wrap-around), tag collisions,
// duplicates and in-place erase, then long deterministic sequences cross-checked against a
// plain model.
#include "model/cached_block_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace kv {
namespace {

// A hash whose low 32 bits (the index's home key) and next 32 bits (whose low 16 are its way
// tag) are both `tag`, told apart by `salt`.
BlockHash make_hash(std::uint32_t tag, std::uint8_t salt) {
  BlockHash h;
  std::memcpy(h.bytes.data(), &tag, sizeof tag);
  std::memcpy(h.bytes.data() + 4, &tag, sizeof tag);
  h.bytes[8] = salt;
  h.size = 32;
  return h;
}

class CachedBlockIndexTest : public ::testing::Test {
 protected:
  // 32 blocks: 8 buckets of 10 ways; a tag's home bucket is tag % 8.
  CachedBlockIndexTest() : blocks_(make_blocks(32)), index_(blocks_) {}
  static std::vector<Block> make_blocks(int n) {
    std::vector<Block> v(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)].id = i;
    return v;
  }
  void cache(BlockId id, const BlockHash& h) {
    index_.cache_all(std::span<const BlockId>(&id, 1), std::span<const BlockHash>(&h, 1), 0);
    expect_ok();
  }
  void uncache(BlockId id) {
    index_.erase(blocks_[static_cast<std::size_t>(id)]);
    blocks_[static_cast<std::size_t>(id)].hash = BlockHash{};
    expect_ok();
  }
  void expect_ok() {
    std::string why;
    EXPECT_TRUE(index_.check(&why)) << why;
  }
  std::vector<Block> blocks_;
  CachedBlockIndex index_;
};

TEST_F(CachedBlockIndexTest, SizedAtAPowerOfTwoOfBucketsAtLeastASixthOfTheBlocks) {
  EXPECT_EQ(index_.num_buckets(), 8u);
  EXPECT_EQ(index_.capacity(), 80u);
  EXPECT_EQ(index_.memory_bytes(), 512u);
  std::vector<Block> few = make_blocks(4);
  CachedBlockIndex small(few);
  EXPECT_EQ(small.num_buckets(), 1u);
  EXPECT_EQ(small.capacity(), 10u);
  std::vector<Block> many = make_blocks(187500);  // 31,250 buckets' worth: 32,768 of 64 bytes
  CachedBlockIndex big(many);
  EXPECT_EQ(big.num_buckets(), 32768u);
  EXPECT_EQ(big.memory_bytes(), 2097152u);
}

TEST_F(CachedBlockIndexTest, CollidingTagsShareABucketAndSurviveErase) {
  // Equal tags, told apart by the full hash; a third tag with the same home bucket.
  const BlockHash a = make_hash(7, 1), b = make_hash(7, 2), c = make_hash(15, 3);
  cache(1, a);
  cache(2, b);
  cache(3, c);
  EXPECT_EQ(index_.find(a), 1);
  EXPECT_EQ(index_.find(b), 2);
  EXPECT_EQ(index_.find(c), 3);
  EXPECT_EQ(index_.find(make_hash(7, 9)), kNoBlock);
  uncache(1);
  EXPECT_EQ(index_.find(a), kNoBlock);
  EXPECT_EQ(index_.find(b), 2);
  EXPECT_EQ(index_.find(c), 3);
  uncache(3);
  EXPECT_EQ(index_.find(b), 2);
  EXPECT_EQ(index_.size(), 1u);
}

TEST_F(CachedBlockIndexTest, AFullBucketOverflowsIntoTheNextWrappingAround) {
  // Thirteen keys whose home is the last bucket (7): ten fill it, three overflow into bucket 0.
  const auto key = [](BlockId id) { return make_hash(7 + 8 * static_cast<std::uint32_t>(id), 0); };
  for (BlockId id = 1; id <= 13; ++id) cache(id, key(id));
  // A key at home in bucket 0 shares it with the overflowed ones.
  cache(14, make_hash(8, 0));
  for (BlockId id = 1; id <= 13; ++id) EXPECT_EQ(index_.find(key(id)), id);
  EXPECT_EQ(index_.find(make_hash(8, 0)), 14);
  EXPECT_EQ(index_.find(key(20)), kNoBlock);  // searched past bucket 7, not found
  // Erasing from the full home bucket leaves the overflowed keys reachable, and a new key takes
  // the freed way.
  uncache(2);
  EXPECT_EQ(index_.find(key(12)), 12);
  EXPECT_EQ(index_.find(key(13)), 13);
  cache(15, key(15));
  // Erasing the overflowed keys uncounts them: then a miss stops at bucket 7.
  uncache(11);
  uncache(12);
  uncache(13);
  EXPECT_EQ(index_.find(key(15)), 15);
  EXPECT_EQ(index_.find(make_hash(8, 0)), 14);
  EXPECT_EQ(index_.size(), 11u);
}

TEST_F(CachedBlockIndexTest, DuplicatesAnswerOldestFirst) {
  const BlockHash h = make_hash(3, 0);
  cache(1, h);
  cache(2, h);
  cache(3, h);
  EXPECT_EQ(index_.size(), 3u);
  EXPECT_EQ(index_.find(h), 1);
  uncache(2);  // from the middle of the chain
  EXPECT_EQ(index_.find(h), 1);
  EXPECT_TRUE(index_.contains(blocks_[3]));
  EXPECT_FALSE(index_.contains(blocks_[2]));
  uncache(1);  // the oldest: block 3 takes the slot
  EXPECT_EQ(index_.find(h), 3);
  uncache(3);
  EXPECT_EQ(index_.find(h), kNoBlock);
  EXPECT_EQ(index_.size(), 0u);
}

TEST_F(CachedBlockIndexTest, AnOverflowedKeysWayPassesToItsDuplicateWithItsCounts) {
  // Ten keys fill bucket 7; the eleventh overflows into bucket 0 and gets a younger duplicate.
  for (BlockId id = 1; id <= 11; ++id) cache(id, make_hash(7 + 8 * static_cast<std::uint32_t>(id), 0));
  const BlockHash h = make_hash(7 + 8 * 11, 0);
  cache(20, h);
  EXPECT_EQ(blocks_[20].index_way, kNoIndexWay);  // a younger duplicate: no way lists it
  uncache(11);                                    // the oldest leaves: block 20 takes its way
  EXPECT_NE(blocks_[20].index_way, kNoIndexWay);
  EXPECT_EQ(index_.find(h), 20);
  // Erased through the way it was handed, block 20 uncounts bucket 7 (check() recounts it).
  uncache(20);
  EXPECT_EQ(index_.find(h), kNoBlock);
  EXPECT_EQ(index_.size(), 10u);
}

TEST_F(CachedBlockIndexTest, CacheAllGivesHashesAndListsInOrderSkippingTheNullBlock) {
  blocks_[0].is_null = true;
  const BlockHash a = make_hash(4, 0), b = make_hash(12, 0);
  const std::vector<BlockId> ids{5, 0, 6, 7};
  const std::vector<BlockHash> hashes{a, make_hash(9, 9), b, a};  // block 7 repeats block 5's hash
  index_.cache_all(ids, hashes, 1);
  expect_ok();
  EXPECT_TRUE(blocks_[0].hash.empty());
  EXPECT_EQ(blocks_[6].hash, b);
  EXPECT_EQ(blocks_[6].group, 1);
  EXPECT_EQ(index_.size(), 3u);
  EXPECT_EQ(index_.find(a, 1), 5);  // oldest first; block 7 is its younger duplicate
  EXPECT_EQ(index_.find(a, 0), kNoBlock);
  EXPECT_EQ(blocks_[5].next_cached, 7);
  EXPECT_EQ(blocks_[7].index_way, kNoIndexWay);
  EXPECT_DEATH(index_.cache_all(std::vector<BlockId>{6}, std::vector<BlockHash>{b}, 1), "block 6 cached twice");
}

TEST_F(CachedBlockIndexTest, ClearForgetsEverything) {
  cache(1, make_hash(1, 0));
  cache(2, make_hash(1, 0));
  index_.clear();
  EXPECT_EQ(index_.size(), 0u);
  EXPECT_EQ(index_.find(make_hash(1, 0)), kNoBlock);
  EXPECT_EQ(blocks_[1].next_cached, kNoBlock);
  EXPECT_EQ(blocks_[1].index_way, kNoIndexWay);
}

TEST_F(CachedBlockIndexTest, CheckCatchesABlockThatDoesNotKnowItsWay) {
  cache(1, make_hash(5, 0));
  cache(2, make_hash(6, 0));
  const std::uint32_t way = blocks_[1].index_way;
  blocks_[1].index_way = kNoIndexWay;
  std::string why;
  EXPECT_FALSE(index_.check(&why));
  EXPECT_EQ(why, "block 1 does not know its way in hash map bucket 5");
  blocks_[1].index_way = way;
  blocks_[3].index_way = way;  // an unlisted block that claims a way
  EXPECT_FALSE(index_.check(&why));
  EXPECT_EQ(why, "block 3 names a way of the hash map but is not listed");
}

TEST_F(CachedBlockIndexTest, CheckCatchesASlotWhoseBlockLostItsHash) {
  cache(1, make_hash(5, 0));
  blocks_[1].hash = make_hash(6, 0);
  std::string why;
  EXPECT_FALSE(index_.check(&why));
  EXPECT_EQ(why, "hash map lists block 1 under a hash it does not have");
}

// Random inserts and erases over 64 blocks (16 buckets) whose tags come from `tag_of(rng)`,
// cross-checked against a multimap after every 97 steps.
template <typename TagOf>
void agree_with_a_multimap(TagOf tag_of, int salts) {
  constexpr int kBlocks = 64;
  std::vector<Block> blocks(kBlocks);
  for (int i = 0; i < kBlocks; ++i) blocks[static_cast<std::size_t>(i)].id = i;
  CachedBlockIndex index(blocks);
  std::map<std::pair<std::uint32_t, int>, std::vector<BlockId>> model;  // hash -> oldest first
  std::mt19937 rng(12345);
  for (int step = 0; step < 20000; ++step) {
    Block& b = blocks[rng() % kBlocks];
    const std::uint32_t tag = tag_of(rng);
    const int salt = static_cast<int>(rng() % static_cast<unsigned>(salts));
    if (b.hash.empty()) {
      const BlockHash h = make_hash(tag, static_cast<std::uint8_t>(salt));
      index.cache_all(std::span<const BlockId>(&b.id, 1), std::span<const BlockHash>(&h, 1), 0);
      model[{tag, salt}].push_back(b.id);
    } else {
      std::uint32_t old_tag;
      std::memcpy(&old_tag, b.hash.bytes.data(), sizeof old_tag);
      auto& ids = model[{old_tag, b.hash.bytes[8]}];
      ids.erase(std::find(ids.begin(), ids.end(), b.id));
      index.erase(b);
      b.hash = BlockHash{};
    }
    if (step % 97 == 0) {
      std::string why;
      ASSERT_TRUE(index.check(&why)) << why << " at step " << step;
      for (const auto& [key, ids] : model) {
        const BlockId expect = ids.empty() ? kNoBlock : ids.front();
        ASSERT_EQ(index.find(make_hash(key.first, static_cast<std::uint8_t>(key.second))), expect)
            << "at step " << step;
      }
    }
  }
}

TEST(CachedBlockIndexModelTest, AgreesWithAMultimapOverALongRandomSequence) {
  // Few distinct tags and a few hashes per tag: equal tags, shared buckets, duplicates.
  agree_with_a_multimap([](std::mt19937& rng) { return static_cast<std::uint32_t>(rng() % 12) * 37u; }, 3);
}

TEST(CachedBlockIndexModelTest, AgreesWithAMultimapWhenEveryKeyShareOneHomeBucket) {
  // Every tag's home is the last bucket: long overflow runs that wrap around to bucket 0.
  agree_with_a_multimap([](std::mt19937& rng) { return static_cast<std::uint32_t>(rng() % 4) * 16u + 15u; }, 12);
}

}  // namespace
}  // namespace kv
