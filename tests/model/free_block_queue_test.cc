// FreeBlockQueue: every operation checked against the expected order, membership and check().
#include "model/free_block_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kv {
namespace {

class FreeBlockQueueTest : public ::testing::Test {
 protected:
  // Six blocks, ids 0..5, all queued in id order.
  FreeBlockQueueTest() : blocks_(make_blocks(6)), queue_(blocks_) {}

  static std::vector<Block> make_blocks(int n) {
    std::vector<Block> blocks(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) blocks[static_cast<std::size_t>(i)].id = i;
    return blocks;
  }

  Block* b(int id) { return &blocks_[static_cast<std::size_t>(id)]; }

  // Checks the order, the size, every block's membership, the front and the queue's own check.
  void expect_order(const std::vector<int>& ids) {
    EXPECT_EQ(queue_.ids(), std::vector<BlockId>(ids.begin(), ids.end()));
    EXPECT_EQ(queue_.size(), ids.size());
    EXPECT_EQ(queue_.empty(), ids.empty());
    for (Block& blk : blocks_) {
      const bool listed = std::find(ids.begin(), ids.end(), blk.id) != ids.end();
      EXPECT_EQ(queue_.contains(&blk), listed) << "block " << blk.id;
    }
    EXPECT_EQ(queue_.front(), ids.empty() ? nullptr : b(ids.front()));
    std::string why;
    EXPECT_TRUE(queue_.check(&why)) << why;
  }

  std::vector<Block> blocks_;
  FreeBlockQueue queue_;
};

TEST_F(FreeBlockQueueTest, StartsInIdOrder) {
  for (Block& blk : blocks_) EXPECT_NE(blk.free_slot, kNoFreeSlot) << "block " << blk.id;
  expect_order({0, 1, 2, 3, 4, 5});
}

TEST_F(FreeBlockQueueTest, EmptyQueue) {
  std::vector<Block> none;
  FreeBlockQueue empty(none);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.front(), nullptr);
  EXPECT_EQ(empty.popleft(), nullptr);
  EXPECT_TRUE(empty.ids().empty());
  std::vector<Block*> out;
  empty.popleft_n(0, out);
  EXPECT_TRUE(out.empty());
  std::string why;
  EXPECT_TRUE(empty.check(&why)) << why;
}

TEST_F(FreeBlockQueueTest, PopleftTakesTheHead) {
  EXPECT_EQ(queue_.popleft(), b(0));
  expect_order({1, 2, 3, 4, 5});
  EXPECT_EQ(queue_.popleft(), b(1));
  expect_order({2, 3, 4, 5});
}

TEST_F(FreeBlockQueueTest, PopleftNTakesTheFirstNInOrder) {
  std::vector<Block*> out{b(5)};  // appended to, never cleared
  queue_.popleft_n(3, out);
  EXPECT_EQ(out, (std::vector<Block*>{b(5), b(0), b(1), b(2)}));
  expect_order({3, 4, 5});

  out.clear();
  queue_.popleft_n(0, out);
  EXPECT_TRUE(out.empty());
  expect_order({3, 4, 5});

  queue_.popleft_n(3, out);
  EXPECT_EQ(out, (std::vector<Block*>{b(3), b(4), b(5)}));
  expect_order({});
}

TEST_F(FreeBlockQueueTest, RemoveFromMiddleHeadAndTail) {
  queue_.remove(b(3));
  expect_order({0, 1, 2, 4, 5});
  queue_.remove(b(0));
  expect_order({1, 2, 4, 5});
  queue_.remove(b(5));
  expect_order({1, 2, 4});
  queue_.remove(b(2));
  queue_.remove(b(1));
  queue_.remove(b(4));
  expect_order({});
}

TEST_F(FreeBlockQueueTest, AppendGoesToTheTail) {
  Block* first = queue_.popleft();
  queue_.append(first);
  expect_order({1, 2, 3, 4, 5, 0});
}

TEST_F(FreeBlockQueueTest, AppendNKeepsTheGivenOrder) {
  std::vector<Block*> taken;
  queue_.popleft_n(4, taken);  // 0 1 2 3
  expect_order({4, 5});
  queue_.append(b(2));
  expect_order({4, 5, 2});
  const std::vector<Block*> more{b(3), b(0), b(1)};
  queue_.append_n(more);
  expect_order({4, 5, 2, 3, 0, 1});
}

TEST_F(FreeBlockQueueTest, PrependNPutsTheFirstGivenBlockAtTheHead) {
  std::vector<Block*> taken;
  queue_.popleft_n(3, taken);  // 0 1 2
  const std::vector<Block*> front{b(2), b(0), b(1)};
  queue_.prepend_n(front);
  expect_order({2, 0, 1, 3, 4, 5});
  // Into an empty queue, too.
  taken.clear();
  queue_.popleft_n(6, taken);
  expect_order({});
  const std::vector<Block*> again{b(4), b(5)};
  queue_.prepend_n(again);
  expect_order({4, 5});
}

TEST_F(FreeBlockQueueTest, RemovedBlockCanBeQueuedAgainAnywhere) {
  queue_.remove(b(2));
  queue_.append(b(2));
  expect_order({0, 1, 3, 4, 5, 2});
  queue_.remove(b(4));
  const std::vector<Block*> one{b(4)};
  queue_.prepend_n(one);
  expect_order({4, 0, 1, 3, 5, 2});
}

TEST_F(FreeBlockQueueTest, RemovalsFromTheMiddleLeaveTombstonesThatPopsSkip) {
  queue_.remove(b(1));
  queue_.remove(b(3));
  expect_order({0, 2, 4, 5});
  std::vector<Block*> out;
  queue_.popleft_n(3, out);
  EXPECT_EQ(out, (std::vector<Block*>{b(0), b(2), b(4)}));
  expect_order({5});
}

// Every kind of operation, many times over a ring that wraps, grows and compacts, against a
// plain vector.
TEST(FreeBlockQueueRing, MatchesAVectorThroughWrapsGrowthAndCompaction) {
  std::vector<Block> blocks(200);
  for (int i = 0; i < 200; ++i) blocks[static_cast<std::size_t>(i)].id = i;
  // Over all 200 blocks (the queue takes only blocks of its span), 150 of them removed at once.
  FreeBlockQueue queue(blocks);
  for (int i = 50; i < 200; ++i) queue.remove(&blocks[static_cast<std::size_t>(i)]);
  std::vector<Block*> model;
  for (int i = 0; i < 50; ++i) model.push_back(&blocks[static_cast<std::size_t>(i)]);
  std::uint32_t rng = 12345;
  auto next = [&rng](std::size_t bound) {
    rng = rng * 1664525u + 1013904223u;
    return static_cast<std::size_t>(rng >> 8) % bound;
  };
  for (int step = 0; step < 4000; ++step) {
    std::vector<Block*> outside;
    for (Block& blk : blocks) {
      if (!queue.contains(&blk)) outside.push_back(&blk);
    }
    const std::size_t op = next(4);
    if (op == 0 && !model.empty()) {  // remove a random queued block
      const std::size_t i = next(model.size());
      queue.remove(model[i]);
      model.erase(model.begin() + static_cast<std::ptrdiff_t>(i));
    } else if (op == 1 && !model.empty()) {  // pop a few
      const std::size_t n = next(std::min<std::size_t>(model.size(), 8) + 1);
      std::vector<Block*> out;
      queue.popleft_n(n, out);
      ASSERT_EQ(out, std::vector<Block*>(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(n)));
      model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(n));
    } else if (!outside.empty()) {  // append or prepend a few
      const std::size_t n = next(std::min<std::size_t>(outside.size(), 8)) + 1;
      const std::span<Block* const> some(outside.data(), n);
      if (op == 2) {
        queue.append_n(some);
        model.insert(model.end(), some.begin(), some.end());
      } else {
        queue.prepend_n(some);
        model.insert(model.begin(), some.begin(), some.end());
      }
    }
    std::vector<BlockId> want;
    for (Block* blk : model) want.push_back(blk->id);
    ASSERT_EQ(queue.ids(), want) << "step " << step;
    ASSERT_EQ(queue.front(), model.empty() ? nullptr : model.front());
    std::string why;
    ASSERT_TRUE(queue.check(&why)) << "step " << step << ": " << why;
  }
}

// A pop reads the ring alone: the popped block keeps its old slot, which no longer holds it, and
// stays out of the queue when another block takes that slot, until it is queued again itself.
TEST_F(FreeBlockQueueTest, PopsLeaveTheBlocksUntouched) {
  std::vector<Block*> taken;
  queue_.popleft_n(2, taken);
  ASSERT_EQ(taken, (std::vector<Block*>{b(0), b(1)}));
  EXPECT_EQ(b(0)->free_slot, 0u);
  EXPECT_EQ(b(1)->free_slot, 1u);
  expect_order({2, 3, 4, 5});
  queue_.prepend_n(std::vector<Block*>{b(1)});  // takes slot 1 back, recording it afresh
  EXPECT_EQ(b(1)->free_slot, 1u);
  queue_.prepend_n(std::vector<Block*>{b(0)});  // slot 0: b(0)'s stale slot is its own again
  expect_order({0, 1, 2, 3, 4, 5});
  queue_.popleft_n(1, taken);
  queue_.remove(b(2));
  queue_.append(b(0));  // the tail, a new slot; slot 0 stays empty
  expect_order({1, 3, 4, 5, 0});
  EXPECT_DEATH(queue_.append(b(0)), "block 0 is already in the free queue");
}

TEST_F(FreeBlockQueueTest, CheckCatchesABlockThatRecordsAnotherSlot) {
  b(3)->free_slot = b(1)->free_slot;
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: block 3 at slot 3 records slot 1");
}

TEST_F(FreeBlockQueueTest, CheckCatchesABlockThatThinksItIsNotQueued) {
  b(2)->free_slot = kNoFreeSlot;
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: block 2 at slot 2 records slot " + std::to_string(kNoFreeSlot));
}

TEST_F(FreeBlockQueueTest, QueuingAQueuedBlockAborts) {
  EXPECT_DEATH(queue_.append(b(1)), "block 1 is already in the free queue");
  std::vector<Block*> taken;
  queue_.popleft_n(1, taken);
  EXPECT_DEATH(queue_.remove(b(0)), "block 0 is not in the free queue");
  EXPECT_DEATH(queue_.popleft_n(6, taken), "popping 6 blocks from a queue of 5");
}

TEST_F(FreeBlockQueueTest, QueuingABlockOutsideItsSpanAborts) {
  // The ring holds offsets into the span it was built over: any other block would alias one.
  std::vector<Block> others = make_blocks(1);
  others[0].id = 9;
  EXPECT_DEATH(queue_.append(&others[0]), "block 9 is not one of the queue's blocks");
  const std::vector<Block*> some{&others[0]};
  EXPECT_DEATH(queue_.append_n(some), "block 9 is not one of the queue's blocks");
}

}  // namespace
}  // namespace kv
