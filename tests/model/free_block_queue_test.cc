// FreeBlockQueue: every operation checked at the level of the intrusive links.
#include "model/free_block_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace kv {
namespace {

class FreeBlockQueueTest : public ::testing::Test {
 protected:
  // Six blocks, ids 0..5, all queued in id order.
  FreeBlockQueueTest() : blocks_(make_blocks(6)), queue_(blocks_) {
    head_ = blocks_[0].prev_free;
    tail_ = blocks_[5].next_free;
  }

  static std::vector<Block> make_blocks(int n) {
    std::vector<Block> blocks(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) blocks[static_cast<std::size_t>(i)].id = i;
    return blocks;
  }

  Block* b(int id) { return &blocks_[static_cast<std::size_t>(id)]; }

  // Checks the links block by block, both ways, sentinels included, and the queue's own check.
  void expect_links(const std::vector<int>& ids) {
    EXPECT_EQ(queue_.ids(), std::vector<BlockId>(ids.begin(), ids.end()));
    EXPECT_EQ(queue_.size(), ids.size());
    Block* prev = head_;
    for (int id : ids) {
      EXPECT_EQ(prev->next_free, b(id)) << "forward link into block " << id;
      EXPECT_EQ(b(id)->prev_free, prev) << "backward link of block " << id;
      EXPECT_TRUE(FreeBlockQueue::contains(b(id)));
      prev = b(id);
    }
    EXPECT_EQ(prev->next_free, tail_);
    EXPECT_EQ(tail_->prev_free, prev);
    // The sentinels never link outward.
    EXPECT_EQ(head_->prev_free, nullptr);
    EXPECT_EQ(tail_->next_free, nullptr);
    for (Block& blk : blocks_) {
      const bool listed = std::find(ids.begin(), ids.end(), blk.id) != ids.end();
      if (!listed) {
        EXPECT_EQ(blk.prev_free, nullptr) << "unqueued block " << blk.id;
        EXPECT_EQ(blk.next_free, nullptr) << "unqueued block " << blk.id;
      }
    }
    EXPECT_EQ(queue_.front(), ids.empty() ? nullptr : b(ids.front()));
    std::string why;
    EXPECT_TRUE(queue_.check(&why)) << why;
  }

  std::vector<Block> blocks_;
  FreeBlockQueue queue_;
  Block* head_ = nullptr;  // the head sentinel
  Block* tail_ = nullptr;  // the tail sentinel
};

TEST_F(FreeBlockQueueTest, StartsInIdOrderBetweenTwoSentinels) {
  ASSERT_NE(head_, nullptr);
  ASSERT_NE(tail_, nullptr);
  EXPECT_NE(head_, tail_);
  for (Block& blk : blocks_) {
    EXPECT_NE(head_, &blk);
    EXPECT_NE(tail_, &blk);
  }
  expect_links({0, 1, 2, 3, 4, 5});
}

TEST_F(FreeBlockQueueTest, EmptyQueueLinksTheSentinelsToEachOther) {
  std::vector<Block> none;
  FreeBlockQueue empty(none);
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.front(), nullptr);
  EXPECT_EQ(empty.popleft(), nullptr);
  EXPECT_TRUE(empty.ids().empty());
  std::string why;
  EXPECT_TRUE(empty.check(&why)) << why;
}

TEST_F(FreeBlockQueueTest, PopleftTakesTheHead) {
  EXPECT_EQ(queue_.popleft(), b(0));
  expect_links({1, 2, 3, 4, 5});
  EXPECT_EQ(queue_.popleft(), b(1));
  expect_links({2, 3, 4, 5});
}

TEST_F(FreeBlockQueueTest, PopleftNTakesTheFirstNInOrder) {
  std::vector<Block*> out{b(5)};  // appended to, never cleared
  queue_.popleft_n(3, out);
  EXPECT_EQ(out, (std::vector<Block*>{b(5), b(0), b(1), b(2)}));
  expect_links({3, 4, 5});

  out.clear();
  queue_.popleft_n(0, out);
  EXPECT_TRUE(out.empty());
  expect_links({3, 4, 5});

  queue_.popleft_n(3, out);
  EXPECT_EQ(out, (std::vector<Block*>{b(3), b(4), b(5)}));
  expect_links({});
  EXPECT_EQ(head_->next_free, tail_);
}

TEST_F(FreeBlockQueueTest, RemoveFromMiddleHeadAndTail) {
  queue_.remove(b(3));
  expect_links({0, 1, 2, 4, 5});
  queue_.remove(b(0));
  expect_links({1, 2, 4, 5});
  queue_.remove(b(5));
  expect_links({1, 2, 4});
  queue_.remove(b(2));
  queue_.remove(b(1));
  queue_.remove(b(4));
  expect_links({});
}

TEST_F(FreeBlockQueueTest, AppendGoesToTheTail) {
  Block* first = queue_.popleft();
  queue_.append(first);
  expect_links({1, 2, 3, 4, 5, 0});
}

TEST_F(FreeBlockQueueTest, AppendNKeepsTheGivenOrder) {
  std::vector<Block*> taken;
  queue_.popleft_n(4, taken);  // 0 1 2 3
  expect_links({4, 5});
  queue_.append(b(2));
  expect_links({4, 5, 2});
  const std::vector<Block*> more{b(3), b(0), b(1)};
  queue_.append_n(more);
  expect_links({4, 5, 2, 3, 0, 1});
}

TEST_F(FreeBlockQueueTest, PrependNPutsTheFirstGivenBlockAtTheHead) {
  std::vector<Block*> taken;
  queue_.popleft_n(3, taken);  // 0 1 2
  const std::vector<Block*> front{b(2), b(0), b(1)};
  queue_.prepend_n(front);
  expect_links({2, 0, 1, 3, 4, 5});
  // Into an empty queue, too.
  taken.clear();
  queue_.popleft_n(6, taken);
  expect_links({});
  const std::vector<Block*> again{b(4), b(5)};
  queue_.prepend_n(again);
  expect_links({4, 5});
}

TEST_F(FreeBlockQueueTest, RemovedBlockCanBeQueuedAgainAnywhere) {
  queue_.remove(b(2));
  queue_.append(b(2));
  expect_links({0, 1, 3, 4, 5, 2});
  queue_.remove(b(4));
  const std::vector<Block*> one{b(4)};
  queue_.prepend_n(one);
  expect_links({4, 0, 1, 3, 5, 2});
}

TEST_F(FreeBlockQueueTest, CheckCatchesAWrongBackwardLink) {
  b(3)->prev_free = b(1);  // should be block 2
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: block 3 has a wrong backward link");
}

TEST_F(FreeBlockQueueTest, CheckCatchesABrokenForwardLink) {
  b(2)->next_free = nullptr;
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: broken forward link after 3 blocks");
}

TEST_F(FreeBlockQueueTest, CheckCatchesAShortcutThatDropsBlocks) {
  // 1 -> 4 both ways: blocks 2 and 3 fall out of the walk, the size no longer matches.
  b(1)->next_free = b(4);
  b(4)->prev_free = b(1);
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: size 6 but walk found 4");
}

TEST_F(FreeBlockQueueTest, CheckCatchesAWrongTailLink) {
  tail_->prev_free = b(4);
  std::string why;
  EXPECT_FALSE(queue_.check(&why));
  EXPECT_EQ(why, "free queue: tail sentinel's backward link is wrong");
}

TEST_F(FreeBlockQueueTest, QueuingAQueuedBlockAborts) {
  EXPECT_DEATH(queue_.append(b(1)), "block 1 is already in the free queue");
  std::vector<Block*> taken;
  queue_.popleft_n(1, taken);
  EXPECT_DEATH(queue_.remove(b(0)), "block 0 is not in the free queue");
  EXPECT_DEATH(queue_.popleft_n(6, taken), "popping 6 blocks from a queue of 5");
}

}  // namespace
}  // namespace kv
