#include "model/free_block_queue.h"

#include <algorithm>
#include <bit>
#include <utility>
#include <vector>

#include "model/util/check.h"

namespace kv {
namespace {

constexpr std::size_t kMinCapacity = 16;

bool fail(std::string* why, const std::string& msg) {
  *why = "free queue: " + msg;
  return false;
}

std::string block_at(const Block* b, std::size_t slot) {
  return "block " + std::to_string(b->id) + " at slot " + std::to_string(slot);
}

}  // namespace

FreeBlockQueue::FreeBlockQueue(std::span<Block> blocks)
    : base_(blocks.data()), span_size_(static_cast<std::uint32_t>(blocks.size())) {
  KV_CHECK(blocks.size() < kEmptySlot, "free queue over " << blocks.size() << " blocks");
  reserve_slots(blocks.size());
  for (Block& b : blocks) append(&b);
}

std::uint32_t FreeBlockQueue::offset_of(const Block* b) const {
  KV_CHECK(b >= base_ && b < base_ + span_size_, "block " << b->id << " is not one of the queue's blocks");
  return static_cast<std::uint32_t>(b - base_);
}

void FreeBlockQueue::place(std::size_t slot, Block* b) {
  const std::uint32_t offset = offset_of(b);
  KV_CHECK(!contains(b), "block " << b->id << " is already in the free queue");
  slots_[slot] = offset;
  b->free_slot = static_cast<std::uint32_t>(slot);
  ++size_;
}

// Makes room for n more slots at either end.
void FreeBlockQueue::reserve_slots(std::size_t n) {
  if (used_ + n <= slots_.size()) return;
  rebuild(std::bit_ceil(std::max(kMinCapacity, 2 * (size_ + n))));
}

// Moves the live blocks, in order, to the start of a fresh ring of `capacity` slots.
void FreeBlockQueue::rebuild(std::size_t capacity) {
  KV_CHECK(capacity < kNoFreeSlot, "free queue of " << capacity << " slots");
  std::vector<std::uint32_t> next(capacity, kEmptySlot);
  std::size_t w = 0;
  for (std::size_t i = 0; i < used_; ++i) {
    const std::uint32_t offset = slots_[at(i)];
    if (offset == kEmptySlot) continue;
    base_[offset].free_slot = static_cast<std::uint32_t>(w);
    next[w++] = offset;
  }
  slots_.swap(next);
  head_ = 0;
  used_ = w;
}

// Drops the tombstones at both ends, so that the head and the tail are live.
void FreeBlockQueue::trim() {
  while (used_ > 0 && slots_[head_] == kEmptySlot) {
    head_ = (head_ + 1) & mask();
    --used_;
  }
  while (used_ > 0 && slots_[at(used_ - 1)] == kEmptySlot) --used_;
}

void FreeBlockQueue::compact_if_sparse() {
  if (used_ - size_ > size_) rebuild(slots_.size());
}

Block* FreeBlockQueue::popleft() {
  if (empty()) return nullptr;
  Block* b = base_ + slots_[head_];
  remove(b);
  return b;
}

void FreeBlockQueue::popleft_n(std::size_t n, std::vector<Block*>& out) {
  KV_CHECK(n <= size_, "popping " << n << " blocks from a queue of " << size_);
  const std::size_t first = out.size();
  out.resize(first + n);
  Block** taken = out.data() + first;
  // The ring's state in locals, written back once. The blocks' lines are not touched: emptying
  // a block's slot is what dequeues it (contains()).
  std::uint32_t* const ring = slots_.data();
  Block* const base = base_;
  const std::size_t mask = this->mask();
  std::size_t head = head_;
  std::size_t used = used_;
  for (Block** const end = taken + n; taken != end;) {
    const std::uint32_t offset = std::exchange(ring[head], kEmptySlot);
    head = (head + 1) & mask;
    --used;
    if (offset != kEmptySlot) *taken++ = base + offset;  // else a tombstone
  }
  head_ = head;
  used_ = used;
  size_ -= n;
  trim();
  compact_if_sparse();
}

void FreeBlockQueue::remove(Block* b) {
  KV_CHECK(contains(b), "block " << b->id << " is not in the free queue");
  slots_[b->free_slot] = kEmptySlot;
  b->free_slot = kNoFreeSlot;
  --size_;
  trim();
  compact_if_sparse();
}

void FreeBlockQueue::append(Block* b) {
  reserve_slots(1);
  place(at(used_), b);
  ++used_;
}

void FreeBlockQueue::append_n(std::span<Block* const> blocks) {
  reserve_slots(blocks.size());
  // As popleft_n: the ring's state in locals, written back once.
  std::uint32_t* const ring = slots_.data();
  const std::size_t mask = this->mask();
  std::size_t slot = at(used_);
  for (Block* b : blocks) {
    const std::uint32_t offset = offset_of(b);
    KV_CHECK(!contains(b), "block " << b->id << " is already in the free queue");
    ring[slot] = offset;
    b->free_slot = static_cast<std::uint32_t>(slot);
    slot = (slot + 1) & mask;
  }
  used_ += blocks.size();
  size_ += blocks.size();
}

void FreeBlockQueue::prepend_n(std::span<Block* const> blocks) {
  reserve_slots(blocks.size());
  for (std::size_t i = blocks.size(); i-- > 0;) {
    head_ = (head_ - 1) & mask();
    ++used_;
    place(head_, blocks[i]);
  }
}

std::vector<BlockId> FreeBlockQueue::ids() const {
  std::vector<BlockId> out;
  out.reserve(size_);
  for (std::size_t i = 0; i < used_; ++i) {
    if (const std::uint32_t offset = slots_[at(i)]; offset != kEmptySlot) out.push_back(base_[offset].id);
  }
  return out;
}

bool FreeBlockQueue::check(std::string* why) const {
  if (!slots_.empty() && !std::has_single_bit(slots_.size())) return fail(why, "capacity is not a power of two");
  if (used_ > slots_.size() || size_ > used_ || head_ >= std::max<std::size_t>(slots_.size(), 1)) {
    return fail(why, "head, used slots, size and capacity disagree");
  }
  std::vector<BlockId> live;  // then marked by id, to find a block live twice
  live.reserve(size_);
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const std::size_t slot = at(i);
    if (slots_[slot] == kEmptySlot) continue;
    if (slots_[slot] >= span_size_) return fail(why, "slot " + std::to_string(slot) + " is outside the block span");
    const Block* b = base_ + slots_[slot];
    if (i >= used_) return fail(why, block_at(b, slot) + " is outside the used slots");
    if (b->free_slot != slot) {
      return fail(why, block_at(b, slot) + " records slot " + std::to_string(b->free_slot));
    }
    if (b->id < 0) return fail(why, block_at(b, slot) + " has a negative id");
    live.push_back(b->id);
  }
  std::vector<bool> seen(live.empty() ? 0 : static_cast<std::size_t>(*std::max_element(live.begin(), live.end())) + 1);
  for (BlockId id : live) {
    if (seen[static_cast<std::size_t>(id)]) return fail(why, "block " + std::to_string(id) + " is live twice");
    seen[static_cast<std::size_t>(id)] = true;
  }
  if (live.size() != size_) {
    return fail(why, "size " + std::to_string(size_) + " but " + std::to_string(live.size()) + " live slots");
  }
  if (used_ > 0 && (slots_[head_] == kEmptySlot || slots_[at(used_ - 1)] == kEmptySlot)) {
    return fail(why, "a tombstone at the head or the tail");
  }
  if (used_ - size_ > size_) return fail(why, "tombstones outnumber the live slots");
  return true;
}

}  // namespace kv
