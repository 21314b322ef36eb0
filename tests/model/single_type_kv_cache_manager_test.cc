// Per-type managers of one KV-cache group: each type's hit rule, skipped blocks and the null
// block, and per-group caching, as short stories with exact block ids.
#include "model/single_type_kv_cache_manager.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kv {
namespace {

KvCacheSpec spec_of(AttentionType type, int window = 0, int chunk = 0) {
  return KvCacheSpec{type, 16, 2, 64, 64, 2, window, chunk};
}

// A distinct 32-byte hash per block index (the pool never looks inside a hash).
std::vector<BlockHash> chain(int n) {
  std::vector<BlockHash> hashes(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    hashes[static_cast<std::size_t>(i)].bytes.fill(static_cast<std::uint8_t>(i + 1));
    hashes[static_cast<std::size_t>(i)].size = 32;
  }
  return hashes;
}

class SingleTypeManagerTest : public ::testing::Test {
 protected:
  // Caches one fresh block under hashes[i] for group `group`, for each i in `indexes`; the
  // blocks go back to the free queue (still cached). Returns their ids by index (0 = none).
  std::vector<BlockId> cache(const std::vector<int>& indexes, KvCacheGroupId group) {
    std::vector<BlockId> ids(hashes_.size(), 0);
    for (int i : indexes) {
      std::vector<BlockId> b;
      pool_.get_new_blocks(1, b);
      std::vector<BlockId> table(hashes_.size(), 0);
      table[static_cast<std::size_t>(i)] = b[0];
      const std::vector<TokenId> tokens(hashes_.size() * 16, 0);  // 16-token blocks (spec_of)
      pool_.cache_full_blocks(table, hashes_, static_cast<std::size_t>(i), static_cast<std::size_t>(i) + 1, group, 16,
                              tokens, HashExtras{});
      pool_.free_blocks(b);
      ids[static_cast<std::size_t>(i)] = b[0];
    }
    return ids;
  }

  BlockPool pool_{32, true, FreeOrder::kUnhashedFirst, false};
  std::vector<BlockHash> hashes_ = chain(8);
  const std::vector<KvCacheGroupId> group0_ = {0};
};

TEST_F(SingleTypeManagerTest, FullStopsAtTheFirstMiss) {
  FullAttentionManager m(spec_of(AttentionType::kFullAttention), pool_, 0);
  cache({0, 1, 2, 4}, 0);  // blocks 1, 2, 3, 4
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 127, group0_, false, 16), (std::vector<std::vector<BlockId>>{{1, 2, 3}}));
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 47, group0_, false, 16),
            (std::vector<std::vector<BlockId>>{{1, 2}}));  // 47 tokens: 2 whole blocks
}

TEST_F(SingleTypeManagerTest, LookupSetNeedsEveryGroup) {
  FullAttentionManager m(spec_of(AttentionType::kFullAttention), pool_, 0);
  cache({0, 1, 2}, 0);  // blocks 1, 2, 3
  cache({0, 1}, 1);     // blocks 4, 5: the same hashes, group 1's own blocks
  const std::vector<KvCacheGroupId> both = {0, 1};
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 127, both, false, 16),
            (std::vector<std::vector<BlockId>>{{1, 2}, {4, 5}}));
  EXPECT_EQ(pool_.get_cached_block(hashes_[2], 1), kNoBlock);
}

TEST_F(SingleTypeManagerTest, SlidingWindowSearchesRightToLeft) {
  SlidingWindowManager m(spec_of(AttentionType::kSlidingWindow, 32), pool_, 0);
  cache({0, 1, 3, 4}, 0);  // blocks 1, 2, 3, 4 at indexes 0, 1, 3, 4
  // 32-token window: 2 cached blocks in a row. Indexes 4 and 3 are found first.
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 127, group0_, false, 16),
            (std::vector<std::vector<BlockId>>{{0, 0, 0, 3, 4}}));
  // Up to 63 tokens: index 2 misses, 1 and 0 make the run.
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 63, group0_, false, 16), (std::vector<std::vector<BlockId>>{{1, 2}}));
}

TEST_F(SingleTypeManagerTest, SlidingWindowWithoutAFullRunKeepsTheCachedPrefix) {
  SlidingWindowManager m(spec_of(AttentionType::kSlidingWindow, 48), pool_, 0);  // needs 3
  cache({0, 1, 3, 4}, 0);
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 127, group0_, false, 16), (std::vector<std::vector<BlockId>>{{1, 2}}));
  SlidingWindowManager none(spec_of(AttentionType::kSlidingWindow, 48), pool_, 1);
  EXPECT_EQ(none.find_longest_cache_hit(hashes_, 127, std::vector<KvCacheGroupId>{1}, false, 16),
            (std::vector<std::vector<BlockId>>{{}}));
}

TEST_F(SingleTypeManagerTest, ChunkedHitsEarlierChunksWithoutALookup) {
  ChunkedLocalAttentionManager m(spec_of(AttentionType::kChunkedLocalAttention, 0, 32), pool_, 0);
  // Nothing cached: 70 tokens lie in the chunk starting at 64, so 4 null blocks are a hit.
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 70, group0_, false, 16),
            (std::vector<std::vector<BlockId>>{{0, 0, 0, 0}}));
  cache({6}, 0);  // block 1 at index 6
  // Up to 127 tokens: chunk start 96 (index 6), then index 6 hits and index 7 is past 127/16.
  EXPECT_EQ(m.find_longest_cache_hit(hashes_, 127, group0_, false, 16),
            (std::vector<std::vector<BlockId>>{{0, 0, 0, 0, 0, 0, 1}}));
}

TEST_F(SingleTypeManagerTest, SkippedBlocksBecomeNullAndAreFreedHighestFirst) {
  SlidingWindowManager m(spec_of(AttentionType::kSlidingWindow, 32), pool_, 0);
  BlockHasher hasher;
  std::vector<TokenId> prompt(80);
  for (int i = 0; i < 80; ++i) prompt[static_cast<std::size_t>(i)] = 1000 + i;
  Request r("a", prompt, HashExtras{}, &hasher, 16);
  m.allocate_new_computed_blocks("a", {}, 0);
  std::vector<BlockId> fresh;
  m.allocate_new_blocks("a", {.num_tokens = 80}, fresh);
  EXPECT_EQ(fresh, (std::vector<BlockId>{1, 2, 3, 4, 5}));
  m.cache_blocks(r, 80);
  // 79 computed: tokens 0..47 are out of the window, so blocks at indexes 0..2 go, 2 first.
  EXPECT_EQ(m.remove_skipped_blocks("a", {.total_computed = 79}), 3u);
  EXPECT_EQ(std::vector<BlockId>(m.blocks_of("a").begin(), m.blocks_of("a").end()),
            (std::vector<BlockId>{0, 0, 0, 4, 5}));
  // They carry hashes: appended at the tail, in freeing order, and still cached.
  const std::vector<BlockId> order = pool_.policy().order();
  EXPECT_EQ(std::vector<BlockId>(order.end() - 3, order.end()), (std::vector<BlockId>{3, 2, 1}));
  EXPECT_EQ(pool_.get_cached_block(r.block_hashes()[0], 0), 1);
  EXPECT_EQ(m.remove_skipped_blocks("a", {.total_computed = 79}), 0u);  // already null
  m.free("a");
  std::string why;
  EXPECT_TRUE(pool_.check_invariants(&why)) << why;
  EXPECT_EQ(pool_.num_free_blocks(), 31u);
}

TEST_F(SingleTypeManagerTest, BlocksToAllocateCountsEvictableHitsPastTheSkippedPart) {
  SlidingWindowManager m(spec_of(AttentionType::kSlidingWindow, 32), pool_, 0);
  cache({0, 1, 2, 3}, 0);                         // blocks 1..4, all free and cached
  const std::vector<BlockId> hit = {0, 0, 3, 4};  // a 64-token hit: indexes 0, 1 skipped
  // 100 slots = 7 blocks: 7 - max(skipped 2, hit 4) new ones + 2 evictable hit blocks.
  const SlotDemand demand{.total_computed = 64, .num_tokens = 100};
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand, hit), 5);
  // The per-request cap bounds the required blocks first.
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand, hit, 5), 3);
}

TEST_F(SingleTypeManagerTest, CrossAttentionTakesBlocksForTheEncoderTokensOnly) {
  CrossAttentionManager m(spec_of(AttentionType::kCrossAttention), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  std::vector<BlockId> fresh;
  // A decoder allocate without encoder tokens needs nothing here.
  EXPECT_EQ(m.num_blocks_to_allocate("a", {.num_tokens = 100}, {}), 0);
  m.allocate_new_blocks("a", {.num_tokens = 100}, fresh);
  EXPECT_TRUE(fresh.empty());
  // The allocate that passes 40 encoder tokens: 3 blocks, whatever the decoder's slots.
  const SlotDemand encoder{.num_tokens = 1, .num_encoder_tokens = 40};
  EXPECT_EQ(m.num_blocks_to_allocate("a", encoder, {}), 3);
  m.allocate_new_blocks("a", encoder, fresh);
  EXPECT_EQ(fresh, (std::vector<BlockId>{1, 2, 3}));
  EXPECT_EQ(m.remove_skipped_blocks("a", {.total_computed = 500}), 0u);
  m.free("a");
  EXPECT_EQ(pool_.num_free_blocks(), 31u);
}

TEST_F(SingleTypeManagerTest, RSwaFreesTheGapBetweenPromptAndWindow) {
  KvCacheSpec spec = spec_of(AttentionType::kRSwa, 32);
  RSwaManager m(spec, pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  std::vector<BlockId> fresh;
  m.allocate_new_blocks("a", {.num_tokens = 120}, fresh);
  EXPECT_EQ(fresh, (std::vector<BlockId>{1, 2, 3, 4, 5, 6, 7, 8}));
  // A 40-token prompt keeps blocks 0..2; at 100 tokens the window starts at 68, in block 4:
  // block index 3 goes.
  EXPECT_EQ(m.remove_skipped_blocks("a", {.total_computed = 100, .num_prompt_tokens = 40}), 1u);
  EXPECT_EQ(std::vector<BlockId>(m.blocks_of("a").begin(), m.blocks_of("a").end()),
            (std::vector<BlockId>{1, 2, 3, 0, 5, 6, 7, 8}));
  // At 120 the window starts at 88: index 4 goes, and the walk stops at the null at 3.
  EXPECT_EQ(m.remove_skipped_blocks("a", {.total_computed = 120, .num_prompt_tokens = 40}), 1u);
  EXPECT_EQ(std::vector<BlockId>(m.blocks_of("a").begin(), m.blocks_of("a").end()),
            (std::vector<BlockId>{1, 2, 3, 0, 0, 6, 7, 8}));
  std::string why;
  EXPECT_TRUE(m.check(&why)) << why;  // nulls inside the table are R-SWA's normal state
  // Unhashed blocks go to the head of the free queue: 5, then 4 in front of it.
  EXPECT_EQ(pool_.policy().order().front(), 5);
}

TEST_F(SingleTypeManagerTest, ABlockOfSeveralHashBlocksUsesTheHashOfItsLast) {
  KvCacheSpec spec = spec_of(AttentionType::kFullAttention);
  spec.block_size = 32;
  FullAttentionManager m(spec, pool_, 0, /*hash_block_size=*/16);
  std::vector<BlockHash> scratch;
  const auto hashes = m.block_hashes(hashes_, scratch);  // 8 hashes of 16 tokens
  ASSERT_EQ(hashes.size(), 4u);
  EXPECT_EQ(hashes[0], hashes_[1]);
  EXPECT_EQ(hashes[3], hashes_[7]);
  // One hash block per group block: the chain itself, no copy.
  FullAttentionManager same(spec_of(AttentionType::kFullAttention), pool_, 1, 16);
  EXPECT_EQ(same.block_hashes(hashes_, scratch).data(), hashes_.data());
}

}  // namespace
}  // namespace kv
