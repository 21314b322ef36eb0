// FreeBlockQueue: the free blocks in eviction order (head = next victim), as a ring buffer of
// 32-bit offsets into the block span it was given, with lazy deletion. Each queued block records
// its slot (Block::free_slot, touched only by this class); removal from the middle (a prefix-cache
// hit on a free block) clears that slot to a tombstone in O(1), and pops skip tombstones. The
// buffer is rebuilt without tombstones when they outnumber the queued blocks, so every operation
// stays amortized O(1) per block. Pops read the ring alone, never the blocks: a popped block keeps
// a stale free_slot, and a block is queued exactly when the ring slot its free_slot names holds
// it (contains()). The caller that takes a batch of popped blocks is then the only pass over their
// cache lines (BlockPool::get_new_blocks). The queue never owns the blocks it lists.
// Invariants (check()):
//   1. The ring holds used_ slots from head_ (capacity a power of two); every slot outside them
//      is empty, and the first and last used slots are live when used_ > 0.
//   2. Every live (non-empty) slot's block records that slot; size() equals the number of live
//      slots; no block is live twice. So a block is queued (contains()) exactly when it is live.
//   3. Tombstones (used_ - size()) never outnumber the live slots.
//   4. A slot is kEmptySlot or the offset of a block of the span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/block.h"

namespace kv {

class FreeBlockQueue {
 public:
  // Queues `blocks` in the given order. Every block it is later given must lie in `blocks`.
  explicit FreeBlockQueue(std::span<Block> blocks);
  FreeBlockQueue(const FreeBlockQueue&) = delete;
  FreeBlockQueue& operator=(const FreeBlockQueue&) = delete;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Whether `b` (a block of the span) is queued: its free_slot, stale once it left, names a ring
  // slot that holds it.
  bool contains(const Block* b) const {
    return b->free_slot < slots_.size() && slots_[b->free_slot] == static_cast<std::uint32_t>(b - base_);
  }
  Block* front() const { return empty() ? nullptr : base_ + slots_[head_]; }

  Block* popleft();  // nullptr when empty
  // Appends the next n blocks to `out`, reading the ring only (requires n <= size()).
  void popleft_n(std::size_t n, std::vector<Block*>& out);
  void remove(Block* b);                           // requires contains(b)
  void append(Block* b);                           // to the tail
  void append_n(std::span<Block* const> blocks);   // to the tail, in order
  void prepend_n(std::span<Block* const> blocks);  // at the head; blocks[0] becomes the head

  std::vector<BlockId> ids() const;  // head first
  // Verifies the invariants above; on failure writes the reason to *why.
  bool check(std::string* why) const;

 private:
  // A slot holds a block's offset in the span or kEmptySlot: 4 bytes, half a pointer, so that
  // the ring (at most about four slots per block) costs a large pool less of the cache.
  static constexpr std::uint32_t kEmptySlot = UINT32_MAX;

  std::uint32_t offset_of(const Block* b) const;  // checks that b lies in the span
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t at(std::size_t offset) const { return (head_ + offset) & mask(); }
  void place(std::size_t slot, Block* b);
  void reserve_slots(std::size_t n);
  void rebuild(std::size_t capacity);
  void trim();
  void compact_if_sparse();

  Block* base_;                       // the span's first block
  std::uint32_t span_size_;           // its length
  std::vector<std::uint32_t> slots_;  // the ring; kEmptySlot: empty or tombstone
  std::size_t head_ = 0;              // slot of the head
  std::size_t used_ = 0;              // slots from head_ in use, live or tombstones
  std::size_t size_ = 0;              // live slots
};

}  // namespace kv
