// KvCacheManager over several KV-cache groups sharing one pool. Short stories with exact ids:
// one hit length for every group, per-group caching, window frees before the free-count
// check, and the free order across groups.
#include "model/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace kv {
namespace {

std::vector<TokenId> tokens(TokenId start, int n) {
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) out.push_back(start + i);
  return out;
}

std::vector<BlockId> table(const KvCacheManager& m, const RequestId& id, std::size_t g) {
  auto blocks = m.blocks_of(id, g);
  return {blocks.begin(), blocks.end()};
}

// gpt-oss-like: sliding window 32 (group 0) and full attention (group 1), one layer each.
KvCacheConfig gpt_oss_like(int num_blocks) {
  KvCacheConfig c;
  const KvCacheSpec full{AttentionType::kFullAttention, 16, 2, 64, 64, 2, 0, 0};
  KvCacheSpec sliding = full;
  sliding.type = AttentionType::kSlidingWindow;
  sliding.window = 32;
  auto groups = get_kv_cache_groups(std::vector<LayerKvCacheSpec>{{"sw", sliding}, {"fa", full}});
  EXPECT_TRUE(groups.ok());
  c.groups = *groups;
  c.block_size = 16;
  c.free_order = FreeOrder::kUnhashedFirst;
  c.num_blocks = num_blocks;
  c.max_model_len = 4096;
  return c;
}

// Qwen3-Next-like with a large state: one Mamba align layer whose 16384-byte page doubles the
// full-attention block to 32 tokens (group 0 Mamba of 16 tokens, group 1 full of 32).
KvCacheConfig large_state_mamba(int num_blocks) {
  const KvCacheSpec full{AttentionType::kFullAttention, 16, 2, 64, 64, 2, 0, 0};
  KvCacheSpec mamba = full;
  mamba.type = AttentionType::kMamba;
  mamba.mamba_mode = MambaCacheMode::kAlign;
  mamba.mamba_state_bytes = 16384;
  auto groups = get_kv_cache_groups(std::vector<LayerKvCacheSpec>{{"m", mamba}, {"fa", full}});
  EXPECT_TRUE(groups.ok());
  KvCacheConfig c;
  c.groups = *groups;
  c.block_size = 16;
  c.free_order = FreeOrder::kUnhashedFirst;
  c.num_blocks = num_blocks;
  c.max_model_len = 4096;
  return c;
}

class KvCacheManagerGroupsTest : public ::testing::Test {
 protected:
  void expect_ok() {
    std::string why;
    EXPECT_TRUE(manager_->check_invariants(&why)) << why;
  }
  Request make(const RequestId& id, std::vector<TokenId> prompt) {
    return Request(id, std::move(prompt), HashExtras{}, &hasher_, 16);
  }

  BlockHasher hasher_;
  std::unique_ptr<KvCacheManager> manager_;
};

TEST_F(KvCacheManagerGroupsTest, OneHitLengthForAllGroups) {
  manager_ = std::make_unique<KvCacheManager>(gpt_oss_like(30));
  EXPECT_EQ(manager_->lookup_order(), (std::vector<std::vector<int>>{{1}, {0}}));
  Request a = make("a", tokens(1000, 100));
  auto fresh = manager_->allocate_slots(a, 100, manager_->get_computed_blocks(a));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(*fresh, (GroupBlockIds{{1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14}}));
  a.num_computed_tokens = 100;
  manager_->free(a);
  // Group 0 first, then group 1, each tail first: the partial blocks (7, 14) go to the head,
  // the last group's in front; the cached ones to the tail.
  const auto order = manager_->pool().policy().order();
  EXPECT_EQ(std::vector<BlockId>(order.begin(), order.begin() + 3), (std::vector<BlockId>{14, 7, 15}));
  EXPECT_EQ(std::vector<BlockId>(order.end() - 12, order.end()),
            (std::vector<BlockId>{6, 5, 4, 3, 2, 1, 13, 12, 11, 10, 9, 8}));

  // b shares a's first 80 tokens. Full attention hits 5 blocks; the sliding window needs only
  // the last 2 of them, and the rest are nulls.
  std::vector<TokenId> prompt = tokens(1000, 80);
  for (TokenId t : tokens(5000, 20)) prompt.push_back(t);
  Request b = make("b", prompt);
  const CacheHit hit = manager_->get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 80);
  EXPECT_EQ(hit.blocks, (GroupBlockIds{{0, 0, 0, 4, 5}, {8, 9, 10, 11, 12}}));
  fresh = manager_->allocate_slots(b, 20, hit);
  ASSERT_TRUE(fresh);
  // The hit's nulls stay (80 computed: tokens 0..48 are out of the window), its real blocks
  // are touched, and each group pops 2 new blocks from the head, sliding first.
  EXPECT_EQ(table(*manager_, "b", 0), (std::vector<BlockId>{0, 0, 0, 4, 5, 14, 7}));
  EXPECT_EQ(table(*manager_, "b", 1), (std::vector<BlockId>{8, 9, 10, 11, 12, 15, 16}));
  expect_ok();
}

TEST_F(KvCacheManagerGroupsTest, ClassicOrderAppendsEveryGroupInTurn) {
  KvCacheConfig config = gpt_oss_like(20);
  config.free_order = FreeOrder::kClassic;
  manager_ = std::make_unique<KvCacheManager>(config);
  Request a = make("a", tokens(1000, 40));
  ASSERT_TRUE(manager_->allocate_slots(a, 40));
  manager_->free(a);
  EXPECT_EQ(manager_->pool().policy().order(),
            (std::vector<BlockId>{7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 3, 2, 1, 6, 5, 4}));
  expect_ok();
}

TEST_F(KvCacheManagerGroupsTest, WindowFreesHappenEvenIfTheAllocationFails) {
  manager_ = std::make_unique<KvCacheManager>(gpt_oss_like(12));  // 11 usable blocks
  Request a = make("a", tokens(1000, 64));
  ASSERT_TRUE(manager_->allocate_slots(a, 32));
  a.num_computed_tokens = 32;
  ASSERT_TRUE(manager_->allocate_slots(a, 32));
  a.num_computed_tokens = 64;
  EXPECT_EQ(table(*manager_, "a", 0), (std::vector<BlockId>{1, 2, 5, 6}));
  EXPECT_EQ(table(*manager_, "a", 1), (std::vector<BlockId>{3, 4, 7, 8}));
  EXPECT_EQ(manager_->num_free_blocks(), 3u);
  a.append_tokens(tokens(2000, 64));
  // 64 computed: tokens 0..32 left the window, so blocks 1 and 2 are freed first; then 8 more
  // blocks are needed and only 5 are free.
  EXPECT_FALSE(manager_->allocate_slots(a, 64));
  EXPECT_EQ(table(*manager_, "a", 0), (std::vector<BlockId>{0, 0, 5, 6}));
  EXPECT_EQ(manager_->num_free_blocks(), 5u);
  // full_sequence_must_fit fails before anything changes.
  Request b = make("b", tokens(3000, 100));
  EXPECT_FALSE(manager_->allocate_slots(b, 16, {}, 0, /*full_sequence_must_fit=*/true));
  EXPECT_FALSE(manager_->holds_blocks("b"));
  EXPECT_EQ(manager_->num_free_blocks(), 5u);
  expect_ok();
}

TEST_F(KvCacheManagerGroupsTest, AMambaStateIsHitOnlyAfterTheStepThatCachedIt) {
  manager_ = std::make_unique<KvCacheManager>(large_state_mamba(20));
  EXPECT_EQ(manager_->config().scheduler_block_size(), 32);
  EXPECT_EQ(manager_->config().hash_block_size(), 16);
  Request a = make("a", tokens(1000, 100));
  ASSERT_TRUE(manager_->allocate_slots(a, 64));
  a.num_computed_tokens = 64;
  EXPECT_EQ(table(*manager_, "a", 0), (std::vector<BlockId>{0, 0, 0, 1}));
  EXPECT_EQ(table(*manager_, "a", 1), (std::vector<BlockId>{2, 3}));
  // The same prompt: full attention hits its two 32-token blocks (hashes 1 and 3 of the
  // 16-token chain), Mamba the state after 64 tokens.
  Request b = make("b", tokens(1000, 100));
  CacheHit hit = manager_->get_computed_blocks(b);
  EXPECT_EQ(hit.num_tokens, 64);
  EXPECT_EQ(hit.blocks, (GroupBlockIds{{0, 0, 0, 1}, {2, 3}}));
  // That state was cached in this step: not readable yet.
  EXPECT_FALSE(manager_->allocate_slots(b, 36, hit));
  manager_->new_step();
  hit = manager_->get_computed_blocks(b);
  auto fresh = manager_->allocate_slots(b, 36, hit);
  ASSERT_TRUE(fresh);
  // Mamba: nulls up to the state of 100 tokens (index 6); full: two more 32-token blocks.
  EXPECT_EQ(*fresh, (GroupBlockIds{{0, 0, 4}, {5, 6}}));
  EXPECT_EQ(table(*manager_, "b", 0), (std::vector<BlockId>{0, 0, 0, 1, 0, 0, 4}));
  expect_ok();
}

TEST(KvCacheConfigTest, RefusesWhatVllmRefusesOrNeverBuilds) {
  KvCacheConfig c = large_state_mamba(20);
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  c.block_size = 32;  // not the smallest group block size
  EXPECT_NE(c.validate().message().find("not the smallest group block size 16"), std::string::npos);
  c = large_state_mamba(20);
  c.enable_caching = false;  // align needs caching
  EXPECT_NE(c.validate().message().find("Mamba mode align with prefix caching off"), std::string::npos)
      << c.validate().message();
  c.groups[0].spec.type = AttentionType::kCrossAttention;
  c.groups[0].spec.mamba_mode = MambaCacheMode::kNone;
  c.groups[0].spec.mamba_state_bytes = 0;
  EXPECT_TRUE(c.validate().ok()) << c.validate().message();
  c.enable_caching = true;
  EXPECT_NE(c.validate().message().find("KV-cache group 0: cross attention needs prefix caching off"),
            std::string::npos)
      << c.validate().message();
}

}  // namespace
}  // namespace kv
