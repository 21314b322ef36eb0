// The load-only routers on hand-made fleets: each expected choice is worked out in a comment.
#include "fleet/basic_routers.h"

#include <gtest/gtest.h>

#include <vector>

#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::request;

TEST(RoundRobinRouterTest, CyclesThroughTheReplicas) {
  RoundRobinRouter router(3);
  std::vector<int> got;
  for (int i = 0; i < 7; ++i) got.push_back(router.route(request("r" + std::to_string(i), 16, chain(1, 1))));
  EXPECT_EQ(got, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(router.view().replica(0).active_requests, 3);
  router.view().check_invariants();
}

TEST(RandomRouterTest, SameSeedSameChoicesAndEveryReplicaDrawn) {
  RandomRouter a(4, 7), b(4, 7), c(4, 8);
  std::vector<int> got_a, got_b, got_c;
  for (int i = 0; i < 64; ++i) {
    const RouteRequest r = request("r" + std::to_string(i), 16, {});
    got_a.push_back(a.route(r));
    got_b.push_back(b.route(r));
    got_c.push_back(c.route(r));
  }
  EXPECT_EQ(got_a, got_b);
  EXPECT_NE(got_a, got_c);  // another seed, another sequence (64 draws of 4: equal by chance ~1e-38)
  for (int r = 0; r < 4; ++r) EXPECT_GT(a.view().replica(r).active_requests, 0);
}

TEST(LeastRequestsRouterTest, FewestRunningPlusWaitingTiesToLowestIndex) {
  LeastRequestsRouter router(3);
  // running + waiting: replica 0: 3 + 4 = 7, replica 1: 5 + 0 = 5, replica 2: 1 + 4 = 5.
  router.on_load(0, {3, 4, 0.1});
  router.on_load(1, {5, 0, 0.9});
  router.on_load(2, {1, 4, 0.2});
  EXPECT_EQ(router.route(request("a", 16, {})), 1);  // 5 ties 5: the lower index
  // The router's own routing does not change the reports: a second request goes to 1 again.
  EXPECT_EQ(router.route(request("b", 16, {})), 1);
  router.on_load(1, {6, 1, 0.9});  // 7 now: replica 2 (5) is the least
  EXPECT_EQ(router.route(request("c", 16, {})), 2);
}

TEST(LeastKvRouterTest, LowestReportedUsageTiesToLowestIndex) {
  LeastKvRouter router(3);
  router.on_load(0, {0, 0, 0.50});
  router.on_load(1, {9, 9, 0.25});
  router.on_load(2, {0, 0, 0.25});
  EXPECT_EQ(router.route(request("a", 16, {})), 1);  // 0.25 ties 0.25: the lower index
  router.on_load(1, {9, 9, 0.75});
  EXPECT_EQ(router.route(request("b", 16, {})), 2);
}

TEST(SessionRouterTest, ASessionStaysWhereItsFirstRequestWent) {
  SessionRouter router(2);
  router.on_load(0, {4, 0, 0.0});
  router.on_load(1, {1, 0, 0.0});
  EXPECT_EQ(router.route(request("a1", 16, {}, 0, "alice")), 1);  // new session: least-requests (1 < 4)
  router.on_load(1, {9, 0, 0.0});
  EXPECT_EQ(router.route(request("a2", 16, {}, 0, "alice")), 1);  // affinity, though 1 is busier now
  EXPECT_EQ(router.route(request("b1", 16, {}, 0, "bob")), 0);    // new session: least-requests (4 < 9)
  EXPECT_EQ(router.route(request("x", 16, {}, 0, "")), 0);        // no session: least-requests
  router.on_load(0, {20, 0, 0.0});
  EXPECT_EQ(router.route(request("y", 16, {}, 0, "")), 1);  // no session keeps no affinity
  router.on_finished("a1", 1);
  EXPECT_EQ(router.route(request("a3", 16, {}, 0, "alice")), 1);  // finished requests keep the session
}

}  // namespace
}  // namespace kv::fleet
