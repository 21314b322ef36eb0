#include "model/kv_cache_manager.h"

#include <algorithm>
#include <map>

#include "model/check.h"

namespace kv {

KvCacheManager::KvCacheManager(const KvCacheConfig& config, EvictionPolicyFactory make_policy)
    : config_(config),
      pool_(config.num_blocks, config.enable_caching, config.free_order, config.enable_kv_events,
            make_policy || config.eviction_policy == EvictionPolicyKind::kLru
                ? std::move(make_policy)
                : EvictionPolicyFactory([kind = config.eviction_policy](std::span<Block> blocks, FreeOrder order,
                                                                        bool caching) {
                    return make_eviction_policy(kind, blocks, order, caching);
                  })) {
  KV_CHECK(config.block_size > 0, "block_size must be positive");
  KV_CHECK(config.max_model_len > 0, "max_model_len must be positive");
}

std::size_t KvCacheManager::blocks_for(std::int64_t num_tokens) const {
  const auto b = static_cast<std::int64_t>(config_.block_size);
  return static_cast<std::size_t>((num_tokens + b - 1) / b);
}

CacheHit KvCacheManager::lookup(const Request& request) {
  CacheHit hit;
  if (!config_.enable_caching) return hit;
  KV_CHECK(request.num_computed_tokens == 0, "lookup of " << request.id() << " after it computed "
                                                          << request.num_computed_tokens);
  // The last token is always recomputed to produce logits.
  const std::size_t max_blocks =
      static_cast<std::size_t>(std::max<std::int64_t>(request.num_tokens() - 1, 0) /
                               config_.block_size);
  const auto& hashes = request.block_hashes();
  const std::size_t n = std::min(max_blocks, hashes.size());
  for (std::size_t i = 0; i < n; ++i) {
    const BlockId b = pool_.get_cached_block(hashes[i]);
    if (b == kNoBlock) break;
    hit.blocks.push_back(b);
  }
  if (config_.use_eagle && !hit.blocks.empty()) hit.blocks.pop_back();
  hit.num_tokens = static_cast<std::int64_t>(hit.blocks.size()) * config_.block_size;
  if (config_.log_stats) {
    if (request.num_preemptions > 0) {
      ++stats_.preempted_lookups;
      stats_.preempted_queries += request.num_tokens();
      stats_.preempted_hits += hit.num_tokens;
    } else {
      ++stats_.lookups;
      stats_.queries += request.num_tokens();
      stats_.hits += hit.num_tokens;
    }
  }
  return hit;
}

std::size_t KvCacheManager::blocks_needed(std::int64_t num_tokens, const RequestBlocks* held,
                                          const CacheHit& hit) const {
  const std::size_t required = blocks_for(num_tokens);
  if (held != nullptr) return required > held->blocks.size() ? required - held->blocks.size() : 0;
  std::size_t n = required > hit.blocks.size() ? required - hit.blocks.size() : 0;
  // Hit blocks sitting in the free queue leave it, so they count against free capacity.
  for (BlockId b : hit.blocks) n += pool_.block(b).ref_cnt == 0 ? 1 : 0;
  return n;
}

std::optional<std::vector<BlockId>> KvCacheManager::allocate(const Request& request,
                                                             std::int64_t num_new_tokens,
                                                             const CacheHit& hit,
                                                             std::int64_t lookahead,
                                                             bool full_sequence_must_fit) {
  KV_CHECK(num_new_tokens > 0, "allocate of 0 tokens for " << request.id());
  auto it = req_blocks_.find(request.id());
  RequestBlocks* held = it == req_blocks_.end() ? nullptr : &it->second;
  KV_CHECK(held == nullptr || hit.blocks.empty(),
           "cache hits given for " << request.id() << ", which already holds blocks");

  const std::int64_t computed =
      std::min(request.num_computed_tokens + hit.num_tokens, config_.max_model_len);
  const std::size_t free = pool_.num_free_blocks();

  if (full_sequence_must_fit &&
      blocks_needed(std::min(request.num_tokens(), config_.max_model_len), held, hit) > free) {
    return std::nullopt;
  }
  const std::int64_t slots =
      std::min(computed + num_new_tokens + lookahead, config_.max_model_len);
  const std::size_t needed = blocks_needed(slots, held, hit);
  if (needed > free) return std::nullopt;
  if (held == nullptr && config_.watermark_blocks > 0 &&
      free - needed < static_cast<std::size_t>(config_.watermark_blocks)) {
    return std::nullopt;
  }

  if (held == nullptr) {
    held = &req_blocks_[request.id()];
    pool_.touch(hit.blocks);
    held->blocks = hit.blocks;
    held->num_cached = hit.blocks.size();
  }
  std::vector<BlockId> fresh;
  const std::size_t required = blocks_for(slots);
  if (required > held->blocks.size()) {
    pool_.get_new_blocks(required - held->blocks.size(), fresh);
    held->blocks.insert(held->blocks.end(), fresh.begin(), fresh.end());
  }

  if (config_.enable_caching) {
    // Capped by max_model_len as the slots are, so only held blocks are ever cached (vLLM
    // rejects longer requests before they reach here; the core must not abort on them).
    const std::int64_t to_cache =
        std::min({computed + num_new_tokens, request.num_tokens(), config_.max_model_len});
    const std::size_t num_full = static_cast<std::size_t>(to_cache / config_.block_size);
    if (num_full > held->num_cached) {
      pool_.cache_full_blocks(held->blocks, request.block_hashes(), held->num_cached, num_full,
                              config_.block_size, request.tokens(), request.extras());
      held->num_cached = num_full;
    }
  }
  return fresh;
}

void KvCacheManager::free(const Request& request) {
  auto it = req_blocks_.find(request.id());
  if (it == req_blocks_.end()) return;
  std::vector<BlockId>& blocks = it->second.blocks;
  std::reverse(blocks.begin(), blocks.end());
  pool_.free_blocks(blocks, request.retention);
  req_blocks_.erase(it);
}

bool KvCacheManager::reset_prefix_cache() { return pool_.reset_prefix_cache(); }

std::span<const BlockId> KvCacheManager::blocks_of(const RequestId& id) const {
  auto it = req_blocks_.find(id);
  if (it == req_blocks_.end()) return {};
  return it->second.blocks;
}

int KvCacheManager::num_common_prefix_blocks(const RequestId& id, int num_running) const {
  int n = 0;
  for (BlockId b : blocks_of(id)) {
    if (pool_.block(b).ref_cnt != num_running) break;
    ++n;
  }
  return n;
}

bool KvCacheManager::check_invariants(std::string* why) const {
  if (!pool_.check_invariants(why)) return false;
  // Ordered by block id so the first failure reported is deterministic.
  std::map<BlockId, int> holders;
  for (const auto& [id, rb] : req_blocks_) {
    for (BlockId b : rb.blocks) ++holders[b];
    if (rb.num_cached > rb.blocks.size()) {
      *why = "request " + id + " claims more cached blocks than it holds";
      return false;
    }
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b) {
    auto h = holders.find(b);
    const int expect = h == holders.end() ? 0 : h->second;
    if (pool_.block(b).ref_cnt != expect) {
      *why = "block " + std::to_string(b) + " has ref_cnt " +
             std::to_string(pool_.block(b).ref_cnt) + " but " + std::to_string(expect) +
             " live requests hold it";
      return false;
    }
  }
  return true;
}

}  // namespace kv
