// BlockPool: short stories with exact block ids, queue orders and events, in both free orders.
#include "model/block_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kv {
namespace {

// A distinct 32-byte hash per tag (the pool never looks inside a hash).
BlockHash tag_hash(std::uint8_t tag) {
  BlockHash h;
  h.bytes.fill(tag);
  h.size = 32;
  return h;
}

std::vector<TokenId> token_range(TokenId begin, TokenId end) {
  std::vector<TokenId> out;
  for (TokenId t = begin; t < end; ++t) out.push_back(t);
  return out;
}

class BlockPoolTest : public ::testing::TestWithParam<FreeOrder> {
 protected:
  bool classic() const { return GetParam() == FreeOrder::kClassic; }
  // The queue order expected under the test's free order.
  std::vector<BlockId> per_order(std::vector<BlockId> classic_order, std::vector<BlockId> unhashed_first_order) const {
    return classic() ? classic_order : unhashed_first_order;
  }

  std::unique_ptr<BlockPool> make_pool(int num_blocks, bool caching = true, bool events = false) {
    return std::make_unique<BlockPool>(num_blocks, caching, GetParam(), events);
  }

  static std::vector<BlockId> take(BlockPool& pool, std::size_t n) {
    std::vector<BlockId> ids;
    pool.get_new_blocks(n, ids);
    expect_ok(pool);
    return ids;
  }

  static void expect_ok(const BlockPool& pool) {
    std::string why;
    EXPECT_TRUE(pool.check_invariants(&why)) << why;
  }

  static std::vector<BlockId> queue(const BlockPool& pool) { return pool.policy().order(); }
};

INSTANTIATE_TEST_SUITE_P(BothOrders, BlockPoolTest, ::testing::Values(FreeOrder::kClassic, FreeOrder::kUnhashedFirst),
                         [](const ::testing::TestParamInfo<FreeOrder>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

TEST_P(BlockPoolTest, FreshPoolKeepsBlockZeroAsTheNullBlock) {
  auto pool = make_pool(8);
  EXPECT_EQ(pool->num_blocks(), 8);
  EXPECT_EQ(pool->num_free_blocks(), 7u);
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(pool->block(0).is_null);
  EXPECT_EQ(pool->null_block(), 0);
  for (BlockId b = 1; b < 8; ++b) EXPECT_FALSE(pool->block(b).is_null);
  EXPECT_DOUBLE_EQ(pool->usage(), 0.0);
  EXPECT_EQ(pool->num_cached_blocks(), 0u);
  expect_ok(*pool);
}

// Freed blocks whose hashed and unhashed ones alternate (block 2 lost its hash while in use):
// unhashed_first still puts every unhashed one at the head and every hashed one at the tail,
// each in the order given.
TEST_P(BlockPoolTest, UnhashedBlocksGoFirstEvenWhenTheyAlternateWithHashedOnes) {
  auto pool = make_pool(8);
  EXPECT_EQ(take(*pool, 4), (std::vector<BlockId>{1, 2, 3, 4}));
  const std::vector<BlockId> blocks{1, 2, 3, 4};
  const std::vector<BlockHash> hashes{tag_hash(0xa), tag_hash(0xb), tag_hash(0xc)};
  pool->cache_full_blocks(blocks, hashes, 0, 3, 0, 4, token_range(0, 15), HashExtras{});
  pool->evict_blocks(std::vector<BlockId>{2});
  ASSERT_TRUE(pool->block(2).hash.empty());

  pool->free_blocks(std::vector<BlockId>{4, 3, 2, 1});  // unhashed, hashed, unhashed, hashed
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), per_order({5, 6, 7, 4, 3, 2, 1}, {4, 2, 5, 6, 7, 3, 1}));
}

TEST_P(BlockPoolTest, CachedBlocksStayHittableAfterFreeUntilReused) {
  auto pool = make_pool(8);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  for (BlockId b : {1, 2, 3}) EXPECT_EQ(pool->block(b).ref_cnt, 1);
  EXPECT_DOUBLE_EQ(pool->usage(), 3.0 / 7.0);

  // Tokens 0..11 in blocks of 4: the first two are full and cached, the third is partial.
  const std::vector<BlockId> blocks{1, 2, 3};
  const std::vector<BlockHash> hashes{tag_hash(0xa), tag_hash(0xb)};
  pool->cache_full_blocks(blocks, hashes, 0, 2, 0, 4, token_range(0, 11), HashExtras{});
  expect_ok(*pool);
  EXPECT_EQ(pool->block(1).hash, tag_hash(0xa));
  EXPECT_EQ(pool->block(2).hash, tag_hash(0xb));
  EXPECT_TRUE(pool->block(3).hash.empty());
  EXPECT_EQ(pool->get_cached_block(tag_hash(0xa)), 1);
  EXPECT_EQ(pool->get_cached_block(tag_hash(0xb)), 2);
  EXPECT_EQ(pool->get_cached_block(tag_hash(0xc)), kNoBlock);
  EXPECT_EQ(pool->num_cached_blocks(), 2u);

  // Freed last block first: the unhashed tail block 3 goes to the head under unhashed_first.
  pool->free_blocks(std::vector<BlockId>{3, 2, 1});
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), per_order({4, 5, 6, 7, 3, 2, 1}, {3, 4, 5, 6, 7, 2, 1}));
  EXPECT_EQ(pool->num_free_blocks(), 7u);
  // Lazy eviction: still cached while free.
  EXPECT_EQ(pool->get_cached_block(tag_hash(0xa)), 1);
  EXPECT_EQ(pool->block(1).hash, tag_hash(0xa));

  // A hit takes blocks 1 and 2 out of the middle of the queue, hashes kept.
  pool->touch(std::vector<BlockId>{1, 2});
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), per_order({4, 5, 6, 7, 3}, {3, 4, 5, 6, 7}));
  EXPECT_EQ(pool->block(1).ref_cnt, 1);
  EXPECT_EQ(pool->block(1).hash, tag_hash(0xa));
  // A second holder of a block in use: nothing moves.
  pool->touch(std::vector<BlockId>{1});
  EXPECT_EQ(pool->block(1).ref_cnt, 2);
  EXPECT_EQ(queue(*pool), per_order({4, 5, 6, 7, 3}, {3, 4, 5, 6, 7}));
  pool->free_blocks(std::vector<BlockId>{1});
  EXPECT_EQ(pool->block(1).ref_cnt, 1);
  EXPECT_EQ(pool->num_free_blocks(), 5u);
  pool->free_blocks(std::vector<BlockId>{2, 1});
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), per_order({4, 5, 6, 7, 3, 2, 1}, {3, 4, 5, 6, 7, 2, 1}));
}

TEST_P(BlockPoolTest, ReuseEvictsTheHashOfEachPoppedBlock) {
  auto pool = make_pool(4, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockHash> hashes{tag_hash(1), tag_hash(2), tag_hash(3)};
  pool->cache_full_blocks(std::vector<BlockId>{1, 2, 3}, hashes, 0, 3, 0, 2, token_range(0, 6), HashExtras{});
  pool->free_blocks(std::vector<BlockId>{3, 2, 1});
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{3, 2, 1}));  // all hashed: same in both orders
  pool->take_events();

  EXPECT_EQ(take(*pool, 2), (std::vector<BlockId>{3, 2}));
  EXPECT_TRUE(pool->block(3).hash.empty());
  EXPECT_TRUE(pool->block(2).hash.empty());
  EXPECT_EQ(pool->get_cached_block(tag_hash(3)), kNoBlock);
  EXPECT_EQ(pool->get_cached_block(tag_hash(2)), kNoBlock);
  EXPECT_EQ(pool->get_cached_block(tag_hash(1)), 1);
  EXPECT_EQ(pool->num_cached_blocks(), 1u);
  EXPECT_EQ(pool->num_evictions(), 2);

  const std::vector<KvEvent> events = pool->take_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(std::get<BlockRemoved>(events[0]).block_hashes, std::vector<BlockHash>{tag_hash(3)});
  EXPECT_EQ(std::get<BlockRemoved>(events[1]).block_hashes, std::vector<BlockHash>{tag_hash(2)});
  EXPECT_EQ(std::get<BlockRemoved>(events[1]).medium, "GPU");
  EXPECT_TRUE(pool->take_events().empty());

  // Block 1 is still queued with its hash. The freed, unhashed block 2 goes behind it
  // (classic) or before it (unhashed_first), which decides whether the next pop evicts.
  pool->free_blocks(std::vector<BlockId>{2});
  EXPECT_EQ(queue(*pool), per_order({1, 2}, {2, 1}));
  EXPECT_EQ(take(*pool, 1), per_order({1}, {2}));
  EXPECT_EQ(pool->num_evictions(), classic() ? 3 : 2);
  EXPECT_EQ(pool->take_events().size(), classic() ? 1u : 0u);
  EXPECT_EQ(pool->get_cached_block(tag_hash(1)), classic() ? kNoBlock : 1);
}

TEST_P(BlockPoolTest, DuplicatesUnderOneHashAreNeverMerged) {
  auto pool = make_pool(6);
  EXPECT_EQ(take(*pool, 1), (std::vector<BlockId>{1}));
  EXPECT_EQ(take(*pool, 1), (std::vector<BlockId>{2}));
  const std::vector<BlockHash> same{tag_hash(7)};
  pool->cache_full_blocks(std::vector<BlockId>{1}, same, 0, 1, 0, 4, token_range(0, 4), HashExtras{});
  pool->cache_full_blocks(std::vector<BlockId>{2}, same, 0, 1, 0, 4, token_range(0, 4), HashExtras{});
  expect_ok(*pool);
  EXPECT_EQ(pool->num_cached_blocks(), 2u);
  EXPECT_EQ(pool->get_cached_block(tag_hash(7)), 1);  // the oldest

  pool->free_blocks(std::vector<BlockId>{1});
  pool->free_blocks(std::vector<BlockId>{2});
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{3, 4, 5, 1, 2}));
  // Reusing 3, 4, 5 and 1 evicts block 1 only; block 2 now answers for the hash.
  EXPECT_EQ(take(*pool, 4), (std::vector<BlockId>{3, 4, 5, 1}));
  EXPECT_EQ(pool->get_cached_block(tag_hash(7)), 2);
  EXPECT_EQ(pool->num_cached_blocks(), 1u);
  EXPECT_EQ(pool->block(2).hash, tag_hash(7));
  expect_ok(*pool);
}

TEST_P(BlockPoolTest, YoungerDuplicateEvictedFirstLeavesTheOldestInPlace) {
  auto pool = make_pool(4);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockHash> same{tag_hash(9)};
  for (BlockId b : {1, 2, 3}) {
    pool->cache_full_blocks(std::vector<BlockId>{b}, same, 0, 1, 0, 4, token_range(0, 4), HashExtras{});
  }
  pool->evict_blocks(std::vector<BlockId>{2});
  expect_ok(*pool);
  EXPECT_EQ(pool->get_cached_block(tag_hash(9)), 1);
  pool->evict_blocks(std::vector<BlockId>{1});
  expect_ok(*pool);
  EXPECT_EQ(pool->get_cached_block(tag_hash(9)), 3);
  EXPECT_EQ(pool->num_cached_blocks(), 1u);
}

TEST_P(BlockPoolTest, StoredEventsCarryHashesParentAndTokens) {
  auto pool = make_pool(8, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockId> blocks{1, 2, 3};
  const std::vector<BlockHash> hashes{tag_hash(1), tag_hash(2), tag_hash(3)};
  const std::vector<TokenId> tokens = token_range(100, 112);
  HashExtras lora;
  lora.lora_name = "adapter1";
  pool->cache_full_blocks(blocks, hashes, 0, 2, 0, 4, tokens, lora);
  pool->cache_full_blocks(blocks, hashes, 2, 3, 0, 4, tokens, lora);
  pool->cache_full_blocks(blocks, hashes, 3, 3, 0, 4, tokens, lora);  // nothing new: no event

  const std::vector<KvEvent> events = pool->take_events();
  ASSERT_EQ(events.size(), 2u);
  const auto& first = std::get<BlockStored>(events[0]);
  EXPECT_EQ(first.block_hashes, (std::vector<BlockHash>{tag_hash(1), tag_hash(2)}));
  EXPECT_FALSE(first.parent_block_hash.has_value());
  EXPECT_EQ(first.token_ids, token_range(100, 108));
  EXPECT_EQ(first.block_size, 4);
  EXPECT_EQ(first.lora_name, "adapter1");
  EXPECT_EQ(first.medium, "GPU");
  const auto& second = std::get<BlockStored>(events[1]);
  EXPECT_EQ(second.block_hashes, std::vector<BlockHash>{tag_hash(3)});
  ASSERT_TRUE(second.parent_block_hash.has_value());
  EXPECT_EQ(*second.parent_block_hash, tag_hash(2));
  EXPECT_EQ(second.token_ids, token_range(108, 112));
}

// As vLLM's cache_full_blocks: one entry per stored block, the salt on block 0 only, the
// LoRA name on every block, and None (not an empty list) for a block without extra keys.
TEST_P(BlockPoolTest, StoredEventsCarryTheExtraKeysOfEachBlock) {
  auto pool = make_pool(8, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockId> blocks{1, 2, 3};
  const std::vector<BlockHash> hashes{tag_hash(1), tag_hash(2), tag_hash(3)};
  const std::vector<TokenId> tokens = token_range(0, 12);
  HashExtras extras;
  extras.lora_name = "l1";
  extras.cache_salt = "s1";
  extras.mm_items = {{"img", 6, 4}};  // tokens [6, 10): blocks 1 (at 2) and 2 (at -2)
  pool->cache_full_blocks(blocks, hashes, 0, 2, 0, 4, tokens, extras);
  pool->cache_full_blocks(blocks, hashes, 2, 3, 0, 4, tokens, extras);
  const std::vector<KvEvent> events = pool->take_events();
  ASSERT_EQ(events.size(), 2u);
  const std::vector<BlockExtraKeys> first = {std::vector<ExtraKey>{"l1", "s1"},
                                             std::vector<ExtraKey>{"l1", MultiModalKey{"img", 2}}};
  EXPECT_EQ(std::get<BlockStored>(events[0]).extra_keys, first);
  const std::vector<BlockExtraKeys> second = {std::vector<ExtraKey>{"l1", MultiModalKey{"img", -2}}};
  EXPECT_EQ(std::get<BlockStored>(events[1]).extra_keys, second);

  EXPECT_EQ(take(*pool, 2), (std::vector<BlockId>{4, 5}));
  pool->cache_full_blocks(std::vector<BlockId>{4, 5}, std::vector<BlockHash>{tag_hash(4), tag_hash(5)}, 0, 2, 0, 4,
                          tokens, HashExtras{});
  const std::vector<KvEvent> plain = pool->take_events();
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(std::get<BlockStored>(plain[0]).extra_keys, (std::vector<BlockExtraKeys>{std::nullopt, std::nullopt}));
}

TEST_P(BlockPoolTest, NoEventsUnlessEnabled) {
  auto pool = make_pool(4);
  take(*pool, 1);
  pool->cache_full_blocks(std::vector<BlockId>{1}, std::vector<BlockHash>{tag_hash(1)}, 0, 1, 0, 4, token_range(0, 4),
                          HashExtras{});
  pool->evict_blocks(std::vector<BlockId>{1});
  pool->free_blocks(std::vector<BlockId>{1});
  EXPECT_TRUE(pool->reset_prefix_cache());
  EXPECT_TRUE(pool->take_events().empty());
}

TEST_P(BlockPoolTest, EvictBlocksDropsHashesInPlace) {
  auto pool = make_pool(8, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  pool->cache_full_blocks(std::vector<BlockId>{1, 2, 3}, std::vector<BlockHash>{tag_hash(1), tag_hash(2)}, 0, 2, 0, 4,
                          token_range(0, 10), HashExtras{});
  pool->free_blocks(std::vector<BlockId>{3, 2, 1});
  const auto before = queue(*pool);
  pool->take_events();

  // Block 2 loses its hash; block 4 has none, so nothing happens to it.
  pool->evict_blocks(std::vector<BlockId>{2, 4});
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), before);
  EXPECT_TRUE(pool->block(2).hash.empty());
  EXPECT_EQ(pool->get_cached_block(tag_hash(2)), kNoBlock);
  EXPECT_EQ(pool->get_cached_block(tag_hash(1)), 1);
  const auto events = pool->take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(std::get<BlockRemoved>(events[0]).block_hashes, std::vector<BlockHash>{tag_hash(2)});
  // Explicit evictions are not counted as lazy evictions.
  EXPECT_EQ(pool->num_evictions(), 0);
}

TEST_P(BlockPoolTest, ResetFailsWhileABlockIsInUseThenClearsEveryHash) {
  auto pool = make_pool(6, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 2), (std::vector<BlockId>{1, 2}));
  pool->cache_full_blocks(std::vector<BlockId>{1, 2}, std::vector<BlockHash>{tag_hash(1), tag_hash(2)}, 0, 2, 0, 4,
                          token_range(0, 8), HashExtras{});
  pool->free_blocks(std::vector<BlockId>{2});
  pool->take_events();

  EXPECT_FALSE(pool->reset_prefix_cache());  // block 1 is in use
  EXPECT_EQ(pool->get_cached_block(tag_hash(2)), 2);
  EXPECT_EQ(pool->num_cached_blocks(), 2u);
  EXPECT_TRUE(pool->take_events().empty());

  pool->free_blocks(std::vector<BlockId>{1});
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{3, 4, 5, 2, 1}));
  EXPECT_TRUE(pool->reset_prefix_cache());
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{3, 4, 5, 2, 1}));  // order kept
  EXPECT_EQ(pool->num_cached_blocks(), 0u);
  EXPECT_EQ(pool->get_cached_block(tag_hash(1)), kNoBlock);
  EXPECT_TRUE(pool->block(1).hash.empty());
  const auto events = pool->take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(events[0]));
}

TEST_P(BlockPoolTest, CachingOffAppendsEveryFreedBlock) {
  auto pool = make_pool(8, /*caching=*/false);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  pool->free_blocks(std::vector<BlockId>{3, 2, 1});
  expect_ok(*pool);
  EXPECT_EQ(queue(*pool), (std::vector<BlockId>{4, 5, 6, 7, 3, 2, 1}));
  EXPECT_FALSE(pool->caching_enabled());
}

TEST_P(BlockPoolTest, FreeingTheNullBlockIsIgnored) {
  auto pool = make_pool(4);
  EXPECT_EQ(take(*pool, 1), (std::vector<BlockId>{1}));
  pool->free_blocks(std::vector<BlockId>{0, 1});
  expect_ok(*pool);
  EXPECT_EQ(pool->block(0).ref_cnt, 0);
  EXPECT_EQ(queue(*pool), per_order({2, 3, 1}, {1, 2, 3}));
}

// Deliberate corruption through a const_cast (the blocks themselves are not const): each broken
// invariant is named by check_invariants.
Block& corrupt(const BlockPool& pool, BlockId id) { return const_cast<Block&>(pool.block(id)); }

TEST_P(BlockPoolTest, CheckInvariantsNamesEachCorruption) {
  std::string why;
  {
    auto pool = make_pool(5);
    corrupt(*pool, 3).ref_cnt = 1;
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "block 3 has ref_cnt 1 but is in the free queue");
  }
  {
    auto pool = make_pool(5);
    take(*pool, 1);
    corrupt(*pool, 1).ref_cnt = 0;
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "block 1 has ref_cnt 0 but is not in the free queue");
  }
  {
    auto pool = make_pool(5);
    take(*pool, 2);
    corrupt(*pool, 2).ref_cnt = -1;
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "block 2 has negative ref_cnt -1");
  }
  {
    auto pool = make_pool(5);
    corrupt(*pool, 2).hash = tag_hash(5);
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "block 2 has a hash but is not in the hash map under it");
  }
  {
    auto pool = make_pool(5);
    take(*pool, 1);
    pool->cache_full_blocks(std::vector<BlockId>{1}, std::vector<BlockHash>{tag_hash(1)}, 0, 1, 0, 4, token_range(0, 4),
                            HashExtras{});
    corrupt(*pool, 1).hash = BlockHash{};
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "hash map lists block 1 under a hash it does not have");
  }
  {
    auto pool = make_pool(5);
    corrupt(*pool, 0).ref_cnt = 1;
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "the null block is used, cached or queued");
  }
  {
    auto pool = make_pool(5);
    take(*pool, 1);
    corrupt(*pool, 1).is_null = true;
    EXPECT_FALSE(pool->check_invariants(&why));
    EXPECT_EQ(why, "block 1 is marked null");
  }
}

TEST_P(BlockPoolTest, GroupEventsNameTheGroupAndSkipNullBlocks) {
  // A windowed group's table [null, 2, 3]: one event for blocks 0..2 of the chain, listing only
  // the two real blocks, with the parent and tokens of the whole range (as vLLM sends them).
  auto pool = make_pool(8, true, /*events=*/true);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockHash> hashes{tag_hash(1), tag_hash(2), tag_hash(3)};
  HashExtras salted;
  salted.cache_salt = "s1";
  pool->cache_full_blocks(std::vector<BlockId>{0, 2, 3}, hashes, 0, 3, KvCacheGroupId{1}, 4, token_range(0, 12),
                          salted);
  pool->cache_full_blocks(std::vector<BlockId>{1}, hashes, 0, 1, KvCacheGroupId{0}, 4, token_range(0, 12),
                          HashExtras{});
  pool->evict_blocks(std::vector<BlockId>{3});
  const std::vector<KvEvent> events = pool->take_events();
  ASSERT_EQ(events.size(), 3u);
  const auto& windowed = std::get<BlockStored>(events[0]);
  EXPECT_EQ(windowed.group_idx, 1);
  EXPECT_EQ(windowed.block_hashes, (std::vector<BlockHash>{tag_hash(2), tag_hash(3)}));
  EXPECT_FALSE(windowed.parent_block_hash.has_value());
  EXPECT_EQ(windowed.token_ids, token_range(0, 12));
  // One entry per listed block: the salted block 0 was null, so neither carries the salt.
  EXPECT_EQ(windowed.extra_keys, (std::vector<BlockExtraKeys>{std::nullopt, std::nullopt}));
  EXPECT_EQ(std::get<BlockStored>(events[1]).group_idx, 0);
  const auto& removed = std::get<BlockRemoved>(events[2]);
  EXPECT_EQ(removed.group_idx, 1);
  EXPECT_EQ(removed.block_hashes, std::vector<BlockHash>{tag_hash(3)});
}

TEST_P(BlockPoolTest, EachGroupCachesItsOwnBlockUnderOneHash) {
  // Several KV-cache groups share the pool: the key is (hash, group).
  auto pool = make_pool(8);
  EXPECT_EQ(take(*pool, 3), (std::vector<BlockId>{1, 2, 3}));
  const std::vector<BlockHash> hashes = {tag_hash(7)};
  pool->cache_full_blocks(std::vector<BlockId>{0}, hashes, 0, 1, KvCacheGroupId{0}, 4, token_range(0, 4),
                          HashExtras{});  // null: skipped
  EXPECT_EQ(pool->num_cached_blocks(), 0u);
  pool->cache_full_blocks(std::vector<BlockId>{1}, hashes, 0, 1, KvCacheGroupId{0}, 4, token_range(0, 4), HashExtras{});
  pool->cache_full_blocks(std::vector<BlockId>{2}, hashes, 0, 1, KvCacheGroupId{1}, 4, token_range(0, 4), HashExtras{});
  pool->cache_full_blocks(std::vector<BlockId>{3}, hashes, 0, 1, KvCacheGroupId{1}, 4, token_range(0, 4),
                          HashExtras{});  // a duplicate
  EXPECT_EQ(pool->get_cached_block(tag_hash(7)), 1);
  EXPECT_EQ(pool->get_cached_block(tag_hash(7), 1), 2);
  EXPECT_EQ(pool->get_cached_block(tag_hash(7), 2), kNoBlock);
  expect_ok(*pool);
  pool->evict_blocks(std::vector<BlockId>{2});
  EXPECT_EQ(pool->get_cached_block(tag_hash(7), 1), 3);
  EXPECT_EQ(pool->block(2).group, 0);  // uncached blocks carry group 0
  EXPECT_EQ(pool->get_cached_block(tag_hash(7)), 1);
  expect_ok(*pool);
}

TEST_P(BlockPoolTest, MisuseAborts) {
  auto pool = make_pool(4);
  std::vector<BlockId> ids;
  EXPECT_DEATH(pool->get_new_blocks(4, ids), "asked for 4 blocks, 3 free");
  EXPECT_DEATH(pool->free_blocks(std::vector<BlockId>{2}), "freeing block 2 with ref_cnt 0");
  take(*pool, 1);
  const std::vector<BlockHash> h{tag_hash(1)};
  pool->cache_full_blocks(std::vector<BlockId>{1}, h, 0, 1, 0, 4, token_range(0, 4), HashExtras{});
  EXPECT_DEATH(pool->cache_full_blocks(std::vector<BlockId>{1}, h, 0, 1, 0, 4, token_range(0, 4), HashExtras{}),
               "block 1 cached twice");
  EXPECT_DEATH(BlockPool(1, true, GetParam(), false), "at least one usable block");
}

}  // namespace
}  // namespace kv
