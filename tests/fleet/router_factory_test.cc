// make_router: every name builds, bad input is a Status naming the router and the parameter,
// parameters reach the router, and every router is deterministic: the same seed and the same
// calls give the same choices.
#include "fleet/router_factory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/dynamo_router.h"
#include "fleet/sglang_router.h"
#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::removed;
using testing::request;
using testing::stored;

std::unique_ptr<Router> make(std::string_view name, const RouterParams& params = {}, int n = 3,
                             std::uint64_t seed = 1) {
  StatusOr<std::unique_ptr<Router>> router = make_router(name, params, n, seed);
  EXPECT_TRUE(router.ok()) << router.status().message();
  return router.ok() ? std::move(router).value() : nullptr;
}

std::string error(std::string_view name, const RouterParams& params, int n = 3) {
  StatusOr<std::unique_ptr<Router>> router = make_router(name, params, n, 1);
  EXPECT_FALSE(router.ok()) << name;
  return router.ok() ? "" : router.status().message();
}

TEST(RouterFactoryTest, EveryNameBuildsWithItsDefaults) {
  for (std::string_view name : router_names()) {
    std::unique_ptr<Router> router = make(name);
    ASSERT_NE(router, nullptr) << name;
    EXPECT_EQ(router->name(), name);
    EXPECT_EQ(router->num_replicas(), 3);
  }
}

TEST(RouterFactoryTest, BadInputNamesTheRouterAndTheParameter) {
  EXPECT_EQ(error("consistent-hash", {}),
            "unknown router 'consistent-hash' (known: round-robin, random, least-requests, least-kv, session, "
            "dynamo, llm-d-precise, llm-d-approx, sglang)");
  EXPECT_EQ(error("dynamo", {}, 0), "router dynamo: num_replicas 0 is not > 0");
  EXPECT_EQ(error("dynamo", {{"overlap_weight", "1"}}), "router dynamo: parameter overlap_weight: unknown parameter");
  EXPECT_EQ(error("dynamo", {{"overlap_score_weight", "-1"}}),
            "router dynamo: parameter overlap_score_weight: '-1' is not a number >= 0");
  EXPECT_EQ(error("dynamo", {{"router_temperature", "hot"}}),
            "router dynamo: parameter router_temperature: 'hot' is not a number >= 0");
  EXPECT_EQ(error("dynamo", {{"kv_events", "no"}}), "router dynamo: parameter kv_events: 'no' is not true or false");
  EXPECT_EQ(error("dynamo", {{"ttl_s", "0"}}), "router dynamo: parameter ttl_s: must be > 0");
  EXPECT_EQ(error("llm-d-precise", {{"kv_weight", "-0.5"}}),
            "router llm-d-precise: parameter kv_weight: '-0.5' is not a number >= 0");
  EXPECT_EQ(error("llm-d-precise", {{"lru_capacity", "10"}}),
            "router llm-d-precise: parameter lru_capacity: unknown parameter");  // approximate only
  EXPECT_EQ(error("llm-d-approx", {{"lru_capacity", "0"}}),
            "router llm-d-approx: parameter lru_capacity: '0' is not an integer >= 1");
  EXPECT_EQ(error("sglang", {{"cache_threshold", "1.5"}}),
            "router sglang: parameter cache_threshold: '1.5' is not a number in [0, 1]");
  EXPECT_EQ(error("sglang", {{"balance_abs_threshold", "-3"}}),
            "router sglang: parameter balance_abs_threshold: '-3' is not an integer >= 0");
  EXPECT_EQ(error("round-robin", {{"seed", "1"}}), "router round-robin: parameter seed: unknown parameter");
}

TEST(RouterFactoryTest, ParametersReachTheRouter) {
  // The weight-2 fleet of DynamoThreeWorkers, shortened: one replica holds 2 of 4 blocks.
  std::unique_ptr<Router> router = make("dynamo", {{"overlap_score_weight", "2"}}, 2);
  router->on_events(1, std::vector<KvEvent>{stored(chain(1, 2))});
  // r0 = 2 * 4 + 4 = 12, r1 = 2 * 2 + 4 = 8.
  EXPECT_EQ(dynamic_cast<DynamoRouter&>(*router).costs(request("m", 64, chain(1, 4))), (std::vector<double>{12, 8}));
  std::unique_ptr<Router> sglang = make("sglang", {{"balance_abs_threshold", "0"}, {"balance_rel_threshold", "1"}}, 2);
  sglang->route(request("a", 16, chain(1, 1)));
  EXPECT_TRUE(dynamic_cast<SglangRouter&>(*sglang).imbalanced());  // loads 1, 0: 1 > 0 and 1 > 1 * 0
}

// A fixed story of events, load reports, arrivals and completions over 4 replicas, drawn from a
// seeded generator; returns the choices.
std::vector<int> play(Router& router, std::uint64_t story_seed) {
  SeededRandom story(story_seed);
  std::vector<int> choices;
  std::vector<std::pair<std::string, int>> open;
  for (int step = 0; step < 200; ++step) {
    const int replica = story.index(4);
    switch (story.index(4)) {
      case 0:
        router.on_events(replica, std::vector<KvEvent>{stored(chain(story.index(8) * 10, 1 + story.index(6)))});
        break;
      case 1:
        router.on_events(replica, std::vector<KvEvent>{removed(chain(story.index(8) * 10, 1 + story.index(3)))});
        break;
      case 2:
        router.on_load(replica, {story.index(10), story.index(10), story.index(5) / 4.0});
        break;
      default:
        break;
    }
    const int blocks = 1 + story.index(6);
    const std::string id = "r" + std::to_string(step);
    const RouteRequest r = request(id, blocks * 16 - story.index(8), chain(story.index(8) * 10, blocks),
                                   step * 1'000'000'000LL, "s" + std::to_string(story.index(60)));
    choices.push_back(router.route(r));
    open.emplace_back(id, choices.back());
    if (story.index(3) == 0) {
      const std::size_t k = static_cast<std::size_t>(story.index(static_cast<int>(open.size())));
      router.on_finished(open[k].first, open[k].second);
      open.erase(open.begin() + static_cast<std::ptrdiff_t>(k));
    }
    router.view().check_invariants();
  }
  return choices;
}

TEST(RouterFactoryTest, SameSeedSameChoices) {
  const std::vector<std::pair<std::string_view, RouterParams>> configs = {
      {"round-robin", {}},
      {"random", {}},
      {"least-requests", {}},
      {"least-kv", {}},
      {"session", {}},
      {"dynamo", {}},
      {"dynamo", {{"router_temperature", "0.5"}}},
      {"dynamo", {{"kv_events", "false"}, {"ttl_s", "30"}}},
      {"llm-d-precise", {}},
      {"llm-d-approx", {}},
      {"sglang", {{"balance_abs_threshold", "4"}}}};
  for (const auto& [name, params] : configs) {
    std::unique_ptr<Router> a = make(name, params, 4, 42);
    std::unique_ptr<Router> b = make(name, params, 4, 42);
    const std::vector<int> got = play(*a, 7);
    EXPECT_EQ(got, play(*b, 7)) << name;
    // Every router spreads this story over more than one replica.
    EXPECT_NE(std::count(got.begin(), got.end(), got.front()), static_cast<long>(got.size())) << name;
  }
}

}  // namespace
}  // namespace kv::fleet
