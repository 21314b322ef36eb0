// LlmdRouter: llm-d's weighted scorers and max-score picker on hand-made fleets; every total is
// worked out in a comment (the loads use binary fractions so the sums are exact).
#include "fleet/llmd_router.h"

#include <gtest/gtest.h>

#include <vector>

#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::request;
using testing::stored;

// Replicas hold 2, 6 and 0 blocks of the chain 1..8 and report
//   kv_usage 0.25, 0.75, 0.5  -> kv scores 0.75, 0.25, 0.5
//   waiting  0, 4, 2          -> queue scores (4 - w) / 4 = 1, 0, 0.5
// Precise prefix over the replicas with a match (2 and 6): (m - 2) / (6 - 2) = 0, 1; replica 2: 0.
void feed(LlmdRouter& router) {
  router.on_events(0, std::vector<KvEvent>{stored(chain(1, 2))});
  router.on_events(1, std::vector<KvEvent>{stored(chain(1, 6))});
  router.on_load(0, {1, 0, 0.25});
  router.on_load(1, {1, 4, 0.75});
  router.on_load(2, {1, 2, 0.5});
}

TEST(LlmdPreciseTest, WeightedScoresPickTheMax) {
  // Weights 2:1:1 (the precise guide): r0 = 0 + 0.75 + 1 = 1.75, r1 = 2 + 0.25 + 0 = 2.25,
  // r2 = 0 + 0.5 + 0.5 = 1.0  -> replica 1.
  LlmdRouter router(3, LlmdOptions::precise_defaults(), 1);
  feed(router);
  const RouteRequest m = request("m", 128, chain(1, 8));
  EXPECT_EQ(router.scores(m), (std::vector<double>{1.75, 2.25, 1.0}));
  EXPECT_EQ(router.route(m), 1);
}

TEST(LlmdPreciseTest, TiesAreASeededDrawAmongTheTied) {
  // Weights 3:2:2: r0 = 0 + 1.5 + 2 = 3.5, r1 = 3 + 0.5 + 0 = 3.5, r2 = 0 + 1 + 1 = 2.
  // Replicas 0 and 1 tie: the picker draws index(2) among [0, 1].
  LlmdOptions options = LlmdOptions::precise_defaults();
  options.prefix_weight = 3;
  options.kv_weight = 2;
  options.queue_weight = 2;
  for (std::uint64_t seed : {1u, 2u, 3u, 4u}) {
    LlmdRouter router(3, options, seed);
    feed(router);
    const RouteRequest m = request("m", 128, chain(1, 8));
    EXPECT_EQ(router.scores(m), (std::vector<double>{3.5, 3.5, 2.0}));
    SeededRandom expected(seed);
    EXPECT_EQ(router.route(m), expected.index(2)) << "seed " << seed;
  }
}

TEST(LlmdPreciseTest, ALoneMatchScoresOneAndStaleEventsAreInvisible) {
  LlmdRouter router(2, LlmdOptions::precise_defaults(), 1);
  router.on_load(0, {0, 0, 0.5});
  router.on_load(1, {0, 3, 0.5});
  // Replica 1 has cached blocks 1..4, but the router has not been fed the events: prefix 0 for
  // both; kv 0.5 each; queue 1, 0. Totals 0 + 0.5 + 1 = 1.5 and 0 + 0.5 + 0 = 0.5 -> replica 0.
  const RouteRequest m = request("m", 64, chain(1, 4));
  EXPECT_EQ(router.scores(m), (std::vector<double>{1.5, 0.5}));
  // Fed: replica 1 is the only replica with a match, min == max, so its prefix score is 1:
  // totals 1.5 and 2 + 0.5 + 0 = 2.5 -> replica 1.
  router.on_events(1, std::vector<KvEvent>{stored(chain(1, 4))});
  EXPECT_EQ(router.scores(m), (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(router.route(m), 1);
}

TEST(LlmdApproxTest, PrefixScoreIsTheMatchedFractionOfWhatItRouted) {
  // No load reports: kv scores 1, queue scores 1 everywhere. Weights 3:2:2.
  LlmdRouter router(3, LlmdOptions::approx_defaults(), 7);
  // a: nothing routed yet, all totals 0 + 2 + 2 = 4: the seeded draw among the three.
  SeededRandom expected(7);
  const int home = router.route(request("a", 64, chain(1, 4)));
  EXPECT_EQ(home, expected.index(3));
  // b shares a's 4 blocks out of 8: home = 3 * 4/8 + 4 = 5.5, the others 4 -> home.
  const RouteRequest b = request("b", 128, chain(1, 8));
  std::vector<double> want(3, 4.0);
  want[static_cast<std::size_t>(home)] = 5.5;
  EXPECT_EQ(router.scores(b), want);
  EXPECT_EQ(router.route(b), home);
  // Events do not feed the approximate index.
  router.on_events((home + 1) % 3, std::vector<KvEvent>{stored(chain(1, 8))});
  want[static_cast<std::size_t>(home)] = 7.0;  // 3 * 8/8 + 4: b's 8 blocks are indexed on home
  EXPECT_EQ(router.scores(b), want);
}

TEST(LlmdApproxTest, TheLruDropsTheOldestHashesFirstTheRootIncluded) {
  // lru_capacity 4: routing 8 blocks touches 1..8 in order and keeps 5..8, so the prefix of 1..8
  // misses at once (the first miss ends the match) while 5..8 alone still matches 4/4.
  LlmdOptions options = LlmdOptions::approx_defaults();
  options.lru_capacity = 4;
  LlmdRouter router(1, options, 1);
  router.route(request("a", 128, chain(1, 8)));
  EXPECT_EQ(router.scores(request("b", 128, chain(1, 8))), (std::vector<double>{0 + 4.0}));
  EXPECT_EQ(router.scores(request("c", 64, chain(5, 4))), (std::vector<double>{3.0 + 4.0}));
}

TEST(LlmdApproxTest, OnlyTheFirstMaxPrefixBlocksCount) {
  // max_prefix_blocks 2: b's first 2 blocks are compared; a routed them: 3 * 2/2 + 4 = 7.
  LlmdOptions options = LlmdOptions::approx_defaults();
  options.max_prefix_blocks = 2;
  LlmdRouter router(1, options, 1);
  router.route(request("a", 32, chain(1, 2)));
  EXPECT_EQ(router.scores(request("b", 128, chain(1, 8))), (std::vector<double>{7.0}));
}

}  // namespace
}  // namespace kv::fleet
