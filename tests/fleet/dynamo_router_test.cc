// DynamoRouter: the cost formula of Dynamo's router design doc on hand-made fleets, its
// tie-breaking, its softmax at temperature > 0, and the approximate (--no-kv-events) index.
#include "fleet/dynamo_router.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::request;
using testing::stored;

constexpr std::int64_t kSecond = 1'000'000'000;

// Three replicas that hold 2, 5 and 8 blocks of the chain 1..10, and active blocks 6, 0 and 4
// from two earlier requests the router placed itself:
//   w0: 96 tokens = 6 blocks 50..55, held by replica 0 only. Costs (weight 1):
//       r0 = 0 + (0 + 6) = 6, r1 = 6 + 6 = 12, r2 = 12  -> replica 0 (active 6).
//   w1: 64 tokens = 4 blocks 60..63, held by replica 2 only:
//       r0 = 4 + (6 + 4) = 14, r1 = 4 + 4 = 8, r2 = 0 + 4 = 4  -> replica 2 (active 4).
class DynamoThreeWorkers : public ::testing::Test {
 protected:
  void SetUp() { feed(router1_); }

  static void feed(DynamoRouter& router) {
    router.on_events(0, std::vector<KvEvent>{stored(chain(1, 2)), stored(chain(50, 6))});
    router.on_events(1, std::vector<KvEvent>{stored(chain(1, 5))});
    router.on_events(2, std::vector<KvEvent>{stored(chain(1, 8)), stored(chain(60, 4))});
    ASSERT_EQ(router.route(request("w0", 96, chain(50, 6))), 0);
    ASSERT_EQ(router.route(request("w1", 64, chain(60, 4))), 2);
  }

  DynamoRouter router1_{3, DynamoOptions{}, 1};
};

TEST_F(DynamoThreeWorkers, LowestCostWins) {
  // m: 160 tokens = 10 blocks 1..10; overlaps 2, 5, 8; prefill = (160 - 16 o) / 16:
  //   r0 = 8 + (6 + 10) = 24,  r1 = 5 + (0 + 10) = 15,  r2 = 2 + (4 + 10) = 16  -> replica 1.
  const RouteRequest m = request("m", 160, chain(1, 10));
  EXPECT_EQ(router1_.costs(m), (std::vector<double>{24, 15, 16}));
  EXPECT_EQ(router1_.route(m), 1);
  EXPECT_EQ(router1_.view().replica(1).active_blocks, 10);
}

TEST_F(DynamoThreeWorkers, OverlapWeightFavoursTheCache) {
  // Weight 2: r0 = 16 + 16 = 32, r1 = 10 + 10 = 20, r2 = 4 + 14 = 18  -> replica 2.
  DynamoRouter router(3, DynamoOptions{.overlap_score_weight = 2.0}, 1);
  feed(router);
  const RouteRequest m = request("m", 160, chain(1, 10));
  EXPECT_EQ(router.costs(m), (std::vector<double>{32, 20, 18}));
  EXPECT_EQ(router.route(m), 2);
}

TEST_F(DynamoThreeWorkers, FinishedRequestsLeaveTheDecodeLoad) {
  router1_.on_finished("w1", 2);  // r2 = 2 + (0 + 10) = 12 < r1 = 15
  const RouteRequest m = request("m", 160, chain(1, 10));
  EXPECT_EQ(router1_.costs(m), (std::vector<double>{24, 15, 12}));
  EXPECT_EQ(router1_.route(m), 2);
}

TEST_F(DynamoThreeWorkers, APartialLastBlockCountsInPrefillAndDecode) {
  // 170 tokens: 10 full blocks + 10 tokens; ceil = 11 blocks.
  //   r0 = (170 - 32) / 16 + (6 + 11) = 8.625 + 17 = 25.625
  //   r1 = (170 - 80) / 16 + 11 = 5.625 + 11 = 16.625
  //   r2 = (170 - 128) / 16 + 15 = 2.625 + 15 = 17.625
  EXPECT_EQ(router1_.costs(request("m", 170, chain(1, 10))), (std::vector<double>{25.625, 16.625, 17.625}));
}

TEST(DynamoRouterTest, TiesGoToTheSmallestTreeThenToTheSeededDraw) {
  DynamoRouter router(3, DynamoOptions{}, 5);
  // No overlap, no load: all costs 1 + 1 = 2. Trees: 3, 1, 1 distinct blocks: replicas 1 and 2
  // have the smallest tree; not all tied trees are equal, so the lowest index of those: 1.
  router.on_events(0, std::vector<KvEvent>{stored(chain(90, 3))});
  router.on_events(1, std::vector<KvEvent>{stored(chain(80, 1))});
  router.on_events(2, std::vector<KvEvent>{stored(chain(70, 1))});
  EXPECT_EQ(router.route(request("a", 16, chain(1, 1))), 1);
  // Replica 1 now has 1 active block: r0 = 1 + 1 = 2, r1 = 1 + (1 + 1) = 3, r2 = 2. Tied 0 and 2,
  // trees 3 and 1: replica 2.
  EXPECT_EQ(router.route(request("b", 16, chain(2, 1))), 2);
}

TEST(DynamoRouterTest, EqualTreesDrawUniformlyFromTheSeed) {
  // Two idle replicas with empty trees: every request ties; the draw is the router's
  // SeededRandom::index(2) for that seed, so a replay of the seed predicts every choice.
  DynamoRouter router(2, DynamoOptions{}, 11);
  SeededRandom expected(11);
  for (int i = 0; i < 20; ++i) {
    const std::string id = "r" + std::to_string(i);
    const int replica = router.route(request(id, 16, chain(1, 1)));
    EXPECT_EQ(replica, expected.index(2)) << id;
    router.on_finished(id, replica);
  }
}

TEST(DynamoRouterTest, TemperatureSamplesTheNormalizedSoftmax) {
  // Costs 1 and 2 (replica 0 holds the one block; both idle):
  //   r0 = 0 + 1 = 1, r1 = 1 + 1 = 2; min 1, max 2, T = 1:
  //   w0 = exp(0) = 1, w1 = exp(-(2 - 1) / (1 * 1)) = e^-1; p0 = 1 / (1 + e^-1) = 0.7311.
  const double p0 = 1.0 / (1.0 + std::exp(-1.0));
  DynamoRouter router(2, DynamoOptions{.temperature = 1.0}, 3);
  router.on_events(0, std::vector<KvEvent>{stored(chain(1, 1))});
  SeededRandom expected(3);
  int to_zero = 0;
  for (int i = 0; i < 4000; ++i) {
    const std::string id = "r" + std::to_string(i);
    const int replica = router.route(request(id, 16, chain(1, 1)));
    ASSERT_EQ(replica, expected.unit() <= p0 ? 0 : 1) << id;  // one uniform draw per request
    to_zero += replica == 0 ? 1 : 0;
    router.on_finished(id, replica);  // keep the costs at 1 and 2
  }
  EXPECT_NEAR(to_zero / 4000.0, p0, 0.03);
}

TEST(DynamoRouterTest, ApproximateModeIndexesRoutingWithATtlAndIgnoresEvents) {
  DynamoRouter router(2, DynamoOptions{.kv_events = false}, 9);
  const int first = router.route(request("a", 64, chain(1, 4), 0));  // a tie: the seeded draw
  const int other = 1 - first;
  router.on_finished("a", first);
  router.on_events(other, std::vector<KvEvent>{stored(chain(1, 4))});  // ignored without kv_events
  // At 100 s the blocks routed at 0 s are still indexed (ttl 120 s): first = 0 + 4 = 4,
  // other = 4 + 4 = 8.
  const RouteRequest b = request("b", 64, chain(1, 4), 100 * kSecond);
  EXPECT_EQ(router.route(b), first);  // and its blocks now expire at 220 s
  router.on_finished("b", first);
  // c at 219 s: the blocks are still held. c shares nothing: both cost 1 + 1 = 2, and the tie
  // goes to the smaller tree (first: 4 blocks, other: 0).
  EXPECT_EQ(router.route(request("c", 16, chain(40, 1), 219 * kSecond)), other);
  router.on_finished("c", other);
  EXPECT_EQ(router.costs(request("x", 64, chain(1, 4), 219 * kSecond))[static_cast<std::size_t>(first)], 4.0);
  // d at 220 s expires them (expiry <= now): ties 2 and 2, trees 0 and 1 (c's block) -> first.
  EXPECT_EQ(router.route(request("d", 16, chain(41, 1), 220 * kSecond)), first);
  router.on_finished("d", first);
  EXPECT_EQ(router.costs(request("x", 64, chain(1, 4), 220 * kSecond)), (std::vector<double>{8, 8}));
}

TEST(DynamoRouterTest, SeesNoCacheItWasNotToldAbout) {
  // Replica 1 has cached blocks 1..4, but its events have not reached the router: to the router
  // both replicas cost 4 + 4 = 8. Once fed the events, replica 1 costs 0 + 4 = 4 and wins.
  DynamoRouter stale(2, DynamoOptions{}, 4);
  EXPECT_EQ(stale.costs(request("a", 64, chain(1, 4))), (std::vector<double>{8, 8}));
  stale.on_events(1, std::vector<KvEvent>{stored(chain(1, 4))});
  EXPECT_EQ(stale.costs(request("a", 64, chain(1, 4))), (std::vector<double>{8, 4}));
  EXPECT_EQ(stale.route(request("a", 64, chain(1, 4))), 1);
}

}  // namespace
}  // namespace kv::fleet
