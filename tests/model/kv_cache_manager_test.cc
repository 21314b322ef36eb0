// KvCacheManager: stories in the style of vLLM's test_prefix_caching.py, with exact block ids,
// queue orders, events and statistics, in both free orders. Invariants are checked after every
// operation.
#include "model/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kv {

// Reaches past the manager's API to break its state on purpose (KvCacheManager's friend).
class KvCacheManagerTestPeer {
 public:
  static BlockPool& pool(KvCacheManager& m) { return m.pool_; }
};

namespace {

std::vector<TokenId> token_range(TokenId begin, TokenId end) {
  std::vector<TokenId> out;
  for (TokenId t = begin; t < end; ++t) out.push_back(t);
  return out;
}

std::vector<TokenId> concat(std::vector<TokenId> a, const std::vector<TokenId>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

class KvCacheManagerTest : public ::testing::TestWithParam<FreeOrder> {
 protected:
  bool classic() const { return GetParam() == FreeOrder::kClassic; }
  std::vector<BlockId> per_order(std::vector<BlockId> classic_order, std::vector<BlockId> unhashed_first_order) const {
    return classic() ? classic_order : unhashed_first_order;
  }

  // A manager of num_blocks blocks (the null block included).
  void start(int num_blocks, int block_size, KvCacheConfig extra = {}) {
    KvCacheConfig c = extra;
    c.num_blocks = num_blocks;
    c.block_size = block_size;
    c.free_order = GetParam();
    manager_ = std::make_unique<KvCacheManager>(c);
    expect_ok();
  }

  std::unique_ptr<Request> request(const std::string& id, std::vector<TokenId> tokens, HashExtras extras = {}) {
    const KvCacheConfig& c = manager_->config();
    return std::make_unique<Request>(id, std::move(tokens), std::move(extras), c.enable_caching ? &hasher_ : nullptr,
                                     c.block_size);
  }

  // A one-group hit: its blocks, flat.
  struct Hit : CacheHit {
    std::vector<BlockId> blocks;
  };
  Hit lookup(const Request& r) {
    Hit hit{manager_->get_computed_blocks(r), {}};
    hit.blocks.assign(hit.group(0).begin(), hit.group(0).end());
    expect_ok();
    return hit;
  }

  // allocate_slots() as the scheduler drives it: on success the request advances.
  std::optional<std::vector<BlockId>> allocate(Request& r, std::int64_t n, const CacheHit& hit = {},
                                               std::int64_t lookahead = 0, bool fullfit = false) {
    auto fresh = manager_->allocate_slots(r, n, hit, lookahead, fullfit);
    if (fresh) r.num_computed_tokens += hit.num_tokens + n;
    expect_ok();
    if (!fresh) return std::nullopt;
    EXPECT_EQ(fresh->size(), 1u);
    return fresh->front();
  }

  // lookup, then allocate the rest of the prompt.
  std::optional<std::vector<BlockId>> prefill(Request& r) {
    const Hit hit = lookup(r);
    return allocate(r, r.num_tokens() - hit.num_tokens, hit);
  }

  void free(const Request& r) {
    manager_->free(r);
    expect_ok();
  }

  std::vector<BlockId> queue() const { return manager_->pool().policy().order(); }
  std::vector<BlockId> blocks_of(const Request& r) const {
    auto span = manager_->blocks_of(r.id());
    return {span.begin(), span.end()};
  }
  int ref(BlockId b) const { return manager_->pool().block(b).ref_cnt; }
  const BlockHash& hash(BlockId b) const { return manager_->pool().block(b).hash; }

  void expect_ok() const {
    std::string why;
    EXPECT_TRUE(manager_->check_invariants(&why)) << why;
  }

  BlockHasher hasher_{HashAlgo::kSha256Cbor, "0"};
  std::unique_ptr<KvCacheManager> manager_;
};

INSTANTIATE_TEST_SUITE_P(BothOrders, KvCacheManagerTest,
                         ::testing::Values(FreeOrder::kClassic, FreeOrder::kUnhashedFirst),
                         [](const ::testing::TestParamInfo<FreeOrder>& param_info) {
                           return std::string(to_string(param_info.param));
                         });

using Ids = std::vector<BlockId>;

TEST_P(KvCacheManagerTest, PrefillSharesAPrefixAndFreesTailFirst) {
  start(11, 16);
  const auto prefix = token_range(0, 48);  // three full blocks
  auto r0 = request("r0", concat(prefix, token_range(100, 107)));
  EXPECT_EQ(prefill(*r0), Ids({1, 2, 3, 4}));
  EXPECT_EQ(r0->num_computed_tokens, 55);
  ASSERT_EQ(r0->block_hashes().size(), 3u);
  for (BlockId b : {1, 2, 3}) EXPECT_EQ(hash(b), r0->block_hashes()[static_cast<std::size_t>(b - 1)]);
  EXPECT_TRUE(hash(4).empty());  // 7 tokens: partial, never cached
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 3u);

  auto r1 = request("r1", concat(prefix, token_range(200, 205)));
  const Hit hit = lookup(*r1);
  EXPECT_EQ(hit.blocks, Ids({1, 2, 3}));
  EXPECT_EQ(hit.num_tokens, 48);
  EXPECT_EQ(allocate(*r1, 5, hit), Ids({5}));
  EXPECT_EQ(blocks_of(*r1), Ids({1, 2, 3, 5}));
  for (BlockId b : {1, 2, 3}) EXPECT_EQ(ref(b), 2);
  EXPECT_EQ(manager_->num_free_blocks(), 5u);
  EXPECT_DOUBLE_EQ(manager_->usage(), 0.5);

  free(*r0);
  EXPECT_EQ(queue(), per_order({6, 7, 8, 9, 10, 4}, {4, 6, 7, 8, 9, 10}));
  free(*r1);
  EXPECT_EQ(queue(), per_order({6, 7, 8, 9, 10, 4, 5, 3, 2, 1}, {5, 4, 6, 7, 8, 9, 10, 3, 2, 1}));
  EXPECT_DOUBLE_EQ(manager_->usage(), 0.0);

  // The prefix comes back from the free queue; the new block is the queue's head.
  auto r2 = request("r2", concat(prefix, token_range(300, 306)));
  EXPECT_EQ(prefill(*r2), per_order({6}, {5}));
  EXPECT_EQ(blocks_of(*r2), per_order({1, 2, 3, 6}, {1, 2, 3, 5}));
  EXPECT_EQ(queue(), per_order({7, 8, 9, 10, 4, 5}, {4, 6, 7, 8, 9, 10}));
}

TEST_P(KvCacheManagerTest, HitBlocksInTheFreeQueueCountAgainstCapacity) {
  start(5, 4);  // 4 usable blocks
  auto r0 = request("r0", token_range(0, 12));
  EXPECT_EQ(prefill(*r0), Ids({1, 2, 3}));
  free(*r0);
  EXPECT_EQ(queue(), Ids({4, 3, 2, 1}));  // all three were full and cached

  // 17 tokens: 3 hits from the queue + 2 new blocks = 5 leave the queue, but only 4 are free.
  auto r1 = request("r1", token_range(0, 17));
  const Hit hit = lookup(*r1);
  EXPECT_EQ(hit.blocks, Ids({1, 2, 3}));
  const PrefixCacheStats stats = manager_->stats();
  EXPECT_EQ(allocate(*r1, 5, hit), std::nullopt);
  // No side effect at all.
  EXPECT_EQ(queue(), Ids({4, 3, 2, 1}));
  for (BlockId b : {1, 2, 3, 4}) EXPECT_EQ(ref(b), 0);
  EXPECT_FALSE(manager_->holds_blocks("r1"));
  EXPECT_EQ(manager_->stats().lookups, stats.lookups);
  EXPECT_EQ(manager_->stats().hits, stats.hits);
  EXPECT_EQ(r1->num_computed_tokens, 0);

  // 13 tokens: 3 hits + 1 new block = exactly the 4 free blocks.
  auto r2 = request("r2", token_range(0, 13));
  EXPECT_EQ(prefill(*r2), Ids({4}));
  EXPECT_EQ(blocks_of(*r2), Ids({1, 2, 3, 4}));
  EXPECT_EQ(manager_->num_free_blocks(), 0u);
  EXPECT_TRUE(queue().empty());
}

TEST_P(KvCacheManagerTest, AppendedTokensCacheBlocksAsTheyFillWithExactEvents) {
  KvCacheConfig c;
  c.enable_kv_events = true;
  start(11, 4, c);
  auto r = request("r", token_range(0, 10));
  EXPECT_EQ(prefill(*r), Ids({1, 2, 3}));
  ASSERT_EQ(r->block_hashes().size(), 2u);
  {
    const auto events = manager_->take_events();
    ASSERT_EQ(events.size(), 1u);
    const auto& stored = std::get<BlockStored>(events[0]);
    EXPECT_EQ(stored.block_hashes, (std::vector<BlockHash>{r->block_hashes()[0], r->block_hashes()[1]}));
    EXPECT_FALSE(stored.parent_block_hash.has_value());
    EXPECT_EQ(stored.token_ids, token_range(0, 8));
    EXPECT_EQ(stored.block_size, 4);
    EXPECT_EQ(stored.lora_name, "");
  }
  EXPECT_TRUE(hash(3).empty());

  // Two decoded tokens fill block 3: no new block, one stored event chained to block 2.
  r->append_tokens(std::vector<TokenId>{10, 11});
  ASSERT_EQ(r->block_hashes().size(), 3u);
  EXPECT_EQ(allocate(*r, 2), Ids({}));
  EXPECT_EQ(hash(3), r->block_hashes()[2]);
  {
    const auto events = manager_->take_events();
    ASSERT_EQ(events.size(), 1u);
    const auto& stored = std::get<BlockStored>(events[0]);
    EXPECT_EQ(stored.block_hashes, std::vector<BlockHash>{r->block_hashes()[2]});
    ASSERT_TRUE(stored.parent_block_hash.has_value());
    EXPECT_EQ(*stored.parent_block_hash, r->block_hashes()[1]);
    EXPECT_EQ(stored.token_ids, token_range(8, 12));
  }
  // One more token opens block 4, which stays partial: no event.
  r->append_tokens(std::vector<TokenId>{12});
  EXPECT_EQ(allocate(*r, 1), Ids({4}));
  EXPECT_TRUE(manager_->take_events().empty());
  free(*r);
  EXPECT_EQ(queue(), per_order({5, 6, 7, 8, 9, 10, 4, 3, 2, 1}, {4, 5, 6, 7, 8, 9, 10, 3, 2, 1}));

  // 30 unrelated tokens need 8 blocks: the seven uncached ones, then block 3, which is evicted.
  auto s = request("s", token_range(1000, 1030));
  EXPECT_EQ(prefill(*s), per_order({5, 6, 7, 8, 9, 10, 4, 3}, {4, 5, 6, 7, 8, 9, 10, 3}));
  const BlockHash evicted = r->block_hashes()[2];
  EXPECT_EQ(manager_->pool().get_cached_block(evicted), kNoBlock);
  EXPECT_EQ(manager_->pool().get_cached_block(r->block_hashes()[0]), 1);
  {
    const auto events = manager_->take_events();
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(std::get<BlockRemoved>(events[0]).block_hashes, std::vector<BlockHash>{evicted});
    const auto& stored = std::get<BlockStored>(events[1]);
    EXPECT_EQ(stored.block_hashes.size(), 7u);
    EXPECT_EQ(stored.block_hashes, s->block_hashes());
    EXPECT_EQ(stored.token_ids, token_range(1000, 1028));
  }

  EXPECT_FALSE(manager_->reset_prefix_cache());
  EXPECT_TRUE(manager_->take_events().empty());
  free(*s);
  EXPECT_TRUE(manager_->reset_prefix_cache());
  expect_ok();
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 0u);
  EXPECT_EQ(manager_->pool().get_cached_block(r->block_hashes()[0]), kNoBlock);
  const auto events = manager_->take_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<AllBlocksCleared>(events[0]));
  // Nothing cached any more: a repeat of r misses.
  auto again = request("again", token_range(0, 13));
  EXPECT_EQ(lookup(*again).num_tokens, 0);
}

TEST_P(KvCacheManagerTest, EagleDropsTheLastHitBlock) {
  KvCacheConfig c;
  c.use_eagle = true;
  start(11, 4, c);
  auto r = request("r", token_range(0, 12));
  EXPECT_EQ(prefill(*r), Ids({1, 2, 3}));
  free(*r);
  // 13 tokens could hit 3 blocks; eagle keeps 2.
  auto a = request("a", token_range(0, 13));
  EXPECT_EQ(lookup(*a).blocks, Ids({1, 2}));
  // 12 tokens: capped at (12 - 1) / 4 = 2 blocks, eagle keeps 1.
  auto b = request("b", token_range(0, 12));
  const Hit hit = lookup(*b);
  EXPECT_EQ(hit.blocks, Ids({1}));
  EXPECT_EQ(hit.num_tokens, 4);
  // 5 tokens: one block possible, none left after the drop.
  auto d = request("d", token_range(0, 5));
  EXPECT_TRUE(lookup(*d).blocks.empty());
}

TEST_P(KvCacheManagerTest, HitsStopAtTheFirstMissAndNeverCoverTheLastToken) {
  start(11, 4);
  auto r = request("r", token_range(0, 16));
  EXPECT_EQ(prefill(*r), Ids({1, 2, 3, 4}));
  // Same first block, different second: only block 1 hits even though blocks 3 and 4 match.
  auto fork = request("fork", concat(concat(token_range(0, 4), {99, 99, 99, 99}), token_range(8, 17)));
  EXPECT_EQ(lookup(*fork).blocks, Ids({1}));
  // Exactly 16 tokens, all cached: the last block is recomputed.
  auto same = request("same", token_range(0, 16));
  EXPECT_EQ(lookup(*same).blocks, Ids({1, 2, 3}));
  auto longer = request("longer", token_range(0, 17));
  EXPECT_EQ(lookup(*longer).blocks, Ids({1, 2, 3, 4}));
}

TEST_P(KvCacheManagerTest, LookaheadReservesSlotsButCachesOnlyComputedBlocks) {
  start(11, 4);
  auto r = request("r", token_range(0, 20));
  // 8 tokens + 5 lookahead slots = 13 slots: 4 blocks, only the 2 computed ones cached.
  EXPECT_EQ(allocate(*r, 8, {}, 5), Ids({1, 2, 3, 4}));
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 2u);
  EXPECT_TRUE(hash(3).empty());
  // 4 more + 5 lookahead = 17 slots: one more block; block 3 is now full and cached.
  EXPECT_EQ(allocate(*r, 4, {}, 5), Ids({5}));
  EXPECT_EQ(hash(3), r->block_hashes()[2]);
  EXPECT_TRUE(hash(4).empty());
  // 4 more + 0 lookahead = 16 slots: already held.
  EXPECT_EQ(allocate(*r, 4), Ids({}));
  EXPECT_EQ(blocks_of(*r), Ids({1, 2, 3, 4, 5}));
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 4u);
}

TEST_P(KvCacheManagerTest, MaxModelLenCapsTheSlots) {
  KvCacheConfig c;
  c.max_model_len = 10;
  start(11, 4, c);
  auto r = request("r", token_range(0, 10));
  // 10 tokens + 8 lookahead would be 5 blocks; the cap keeps it at 10 slots, 3 blocks.
  EXPECT_EQ(allocate(*r, 10, {}, 8), Ids({1, 2, 3}));
}

TEST_P(KvCacheManagerTest, RequestLongerThanMaxModelLenCachesOnlyHeldBlocks) {
  KvCacheConfig c;
  c.max_model_len = 5;
  start(11, 4, c);
  auto r = request("r", token_range(0, 12));
  // 5 slots: 2 blocks; of the 3 full blocks of tokens only the first lies within them.
  EXPECT_EQ(allocate(*r, 12), Ids({1, 2}));
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 1u);
  EXPECT_EQ(hash(1), r->block_hashes()[0]);
  EXPECT_TRUE(hash(2).empty());
}

TEST_P(KvCacheManagerTest, FullSequenceMustFitGatesTheFirstChunk) {
  start(6, 4);                                    // 5 usable blocks
  auto big = request("big", token_range(0, 24));  // 6 blocks in all
  EXPECT_EQ(allocate(*big, 8, {}, 0, /*fullfit=*/true), std::nullopt);
  EXPECT_EQ(manager_->num_free_blocks(), 5u);
  EXPECT_EQ(allocate(*big, 8), Ids({1, 2}));

  auto fits = request("fits", token_range(100, 112));  // 3 blocks = the 3 left
  EXPECT_EQ(allocate(*fits, 4, {}, 0, /*fullfit=*/true), Ids({3}));
  // Later chunks are gated on what is still missing: 2 blocks, 2 free.
  EXPECT_EQ(allocate(*fits, 4, {}, 0, /*fullfit=*/true), Ids({4}));
}

TEST_P(KvCacheManagerTest, WatermarkAppliesOnlyToNewRequests) {
  KvCacheConfig c;
  c.watermark_blocks = 2;
  start(11, 4, c);  // 10 free
  auto nine = request("nine", token_range(0, 36));
  EXPECT_EQ(prefill(*nine), std::nullopt);  // would leave 1 < 2
  auto eight = request("eight", token_range(100, 132));
  EXPECT_EQ(prefill(*eight), Ids({1, 2, 3, 4, 5, 6, 7, 8}));
  // A running request may dig into the watermark.
  eight->append_tokens(std::vector<TokenId>{7});
  EXPECT_EQ(allocate(*eight, 1), Ids({9}));
  EXPECT_EQ(manager_->num_free_blocks(), 1u);
}

TEST_P(KvCacheManagerTest, CachingOffNeitherHitsNorCountsNorHashes) {
  KvCacheConfig c;
  c.enable_caching = false;
  start(11, 4, c);
  auto r = request("r", token_range(0, 10));
  EXPECT_TRUE(r->block_hashes().empty());
  EXPECT_EQ(prefill(*r), Ids({1, 2, 3}));
  free(*r);
  // Every freed block is appended, whatever the free order.
  EXPECT_EQ(queue(), Ids({4, 5, 6, 7, 8, 9, 10, 3, 2, 1}));
  auto again = request("again", token_range(0, 10));
  const Hit hit = lookup(*again);
  EXPECT_TRUE(hit.blocks.empty());
  EXPECT_EQ(hit.num_tokens, 0);
  EXPECT_EQ(manager_->stats().lookups, 0);
  EXPECT_EQ(manager_->stats().queries, 0);
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 0u);
}

TEST_P(KvCacheManagerTest, PreemptedLookupsAreCountedSeparately) {
  start(11, 4);
  auto r = request("r", token_range(0, 13));
  EXPECT_EQ(prefill(*r), Ids({1, 2, 3, 4}));
  EXPECT_EQ(manager_->stats().lookups, 1);
  EXPECT_EQ(manager_->stats().queries, 13);
  EXPECT_EQ(manager_->stats().hits, 0);

  // Preempted by recompute: blocks freed, computed tokens reset, looked up again.
  free(*r);
  r->num_computed_tokens = 0;
  r->num_preemptions = 1;
  EXPECT_EQ(prefill(*r), per_order({5}, {4}));  // the partial block 4 went to the tail or head
  const PrefixCacheStats& s = manager_->stats();
  EXPECT_EQ(s.lookups, 1);
  EXPECT_EQ(s.queries, 13);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.preempted_lookups, 1);
  EXPECT_EQ(s.preempted_queries, 13);
  EXPECT_EQ(s.preempted_hits, 12);

  auto other = request("other", token_range(0, 9));
  lookup(*other);
  EXPECT_EQ(manager_->stats().lookups, 2);
  EXPECT_EQ(manager_->stats().queries, 22);
  EXPECT_EQ(manager_->stats().hits, 8);
}

TEST_P(KvCacheManagerTest, NumCommonPrefixBlocksCountsBlocksHeldByEveryRunningRequest) {
  start(11, 4);
  auto a = request("a", token_range(0, 12));
  EXPECT_EQ(prefill(*a), Ids({1, 2, 3}));
  auto b = request("b", concat(token_range(0, 8), token_range(50, 55)));
  EXPECT_EQ(prefill(*b), Ids({4, 5}));
  EXPECT_EQ(blocks_of(*b), Ids({1, 2, 4, 5}));
  EXPECT_EQ(manager_->num_common_prefix_blocks("a", 2), 2);
  EXPECT_EQ(manager_->num_common_prefix_blocks("b", 2), 2);
  EXPECT_EQ(manager_->num_common_prefix_blocks("a", 3), 0);
  EXPECT_EQ(manager_->num_common_prefix_blocks("a", 1), 0);
  EXPECT_EQ(manager_->num_common_prefix_blocks("nobody", 2), 0);
  free(*b);
  EXPECT_EQ(manager_->num_common_prefix_blocks("a", 1), 3);
}

TEST_P(KvCacheManagerTest, DuplicatePromptsWithoutLookupGetTheirOwnBlocks) {
  start(11, 16);
  auto a = request("a", token_range(0, 40));
  auto b = request("b", token_range(0, 40));
  EXPECT_EQ(allocate(*a, 40), Ids({1, 2, 3}));
  EXPECT_EQ(allocate(*b, 40), Ids({4, 5, 6}));
  EXPECT_EQ(hash(1), hash(4));
  EXPECT_EQ(manager_->pool().num_cached_blocks(), 4u);
  auto c = request("c", token_range(0, 40));
  EXPECT_EQ(lookup(*c).blocks, Ids({1, 2}));  // the oldest under each hash
  free(*a);
  free(*b);
  EXPECT_EQ(queue(), per_order({7, 8, 9, 10, 3, 2, 1, 6, 5, 4}, {6, 3, 7, 8, 9, 10, 2, 1, 5, 4}));
}

TEST_P(KvCacheManagerTest, FreeingTwiceOrFreeingNothingChangesNothing) {
  start(11, 4);
  auto r = request("r", token_range(0, 6));
  auto idle = request("idle", token_range(0, 6));
  free(*idle);
  EXPECT_EQ(queue(), Ids({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(prefill(*r), Ids({1, 2}));
  free(*r);
  const Ids after = queue();
  free(*r);
  EXPECT_EQ(queue(), after);
  EXPECT_FALSE(manager_->holds_blocks("r"));
  EXPECT_TRUE(manager_->blocks_of("r").empty());
  EXPECT_TRUE(manager_->reset_prefix_cache());
}

TEST_P(KvCacheManagerTest, CheckInvariantsCatchesMutablePoolMisuse) {
  start(11, 4);
  auto r = request("r", token_range(0, 6));
  EXPECT_EQ(prefill(*r), Ids({1, 2}));
  std::string why;

  // A second reference that no request holds.
  KvCacheManagerTestPeer::pool(*manager_).touch(std::vector<BlockId>{1});
  EXPECT_FALSE(manager_->check_invariants(&why));
  EXPECT_EQ(why, "block 1 has ref_cnt 2 but 1 tables hold it");
  KvCacheManagerTestPeer::pool(*manager_).free_blocks(std::vector<BlockId>{1});
  expect_ok();

  // A block freed behind the manager's back: the pool is consistent, the manager is not.
  KvCacheManagerTestPeer::pool(*manager_).free_blocks(std::vector<BlockId>{2});
  EXPECT_TRUE(manager_->pool().check_invariants(&why)) << why;
  EXPECT_FALSE(manager_->check_invariants(&why));
  EXPECT_EQ(why, "group 0, request r: block 2 at 1 is unreferenced or not cached for its group");
}

TEST_P(KvCacheManagerTest, AllocatingZeroTokensAborts) {
  start(11, 4);
  auto r = request("r", token_range(0, 6));
  EXPECT_DEATH(manager_->allocate_slots(*r, 0), "allocate of 0 tokens for r");
}

TEST_P(KvCacheManagerTest, SaltedAndLoraRequestsOnlyHitTheirOwnKind) {
  start(11, 4);
  HashExtras salt_a;
  salt_a.cache_salt = "a";
  HashExtras lora;
  lora.lora_name = "adapter1";
  auto plain = request("plain", token_range(0, 9));
  auto salted = request("salted", token_range(0, 9), salt_a);
  auto adapted = request("adapted", token_range(0, 9), lora);
  EXPECT_EQ(prefill(*plain), Ids({1, 2, 3}));
  EXPECT_EQ(prefill(*salted), Ids({4, 5, 6}));
  EXPECT_EQ(prefill(*adapted), Ids({7, 8, 9}));
  auto salted_again = request("salted_again", token_range(0, 9), salt_a);
  EXPECT_EQ(lookup(*salted_again).blocks, Ids({4, 5}));
  auto adapted_again = request("adapted_again", token_range(0, 9), lora);
  EXPECT_EQ(lookup(*adapted_again).blocks, Ids({7, 8}));
}

// The stored events carry, per block, the extra keys the block was hashed with: the salt on
// block 0 only, the LoRA name on every block, None for a plain request's blocks. Decoding
// continues the chain: the salted request's later blocks still carry none but the LoRA's.
TEST_P(KvCacheManagerTest, StoredEventsCarryEachBlocksExtraKeys) {
  KvCacheConfig c;
  c.enable_kv_events = true;
  start(16, 4, c);
  HashExtras salt_a;
  salt_a.cache_salt = "a";
  HashExtras lora;
  lora.lora_name = "adapter1";
  auto salted = request("salted", token_range(0, 9), salt_a);
  auto adapted = request("adapted", token_range(0, 9), lora);
  auto plain = request("plain", token_range(0, 9));
  ASSERT_TRUE(prefill(*salted).has_value());
  ASSERT_TRUE(prefill(*adapted).has_value());
  ASSERT_TRUE(prefill(*plain).has_value());
  const std::vector<KvEvent> events = manager_->take_events();
  ASSERT_EQ(events.size(), 3u);
  const auto& s = std::get<BlockStored>(events[0]);
  EXPECT_EQ(s.block_hashes, salted->block_hashes());
  EXPECT_EQ(s.extra_keys, (std::vector<BlockExtraKeys>{std::vector<ExtraKey>{"a"}, std::nullopt}));
  const auto& l = std::get<BlockStored>(events[1]);
  EXPECT_EQ(l.lora_name, "adapter1");
  EXPECT_EQ(l.extra_keys,
            (std::vector<BlockExtraKeys>{std::vector<ExtraKey>{"adapter1"}, std::vector<ExtraKey>{"adapter1"}}));
  EXPECT_EQ(std::get<BlockStored>(events[2]).extra_keys, (std::vector<BlockExtraKeys>{std::nullopt, std::nullopt}));
  // Decoding on: the third block of the salted request is stored alone, without the salt.
  salted->append_tokens(token_range(9, 12));
  ASSERT_TRUE(allocate(*salted, 3).has_value());
  const std::vector<KvEvent> more = manager_->take_events();
  ASSERT_EQ(more.size(), 1u);
  const auto& third = std::get<BlockStored>(more[0]);
  EXPECT_EQ(third.block_hashes.size(), 1u);
  EXPECT_EQ(third.extra_keys, std::vector<BlockExtraKeys>{std::nullopt});
}

TEST_P(KvCacheManagerTest, EverythingFreedLeavesAFullQueueAndAResettableCache) {
  start(11, 4);
  std::vector<std::unique_ptr<Request>> live;
  for (int i = 0; i < 4; ++i) {
    live.push_back(request("q" + std::to_string(i), token_range(0, 6 + 2 * i)));
    ASSERT_TRUE(prefill(*live.back()).has_value());
  }
  for (auto& r : live) free(*r);
  EXPECT_EQ(manager_->num_free_blocks(), 10u);
  EXPECT_TRUE(manager_->reset_prefix_cache());
  expect_ok();
}

}  // namespace
}  // namespace kv

namespace kv {
namespace {

// A policy plugged in through the factory seam: LRU underneath, counting what the pool asks.
class CountingPolicy final : public EvictionPolicy {
 public:
  CountingPolicy(std::unique_ptr<EvictionPolicy> inner, int* pops) : inner_(std::move(inner)), pops_(pops) {}
  const char* name() const override { return "counting-lru"; }
  std::size_t size() const override { return inner_->size(); }
  void on_freed(std::span<Block* const> blocks, const BlockRetention& r) override { inner_->on_freed(blocks, r); }
  void remove(Block* b) override { inner_->remove(b); }
  void pop_n(std::size_t n, std::vector<Block*>& out) override {
    *pops_ += static_cast<int>(n);
    inner_->pop_n(n, out);
  }
  bool contains(const Block* b) const override { return inner_->contains(b); }
  std::vector<BlockId> order() const override { return inner_->order(); }
  bool check(std::string* why) const override { return inner_->check(why); }

 private:
  std::unique_ptr<EvictionPolicy> inner_;
  int* pops_;
};

TEST(KvCacheManagerPolicyTest, AFactoryPlugsInAnotherPolicy) {
  int pops = 0;
  KvCacheConfig c;
  c.num_blocks = 8;
  c.block_size = 4;
  KvCacheManager m(c, [&pops](std::span<Block> blocks, FreeOrder order, bool caching) {
    return std::make_unique<CountingPolicy>(make_lru_policy(blocks, order, caching), &pops);
  });
  EXPECT_EQ(pops, 1);  // the null block
  EXPECT_STREQ(m.pool().policy().name(), "counting-lru");
  BlockHasher hasher;
  Request r("r", {1, 2, 3, 4, 5, 6, 7, 8, 9}, {}, &hasher, 4);
  auto fresh = m.allocate_slots(r, 9);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(*fresh, (GroupBlockIds{{1, 2, 3}}));
  EXPECT_EQ(pops, 4);
  m.free(r);
  EXPECT_EQ(m.pool().policy().order(), (std::vector<BlockId>{4, 5, 6, 7, 3, 2, 1}));
  std::string why;
  EXPECT_TRUE(m.check_invariants(&why)) << why;
}

}  // namespace
}  // namespace kv
