// The prefix-cache optimum (traces/prefix_optimum.h): Belady against an exhaustive search over
// every eviction choice on small random prefix trees, a hand-told story, and, on a bundled
// trace, no eviction policy above it at any capacity.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "replay/sweep.h"
#include "traces/prefix_optimum.h"

namespace kv::trace {
namespace {

// Prefix hits of request `q` on cache set `s` (bit i: block id i cached).
std::int64_t prefix_hits(const ChainRequest& q, std::uint32_t s) {
  std::int64_t hit = 0;
  while (static_cast<std::size_t>(hit) < q.countable && (s >> q.blocks[static_cast<std::size_t>(hit)] & 1u)) ++hit;
  return hit;
}

// The best total prefix-hit blocks over every schedule: after each request the cache may become
// any subset of (cache + the request's blocks) of at most `cap` blocks.
std::int64_t brute_force(const PrefixChains& c, std::size_t r, std::uint32_t s, int cap,
                         std::map<std::pair<std::size_t, std::uint32_t>, std::int64_t>& memo) {
  if (r == c.requests.size()) return 0;
  if (auto it = memo.find({r, s}); it != memo.end()) return it->second;
  const ChainRequest& q = c.requests[r];
  std::uint32_t all = s;
  for (std::uint32_t b : q.blocks) all |= 1u << b;
  std::int64_t best = 0;
  for (std::uint32_t sub = all;; sub = (sub - 1) & all) {  // every subset of `all`
    if (__builtin_popcount(sub) <= cap) best = std::max(best, brute_force(c, r + 1, sub, cap, memo));
    if (sub == 0) break;
  }
  memo[{r, s}] = best + prefix_hits(q, s);
  return best + prefix_hits(q, s);
}

std::string describe(const PrefixChains& c) {
  std::string s = "block size " + std::to_string(c.block_size) + ":";
  for (const ChainRequest& q : c.requests) {
    s += " [";
    for (std::size_t j = 0; j < q.blocks.size(); ++j) s += (j ? "," : "") + std::to_string(q.blocks[j]);
    s += "]/" + std::to_string(q.countable);
  }
  return s;
}

// Requests walk a random tree of `nodes` blocks (node 0's parent is the root; node i's parent is
// a random earlier node), from the root to a random node; the prompt's length in tokens picks
// whether the last block can hit.
PrefixChains random_chains(std::mt19937& rng, int nodes, int requests, int block_size) {
  std::vector<int> parent(static_cast<std::size_t>(nodes), -1);
  for (int i = 1; i < nodes; ++i) {
    parent[static_cast<std::size_t>(i)] = std::uniform_int_distribution<int>(-1, i - 1)(rng);
  }
  PrefixChains c;
  c.block_size = block_size;
  c.distinct_blocks = static_cast<std::uint32_t>(nodes);
  for (int r = 0; r < requests; ++r) {
    ChainRequest q;
    for (int v = std::uniform_int_distribution<int>(0, nodes - 1)(rng); v >= 0;
         v = parent[static_cast<std::size_t>(v)]) {
      q.blocks.insert(q.blocks.begin(), static_cast<std::uint32_t>(v));
    }
    const int extra = std::uniform_int_distribution<int>(0, block_size - 1)(rng);
    q.tokens = static_cast<std::int64_t>(q.blocks.size()) * block_size + extra;
    q.countable = static_cast<std::size_t>((q.tokens - 1) / block_size);
    c.requests.push_back(q);
  }
  return c;
}

TEST(PrefixOptimum, StoryAtTwoBlocks) {
  // Block size 1, capacity 2. Chains (ids): r0 [0,1,2] r1 [0,3] r2 [0,1,2] r3 [0,3], each with one
  // token more than its blocks, so every block can hit.
  PrefixChains c;
  c.block_size = 1;
  c.distinct_blocks = 4;
  for (const std::vector<std::uint32_t>& b :
       std::vector<std::vector<std::uint32_t>>{{0, 1, 2}, {0, 3}, {0, 1, 2}, {0, 3}}) {
    c.requests.push_back(ChainRequest{b, b.size(), static_cast<std::int64_t>(b.size()) + 1});
  }
  // r0 misses; of 0 (next use r1), 1 (r2) and 2 (r2, deeper) it drops 2. r1 hits 0, then drops
  // 3 (next use r3, after 1's r2). r2 hits 0 and 1, drops 2 again. r3 hits 0. Total 1 + 2 + 1 =
  // 4 hit tokens of 4 + 3 + 4 + 3 queried.
  const OptimumResult r = prefix_optimum(c, 2);
  EXPECT_EQ(r.hits, 4);
  EXPECT_EQ(r.queries, 14);
  EXPECT_EQ(r.lookups, 4);
  std::map<std::pair<std::size_t, std::uint32_t>, std::int64_t> memo;
  EXPECT_EQ(brute_force(c, 0, 0, 2, memo), 4);
}

TEST(PrefixOptimum, AParentThatALaterRequestRestoresIsNotWorthKeeping) {
  // The case on which plain furthest-next-use Belady loses (found by the exhaustive search).
  // Block size 2, capacity 2; "[ids]/c" = blocks, countable. r4 holds block 1 as its
  // uncountable last block (2 tokens), so it re-inserts 1 for free.
  //   r0 [3,4]/1  r1 [0]/1  r2 [1,5]/1  r3 [0,2]/2  r4 [1]/0  r5 [0]/0  r6 [1,5]/2
  // Best: after r2 keep {0, 5} (not 1, whose next countable use r6 ties 5's): r3 hits 0, r4
  // restores 1, r6 hits 1 and 5: 3 blocks, 6 tokens. Keeping {0, 1} gives 2 blocks.
  PrefixChains c;
  c.block_size = 2;
  c.distinct_blocks = 6;
  const std::vector<std::pair<std::vector<std::uint32_t>, std::size_t>> reqs = {
      {{3, 4}, 1}, {{0}, 1}, {{1, 5}, 1}, {{0, 2}, 2}, {{1}, 0}, {{0}, 0}, {{1, 5}, 2}};
  for (const auto& [blocks, countable] : reqs) {
    const auto n = static_cast<std::int64_t>(blocks.size()) * 2 + (countable == blocks.size() ? 1 : 0);
    c.requests.push_back(ChainRequest{blocks, countable, n});
  }
  std::map<std::pair<std::size_t, std::uint32_t>, std::int64_t> memo;
  EXPECT_EQ(brute_force(c, 0, 0, 2, memo), 3);
  EXPECT_EQ(prefix_optimum(c, 2).hits, 6);
}

TEST(PrefixOptimum, EqualsExhaustiveSearchOnRandomTrees) {
  std::mt19937 rng(20261123);
  int cases = 0;
  for (int t = 0; t < 1500; ++t) {
    const int nodes = std::uniform_int_distribution<int>(1, 9)(rng);
    const int requests = std::uniform_int_distribution<int>(1, 7)(rng);
    const int block_size = std::uniform_int_distribution<int>(1, 3)(rng);
    const PrefixChains c = random_chains(rng, nodes, requests, block_size);
    for (int cap = 0; cap <= nodes; ++cap) {
      std::map<std::pair<std::size_t, std::uint32_t>, std::int64_t> memo;
      const std::int64_t best = brute_force(c, 0, 0, cap, memo) * block_size;
      const OptimumResult r = prefix_optimum(c, cap);
      ASSERT_EQ(r.hits, best) << "case " << t << ", capacity " << cap << ": Belady " << r.hits
                              << " hit tokens, exhaustive search " << best << "; requests (blocks/countable) "
                              << describe(c);
      ++cases;
    }
  }
  EXPECT_GT(cases, 5000);
}

TEST(PrefixOptimum, GrowsWithCapacityUpToTheInfiniteCache) {
  std::mt19937 rng(7);
  const PrefixChains c = random_chains(rng, 40, 200, 2);
  std::int64_t last = -1;
  for (int cap = 0; cap <= 45; ++cap) {
    const std::int64_t hits = prefix_optimum(c, cap).hits;
    EXPECT_GE(hits, last) << "capacity " << cap;
    last = hits;
  }
  // With room for every block, every countable block seen before hits.
  std::int64_t infinite = 0;
  std::vector<char> seen(c.distinct_blocks, 0);
  for (const ChainRequest& q : c.requests) {
    std::size_t h = 0;
    while (h < q.countable && seen[q.blocks[h]]) ++h;
    infinite += static_cast<std::int64_t>(h) * c.block_size;
    for (std::uint32_t b : q.blocks) seen[b] = 1;
  }
  EXPECT_EQ(last, infinite);
}

TEST(PrefixOptimum, NoPolicyBeatsItOnABundledTrace) {
  const std::string trace = std::string(KVSIM_SOURCE_DIR) + "/traces/data/mooncake_conversation.kvtrace";
  replay::SweepOptions o;
  o.traces = {trace};
  o.capacities = {20000, 100000, 400000};
  o.policies = {"lru", "lru-unhashed-first", "lfu", "slru", "leaf-lru", "priority"};
  o.limit = 400;
  o.jobs = 2;
  auto points = replay::run_sweep(o);
  ASSERT_TRUE(points.ok()) << points.status().message();
  std::map<std::int64_t, double> bound;
  for (const replay::SweepPoint& p : *points) {
    if (p.config.policy == "optimum") bound[p.config.capacity_tokens] = p.hit_rate;
  }
  ASSERT_EQ(bound.size(), o.capacities.size());
  int compared = 0;
  for (const replay::SweepPoint& p : *points) {
    if (p.config.policy == "optimum") continue;
    EXPECT_LE(p.hit_rate, bound[p.config.capacity_tokens] + 1e-12)
        << p.config.policy << " at " << p.config.capacity_tokens << " tokens";
    EXPECT_GE(p.hit_rate, 0.0);
    ++compared;
  }
  EXPECT_EQ(compared, 18);
  EXPECT_GT(bound[20000], 0.0);
}

}  // namespace
}  // namespace kv::trace
