#include "model/free_block_queue.h"

#include <unordered_set>

#include "model/util/check.h"

namespace kv {

FreeBlockQueue::FreeBlockQueue(std::span<Block> blocks) {
  head_.next_free = &tail_;
  tail_.prev_free = &head_;
  for (Block& b : blocks) append(&b);
}

void FreeBlockQueue::link_after(Block* pos, Block* b) {
  KV_CHECK(!contains(b), "block " << b->id << " is already in the free queue");
  Block* next = pos->next_free;
  b->prev_free = pos;
  b->next_free = next;
  pos->next_free = b;
  next->prev_free = b;
  ++size_;
}

Block* FreeBlockQueue::popleft() {
  if (empty()) return nullptr;
  Block* b = head_.next_free;
  remove(b);
  return b;
}

void FreeBlockQueue::popleft_n(std::size_t n, std::vector<Block*>& out) {
  KV_CHECK(n <= size_, "popping " << n << " blocks from a queue of " << size_);
  if (n == 0) return;
  Block* cur = head_.next_free;
  for (std::size_t i = 0; i < n; ++i) {
    Block* next = cur->next_free;
    cur->prev_free = nullptr;
    cur->next_free = nullptr;
    out.push_back(cur);
    cur = next;
  }
  head_.next_free = cur;
  cur->prev_free = &head_;
  size_ -= n;
}

void FreeBlockQueue::remove(Block* b) {
  KV_CHECK(contains(b), "block " << b->id << " is not in the free queue");
  b->prev_free->next_free = b->next_free;
  b->next_free->prev_free = b->prev_free;
  b->prev_free = nullptr;
  b->next_free = nullptr;
  --size_;
}

void FreeBlockQueue::append(Block* b) { link_after(tail_.prev_free, b); }

void FreeBlockQueue::append_n(std::span<Block* const> blocks) {
  for (Block* b : blocks) link_after(tail_.prev_free, b);
}

void FreeBlockQueue::prepend_n(std::span<Block* const> blocks) {
  Block* pos = &head_;
  for (Block* b : blocks) {
    link_after(pos, b);
    pos = b;
  }
}

std::vector<BlockId> FreeBlockQueue::ids() const {
  std::vector<BlockId> out;
  out.reserve(size_);
  for (const Block* b = head_.next_free; b != &tail_; b = b->next_free) out.push_back(b->id);
  return out;
}

bool FreeBlockQueue::check(std::string* why) const {
  std::unordered_set<const Block*> seen;
  std::size_t n = 0;
  const Block* prev = &head_;
  for (const Block* b = head_.next_free; b != &tail_; b = b->next_free) {
    if (b == nullptr) {
      *why = "free queue: broken forward link after " + std::to_string(n) + " blocks";
      return false;
    }
    if (b->prev_free != prev) {
      *why = "free queue: block " + std::to_string(b->id) + " has a wrong backward link";
      return false;
    }
    if (!seen.insert(b).second) {
      *why = "free queue: block " + std::to_string(b->id) + " appears twice";
      return false;
    }
    if (++n > size_) {
      *why = "free queue: walk exceeds size " + std::to_string(size_);
      return false;
    }
    prev = b;
  }
  if (tail_.prev_free != prev) {
    *why = "free queue: tail sentinel's backward link is wrong";
    return false;
  }
  if (n != size_) {
    *why = "free queue: size " + std::to_string(size_) + " but walk found " + std::to_string(n);
    return false;
  }
  return true;
}

}  // namespace kv
