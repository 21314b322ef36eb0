#include "model/mamba_manager.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

std::vector<std::vector<BlockId>> MambaManager::find_longest_cache_hit(std::span<const BlockHash> hashes,
                                                                       std::int64_t max_length,
                                                                       std::span<const KvCacheGroupId> group_ids,
                                                                       bool /*drop*/, std::int64_t alignment) const {
  const std::int64_t b = spec_.block_size;
  const auto n = std::min(static_cast<std::size_t>(max_length / b), hashes.size());
  std::vector<std::vector<BlockId>> hit(group_ids.size());
  std::vector<BlockId> found;
  // Right to left: the longest cached state at an aligned block boundary.
  for (std::size_t i = n; i-- > 0;) {
    if ((static_cast<std::int64_t>(i) + 1) * b % alignment != 0) continue;
    if (!lookup_all(hashes[i], group_ids, found)) continue;
    for (std::size_t k = 0; k < found.size(); ++k) {
      hit[k].assign(i, pool_.null_block());
      hit[k].push_back(found[k]);
    }
    break;
  }
  return hit;
}

bool MambaManager::hit_cached_this_step(std::span<const BlockId> hit) const {
  if (hit.empty()) return false;
  const Block& last = pool_.block(hit.back());
  return !last.is_null && cached_this_step_.count(last.hash) != 0;
}

std::int64_t MambaManager::num_blocks_to_allocate(const RequestId& id, const SlotDemand& demand,
                                                  std::span<const BlockId> hit,
                                                  std::int64_t /*max_required_blocks*/) const {
  // A state cached in this very step is not readable yet: more than the pool, so it fails.
  if (hit_cached_this_step(hit)) return pool_.num_blocks() + 1;
  if (is_align()) return num_align_blocks_to_allocate(id, demand, hit);
  return SingleTypeKvCacheManager::num_blocks_to_allocate(id, demand, hit);
}

std::int64_t MambaManager::num_align_blocks_to_allocate(const RequestId& id, const SlotDemand& demand,
                                                        std::span<const BlockId> hit) const {
  const Table* table = find_table(id);
  const auto held = static_cast<std::int64_t>(table != nullptr ? table->blocks.size() : 0);
  const std::int64_t s = spec_.num_speculative_blocks;
  const std::int64_t required = blocks_for(demand.num_tokens_main_model) + s;
  std::int64_t n = required - static_cast<std::int64_t>(hit.size()) - held;
  if (n > 0) {
    // A running request reuses its speculative blocks: one new state block.
    auto it = align_.find(id);
    n = it != align_.end() && it->second.allocated ? 1 : 1 + s;
  }
  // Kept as vLLM counts it, negative included.
  return n + num_evictable(hit, 0);
}

std::size_t MambaManager::remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) {
  std::size_t removed = SingleTypeKvCacheManager::remove_skipped_blocks(id, demand);
  if (!is_align()) return removed;
  auto it = align_.find(id);
  Table* table = find_table(id);
  if (it == align_.end() || !it->second.last_state || table == nullptr) return removed;
  // The state of two allocations ago: the last one's state is copied from it, then it is done.
  const std::size_t last = *it->second.last_state;
  const std::int64_t current = blocks_for(demand.total_computed) - 1;
  if (static_cast<std::int64_t>(last) >= current) return removed;
  BlockId& entry = table->blocks[last];
  if (entry == pool_.null_block()) return removed;
  const BlockId freed[] = {entry};
  entry = pool_.null_block();
  pool_.free_blocks(freed);
  count_nulled(1);
  return removed + 1;
}

void MambaManager::allocate_new_blocks(const RequestId& id, const SlotDemand& demand, std::vector<BlockId>& out) {
  if (is_align()) {
    allocate_align_blocks(id, demand, out);
  } else {
    SingleTypeKvCacheManager::allocate_new_blocks(id, demand, out);
  }
}

void MambaManager::allocate_align_blocks(const RequestId& id, const SlotDemand& demand, std::vector<BlockId>& out) {
  std::vector<BlockId>& blocks = table_of(id).blocks;
  const auto s = static_cast<std::size_t>(spec_.num_speculative_blocks);
  const auto required = static_cast<std::size_t>(blocks_for(demand.num_tokens_main_model)) + s;
  const std::size_t held = blocks.size();
  if (required <= held) return;
  AlignState& state = align_[id];
  if (state.allocated) {
    state.last_state = held - 1 - s;  // the running state sits before the speculative blocks
  } else if (held > 0) {
    state.last_state = held - 1;  // a hit: its last block holds the hit state
  }
  const std::size_t state_index = required - s - 1;
  if (blocks.size() < state_index) blocks.resize(state_index, pool_.null_block());
  if (state.allocated) {
    // The speculative blocks of the last step move forward, behind the new state.
    for (std::size_t i = held - s; i < held && i < state_index; ++i) {
      blocks.push_back(blocks[i]);
      blocks[i] = pool_.null_block();
    }
  }
  const std::size_t n = required - blocks.size();
  KV_CHECK(n <= (state.allocated ? 1 : 1 + s), "group " << group_id_ << ": " << n << " new Mamba blocks for " << id);
  pool_.get_new_blocks(n, blocks);
  count_entered(n);
  state.allocated = true;
  out.insert(out.end(), blocks.begin() + static_cast<std::ptrdiff_t>(held), blocks.end());
}

void MambaManager::cache_blocks(const Request& request, std::int64_t num_tokens) {
  const Table* table = find_table(request.id());
  const std::size_t before = table != nullptr ? table->num_cached : 0;
  SingleTypeKvCacheManager::cache_blocks(request, num_tokens);
  table = find_table(request.id());
  for (std::size_t i = before; i < table->num_cached; ++i) {
    const Block& b = pool_.block(table->blocks[i]);
    if (!b.is_null) cached_this_step_.insert(b.hash);
  }
}

void MambaManager::free(const RequestId& id, const BlockRetention& retention) {
  align_.erase(id);
  SingleTypeKvCacheManager::free(id, retention);
}

}  // namespace kv
