// The eviction policies of docs/policies.md, driven directly the way BlockPool drives them
// (pop, cache, hit, release), with exact victim orders; order() is checked against what pop_n
// really returns, and check() after every step.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model/kv_cache_manager.h"
#include "model/policies/eviction_policy.h"

namespace kv {
namespace {

class Harness {
 public:
  Harness(EvictionPolicyKind kind, int num_blocks) : blocks_(static_cast<std::size_t>(num_blocks)) {
    for (int i = 0; i < num_blocks; ++i) blocks_[static_cast<std::size_t>(i)].id = i;
    policy_ = make_eviction_policy(kind, blocks_, FreeOrder::kClassic, true);
    std::vector<Block*> null_block;
    policy_->pop_n(1, null_block);  // as the pool does
    blocks_[0].is_null = true;
  }
  EvictionPolicy& policy() { return *policy_; }

  // Pops n victims for new content (dropping their hashes, as the pool does).
  std::vector<BlockId> take(std::size_t n) {
    std::vector<Block*> got;
    policy_->pop_n(n, got);
    std::vector<BlockId> ids;
    for (Block* b : got) {
      b->ref_cnt = 1;
      if (!b->hash.empty()) {
        b->hash = BlockHash{};
        policy_->on_uncached(b);
      }
      ids.push_back(b->id);
    }
    check();
    return ids;
  }
  // Caches `chain` (each block's parent is the one before it; the first's is `parent`).
  void cache(const std::vector<BlockId>& chain, BlockId parent = kNoBlock) {
    std::vector<Block*> ptrs;
    for (BlockId id : chain) {
      Block& b = blocks_[static_cast<std::size_t>(id)];
      b.hash.size = 32;
      b.hash.bytes[0] = static_cast<std::uint8_t>(++next_hash_);
      ptrs.push_back(&b);
    }
    policy_->on_cached(parent == kNoBlock ? nullptr : &blocks_[static_cast<std::size_t>(parent)], ptrs);
    check();
  }
  void hit(BlockId id) {
    Block& b = blocks_[static_cast<std::size_t>(id)];
    if (b.ref_cnt == 0) policy_->remove(&b);
    policy_->on_hit(&b);
    ++b.ref_cnt;
    check();
  }
  void release(const std::vector<BlockId>& ids, BlockRetention r = {}) {
    std::vector<Block*> freed;
    for (BlockId id : ids) {
      Block& b = blocks_[static_cast<std::size_t>(id)];
      if (--b.ref_cnt == 0) freed.push_back(&b);
    }
    policy_->on_freed(freed, r);
    check();
  }
  void check() {
    std::string why;
    EXPECT_TRUE(policy_->check(&why)) << why;
  }

 private:
  std::vector<Block> blocks_;
  std::unique_ptr<EvictionPolicy> policy_;
  int next_hash_ = 0;
};

using Ids = std::vector<BlockId>;

class EveryNewPolicy : public ::testing::TestWithParam<EvictionPolicyKind> {};

TEST_P(EveryNewPolicy, UnhashedBlocksGoFirstAndOrderIsWhatPopsReturn) {
  Harness h(GetParam(), 6);
  EXPECT_EQ(h.take(3), (Ids{1, 2, 3}));
  h.cache({1, 2});
  h.release({3, 2, 1});  // tail first, as the manager frees; 3 is a partial block
  // Unhashed first (the fresh 4, 5, then 3), then the cached chain: 2 before 1 in every policy
  // (equal rank, 2 released first; for leaf-lru 2 is the leaf).
  EXPECT_EQ(h.policy().order(), (Ids{4, 5, 3, 2, 1}));
  EXPECT_EQ(h.policy().size(), 5u);
  EXPECT_EQ(h.take(5), (Ids{4, 5, 3, 2, 1}));
  EXPECT_EQ(h.policy().size(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Policies, EveryNewPolicy,
                         ::testing::Values(EvictionPolicyKind::kLfu, EvictionPolicyKind::kSlru,
                                           EvictionPolicyKind::kLeafLru, EvictionPolicyKind::kPriority),
                         [](const auto& param_info) {
                           std::string n = to_string(param_info.param);
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

TEST(Lfu, FrequencyBeatsRecencyUntilItAgesOut) {
  Harness h(EvictionPolicyKind::kLfu, 4);
  EXPECT_EQ(h.take(3), (Ids{1, 2, 3}));
  h.cache({1});
  h.cache({2});
  h.cache({3});
  h.release({1});
  h.hit(1);
  h.release({1});
  h.hit(1);
  h.release({1});                                 // block 1: 3 uses, rank 0 + 3
  h.release({2});                                 // rank 0 + 1
  h.release({3});                                 // rank 0 + 1
  EXPECT_EQ(h.policy().order(), (Ids{2, 3, 1}));  // 1 is the oldest release but the most used
  EXPECT_EQ(h.take(1), (Ids{2}));                 // L = 1
  h.cache({2});
  h.release({2});  // rank 1 + 1
  EXPECT_EQ(h.policy().order(), (Ids{3, 2, 1}));
  EXPECT_EQ(h.take(1), (Ids{3}));  // L = 1
  h.cache({3});
  h.release({3});                  // rank 2
  EXPECT_EQ(h.take(1), (Ids{2}));  // L = 2
  h.cache({2});
  h.release({2});  // rank 3, released after 1
  EXPECT_EQ(h.policy().order(), (Ids{3, 1, 2}));
  EXPECT_EQ(h.take(1), (Ids{3}));  // L = 2
  h.cache({3});
  h.release({3});  // rank 3
  // Block 1's three uses have aged out: it ties the one-use blocks and is the oldest.
  EXPECT_EQ(h.policy().order(), (Ids{1, 2, 3}));
}

TEST(Slru, AScanOfOneUseBlocksCannotFlushHitBlocks) {
  Harness h(EvictionPolicyKind::kSlru, 5);  // 4 usable blocks, protected cap 3
  EXPECT_EQ(h.take(2), (Ids{1, 2}));
  h.cache({1, 2});
  h.release({2, 1});
  h.hit(1);
  h.hit(2);           // a second request reuses the chain
  h.release({2, 1});  // both protected now
  EXPECT_EQ(h.policy().order(), (Ids{3, 4, 2, 1}));
  EXPECT_EQ(h.take(2), (Ids{3, 4}));  // a scan: two one-use blocks
  h.cache({3});
  h.cache({4});
  h.release({3});
  h.release({4});
  EXPECT_EQ(h.policy().order(), (Ids{3, 4, 2, 1}));  // probation first, though released last
}

TEST(Slru, TheProtectedSegmentHoldsUpToItsCap) {
  Harness h(EvictionPolicyKind::kSlru, 5);  // 4 usable blocks, protected cap 3
  EXPECT_EQ(h.take(3), (Ids{1, 2, 3}));
  for (BlockId id : {1, 2, 3}) {  // each hit once after its first release: protected
    h.cache({id});
    h.release({id});
    h.hit(id);
    h.release({id});
  }
  EXPECT_EQ(h.take(1), (Ids{4}));
  h.cache({4});
  h.release({4});  // probation; protected holds 1, 2, 3: exactly the cap, nothing demoted
  EXPECT_EQ(h.policy().order(), (Ids{4, 1, 2, 3}));
  h.hit(4);
  h.release({4});  // protected would hold 4 > 3: the oldest protected (1) goes to probation
  EXPECT_EQ(h.policy().order(), (Ids{1, 2, 3, 4}));
  EXPECT_EQ(h.take(1), (Ids{1}));
}

TEST(LeafLru, EvictsTheDeepestBlockOfAChainFirst) {
  Harness h(EvictionPolicyKind::kLeafLru, 6);
  EXPECT_EQ(h.take(3), (Ids{1, 2, 3}));
  h.cache({1, 2, 3});    // 1 <- 2 <- 3
  h.release({1, 2, 3});  // head first: plain LRU would evict 1, the root, first
  EXPECT_EQ(h.policy().order(), (Ids{4, 5, 3, 1, 2}));
  EXPECT_EQ(h.take(3), (Ids{4, 5, 3}));
  EXPECT_EQ(h.policy().order(), (Ids{2, 1}));  // 3 is gone, so 2 is a leaf now
  EXPECT_EQ(h.take(1), (Ids{2}));
  EXPECT_EQ(h.policy().order(), (Ids{1}));
}

TEST(LeafLru, AChildCachedByAnotherRequestKeepsItsParent) {
  Harness h(EvictionPolicyKind::kLeafLru, 5);
  EXPECT_EQ(h.take(1), (Ids{1}));
  h.cache({1});
  h.release({1});  // a leaf
  EXPECT_EQ(h.policy().order(), (Ids{2, 3, 4, 1}));
  h.hit(1);  // a second request extends the prefix
  EXPECT_EQ(h.take(1), (Ids{2}));
  h.cache({2}, /*parent=*/1);
  h.release({2, 1});
  EXPECT_EQ(h.policy().order(), (Ids{3, 4, 2, 1}));
}

TEST(Priority, LowerPriorityFirstAndItDecaysAfterItsDuration) {
  Harness h(EvictionPolicyKind::kPriority, 4);
  EXPECT_EQ(h.take(3), (Ids{1, 2, 3}));
  h.cache({1});
  h.cache({2});
  h.cache({3});
  h.release({3});                         // default 35 (clock 1)
  h.release({2}, BlockRetention{10, 2});  // 10 until clock 4
  h.release({1}, BlockRetention{80, 0});  // 80 for good (clock 3)
  EXPECT_EQ(h.policy().order(), (Ids{2, 3, 1}));
  h.release({});                                  // clock 4: block 2 falls back to 35
  EXPECT_EQ(h.policy().order(), (Ids{3, 2, 1}));  // 3 was released before 2
  EXPECT_EQ(h.take(3), (Ids{3, 2, 1}));
}

TEST(Policies, ManagerRunsEveryPolicyWithInvariants) {
  for (EvictionPolicyKind kind : {EvictionPolicyKind::kLru, EvictionPolicyKind::kLfu, EvictionPolicyKind::kSlru,
                                  EvictionPolicyKind::kLeafLru, EvictionPolicyKind::kPriority}) {
    KvCacheConfig c;
    c.num_blocks = 9;
    c.block_size = 2;
    c.eviction_policy = kind;
    KvCacheManager m(c);
    EXPECT_STREQ(m.pool().policy().name(), to_string(kind));
    const BlockHasher hasher;
    std::int64_t hits = 0;
    for (int i = 0; i < 12; ++i) {
      std::vector<TokenId> prompt;
      for (int t = 0; t < 5 + (i % 3) * 2; ++t) prompt.push_back(t + (i % 4 == 3 ? 100 : 0));
      Request r("r" + std::to_string(i), prompt, {}, &hasher, 2);
      r.retention = BlockRetention{i % 2 == 0 ? 20 : 60, i % 3};
      const CacheHit hit = m.get_computed_blocks(r);
      hits += hit.num_tokens;
      ASSERT_TRUE(m.allocate_slots(r, r.num_tokens() - hit.num_tokens, hit).has_value()) << to_string(kind);
      m.free(r);
      std::string why;
      ASSERT_TRUE(m.check_invariants(&why)) << to_string(kind) << ": " << why;
    }
    EXPECT_GT(hits, 0) << to_string(kind);
  }
}

TEST(Policies, NamesRoundTrip) {
  for (const char* name : {"lru", "lfu", "slru", "leaf-lru", "priority"}) {
    EvictionPolicyKind k{};
    ASSERT_TRUE(parse_eviction_policy(name, &k)) << name;
    EXPECT_STREQ(to_string(k), name);
  }
  EvictionPolicyKind k{};
  EXPECT_FALSE(parse_eviction_policy("mru", &k));
}

}  // namespace
}  // namespace kv
