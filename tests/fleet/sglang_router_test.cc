// SglangRouter: SGLang's cache-aware rule on a hand-made story; each choice is worked out in a
// comment. Loads are the router's own open requests per replica.
#include "fleet/sglang_router.h"

#include <gtest/gtest.h>

#include <vector>

#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::request;

TEST(SglangRouterTest, CacheAffinityWhenBalancedShortestQueueWhenNot) {
  // Imbalanced when max - min > 2 and max > 1.5 * min.
  SglangRouter router(
      3, SglangOptions{
             .cache_threshold = 0.5, .balance_abs_threshold = 2, .balance_rel_threshold = 1.5, .max_tree_size = 1000});
  // a: empty trees, match rate 0 -> smallest tree, all 0 -> replica 0 (tree 0: blocks 1..4).
  EXPECT_EQ(router.route(request("a", 64, chain(1, 4))), 0);
  // b: 1..8 matches 4 of 8 on replica 0: rate 0.5 is not > 0.5 -> smallest tree: replica 1.
  EXPECT_EQ(router.route(request("b", 128, chain(1, 8))), 1);
  // c: 1..6 matches 4 on replica 0, 6 on replica 1: rate 6/6 = 1 > 0.5 -> replica 1.
  EXPECT_EQ(router.route(request("c", 96, chain(1, 6))), 1);
  // Loads 1, 2, 0: 2 - 0 = 2 is not > 2: balanced. d matches nothing -> smallest tree: replica 2.
  EXPECT_EQ(router.route(request("d", 32, chain(20, 2))), 2);
  // Loads 1, 2, 1. e and f match all 8 blocks on replica 1 (rate 1) -> replica 1 twice.
  EXPECT_EQ(router.route(request("e", 128, chain(1, 8))), 1);  // loads 1, 3, 1: 2 is not > 2
  EXPECT_FALSE(router.imbalanced());
  EXPECT_EQ(router.route(request("f", 128, chain(1, 8))), 1);  // loads 1, 4, 1
  // 4 - 1 = 3 > 2 and 4 > 1.5: imbalanced -> the least loaded, replicas 0 and 2 tie -> 0.
  EXPECT_TRUE(router.imbalanced());
  EXPECT_EQ(router.route(request("g", 128, chain(1, 8))), 0);  // loads 2, 4, 1
  EXPECT_EQ(router.route(request("h", 128, chain(1, 8))), 2);  // 4 - 1 = 3: still imbalanced
  // b, c, e finish: loads 2, 1, 2, balanced. Every tree holds 1..8 now (g and h were inserted
  // too): the longest match ties at 8 -> the lowest index, replica 0.
  for (const char* id : {"b", "c", "e"}) router.on_finished(id, 1);
  EXPECT_FALSE(router.imbalanced());
  EXPECT_EQ(router.route(request("i", 128, chain(1, 8))), 0);
}

TEST(SglangRouterTest, BothThresholdsMustBeExceeded) {
  // Imbalanced when max - min > 1 and max > 3 * min.
  SglangRouter router(
      2, SglangOptions{
             .cache_threshold = 0.5, .balance_abs_threshold = 1, .balance_rel_threshold = 3.0, .max_tree_size = 1000});
  EXPECT_EQ(router.route(request("q0", 64, chain(30, 4))), 0);  // empty trees: replica 0
  // Loads 1, 0: 1 is not > 1. p0 matches nothing -> the smallest tree, replica 1.
  EXPECT_EQ(router.route(request("p0", 64, chain(1, 4))), 1);
  EXPECT_EQ(router.route(request("p1", 64, chain(1, 4))), 1);  // loads 1, 1; rate 1 -> replica 1
  EXPECT_EQ(router.route(request("p2", 64, chain(1, 4))), 1);  // loads 1, 2; 2 - 1 = 1: balanced
  // Loads 1, 3: 3 - 1 = 2 > 1, but 3 is not > 3 * 1: still balanced, cache affinity holds.
  EXPECT_FALSE(router.imbalanced());
  EXPECT_EQ(router.route(request("p3", 64, chain(1, 4))), 1);
  // Loads 1, 4: 3 > 1 and 4 > 3: imbalanced -> the least loaded, replica 0.
  EXPECT_TRUE(router.imbalanced());
  EXPECT_EQ(router.route(request("p4", 64, chain(1, 4))), 0);
}

TEST(SglangRouterTest, AFullTreeDropsItsLeastRecentLeafFirst) {
  // max_tree_size 3. Routing 1..4 touches 4, 3, 2, 1 (leaf first); touching 1 makes 4 blocks,
  // and the least recent, the leaf 4, leaves: the tree keeps the path 1, 2, 3.
  SglangRouter router(
      2, SglangOptions{
             .cache_threshold = 0.5, .balance_abs_threshold = 32, .balance_rel_threshold = 1.0001, .max_tree_size = 3});
  EXPECT_EQ(router.route(request("a", 64, chain(1, 4))), 0);  // empty trees: smallest, lowest index
  EXPECT_EQ(router.tree_size(0), 3);
  // b: 1..4 matches 3 of 4 on replica 0: 0.75 > 0.5 -> replica 0 (and again only 1..3 stay).
  EXPECT_EQ(router.route(request("b", 64, chain(1, 4))), 0);
  EXPECT_EQ(router.tree_size(0), 3);
  // c: block 4 alone matches nothing (it was evicted) -> the smallest tree, replica 1.
  EXPECT_EQ(router.route(request("c", 16, chain(4, 1))), 1);
}

}  // namespace
}  // namespace kv::fleet
