// KvIndexer, LruBlockSet, TtlBlockIndex and FleetView: the indexes a router builds from what it
// is fed, with exact counts.
#include "fleet/kv_indexer.h"

#include <gtest/gtest.h>

#include "fleet/fleet_view.h"
#include "fleet/lru_block_set.h"
#include "fleet/ttl_block_index.h"
#include "fleet_test_util.h"

namespace kv::fleet {
namespace {

using testing::chain;
using testing::h;
using testing::removed;
using testing::stored;

TEST(KvIndexerTest, PrefixStopsAtTheFirstMiss) {
  KvIndexer index(2);
  // Replica 0 holds blocks 1, 2 and 4 of the chain 1..5, not 3.
  index.apply(0, stored({h(1), h(2)}));
  index.apply(0, stored({h(4)}));
  EXPECT_EQ(index.matched_blocks(0, chain(1, 5)), 2);  // 1, 2, then 3 misses: 4 does not count
  EXPECT_EQ(index.matched_blocks(0, chain(2, 3)), 1);  // starts at 2
  EXPECT_EQ(index.matched_blocks(0, chain(3, 2)), 0);  // the first block misses
  EXPECT_EQ(index.matched_blocks(1, chain(1, 5)), 0);  // replica 1 was fed nothing
  EXPECT_EQ(index.matched_blocks(0, {}), 0);
  index.check_invariants();
}

TEST(KvIndexerTest, AHashStoredTwiceStaysUntilRemovedTwice) {
  KvIndexer index(1);
  index.apply(0, stored({h(1), h(2)}));
  index.apply(0, stored({h(1)}));  // block 1 cached again (e.g. for a second KV-cache group)
  EXPECT_EQ(index.total_blocks(0), 3);
  EXPECT_EQ(index.distinct_blocks(0), 2);
  index.apply(0, removed({h(1)}));
  EXPECT_TRUE(index.holds(0, h(1)));  // one count left
  EXPECT_EQ(index.matched_blocks(0, chain(1, 2)), 2);
  index.apply(0, removed({h(1)}));
  EXPECT_FALSE(index.holds(0, h(1)));
  EXPECT_EQ(index.matched_blocks(0, chain(1, 2)), 0);  // 2 is held but 1 is not
  index.apply(0, removed({h(1), h(9)}));               // never stored: dropped, no negative count
  EXPECT_EQ(index.total_blocks(0), 1);
  index.check_invariants();
}

TEST(KvIndexerTest, AllBlocksClearedEmptiesOnlyThatReplica) {
  KvIndexer index(2);
  index.apply(0, stored(chain(1, 3)));
  index.apply(1, stored(chain(1, 3)));
  index.apply(0, AllBlocksCleared{});
  EXPECT_EQ(index.total_blocks(0), 0);
  EXPECT_EQ(index.matched_blocks(0, chain(1, 3)), 0);
  EXPECT_EQ(index.matched_blocks(1, chain(1, 3)), 3);
  index.apply(0, stored({h(1)}));  // stores after the clear count again
  EXPECT_EQ(index.matched_blocks(0, chain(1, 3)), 1);
  index.check_invariants();
}

TEST(LruBlockSetTest, EvictsTheLeastRecentlyTouched) {
  LruBlockSet set(3);
  for (int i : {1, 2, 3}) set.touch(h(i));
  set.touch(h(1));  // order, oldest first: 2, 3, 1
  set.touch(h(4));  // over capacity: 2 leaves
  EXPECT_FALSE(set.contains(h(2)));
  EXPECT_TRUE(set.contains(h(1)));
  EXPECT_EQ(set.size(), 3);
  EXPECT_EQ(set.matched_blocks(chain(3, 2)), 2);  // 3, 4
  EXPECT_EQ(set.matched_blocks(chain(1, 3)), 1);  // 1, then 2 misses
  set.check_invariants();
}

TEST(TtlBlockIndexTest, EntriesExpireAtTheirDeadlineAndReinsertionExtendsIt) {
  TtlBlockIndex index;
  index.insert(chain(1, 2), 100);        // 1, 2 expire at 100
  index.insert(std::vector{h(1)}, 150);  // 1 now expires at 150
  index.expire(99);
  EXPECT_EQ(index.matched_blocks(chain(1, 2)), 2);
  index.expire(100);  // 2 is gone (expiry <= now); 1's stale entry at 100 is skipped
  EXPECT_EQ(index.size(), 1);
  EXPECT_EQ(index.matched_blocks(chain(1, 2)), 1);
  index.check_invariants();
  index.expire(150);
  EXPECT_EQ(index.size(), 0);
}

TEST(FleetViewTest, TracksOpenRequestsAndTheirBlocks) {
  FleetView view(2);
  view.add_routed("a", 0, 3);
  view.add_routed("b", 0, 2);
  view.add_routed("c", 1, 5);
  EXPECT_EQ(view.replica(0).active_requests, 2);
  EXPECT_EQ(view.replica(0).active_blocks, 5);
  EXPECT_FALSE(view.remove_finished("a", 1));  // a is open on 0, not on 1
  EXPECT_TRUE(view.remove_finished("a", 0));
  EXPECT_FALSE(view.remove_finished("a", 0));  // already closed
  EXPECT_EQ(view.replica(0).active_requests, 1);
  EXPECT_EQ(view.replica(0).active_blocks, 2);
  view.apply_load(1, LoadReport{4, 2, 0.5});
  EXPECT_EQ(view.replica(1).load.waiting, 2);
  view.check_invariants();
}

}  // namespace
}  // namespace kv::fleet
