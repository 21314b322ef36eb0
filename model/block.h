// Block: one fixed-size page of KV cache, as vLLM's KVCacheBlock.
// Blocks are created once by the BlockPool (ids 0..N-1, stored contiguously, never moved or
// destroyed) and referred to by id or by stable pointer.
// Invariants (checked by BlockPool::check_invariants):
//   1. ref_cnt >= 0 and equals the number of live requests whose block table holds the block.
//   2. A non-null block is in the free queue exactly when ref_cnt == 0.
//   3. hash is non-empty exactly while the block is listed in the pool's hash map under
//      (hash, group); group is 0 while the block is not cached.
//   4. The null block (id 0) is never queued, never cached and never counted as free.
#pragma once

#include <cstdint>

#include "model/block_hash.h"
#include "model/types.h"

namespace kv {

// A KV-cache group's index (vLLM's kv_cache_group_id); 0 for a model with one group.
using KvCacheGroupId = std::uint16_t;

// Block::free_slot of a block never queued, or removed from the middle of its queue.
inline constexpr std::uint32_t kNoFreeSlot = UINT32_MAX;
// Block::index_way of a block that no way of the index names.
inline constexpr std::uint32_t kNoIndexWay = UINT32_MAX;

// One cache line per block: a pool walk (free-queue pops, evictions) touches one line per block.
struct alignas(64) Block {
  BlockId id = kNoBlock;
  std::int32_t ref_cnt = 0;  // holders among live requests; 0 <=> in the free queue (non-null)
  // The next younger block cached under the same hash (kNoBlock: none); touched only by the
  // pool's CachedBlockIndex, meaningful only while the block is cached.
  BlockId next_cached = kNoBlock;
  BlockHash hash;        // non-empty exactly while listed in the pool's hash map
  bool is_null = false;  // the placeholder block 0: never freed, cached or counted
  // The group the block is cached for: the map key is (hash, group). 0 while uncached.
  KvCacheGroupId group = 0;

  // The block's slot in the FreeBlockQueue's ring, touched only by that class: meaningful while
  // the block is queued, stale after a pop (the queue asks its ring: FreeBlockQueue::contains),
  // kNoFreeSlot before the block was ever queued or after a removal.
  std::uint32_t free_slot = kNoFreeSlot;
  // Where in the pool's CachedBlockIndex a way names the block (its bucket, its way, and
  // whether that bucket is past the key's home), touched only by that class: kNoIndexWay
  // exactly while no way names it (uncached, or a younger duplicate). An erase then empties its
  // way with stores alone, reading neither the bucket nor, unless the key lies past its home,
  // the hash.
  std::uint32_t index_way = kNoIndexWay;
};

static_assert(sizeof(Block) == 64, "a block's metadata must stay within one 64-byte cache line");

}  // namespace kv
