// FreeBlockQueue: the doubly linked list of free blocks, in eviction order (head = next victim).
// The links live inside the blocks (Block::prev_free/next_free) and only this class touches
// them; two sentinel blocks owned by the queue remove every empty-list special case. Every
// operation is O(1) per block, including removal from the middle (a prefix-cache hit on a free
// block). The queue never owns the blocks it links.
// Invariants (check()):
//   1. Walking from the head reaches the tail sentinel after exactly size() blocks, and the
//      backward links mirror the forward ones.
//   2. A block is linked (both links non-null) exactly when it is in the queue; never twice.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"

namespace kv {

class FreeBlockQueue {
 public:
  // Links `blocks` in the given order.
  explicit FreeBlockQueue(std::span<Block> blocks);
  FreeBlockQueue(const FreeBlockQueue&) = delete;
  FreeBlockQueue& operator=(const FreeBlockQueue&) = delete;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  static bool contains(const Block* b) { return b->prev_free != nullptr; }
  Block* front() const { return empty() ? nullptr : head_.next_free; }

  Block* popleft();                                         // nullptr when empty
  void popleft_n(std::size_t n, std::vector<Block*>& out);  // requires n <= size()
  void remove(Block* b);                                    // requires contains(b)
  void append(Block* b);                                    // to the tail
  void append_n(std::span<Block* const> blocks);            // to the tail, in order
  void prepend_n(std::span<Block* const> blocks);           // at the head; blocks[0] becomes the head

  std::vector<BlockId> ids() const;  // head first
  // Verifies the invariants above; on failure writes the reason to *why.
  bool check(std::string* why) const;

 private:
  void link_after(Block* pos, Block* b);

  Block head_;  // sentinel: head_.next_free is the first queued block
  Block tail_;  // sentinel: tail_.prev_free is the last queued block
  std::size_t size_ = 0;
};

}  // namespace kv
