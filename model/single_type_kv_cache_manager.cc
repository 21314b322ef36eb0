#include "model/single_type_kv_cache_manager.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

SingleTypeKvCacheManager::SingleTypeKvCacheManager(const KvCacheSpec& spec, BlockPool& pool,
                                                   KvCacheGroupId group_id)
    : spec_(spec), pool_(pool), group_id_(group_id) {
  KV_CHECK(validate_spec(spec).ok(), "group " << group_id << " has an invalid spec "
                                              << describe(spec));
}

bool SingleTypeKvCacheManager::lookup_all(const BlockHash& hash,
                                          std::span<const KvCacheGroupId> group_ids,
                                          std::vector<BlockId>& out) const {
  out.clear();
  for (KvCacheGroupId g : group_ids) {
    const BlockId b = pool_.get_cached_block(hash, g);
    if (b == kNoBlock) return false;
    out.push_back(b);
  }
  return true;
}

std::size_t SingleTypeKvCacheManager::num_blocks_to_allocate(const RequestId& id,
                                                             std::int64_t num_tokens,
                                                             std::span<const BlockId> hit,
                                                             std::int64_t total_computed_tokens,
                                                             std::int64_t max_required_blocks) const {
  const std::int64_t required = std::min(blocks_for(num_tokens), max_required_blocks);
  if (auto it = tables_.find(id); it != tables_.end()) {
    return static_cast<std::size_t>(
        std::max<std::int64_t>(required - static_cast<std::int64_t>(it->second.blocks.size()), 0));
  }
  const std::int64_t skipped = std::min<std::int64_t>(
      spec_.num_skipped_tokens(total_computed_tokens) / spec_.block_size,
      static_cast<std::int64_t>(hit.size()));
  std::int64_t n =
      std::max<std::int64_t>(required - std::max(skipped, static_cast<std::int64_t>(hit.size())), 0);
  // Hit blocks in the free queue leave it when touched: they cost free blocks too.
  for (BlockId b : hit.subspan(static_cast<std::size_t>(skipped))) {
    n += pool_.block(b).ref_cnt == 0 && !pool_.block(b).is_null ? 1 : 0;
  }
  return static_cast<std::size_t>(n);
}

std::size_t SingleTypeKvCacheManager::remove_skipped_blocks(const RequestId& id,
                                                            std::int64_t total_computed_tokens) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return 0;
  std::vector<BlockId>& blocks = it->second.blocks;
  const std::size_t skipped = static_cast<std::size_t>(std::min<std::int64_t>(
      spec_.num_skipped_tokens(total_computed_tokens) / spec_.block_size,
      static_cast<std::int64_t>(blocks.size())));
  std::vector<BlockId> removed;
  for (std::size_t i = skipped; i-- > 0;) {
    // Entries before a null one were nulled by an earlier call.
    if (blocks[i] == pool_.null_block()) break;
    removed.push_back(blocks[i]);
    blocks[i] = pool_.null_block();
  }
  // No call when nothing fell out: a free call is a release on the priority policy's clock.
  if (!removed.empty()) pool_.free_blocks(removed);
  return removed.size();
}

void SingleTypeKvCacheManager::allocate_new_computed_blocks(const RequestId& id,
                                                            std::span<const BlockId> hit,
                                                            std::int64_t total_computed_tokens) {
  KV_CHECK(!is_running(id), "group " << group_id_ << ": cache hits given for running request "
                                     << id);
  Table& table = tables_[id];
  const std::size_t skipped = static_cast<std::size_t>(std::min<std::int64_t>(
      spec_.num_skipped_tokens(total_computed_tokens) / spec_.block_size,
      static_cast<std::int64_t>(hit.size())));
  table.blocks.assign(skipped, pool_.null_block());
  // A chunked hit can hold nulls past the skipped part (a chunk not aligned to blocks): they
  // stay null and are not touched.
  std::vector<BlockId> touched;
  for (BlockId b : hit.subspan(skipped)) {
    table.blocks.push_back(b);
    if (b != pool_.null_block()) touched.push_back(b);
  }
  pool_.touch(touched);
  table.num_cached = table.blocks.size();
}

void SingleTypeKvCacheManager::allocate_new_blocks(const RequestId& id, std::int64_t num_tokens,
                                                   std::vector<BlockId>& out) {
  Table& table = tables_[id];
  const std::int64_t n = blocks_for(num_tokens) - static_cast<std::int64_t>(table.blocks.size());
  if (n <= 0) return;
  const std::size_t first = out.size();
  pool_.get_new_blocks(static_cast<std::size_t>(n), out);
  table.blocks.insert(table.blocks.end(), out.begin() + static_cast<std::ptrdiff_t>(first),
                      out.end());
}

void SingleTypeKvCacheManager::cache_blocks(const Request& request, std::int64_t num_tokens) {
  auto it = tables_.find(request.id());
  KV_CHECK(it != tables_.end(), "caching blocks of " << request.id() << ", which holds none");
  Table& table = it->second;
  const std::size_t num_full = static_cast<std::size_t>(num_tokens / spec_.block_size);
  if (num_full <= table.num_cached) return;
  pool_.cache_full_blocks(table.blocks, request.block_hashes(), table.num_cached, num_full,
                          group_id_, spec_.block_size, request.tokens(),
                          request.extras());
  table.num_cached = num_full;
}

void SingleTypeKvCacheManager::free(const RequestId& id, const BlockRetention& retention) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  std::vector<BlockId>& blocks = it->second.blocks;
  std::reverse(blocks.begin(), blocks.end());
  pool_.free_blocks(blocks, retention);
  tables_.erase(it);
}

std::span<const BlockId> SingleTypeKvCacheManager::blocks_of(const RequestId& id) const {
  auto it = tables_.find(id);
  if (it == tables_.end()) return {};
  return it->second.blocks;
}

void SingleTypeKvCacheManager::collect_holders(
    std::vector<std::vector<KvCacheGroupId>>& holders) const {
  for (const auto& entry : tables_) {
    for (BlockId b : entry.second.blocks) {
      if (b != pool_.null_block()) holders[static_cast<std::size_t>(b)].push_back(group_id_);
    }
  }
}

std::int64_t SingleTypeKvCacheManager::num_blocks_in_use() const {
  std::int64_t n = 0;
  for (const auto& entry : tables_) {
    for (BlockId b : entry.second.blocks) n += b != pool_.null_block() ? 1 : 0;
  }
  return n;
}

bool SingleTypeKvCacheManager::check(std::string* why) const {
  for (const auto& [id, table] : tables_) {
    const std::string where = "group " + std::to_string(group_id_) + ", request " + id + ": ";
    if (table.num_cached > table.blocks.size()) {
      *why = where + "more cached blocks than it holds";
      return false;
    }
    bool seen_real = false;
    for (std::size_t i = 0; i < table.blocks.size(); ++i) {
      const Block& b = pool_.block(table.blocks[i]);
      if (b.is_null) {
        if (seen_real) {
          *why = where + "null block at " + std::to_string(i) + " after a real one";
          return false;
        }
        continue;
      }
      seen_real = true;
      if (b.ref_cnt <= 0 || (i < table.num_cached && (b.hash.empty() || b.group != group_id_))) {
        *why = where + "block " + std::to_string(b.id) + " at " + std::to_string(i) +
               " is unreferenced or not cached for its group";
        return false;
      }
    }
  }
  return true;
}

std::vector<std::vector<BlockId>> FullAttentionManager::find_longest_cache_hit(
    std::span<const BlockHash> hashes, std::int64_t max_length,
    std::span<const KvCacheGroupId> group_ids, bool drop, std::int64_t alignment) const {
  std::vector<std::vector<BlockId>> hit(group_ids.size());
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size),
                                 hashes.size());
  if (group_ids.size() == 1) {  // the common case: no per-block scratch list
    const KvCacheGroupId g = group_ids.front();
    for (std::size_t i = 0; i < n; ++i) {
      const BlockId b = pool_.get_cached_block(hashes[i], g);
      if (b == kNoBlock) break;
      hit.front().push_back(b);
    }
  } else {
    std::vector<BlockId> found;
    for (std::size_t i = 0; i < n && lookup_all(hashes[i], group_ids, found); ++i) {
      for (std::size_t k = 0; k < found.size(); ++k) hit[k].push_back(found[k]);
    }
  }
  const std::int64_t b = spec_.block_size;
  std::int64_t tokens = static_cast<std::int64_t>(hit.front().size()) * b;
  if (drop && tokens > 0) tokens -= std::min(alignment, b);
  tokens -= tokens % alignment;
  const auto keep = static_cast<std::size_t>(blocks_for(tokens));
  for (auto& blocks : hit) {
    if (blocks.size() > keep) blocks.resize(keep);
  }
  return hit;
}

int FullAttentionManager::num_common_prefix_blocks(const RequestId& id, int num_running) const {
  int n = 0;
  for (BlockId b : blocks_of(id)) {
    if (pool_.block(b).ref_cnt != num_running) break;
    ++n;
  }
  return n;
}

std::vector<std::vector<BlockId>> SlidingWindowManager::find_longest_cache_hit(
    std::span<const BlockHash> hashes, std::int64_t max_length,
    std::span<const KvCacheGroupId> group_ids, bool drop, std::int64_t /*alignment*/) const {
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size),
                                 hashes.size());
  // The token being computed is inside its own window: window - 1 earlier tokens are read.
  // Eagle needs one block more, the one it drops.
  const std::size_t need = static_cast<std::size_t>(blocks_for(spec_.window - 1)) + (drop ? 1 : 0);
  std::vector<std::vector<BlockId>> hit(group_ids.size(), std::vector<BlockId>(n, 0));
  std::vector<BlockId> found;
  std::size_t run = 0, length = 0;
  bool full_run = false;
  for (std::size_t i = n; i-- > 0;) {
    if (!lookup_all(hashes[i], group_ids, found)) {
      run = 0;
      continue;
    }
    for (std::size_t k = 0; k < found.size(); ++k) hit[k][i] = found[k];
    if (++run >= need) {
      length = i + run;
      full_run = true;
      break;
    }
  }
  // Without a full window, only a cached run from block 0 is a hit.
  if (!full_run) length = run;
  if (drop && length > 0) --length;
  for (auto& blocks : hit) blocks.resize(length);
  return hit;
}

std::vector<std::vector<BlockId>> ChunkedLocalAttentionManager::find_longest_cache_hit(
    std::span<const BlockHash> hashes, std::int64_t max_length,
    std::span<const KvCacheGroupId> group_ids, bool drop, std::int64_t /*alignment*/) const {
  KV_CHECK(!drop, "eagle with chunked local attention (vLLM refuses it; configs are validated)");
  const std::int64_t chunk_start = max_length / spec_.chunk * spec_.chunk;
  const std::size_t first = static_cast<std::size_t>(chunk_start / spec_.block_size);
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size),
                                 hashes.size());
  std::vector<std::vector<BlockId>> hit(group_ids.size(), std::vector<BlockId>(first, 0));
  std::vector<BlockId> found;
  for (std::size_t i = first; i < n && lookup_all(hashes[i], group_ids, found); ++i) {
    for (std::size_t k = 0; k < found.size(); ++k) hit[k].push_back(found[k]);
  }
  return hit;
}

std::unique_ptr<SingleTypeKvCacheManager> make_single_type_manager(const KvCacheSpec& spec,
                                                                   BlockPool& pool,
                                                                   KvCacheGroupId group_id) {
  switch (spec.type) {
    case AttentionType::kSlidingWindow:
      return std::make_unique<SlidingWindowManager>(spec, pool, group_id);
    case AttentionType::kChunkedLocalAttention:
      return std::make_unique<ChunkedLocalAttentionManager>(spec, pool, group_id);
    case AttentionType::kFullAttention:
      return std::make_unique<FullAttentionManager>(spec, pool, group_id);
    default:
      KV_CHECK(false, "no manager for attention type " << to_string(spec.type));
      return nullptr;
  }
}

}  // namespace kv
