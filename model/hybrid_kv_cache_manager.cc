#include "model/hybrid_kv_cache_manager.h"

#include <algorithm>
#include <limits>

#include "model/check.h"

namespace kv {

HybridKvCacheManager::HybridKvCacheManager(const HybridKvCacheConfig& config)
    : config_(config),
      pool_(config.num_blocks, config.enable_caching, config.free_order, config.enable_kv_events),
      lookup_sets_(lookup_sets(config.groups)) {
  KV_CHECK(!config.groups.empty(), "a KV-cache manager needs at least one group");
  KV_CHECK(config.max_model_len > 0, "max_model_len must be positive");
  for (std::size_t g = 0; g < config.groups.size(); ++g) {
    managers_.push_back(
        make_single_type_manager(config.groups[g].spec, pool_, static_cast<KvCacheGroupId>(g)));
  }
}

HybridCacheHit HybridKvCacheManager::get_computed_blocks(const Request& request) const {
  if (!config_.enable_caching) return {};
  KV_CHECK(request.num_computed_tokens == 0, "lookup of " << request.id() << " after it computed "
                                                          << request.num_computed_tokens);
  // The last token is always recomputed to produce logits.
  const std::int64_t max_length = std::max<std::int64_t>(request.num_tokens() - 1, 0);
  return find_longest_cache_hit(request.block_hashes(), max_length);
}

HybridCacheHit HybridKvCacheManager::find_longest_cache_hit(std::span<const BlockHash> hashes,
                                                            std::int64_t max_length) const {
  HybridCacheHit hit;
  hit.blocks.resize(managers_.size());
  const auto is_full = [&](const std::vector<int>& set) {
    return managers_[static_cast<std::size_t>(set.front())]->spec().type ==
           AttentionType::kFullAttention;
  };
  const auto look_up = [&](const std::vector<int>& set, std::int64_t max) {
    const SingleTypeKvCacheManager& m = *managers_[static_cast<std::size_t>(set.front())];
    const std::vector<KvCacheGroupId> ids(set.begin(), set.end());
    auto found = m.find_longest_cache_hit(hashes, max, ids);
    for (std::size_t k = 0; k < set.size(); ++k) {
      hit.blocks[static_cast<std::size_t>(set[k])] = std::move(found[k]);
    }
    return static_cast<std::int64_t>(hit.blocks[static_cast<std::size_t>(set.front())].size()) *
           m.spec().block_size;
  };
  std::int64_t length = max_length;
  if (lookup_sets_.size() == 1) {
    hit.num_tokens = look_up(lookup_sets_.front(), length);
    return hit;
  }
  // Full attention's hit only shrinks with max_length: it is looked up once, then cut.
  std::vector<std::int64_t> first_hit(lookup_sets_.size(), -1);
  const bool simple = lookup_sets_.size() == 2 && is_full(lookup_sets_.front());
  while (true) {
    std::int64_t current = length;
    for (std::size_t s = 0; s < lookup_sets_.size(); ++s) {
      if (is_full(lookup_sets_[s]) && first_hit[s] >= 0) {
        current = std::min(current, first_hit[s]);
        continue;
      }
      current = look_up(lookup_sets_[s], current);
      if (is_full(lookup_sets_[s])) first_hit[s] = current;
    }
    if (current >= length) break;
    length = current;
    if (simple) break;
  }
  for (const std::vector<int>& set : lookup_sets_) {
    if (!is_full(set)) continue;
    for (int g : set) {
      auto& blocks = hit.blocks[static_cast<std::size_t>(g)];
      const auto keep = static_cast<std::size_t>(
          length / managers_[static_cast<std::size_t>(g)]->spec().block_size);
      if (blocks.size() > keep) blocks.resize(keep);
    }
  }
  hit.num_tokens = length;
  return hit;
}

std::size_t HybridKvCacheManager::blocks_needed(const Request& request, std::int64_t num_tokens,
                                                const HybridCacheHit& hit,
                                                std::int64_t total_computed, bool capped) const {
  std::size_t n = 0;
  for (std::size_t g = 0; g < managers_.size(); ++g) {
    const SingleTypeKvCacheManager& m = *managers_[g];
    const std::span<const BlockId> group_hit =
        hit.blocks.empty() ? std::span<const BlockId>{} : std::span<const BlockId>(hit.blocks[g]);
    const std::int64_t cap =
        capped ? m.spec().max_blocks_per_request(config_.max_model_len,
                                                 config_.max_in_flight_tokens)
               : std::numeric_limits<std::int64_t>::max();
    n += m.num_blocks_to_allocate(request.id(), num_tokens, group_hit, total_computed, cap);
  }
  return n;
}

std::optional<std::vector<std::vector<BlockId>>> HybridKvCacheManager::allocate_slots(
    const Request& request, std::int64_t num_new_tokens, const HybridCacheHit& hit,
    std::int64_t num_lookahead_tokens, bool full_sequence_must_fit) {
  KV_CHECK(num_new_tokens > 0, "allocate of 0 tokens for " << request.id());
  KV_CHECK(hit.blocks.empty() || hit.blocks.size() == managers_.size(),
           "a hit for " << hit.blocks.size() << " groups, the model has " << managers_.size());
  const bool running = holds_blocks(request.id());
  KV_CHECK(!running || hit.num_tokens == 0,
           "cache hits given for " << request.id() << ", which already holds blocks");
  const std::int64_t total = std::min(request.num_computed_tokens + hit.num_tokens,
                                      config_.max_model_len);
  if (full_sequence_must_fit &&
      blocks_needed(request, std::min(request.num_tokens(), config_.max_model_len), hit, total,
                    /*capped=*/true) > pool_.num_free_blocks()) {
    return std::nullopt;
  }
  // Blocks that fell out of a window are freed even if the allocation then fails.
  for (auto& m : managers_) m->remove_skipped_blocks(request.id(), total);
  const std::int64_t slots =
      std::min(total + num_new_tokens + num_lookahead_tokens, config_.max_model_len);
  if (blocks_needed(request, slots, hit, total, /*capped=*/false) > pool_.num_free_blocks()) {
    return std::nullopt;
  }
  if (!running) {
    // Every group touches its hit before any group pops a new block.
    for (std::size_t g = 0; g < managers_.size(); ++g) {
      const std::span<const BlockId> group_hit =
          hit.blocks.empty() ? std::span<const BlockId>{} : std::span<const BlockId>(hit.blocks[g]);
      managers_[g]->allocate_new_computed_blocks(request.id(), group_hit, total);
    }
  }
  std::vector<std::vector<BlockId>> fresh(managers_.size());
  for (std::size_t g = 0; g < managers_.size(); ++g) {
    managers_[g]->allocate_new_blocks(request.id(), slots, fresh[g]);
  }
  if (config_.enable_caching) {
    const std::int64_t to_cache = std::min(total + num_new_tokens, request.num_tokens());
    for (auto& m : managers_) m->cache_blocks(request, to_cache);
  }
  return fresh;
}

void HybridKvCacheManager::free(const RequestId& id) {
  for (auto& m : managers_) m->free(id);
}

bool HybridKvCacheManager::check_invariants(std::string* why) const {
  if (!pool_.check_invariants(why)) return false;
  std::vector<std::vector<KvCacheGroupId>> holders(static_cast<std::size_t>(pool_.num_blocks()));
  for (const auto& m : managers_) {
    if (!m->check(why)) return false;
    m->collect_holders(holders);
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b) {
    const auto& h = holders[static_cast<std::size_t>(b)];
    if (pool_.block(b).ref_cnt != static_cast<int>(h.size())) {
      *why = "block " + std::to_string(b) + " has ref_cnt " +
             std::to_string(pool_.block(b).ref_cnt) + " but " + std::to_string(h.size()) +
             " tables hold it";
      return false;
    }
    if (std::adjacent_find(h.begin(), h.end(), std::not_equal_to<>()) != h.end()) {
      *why = "block " + std::to_string(b) + " is held by two groups";
      return false;
    }
  }
  return true;
}

}  // namespace kv
