#include "model/block_pool.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {
BlockPool::BlockPool(int num_blocks, bool enable_caching, FreeOrder free_order, bool enable_events,
                     EvictionPolicyFactory make_policy)
    : blocks_(static_cast<std::size_t>(num_blocks)),
      index_(blocks_),
      caching_(enable_caching),
      events_enabled_(enable_events) {
  KV_CHECK(num_blocks >= 2, "a pool needs the null block and at least one usable block, got " << num_blocks);
  for (int i = 0; i < num_blocks; ++i) blocks_[static_cast<std::size_t>(i)].id = i;
  policy_ = make_policy ? make_policy(blocks_, free_order, enable_caching)
                        : make_lru_policy(blocks_, free_order, enable_caching);
  KV_CHECK(policy_->size() == blocks_.size(), "a new policy must queue every block in id order");
  hooks_ = policy_->wants_hooks();
  // vLLM pops block 0 from the fresh queue and keeps it as the null block.
  std::vector<Block*> null_block;
  policy_->pop_n(1, null_block);
  KV_CHECK(null_block.front()->id == 0);
  null_block.front()->is_null = true;
}

double BlockPool::usage() const {
  const double usable = static_cast<double>(blocks_.size() - 1);
  return 1.0 - static_cast<double>(num_free_blocks()) / usable;
}

void BlockPool::record_removed(const Block& b) { events_.emplace_back(BlockRemoved{{b.hash}, "GPU", b.group}); }

void BlockPool::get_new_blocks(std::size_t n, std::vector<BlockId>& out) {
  KV_CHECK(n <= num_free_blocks(), "asked for " << n << " blocks, " << num_free_blocks() << " free");
  scratch_.clear();
  if (hooks_) {
    // A policy that hears of evictions (leaf-lru: a parent becomes a leaf) sees each one before
    // it picks the next victim; the loop below then finds these blocks already uncached.
    for (std::size_t i = 0; i < n; ++i) {
      policy_->pop_n(1, scratch_);
      if (caching_) evict_for_reuse(*scratch_.back());
    }
  } else {
    policy_->pop_n(n, scratch_);
  }
  const std::size_t popped = scratch_.size();
  const std::size_t first = out.size();
  out.resize(first + popped);
  BlockId* ids = out.data() + first;
  // The flags in locals: the stores through block pointers below would make the compiler
  // reload members on every block.
  const bool caching = caching_;
  const bool quiet = !events_enabled_ && !hooks_ && !record_evictions_;  // nobody hears of evictions
  std::int64_t evicted = 0;
  // The only pass over the popped blocks' lines (the pops read the queue's ring alone): each
  // line is loaded twice the index's distance ahead, so that the bucket its index_way names can
  // be loaded in turn at that distance.
  constexpr std::size_t kAhead = CachedBlockIndex::kPrefetchDistance;
  for (std::size_t i = 0; i < std::min(2 * kAhead, popped); ++i) __builtin_prefetch(scratch_[i], 1);
  if (caching) {
    for (std::size_t i = 0; i < std::min(kAhead, popped); ++i) index_.prefetch_way_of(*scratch_[i]);
  }
  for (std::size_t i = 0; i < popped; ++i) {
    Block* b = scratch_[i];
    if (i + 2 * kAhead < popped) __builtin_prefetch(scratch_[i + 2 * kAhead], 1);
    if (caching && i + kAhead < popped) index_.prefetch_way_of(*scratch_[i + kAhead]);
    if (caching && !b->hash.empty()) {
      if (quiet) {
        uncache(*b);
        ++evicted;
      } else {
        evict_for_reuse(*b);
      }
    }
    KV_CHECK(b->ref_cnt == 0, "popped block " << b->id << " has ref_cnt " << b->ref_cnt);
    b->ref_cnt = 1;
    ids[i] = b->id;
  }
  num_evictions_ += evicted;
}

void BlockPool::touch(std::span<const BlockId> ids) {
  for (BlockId id : ids) {
    Block& b = mut(id);
    if (b.ref_cnt == 0 && !b.is_null) policy_->remove(&b);
    if (hooks_ && !b.is_null) policy_->on_hit(&b);
    ++b.ref_cnt;
  }
}

void BlockPool::free_blocks(std::span<const BlockId> ordered_ids, const BlockRetention& retention) {
  // Sized for every block first, so that the loop appends without a capacity check.
  scratch_.resize(ordered_ids.size());
  Block** freed = scratch_.data();
  for (BlockId id : ordered_ids) {
    Block& b = mut(id);
    if (b.is_null) [[unlikely]]
      continue;
    KV_CHECK(b.ref_cnt > 0, "freeing block " << id << " with ref_cnt " << b.ref_cnt);
    if (--b.ref_cnt == 0) *freed++ = &b;
  }
  scratch_.resize(static_cast<std::size_t>(freed - scratch_.data()));
  policy_->on_freed(scratch_, retention);
}

BlockStored* BlockPool::begin_stored_event(std::span<const BlockHash> hashes, std::size_t num_cached,
                                           std::size_t num_full, int block_size, std::span<const TokenId> tokens,
                                           const HashExtras& extras, KvCacheGroupId group) {
  if (!events_enabled_) return nullptr;
  auto* stored = &std::get<BlockStored>(events_.emplace_back(BlockStored{}));
  stored->block_size = block_size;
  stored->lora_name = extras.lora_name;
  stored->group_idx = group;
  if (num_cached > 0) stored->parent_block_hash = hashes[num_cached - 1];
  const auto bs = static_cast<std::size_t>(block_size);
  KV_CHECK(num_full * bs <= tokens.size(),
           "caching " << num_full << " blocks of " << bs << " tokens with " << tokens.size() << " tokens");
  stored->token_ids.assign(tokens.begin() + static_cast<std::ptrdiff_t>(num_cached * bs),
                           tokens.begin() + static_cast<std::ptrdiff_t>(num_full * bs));
  return stored;
}

void BlockPool::add_stored_block(BlockStored& stored, const BlockHash& hash, std::size_t index,
                                 const HashExtras& extras) {
  stored.block_hashes.push_back(hash);
  const auto start = static_cast<std::int64_t>(index) * stored.block_size;
  stored.extra_keys.push_back(block_extra_keys(extras, start, start + stored.block_size));
}

void BlockPool::cache_full_blocks(std::span<const BlockId> blocks, std::span<const BlockHash> hashes,
                                  std::size_t num_cached, std::size_t num_full, KvCacheGroupId group, int block_size,
                                  std::span<const TokenId> tokens, const HashExtras& extras) {
  if (num_cached >= num_full) return;
  KV_CHECK(num_full <= blocks.size() && num_full <= hashes.size(),
           "group " << group << ": caching " << num_full << " blocks with " << blocks.size() << " blocks and "
                    << hashes.size() << " hashes");
  index_.cache_all(blocks.subspan(num_cached, num_full - num_cached), hashes.subspan(num_cached, num_full - num_cached),
                   group);
  if (!events_enabled_ && !hooks_) return;
  // The event and the policy's hook list the blocks just cached, in order.
  BlockStored* stored = begin_stored_event(hashes, num_cached, num_full, block_size, tokens, extras, group);
  scratch_.clear();
  for (std::size_t i = num_cached; i < num_full; ++i) {
    Block& b = mut(blocks[i]);
    if (b.is_null) continue;
    if (stored) add_stored_block(*stored, b.hash, i, extras);
    scratch_.push_back(&b);
  }
  if (hooks_ && !scratch_.empty()) {
    // The chain's parent: the block before the first one cached, unless the group skips it.
    Block* parent = num_cached > 0 ? &mut(blocks[num_cached - 1]) : nullptr;
    policy_->on_cached(parent != nullptr && !parent->is_null ? parent : nullptr, scratch_);
  }
}

void BlockPool::evict_blocks(std::span<const BlockId> ids) {
  for (BlockId id : ids) {
    KV_CHECK(id >= 0 && id < num_blocks(), "no block " << id);
    evict_cached(mut(id));
  }
}

bool BlockPool::reset_prefix_cache() {
  if (num_free_blocks() != blocks_.size() - 1) return false;
  index_.clear();
  for (Block& b : blocks_) {
    const bool had = !b.hash.empty();
    b.hash = BlockHash{};
    b.group = 0;
    if (hooks_ && had) policy_->on_uncached(&b);
  }
  if (events_enabled_) events_.emplace_back(AllBlocksCleared{});
  return true;
}

std::vector<EvictedBlock> BlockPool::take_evicted() {
  std::vector<EvictedBlock> out;
  out.swap(evicted_);
  return out;
}

std::vector<KvEvent> BlockPool::take_events() {
  std::vector<KvEvent> out;
  out.swap(events_);
  return out;
}

bool BlockPool::check_invariants(std::string* why) const {
  if (!policy_->check(why)) return false;
  // The index first: the per-block checks below walk its chains.
  if (!index_.check(why)) return false;
  const Block& null = blocks_[0];
  if (!null.is_null || null.ref_cnt != 0 || !null.hash.empty() || policy_->contains(&null)) {
    *why = "the null block is used, cached or queued";
    return false;
  }
  std::size_t queued = 0, hashed = 0;
  for (const Block& b : blocks_) {
    if (&b != &null && b.is_null) {
      *why = "block " + std::to_string(b.id) + " is marked null";
      return false;
    }
    if (b.ref_cnt < 0) {
      *why = "block " + std::to_string(b.id) + " has negative ref_cnt " + std::to_string(b.ref_cnt);
      return false;
    }
    const bool in_queue = policy_->contains(&b);
    if (!b.is_null && in_queue != (b.ref_cnt == 0)) {
      *why = "block " + std::to_string(b.id) + " has ref_cnt " + std::to_string(b.ref_cnt) +
             (in_queue ? " but is in the free queue" : " but is not in the free queue");
      return false;
    }
    queued += in_queue ? 1 : 0;
    if (b.hash.empty() && b.group != 0) {
      *why = "block " + std::to_string(b.id) + " is not cached but keeps group " + std::to_string(b.group);
      return false;
    }
    if (!b.hash.empty()) {
      ++hashed;
      if (!index_.contains(b)) {
        *why = "block " + std::to_string(b.id) + " has a hash but is not in the hash map under it";
        return false;
      }
    }
  }
  if (queued != policy_->size()) {
    *why = "free count " + std::to_string(policy_->size()) + " but " + std::to_string(queued) + " blocks are queued";
    return false;
  }
  const std::size_t listed = index_.size();
  if (listed != hashed) {
    *why = "hash map lists " + std::to_string(listed) + " blocks but " + std::to_string(hashed) + " blocks have a hash";
    return false;
  }
  return true;
}

}  // namespace kv
