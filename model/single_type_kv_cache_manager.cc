#include "model/single_type_kv_cache_manager.h"

#include <algorithm>
#include <utility>

#include "model/mamba_manager.h"
#include "model/util/check.h"

namespace kv {
namespace {
// How many hashes ahead a lookup loads their index slots.
constexpr std::size_t kLookupPrefetch = 8;
}  // namespace

SingleTypeKvCacheManager::SingleTypeKvCacheManager(const KvCacheSpec& spec, BlockPool& pool, KvCacheGroupId group_id,
                                                   int hash_block_size)
    : spec_(spec),
      pool_(pool),
      group_id_(group_id),
      hash_stride_(hash_block_size > 0 ? spec.block_size / hash_block_size : 1) {
  KV_CHECK(validate_spec(spec).ok(), "group " << group_id << " has an invalid spec " << describe(spec));
  KV_CHECK(hash_block_size <= 0 || spec.block_size % hash_block_size == 0,
           "group " << group_id << ": block size " << spec.block_size << " is not a multiple of the hash block size "
                    << hash_block_size);
}

std::span<const BlockHash> SingleTypeKvCacheManager::block_hashes(std::span<const BlockHash> chain,
                                                                  std::vector<BlockHash>& scratch) const {
  if (hash_stride_ == 1) return chain;
  scratch.clear();
  const auto m = static_cast<std::size_t>(hash_stride_);
  for (std::size_t i = m; i <= chain.size(); i += m) scratch.push_back(chain[i - 1]);
  return scratch;
}

SingleTypeKvCacheManager::Table* SingleTypeKvCacheManager::find_table(const RequestId& id) {
  return const_cast<Table*>(std::as_const(*this).find_table(id));
}

const SingleTypeKvCacheManager::Table* SingleTypeKvCacheManager::find_table(const RequestId& id) const {
  if (memo_ != nullptr && memo_id_ == id) return memo_;
  auto it = tables_.find(id);
  if (it == tables_.end()) return nullptr;
  memo_ = const_cast<Table*>(&it->second);
  memo_id_ = id;
  return memo_;
}

SingleTypeKvCacheManager::Table& SingleTypeKvCacheManager::table_of(const RequestId& id) {
  if (Table* t = find_table(id)) return *t;
  memo_ = &tables_[id];
  memo_id_ = id;
  return *memo_;
}

std::int64_t SingleTypeKvCacheManager::num_evictable(std::span<const BlockId> hit, std::size_t first) const {
  std::int64_t n = 0;
  for (std::size_t i = first; i < hit.size(); ++i) {
    const Block& b = pool_.block(hit[i]);
    n += b.ref_cnt == 0 && !b.is_null ? 1 : 0;
  }
  return n;
}

std::size_t SingleTypeKvCacheManager::null_out_down(std::vector<BlockId>& blocks, std::size_t hi, std::size_t lo) {
  std::vector<BlockId> removed;
  for (std::size_t i = hi; i-- > lo;) {
    // Entries before a null one were nulled by an earlier call.
    if (blocks[i] == pool_.null_block()) break;
    removed.push_back(blocks[i]);
    blocks[i] = pool_.null_block();
  }
  // No call when nothing fell out: a free call is a release on the priority policy's clock.
  if (!removed.empty()) pool_.free_blocks(removed);
  count_nulled(removed.size());
  return removed.size();
}

bool SingleTypeKvCacheManager::lookup_all(const BlockHash& hash, std::span<const KvCacheGroupId> group_ids,
                                          std::vector<BlockId>& out) const {
  out.clear();
  for (KvCacheGroupId g : group_ids) {
    const BlockId b = pool_.get_cached_block(hash, g);
    if (b == kNoBlock) return false;
    out.push_back(b);
  }
  return true;
}

std::int64_t SingleTypeKvCacheManager::num_blocks_to_allocate(const RequestId& id, const SlotDemand& demand,
                                                              std::span<const BlockId> hit,
                                                              std::int64_t max_required_blocks) const {
  const std::int64_t required = std::min(blocks_for(required_tokens(demand)), max_required_blocks);
  if (const Table* table = find_table(id)) {
    return std::max<std::int64_t>(required - static_cast<std::int64_t>(table->blocks.size()), 0);
  }
  const std::int64_t skipped = std::min<std::int64_t>(
      spec_.num_skipped_tokens(demand.total_computed) / spec_.block_size, static_cast<std::int64_t>(hit.size()));
  const std::int64_t n = std::max<std::int64_t>(required - std::max(skipped, static_cast<std::int64_t>(hit.size())), 0);
  // Hit blocks in the free queue leave it when touched: they cost free blocks too.
  return n + num_evictable(hit, static_cast<std::size_t>(skipped));
}

std::size_t SingleTypeKvCacheManager::remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) {
  const std::int64_t skipped_blocks = spec_.num_skipped_tokens(demand.total_computed) / spec_.block_size;
  if (skipped_blocks == 0) return 0;  // full attention always; windows until they slide
  Table* table = find_table(id);
  if (table == nullptr) return 0;
  const auto skipped =
      static_cast<std::size_t>(std::min<std::int64_t>(skipped_blocks, static_cast<std::int64_t>(table->blocks.size())));
  return null_out_down(table->blocks, skipped, 0);
}

void SingleTypeKvCacheManager::allocate_new_computed_blocks(const RequestId& id, std::span<const BlockId> hit,
                                                            std::int64_t total_computed_tokens) {
  KV_CHECK(!is_running(id), "group " << group_id_ << ": cache hits given for running request " << id);
  Table& table = table_of(id);
  const std::size_t skipped = static_cast<std::size_t>(std::min<std::int64_t>(
      spec_.num_skipped_tokens(total_computed_tokens) / spec_.block_size, static_cast<std::int64_t>(hit.size())));
  const std::span<const BlockId> kept = hit.subspan(skipped);
  if (skipped == 0 && std::find(kept.begin(), kept.end(), pool_.null_block()) == kept.end()) {
    table.blocks.assign(kept.begin(), kept.end());  // full attention: every hit block is real
    pool_.touch(kept);
    count_entered(kept.size());
    table.num_cached = table.blocks.size();
    return;
  }
  table.blocks.assign(skipped, pool_.null_block());
  // A chunked hit can hold nulls past the skipped part (a chunk not aligned to blocks): they
  // stay null and are not touched.
  std::vector<BlockId> touched;
  for (BlockId b : hit.subspan(skipped)) {
    table.blocks.push_back(b);
    if (b != pool_.null_block()) touched.push_back(b);
  }
  pool_.touch(touched);
  count_entered(touched.size());
  table.num_cached = table.blocks.size();
}

void SingleTypeKvCacheManager::allocate_new_blocks(const RequestId& id, const SlotDemand& demand,
                                                   std::vector<BlockId>& out) {
  Table& table = table_of(id);
  const std::int64_t n = blocks_for(required_tokens(demand)) - static_cast<std::int64_t>(table.blocks.size());
  if (n <= 0) return;
  const std::size_t first = out.size();
  pool_.get_new_blocks(static_cast<std::size_t>(n), out);
  table.blocks.insert(table.blocks.end(), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
  count_entered(static_cast<std::size_t>(n));
}

void SingleTypeKvCacheManager::cache_blocks(const Request& request, std::int64_t num_tokens) {
  Table* found = find_table(request.id());
  KV_CHECK(found != nullptr, "caching blocks of " << request.id() << ", which holds none");
  Table& table = *found;
  const std::size_t num_full = static_cast<std::size_t>(num_tokens / spec_.block_size);
  if (num_full <= table.num_cached) return;
  std::vector<BlockHash> scratch;
  pool_.cache_full_blocks(table.blocks, block_hashes(request.block_hashes(), scratch), table.num_cached, num_full,
                          group_id_, spec_.block_size, request.tokens(), request.extras());
  table.num_cached = num_full;
}

void SingleTypeKvCacheManager::free(const RequestId& id, const BlockRetention& retention) {
  auto it = tables_.find(id);
  if (it == tables_.end()) return;
  std::vector<BlockId>& blocks = it->second.blocks;
  std::reverse(blocks.begin(), blocks.end());
  pool_.free_blocks(blocks, retention);
  count_nulled(static_cast<std::size_t>(
      std::count_if(blocks.begin(), blocks.end(), [&](BlockId b) { return b != pool_.null_block(); })));
  if (memo_ == &it->second) memo_ = nullptr;
  tables_.erase(it);
}

std::span<const BlockId> SingleTypeKvCacheManager::blocks_of(const RequestId& id) const {
  const Table* table = find_table(id);
  if (table == nullptr) return {};
  return table->blocks;
}

void SingleTypeKvCacheManager::collect_holders(std::vector<Holders>& holders) const {
  for (const auto& entry : tables_) {
    for (BlockId b : entry.second.blocks) {
      if (b == pool_.null_block()) continue;
      Holders& h = holders[static_cast<std::size_t>(b)];
      h.two_groups |= h.count > 0 && h.group != group_id_;
      h.group = group_id_;
      ++h.count;
    }
  }
}

bool SingleTypeKvCacheManager::check(std::string* why) const {
  std::int64_t real = 0;
  for (const auto& entry : tables_) {
    const Table& table = entry.second;
    const auto where = [&] { return "group " + std::to_string(group_id_) + ", request " + entry.first + ": "; };
    if (table.num_cached > table.blocks.size()) {
      *why = where() + "more cached blocks than it holds";
      return false;
    }
    bool seen_real = false;
    for (std::size_t i = 0; i < table.blocks.size(); ++i) {
      const Block& b = pool_.block(table.blocks[i]);
      if (b.is_null) {
        if (seen_real && nulls_form_prefix()) {
          *why = where() + "null block at " + std::to_string(i) + " after a real one";
          return false;
        }
        continue;
      }
      seen_real = true;
      ++real;
      if (b.ref_cnt <= 0 || (i < table.num_cached && (b.hash.empty() || b.group != group_id_))) {
        *why = where() + "block " + std::to_string(b.id) + " at " + std::to_string(i) +
               " is unreferenced or not cached for its group";
        return false;
      }
    }
  }
  if (real != real_entries_) {
    *why = "group " + std::to_string(group_id_) + ": " + std::to_string(real) + " real table entries, counted " +
           std::to_string(real_entries_);
    return false;
  }
  return true;
}

std::vector<std::vector<BlockId>> FullAttentionManager::find_longest_cache_hit(
    std::span<const BlockHash> hashes, std::int64_t max_length, std::span<const KvCacheGroupId> group_ids, bool drop,
    std::int64_t alignment) const {
  std::vector<std::vector<BlockId>> hit(group_ids.size());
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size), hashes.size());
  if (group_ids.size() == 1) {  // the common case: no per-block scratch list
    const KvCacheGroupId g = group_ids.front();
    for (std::size_t i = 0; i < std::min(n, kLookupPrefetch); ++i) pool_.prefetch_cached_block(hashes[i], g);
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kLookupPrefetch < n) pool_.prefetch_cached_block(hashes[i + kLookupPrefetch], g);
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
    std::span<const BlockHash> hashes, std::int64_t max_length, std::span<const KvCacheGroupId> group_ids, bool drop,
    std::int64_t /*alignment*/) const {
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size), hashes.size());
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
    std::span<const BlockHash> hashes, std::int64_t max_length, std::span<const KvCacheGroupId> group_ids, bool drop,
    std::int64_t /*alignment*/) const {
  KV_CHECK(!drop, "eagle with chunked local attention (vLLM refuses it; configs are validated)");
  const std::int64_t chunk_start = max_length / spec_.chunk * spec_.chunk;
  const std::size_t first = static_cast<std::size_t>(chunk_start / spec_.block_size);
  const std::size_t n = std::min(static_cast<std::size_t>(max_length / spec_.block_size), hashes.size());
  std::vector<std::vector<BlockId>> hit(group_ids.size(), std::vector<BlockId>(first, 0));
  std::vector<BlockId> found;
  for (std::size_t i = first; i < n && lookup_all(hashes[i], group_ids, found); ++i) {
    for (std::size_t k = 0; k < found.size(); ++k) hit[k].push_back(found[k]);
  }
  return hit;
}

std::vector<std::vector<BlockId>> CrossAttentionManager::find_longest_cache_hit(
    std::span<const BlockHash> /*hashes*/, std::int64_t /*max_length*/, std::span<const KvCacheGroupId> /*group_ids*/,
    bool /*drop*/, std::int64_t /*alignment*/) const {
  KV_CHECK(false, "a lookup of cross-attention group " << group_id_ << " (vLLM raises; caching must be off)");
  return {};
}

void CrossAttentionManager::cache_blocks(const Request& request, std::int64_t /*num_tokens*/) {
  KV_CHECK(false, "caching cross-attention blocks of " << request.id() << " (vLLM raises; caching must be off)");
}

std::vector<std::vector<BlockId>> RSwaManager::find_longest_cache_hit(std::span<const BlockHash> /*hashes*/,
                                                                      std::int64_t /*max_length*/,
                                                                      std::span<const KvCacheGroupId> /*group_ids*/,
                                                                      bool /*drop*/, std::int64_t /*alignment*/) const {
  KV_CHECK(false, "a lookup of R-SWA group " << group_id_ << " (R-SWA runs with caching off)");
  return {};
}

std::size_t RSwaManager::remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) {
  Table* table = find_table(id);
  if (table == nullptr) return 0;
  const std::int64_t prompt = demand.num_prompt_tokens;
  const std::int64_t b = spec_.block_size;
  // The prompt's blocks and the window's stay; the gap between them goes.
  const auto first = static_cast<std::size_t>((prompt + b - 1) / b);
  const auto end = static_cast<std::size_t>(std::min<std::int64_t>(
      std::max(prompt, demand.total_computed - spec_.window) / b, static_cast<std::int64_t>(table->blocks.size())));
  if (end <= first) return 0;
  return null_out_down(table->blocks, end, first);
}

std::unique_ptr<SingleTypeKvCacheManager> make_single_type_manager(const KvCacheSpec& spec, BlockPool& pool,
                                                                   KvCacheGroupId group_id, int hash_block_size) {
  switch (spec.type) {
    case AttentionType::kSlidingWindow:
      return std::make_unique<SlidingWindowManager>(spec, pool, group_id, hash_block_size);
    case AttentionType::kChunkedLocalAttention:
      return std::make_unique<ChunkedLocalAttentionManager>(spec, pool, group_id, hash_block_size);
    case AttentionType::kFullAttention:
      return std::make_unique<FullAttentionManager>(spec, pool, group_id, hash_block_size);
    case AttentionType::kMamba:
      return std::make_unique<MambaManager>(spec, pool, group_id, hash_block_size);
    case AttentionType::kCrossAttention:
      return std::make_unique<CrossAttentionManager>(spec, pool, group_id, hash_block_size);
    case AttentionType::kRSwa:
      return std::make_unique<RSwaManager>(spec, pool, group_id, hash_block_size);
  }
  KV_CHECK(false, "no manager for attention type " << to_string(spec.type));
  return nullptr;
}

}  // namespace kv
