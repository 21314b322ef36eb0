// TierCache (LRU and capacity of one second-tier store) and TierConnector (matches after the
// local hit, loads, the two store policies, host -> disk demotion, drops in the plan).
#include "model/tiers/tier_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "model/block_hasher.h"
#include "model/request.h"
#include "model/tiers/tier_connector.h"

namespace kv {
namespace {

BlockHash hash_of(std::uint8_t n) {
  BlockHash h;
  h.size = 32;
  h.bytes[0] = n;
  h.bytes[31] = 0xA5;
  return h;
}

std::vector<std::uint8_t> ids(const std::vector<BlockHash>& hashes) {
  std::vector<std::uint8_t> out;
  for (const BlockHash& h : hashes) out.push_back(h.bytes[0]);
  return out;
}

TEST(TierCache, KeepsLeastRecentFirstAndEvictsItWhenFull) {
  TierCache c(3);
  EXPECT_FALSE(c.insert(hash_of(1)));
  EXPECT_FALSE(c.insert(hash_of(2)));
  EXPECT_FALSE(c.insert(hash_of(3)));
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{1, 2, 3}));
  EXPECT_TRUE(c.touch(hash_of(1)));  // 1 becomes the most recent
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{2, 3, 1}));
  const std::optional<BlockHash> out = c.insert(hash_of(4));
  ASSERT_TRUE(out);
  EXPECT_EQ(out->bytes[0], 2);
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{3, 1, 4}));
  EXPECT_EQ(c.size(), 3);
  EXPECT_FALSE(c.contains(hash_of(2)));
  std::string why;
  EXPECT_TRUE(c.check_invariants(&why)) << why;
}

TEST(TierCache, InsertingAHeldHashOnlyTouchesIt) {
  TierCache c(2);
  c.insert(hash_of(1));
  c.insert(hash_of(2));
  EXPECT_FALSE(c.insert(hash_of(1)));  // held: no eviction, no second copy
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{2, 1}));
  EXPECT_FALSE(c.touch(hash_of(9)));
}

TEST(TierCache, EraseFreesASlotForReuse) {
  TierCache c(2);
  c.insert(hash_of(1));
  c.insert(hash_of(2));
  EXPECT_TRUE(c.erase(hash_of(1)));
  EXPECT_FALSE(c.erase(hash_of(1)));
  EXPECT_FALSE(c.insert(hash_of(3)));  // room again: nothing evicted
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{2, 3}));
  std::string why;
  EXPECT_TRUE(c.check_invariants(&why)) << why;
}

TEST(TierCache, CapacityOneKeepsOnlyTheNewest) {
  TierCache c(1);
  for (std::uint8_t i = 1; i <= 5; ++i) {
    const std::optional<BlockHash> out = c.insert(hash_of(i));
    EXPECT_EQ(out.has_value(), i > 1);
    if (out) {
      EXPECT_EQ(out->bytes[0], i - 1);
    }
  }
  EXPECT_EQ(ids(c.lru_order()), (std::vector<std::uint8_t>{5}));
}

// A request of `blocks` full blocks plus one token, hashed with the default hasher.
struct Prompt {
  BlockHasher hasher{HashAlgo::kSha256Cbor, std::string(kDefaultHashSeed)};
  Request request;
  Prompt(int blocks, TokenId base)
      : request("r" + std::to_string(base), tokens(blocks, base), HashExtras{}, &hasher, 4) {}
  static std::vector<TokenId> tokens(int blocks, TokenId base) {
    std::vector<TokenId> t;
    for (int i = 0; i < blocks * 4 + 1; ++i) t.push_back(base + i);
    return t;
  }
  const BlockHash& hash(int i) const { return request.block_hashes()[static_cast<std::size_t>(i)]; }
};

TierConnectorConfig config(std::int64_t host, std::int64_t disk, TierStorePolicy store) {
  TierConnectorConfig c;
  c.block_size = 4;
  c.bytes_per_block = 1000;
  c.host_capacity_blocks = host;
  c.disk_capacity_blocks = disk;
  c.store = store;
  return c;
}

TEST(TierConnector, MatchesTheTierHeldRunAfterTheLocalHitAndLoadsIt) {
  Prompt p(4, 100);
  TierConnector t(config(8, 0, TierStorePolicy::kOnEvict));
  const std::vector<EvictedBlock> evicted = {{7, p.hash(1)}, {8, p.hash(2)}, {9, p.hash(3)}};
  t.on_blocks_evicted(evicted);
  EXPECT_EQ(t.get_num_new_matched_tokens(p.request, 0), 0);   // block 0 is in no tier: no run
  EXPECT_EQ(t.get_num_new_matched_tokens(p.request, 4), 12);  // blocks 1..3 after a 1-block hit
  EXPECT_EQ(t.get_num_new_matched_tokens(p.request, 4), 12);  // looking up changes nothing
  const std::vector<BlockId> table = {3, 11, 12, 13, 14};
  t.update_state_after_alloc(p.request, table, 4, 12);
  StepPlan plan;
  t.build_connector_meta(plan);
  ASSERT_EQ(plan.tier_stores_before.size(), 3u);
  EXPECT_EQ(plan.tier_stores_before[0].block, 7);
  ASSERT_EQ(plan.tier_loads.size(), 3u);
  EXPECT_EQ(plan.tier_loads[0].block, 11);
  EXPECT_EQ(plan.tier_loads[0].index, 1);
  EXPECT_EQ(plan.tier_loads[2].block, 13);
  EXPECT_TRUE(plan.tier_loads[2].hash == p.hash(3));
  EXPECT_EQ(t.figures()[0].hit_tokens, 12);
  EXPECT_EQ(t.figures()[0].loaded_bytes, 3000);
  EXPECT_EQ(t.figures()[0].stored_bytes, 3000);
}

TEST(TierConnector, NeverMatchesTheLastPromptToken) {
  Prompt p(2, 50);  // 9 tokens: at most 2 blocks can be hits
  TierConnector t(config(8, 0, TierStorePolicy::kOnEvict));
  const std::vector<EvictedBlock> evicted = {{1, p.hash(0)}, {2, p.hash(1)}};
  t.on_blocks_evicted(evicted);
  EXPECT_EQ(t.get_num_new_matched_tokens(p.request, 0), 8);
  Request exact("x", std::vector<TokenId>(p.request.tokens().begin(), p.request.tokens().begin() + 8), HashExtras{},
                &p.hasher, 4);
  EXPECT_EQ(t.get_num_new_matched_tokens(exact, 0), 4);  // 8 tokens: the last block is computed
}

TEST(TierConnector, FullHostDemotesItsOldestToDiskAndDiskDropsItsOldest) {
  Prompt p(5, 10);
  TierConnector t(config(2, 2, TierStorePolicy::kOnEvict));
  for (int i = 0; i < 5; ++i) {
    const std::vector<EvictedBlock> one = {{i + 1, p.hash(i)}};
    t.on_blocks_evicted(one);
  }
  EXPECT_EQ(t.find(p.hash(0)), -1);  // host 3,4; disk 1,2; block 0 dropped
  EXPECT_EQ(t.find(p.hash(1)), 1);
  EXPECT_EQ(t.find(p.hash(2)), 1);
  EXPECT_EQ(t.find(p.hash(3)), 0);
  EXPECT_EQ(t.find(p.hash(4)), 0);
  StepPlan plan;
  t.build_connector_meta(plan);
  ASSERT_EQ(plan.tier_dropped.size(), 1u);
  EXPECT_TRUE(plan.tier_dropped[0] == p.hash(0));
  EXPECT_EQ(t.figures()[1].stored_blocks, 3);  // 0, 1, 2 moved down
  EXPECT_EQ(t.figures()[1].dropped_blocks, 1);
  std::string why;
  EXPECT_TRUE(t.check_invariants(&why)) << why;
  // A hit on disk touches the entry there; the match spans both tiers.
  EXPECT_EQ(t.get_num_new_matched_tokens(p.request, 4), 16);
}

TEST(TierConnector, EveryFullBlockSavesBlocksAsTheyBecomeFullAndIgnoresEvictions) {
  Prompt p(3, 70);
  TierConnector t(config(8, 0, TierStorePolicy::kEveryFullBlock));
  const std::vector<BlockId> table = {5, 6, 7, 8};
  t.on_request_scheduled(p.request, table, 0, 6);  // positions 0..5: block 0 becomes full
  t.on_request_scheduled(p.request, table, 6, 7);  // 6..12: blocks 1 and 2
  const std::vector<EvictedBlock> evicted = {{9, Prompt(1, 900).hash(0)}};
  t.on_blocks_evicted(evicted);
  StepPlan plan;
  t.build_connector_meta(plan);
  EXPECT_TRUE(plan.tier_stores_before.empty());
  ASSERT_EQ(plan.tier_stores_after.size(), 3u);
  EXPECT_EQ(plan.tier_stores_after[0].block, 5);
  EXPECT_EQ(plan.tier_stores_after[2].block, 7);
  StepPlan next;
  t.build_connector_meta(next);  // each transfer lands in one plan only
  EXPECT_TRUE(next.tier_stores_after.empty());
}

TEST(TierConnector, AHashDroppedAndStoredAgainInOneStepIsNotListedAsDropped) {
  Prompt p(3, 30);
  TierConnector t(config(1, 0, TierStorePolicy::kOnEvict));
  const std::vector<EvictedBlock> first = {{1, p.hash(0)}, {2, p.hash(1)}, {3, p.hash(0)}};
  t.on_blocks_evicted(first);  // 0 in; 1 in (0 dropped); 0 in again (1 dropped)
  StepPlan plan;
  t.build_connector_meta(plan);
  ASSERT_EQ(plan.tier_dropped.size(), 1u);
  EXPECT_TRUE(plan.tier_dropped[0] == p.hash(1));
  EXPECT_EQ(t.find(p.hash(0)), 0);
}

// ---- the connector against a reference model written from docs/tiers.md --------------
// Host and disk as plain lists (least recent first); the figures as the documentation defines
// them. Random stores (evictions, write-back) and loads (a lookup after a random local hit,
// then its loads, some by resumed requests) over prompts that share prefixes; after every
// operation both tiers' LRU order, every figure and the match length must agree.
struct ReferenceTiers {
  std::vector<std::vector<BlockHash>> lru;  // per tier, least recent first
  std::vector<std::int64_t> capacity;
  std::vector<TierFigures> figures;
  std::int64_t block_size, bytes_per_block;

  ReferenceTiers(const TierConnectorConfig& c) : block_size(c.block_size), bytes_per_block(c.bytes_per_block) {
    capacity.push_back(c.host_capacity_blocks);
    if (c.disk_capacity_blocks > 0) capacity.push_back(c.disk_capacity_blocks);
    lru.resize(capacity.size());
    figures.resize(capacity.size());
  }
  int find(const BlockHash& h) const {
    for (std::size_t t = 0; t < lru.size(); ++t) {
      if (std::find(lru[t].begin(), lru[t].end(), h) != lru[t].end()) return static_cast<int>(t);
    }
    return -1;
  }
  void touch(int t, const BlockHash& h) {
    auto& l = lru[static_cast<std::size_t>(t)];
    l.erase(std::find(l.begin(), l.end(), h));
    l.push_back(h);
  }
  // Puts h into tier t as its most recent entry; a full tier passes its oldest down.
  void put(std::size_t t, const BlockHash& h) {
    ++figures[t].stored_blocks;
    figures[t].stored_bytes += bytes_per_block;
    lru[t].push_back(h);
    if (static_cast<std::int64_t>(lru[t].size()) > capacity[t]) {
      const BlockHash oldest = lru[t].front();
      lru[t].erase(lru[t].begin());
      ++figures[t].dropped_blocks;
      if (t + 1 < lru.size()) put(t + 1, oldest);
    }
    figures[t].peak_blocks = std::max(figures[t].peak_blocks, static_cast<std::int64_t>(lru[t].size()));
  }
  void store(const BlockHash& h) {
    if (const int t = find(h); t >= 0) return touch(t, h);
    put(0, h);
  }
  std::int64_t match(const Request& r, std::int64_t local) const {
    const auto& hashes = r.block_hashes();
    const std::int64_t bound =
        std::min<std::int64_t>((r.num_tokens() - 1) / block_size, static_cast<std::int64_t>(hashes.size()));
    std::int64_t i = local / block_size;
    while (i < bound && find(hashes[static_cast<std::size_t>(i)]) >= 0) ++i;
    return i * block_size - local;
  }
  void load(const Request& r, std::int64_t local, std::int64_t external) {
    for (std::int64_t i = local / block_size; i < (local + external) / block_size; ++i) {
      const BlockHash& h = r.block_hashes()[static_cast<std::size_t>(i)];
      const int t = find(h);
      touch(t, h);
      TierFigures& f = figures[static_cast<std::size_t>(t)];
      f.hit_tokens += block_size;
      if (r.num_preemptions == 0) f.first_hit_tokens += block_size;
      ++f.loaded_blocks;
      f.loaded_bytes += bytes_per_block;
    }
  }
};

void expect_same(const TierConnector& c, const ReferenceTiers& ref, const std::string& when) {
  ASSERT_EQ(c.num_tiers(), static_cast<int>(ref.lru.size()));
  for (int t = 0; t < c.num_tiers(); ++t) {
    EXPECT_TRUE(c.tier(t).lru_order() == ref.lru[static_cast<std::size_t>(t)]) << "tier " << t << " order, " << when;
    const TierFigures a = c.figures()[static_cast<std::size_t>(t)], b = ref.figures[static_cast<std::size_t>(t)];
    EXPECT_EQ(std::vector<std::int64_t>({a.hit_tokens, a.first_hit_tokens, a.loaded_blocks, a.loaded_bytes,
                                         a.stored_blocks, a.stored_bytes, a.dropped_blocks, a.peak_blocks}),
              std::vector<std::int64_t>({b.hit_tokens, b.first_hit_tokens, b.loaded_blocks, b.loaded_bytes,
                                         b.stored_blocks, b.stored_bytes, b.dropped_blocks, b.peak_blocks}))
        << "tier " << t << " figures (hit, first hit, loaded, bytes, stored, bytes, dropped, peak), " << when;
  }
}

TEST(TierConnector, AgreesWithAReferenceModelOnRandomStoresAndLoads) {
  for (const auto& [host, disk] : std::vector<std::pair<int, int>>{{3, 0}, {4, 5}, {1, 1}, {6, 2}}) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(host * 100 + disk));
    std::vector<std::unique_ptr<Prompt>> prompts;  // eight prompts of 1-6 blocks, some sharing prefixes
    for (int i = 0; i < 8; ++i) prompts.push_back(std::make_unique<Prompt>(1 + i % 6, i % 3 == 0 ? 1000 : 1000 + i));
    const TierConnectorConfig cfg = config(host, disk, TierStorePolicy::kOnEvict);
    TierConnector c(cfg);
    ReferenceTiers ref(cfg);
    for (int op = 0; op < 400; ++op) {
      Prompt& p = *prompts[rng() % prompts.size()];
      const auto blocks = static_cast<std::int64_t>(p.request.block_hashes().size());
      const std::string when =
          "host " + std::to_string(host) + " disk " + std::to_string(disk) + " op " + std::to_string(op);
      if (rng() % 2 == 0) {  // the pool evicts one of its blocks: stored (write-back)
        const BlockHash& h = p.hash(static_cast<int>(rng() % static_cast<std::uint64_t>(blocks)));
        const std::vector<EvictedBlock> evicted = {{static_cast<BlockId>(op + 1), h}};
        c.on_blocks_evicted(evicted);
        ref.store(h);
      } else {  // a lookup after a local hit of some whole blocks, then its loads
        const std::int64_t local = 4 * static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(blocks + 1));
        p.request.num_preemptions = static_cast<int>(rng() % 3 == 0);
        const std::int64_t matched = c.get_num_new_matched_tokens(p.request, local);
        ASSERT_EQ(matched, ref.match(p.request, local)) << when;
        std::vector<BlockId> table(static_cast<std::size_t>(blocks + 1));
        std::iota(table.begin(), table.end(), 1);
        c.update_state_after_alloc(p.request, table, local, matched);
        ref.load(p.request, local, matched);
      }
      StepPlan plan;
      c.build_connector_meta(plan);
      expect_same(c, ref, when);
      std::string why;
      ASSERT_TRUE(c.check_invariants(&why)) << why;
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace kv
