// MambaManager in its three modes, as short stories with exact block ids: align keeps the
// chunk-end state and frees the one before, moves its speculative blocks forward, hits
// right to left on aligned boundaries only, and refuses a state cached in the same step;
// all frees every state but the last one.
#include "model/mamba_manager.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kv {
namespace {

KvCacheSpec mamba_spec(MambaCacheMode mode, int speculative_blocks = 0) {
  KvCacheSpec s{AttentionType::kMamba, 16, 2, 64, 64, 2, 0, 0};
  s.mamba_mode = mode;
  s.mamba_state_bytes = 8192;
  s.num_speculative_blocks = speculative_blocks;
  return s;
}

std::vector<TokenId> tokens(int n) {
  std::vector<TokenId> out;
  for (int i = 0; i < n; ++i) out.push_back(1000 + i);
  return out;
}

// The slots of an allocate with `total` tokens computed and `main` after it (no lookahead).
SlotDemand demand(std::int64_t total, std::int64_t main) {
  return {.total_computed = total, .num_tokens = main, .num_tokens_main_model = main};
}

class MambaManagerTest : public ::testing::Test {
 protected:
  std::vector<BlockId> table(const MambaManager& m, const RequestId& id) const {
    auto blocks = m.blocks_of(id);
    return {blocks.begin(), blocks.end()};
  }
  std::vector<BlockId> allocate(MambaManager& m, const RequestId& id, std::int64_t total, std::int64_t main) {
    std::vector<BlockId> out;
    m.allocate_new_blocks(id, demand(total, main), out);
    return out;
  }
  void expect_ok(const MambaManager& m) {
    std::string why;
    EXPECT_TRUE(pool_.check_invariants(&why)) << why;
    EXPECT_TRUE(m.check(&why)) << why;
  }

  BlockPool pool_{32, true, FreeOrder::kUnhashedFirst, false};
  BlockHasher hasher_;
  Request a_{"a", tokens(100), HashExtras{}, &hasher_, 16};
  const std::vector<KvCacheGroupId> group0_ = {0};
};

TEST_F(MambaManagerTest, AlignKeepsTheChunkEndStateAndFreesTheOneBefore) {
  MambaManager m(mamba_spec(MambaCacheMode::kAlign), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  // 32 tokens: the state after them lives at index 1; index 0 holds none.
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand(0, 32), {}), 1);
  EXPECT_EQ(allocate(m, "a", 0, 32), (std::vector<BlockId>{0, 1}));
  m.cache_blocks(a_, 32);
  EXPECT_EQ(pool_.get_cached_block(a_.block_hashes()[1], 0), 1);
  // The next chunk, to 64 tokens: one new block at index 3, nulls before it.
  EXPECT_EQ(m.remove_skipped_blocks("a", demand(32, 64)), 0u);
  EXPECT_EQ(allocate(m, "a", 32, 64), (std::vector<BlockId>{0, 2}));
  EXPECT_EQ(table(m, "a"), (std::vector<BlockId>{0, 1, 0, 2}));
  m.cache_blocks(a_, 64);
  // The allocate after that frees the state of two allocations ago (block 1, still cached).
  EXPECT_EQ(m.remove_skipped_blocks("a", demand(64, 80)), 1u);
  EXPECT_EQ(table(m, "a"), (std::vector<BlockId>{0, 0, 0, 2}));
  EXPECT_EQ(pool_.policy().order().back(), 1);
  EXPECT_EQ(pool_.get_cached_block(a_.block_hashes()[1], 0), 1);
  expect_ok(m);
  m.free("a");
  EXPECT_EQ(pool_.num_free_blocks(), 31u);
}

TEST_F(MambaManagerTest, AlignMovesItsSpeculativeBlocksForward) {
  MambaManager m(mamba_spec(MambaCacheMode::kAlign, 2), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  // First allocation: the state block and two speculative blocks.
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand(0, 32), {}), 3);
  EXPECT_EQ(allocate(m, "a", 0, 32), (std::vector<BlockId>{0, 1, 2, 3}));
  // Later ones take one block; the speculative block at index 2 moves behind the new state
  // (index 3 already holds the state of 64 tokens).
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand(32, 64), {}), 1);
  EXPECT_EQ(allocate(m, "a", 32, 64), (std::vector<BlockId>{2, 4}));
  EXPECT_EQ(table(m, "a"), (std::vector<BlockId>{0, 1, 0, 3, 2, 4}));
  // Fewer blocks than held (drafts rolled back): vLLM's count stays negative.
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand(32, 40), {}), -1);
  EXPECT_TRUE(allocate(m, "a", 64, 64).empty());
  expect_ok(m);
}

TEST_F(MambaManagerTest, AlignHitsRightToLeftOnAlignedBoundaries) {
  MambaManager m(mamba_spec(MambaCacheMode::kAlign), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  allocate(m, "a", 0, 48);  // [0, 0, 1]
  m.cache_blocks(a_, 48);   // block 1 under hash 2
  m.free("a");
  m.new_step();
  const auto hashes = a_.block_hashes();
  EXPECT_EQ(m.find_longest_cache_hit(hashes, 99, group0_, false, 16), (std::vector<std::vector<BlockId>>{{0, 0, 1}}));
  // With 32-token alignment index 2 (48 tokens) is skipped, and nothing earlier is cached.
  EXPECT_EQ(m.find_longest_cache_hit(hashes, 99, group0_, false, 32), (std::vector<std::vector<BlockId>>{{}}));
  // A shorter limit cannot reach it; eagle drops nothing.
  EXPECT_EQ(m.find_longest_cache_hit(hashes, 47, group0_, true, 16), (std::vector<std::vector<BlockId>>{{}}));
  EXPECT_EQ(m.find_longest_cache_hit(hashes, 48, group0_, true, 16), (std::vector<std::vector<BlockId>>{{0, 0, 1}}));
}

TEST_F(MambaManagerTest, AStateCachedInThisStepCannotBeHitUntilTheNextStep) {
  MambaManager m(mamba_spec(MambaCacheMode::kAlign), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  allocate(m, "a", 0, 32);  // [0, 1]
  m.cache_blocks(a_, 32);
  const std::vector<BlockId> hit = {0, 1};
  // More than the pool holds: the allocation fails.
  EXPECT_EQ(m.num_blocks_to_allocate("b", demand(32, 40), hit), pool_.num_blocks() + 1);
  m.new_step();
  // Block 1 is in use by "a": touching it costs nothing; one new state block.
  EXPECT_EQ(m.num_blocks_to_allocate("b", demand(32, 40), hit), 1);
  m.allocate_new_computed_blocks("b", hit, 32);
  EXPECT_EQ(allocate(m, "b", 32, 40), (std::vector<BlockId>{2}));
  EXPECT_EQ(table(m, "b"), (std::vector<BlockId>{0, 1, 2}));
  // Once "b" has moved past the hit's state, the next allocate drops it.
  EXPECT_EQ(m.remove_skipped_blocks("b", demand(40, 64)), 1u);
  EXPECT_EQ(table(m, "b"), (std::vector<BlockId>{0, 0, 2}));
  expect_ok(m);
}

TEST_F(MambaManagerTest, AllKeepsOnlyTheLastStateAndItsSpeculativeBlocks) {
  MambaManager m(mamba_spec(MambaCacheMode::kAll, 1), pool_, 0);
  m.allocate_new_computed_blocks("a", {}, 0);
  // 48 slots and one speculative block: 4 blocks, like full attention.
  EXPECT_EQ(m.num_blocks_to_allocate("a", demand(0, 48), {}), 4);
  EXPECT_EQ(allocate(m, "a", 0, 48), (std::vector<BlockId>{1, 2, 3, 4}));
  m.cache_blocks(a_, 48);
  // 48 computed: only the state after token 47 (index 2) is read again; 1 goes, then 0.
  EXPECT_EQ(m.remove_skipped_blocks("a", demand(48, 49)), 2u);
  EXPECT_EQ(table(m, "a"), (std::vector<BlockId>{0, 0, 3, 4}));
  const std::vector<BlockId> order = pool_.policy().order();
  EXPECT_EQ(std::vector<BlockId>(order.end() - 2, order.end()), (std::vector<BlockId>{2, 1}));
  expect_ok(m);
}

TEST_F(MambaManagerTest, NoneHoldsOneBlockForTheWholeRequest) {
  KvCacheSpec spec = mamba_spec(MambaCacheMode::kNone);
  spec.block_size = 4096;  // max_model_len
  BlockPool pool(8, false, FreeOrder::kUnhashedFirst, false);
  MambaManager m(spec, pool, 0);
  std::vector<BlockId> out;
  m.allocate_new_computed_blocks("a", {}, 0);
  m.allocate_new_blocks("a", demand(0, 100), out);
  m.allocate_new_blocks("a", demand(100, 1000), out);
  EXPECT_EQ(out, (std::vector<BlockId>{1}));
  EXPECT_EQ(m.remove_skipped_blocks("a", demand(1000, 1001)), 0u);
}

}  // namespace
}  // namespace kv
