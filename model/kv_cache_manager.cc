#include "model/kv_cache_manager.h"

#include <algorithm>

#include "model/check.h"

namespace kv {

bool KvCacheConfig::is_hybrid() const {
  return groups.size() > 1 ||
         (groups.size() == 1 && groups.front().spec.type != AttentionType::kFullAttention);
}

std::vector<KvCacheGroupSpec> KvCacheConfig::effective_groups() const {
  if (!groups.empty()) return groups;
  KvCacheGroupSpec full;
  full.spec.block_size = block_size;
  return {full};
}

Status KvCacheConfig::validate() const {
  if (block_size < 1) return Status::error("block_size must be at least 1, got " + std::to_string(block_size));
  if (num_blocks < 2) {
    return Status::error("num_blocks (with the null block) must be at least 2, got " +
                         std::to_string(num_blocks));
  }
  if (max_model_len < 1) return Status::error("max_model_len must be at least 1");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const KvCacheSpec& spec = groups[g].spec;
    if (Status s = validate_spec(spec); !s.ok()) {
      return s.with_context("KV-cache group " + std::to_string(g) + ": ");
    }
    if (spec.block_size != block_size) {
      return Status::error("KV-cache group " + std::to_string(g) + " has block size " +
                           std::to_string(spec.block_size) + ", the cache " +
                           std::to_string(block_size));
    }
    if (use_eagle && spec.type == AttentionType::kChunkedLocalAttention) {
      return Status::error("eagle is not supported with chunked local attention (vLLM refuses "
                           "it: KV-cache group " + std::to_string(g) + ")");
    }
  }
  return {};
}

namespace {

EvictionPolicyFactory policy_factory(const KvCacheConfig& config, EvictionPolicyFactory given) {
  if (given || config.eviction_policy == EvictionPolicyKind::kLru) return given;
  return [kind = config.eviction_policy](std::span<Block> blocks, FreeOrder order, bool caching) {
    return make_eviction_policy(kind, blocks, order, caching);
  };
}

CoordinatorOptions coordinator_options(const KvCacheConfig& config) {
  CoordinatorOptions o;
  o.enable_caching = config.enable_caching;
  o.use_eagle = config.use_eagle;
  o.max_model_len = config.max_model_len;
  o.max_in_flight_tokens = config.max_in_flight_tokens;
  return o;
}

// A group's reach as StepPlan::group_windows states it.
std::int64_t reach_of(const KvCacheSpec& spec) {
  switch (spec.type) {
    case AttentionType::kSlidingWindow: return spec.window;
    case AttentionType::kChunkedLocalAttention: return -std::int64_t{spec.chunk};
    default: return 0;
  }
}

}  // namespace

KvCacheManager::KvCacheManager(const KvCacheConfig& config, EvictionPolicyFactory make_policy)
    : config_(config),
      pool_(config.num_blocks, config.enable_caching, config.free_order, config.enable_kv_events,
            policy_factory(config, std::move(make_policy))) {
  const Status valid = config.validate();
  KV_CHECK(valid.ok(), valid.message());
  const std::vector<KvCacheGroupSpec> groups = config.effective_groups();
  coordinator_ = make_kv_cache_coordinator(groups, pool_, coordinator_options(config));
  group_hit_tokens_.assign(groups.size(), 0);
}

CacheHit KvCacheManager::get_computed_blocks(const Request& request) {
  if (!config_.enable_caching) return {};
  KV_CHECK(request.num_computed_tokens == 0, "lookup of " << request.id() << " after it computed "
                                                          << request.num_computed_tokens);
  // The last token is always recomputed to produce logits.
  const std::int64_t max_length = std::max<std::int64_t>(request.num_tokens() - 1, 0);
  CacheHit hit = coordinator_->find_longest_cache_hit(request.block_hashes(), max_length);
  count_lookup(request, hit);
  return hit;
}

void KvCacheManager::count_lookup(const Request& request, const CacheHit& hit) {
  if (!config_.log_stats) return;
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

void KvCacheManager::count_group_hits(const CacheHit& hit) {
  for (std::size_t g = 0; g < hit.blocks.size(); ++g) {
    const auto real = std::count_if(hit.blocks[g].begin(), hit.blocks[g].end(),
                                    [](BlockId id) { return id != 0; });
    group_hit_tokens_[g] +=
        static_cast<std::int64_t>(real) * coordinator_->group(g).spec().block_size;
  }
}

std::optional<GroupBlockIds> KvCacheManager::allocate_slots(const Request& request,
                                                            std::int64_t num_new_tokens,
                                                            const CacheHit& hit,
                                                            std::int64_t num_lookahead_tokens,
                                                            bool full_sequence_must_fit) {
  KV_CHECK(num_new_tokens > 0, "allocate of 0 tokens for " << request.id());
  KV_CHECK(hit.blocks.empty() || hit.blocks.size() == num_groups(),
           "a hit for " << hit.blocks.size() << " groups, the model has " << num_groups());
  const RequestId& id = request.id();
  const bool running = holds_blocks(id);
  KV_CHECK(!running || hit.num_tokens == 0,
           "cache hits given for " << id << ", which already holds blocks");
  const std::int64_t max_len = config_.max_model_len;
  const std::int64_t total = std::min(request.num_computed_tokens + hit.num_tokens, max_len);
  if (full_sequence_must_fit &&
      coordinator_->num_blocks_to_allocate(id, std::min(request.num_tokens(), max_len), hit,
                                           total, /*capped=*/true) > num_free_blocks()) {
    return std::nullopt;
  }
  // Blocks that fell out of a window are freed even if the allocation then fails.
  coordinator_->remove_skipped_blocks(id, total);
  const std::int64_t slots = std::min(total + num_new_tokens + num_lookahead_tokens, max_len);
  const std::size_t free = num_free_blocks();
  const std::size_t needed =
      coordinator_->num_blocks_to_allocate(id, slots, hit, total, /*capped=*/false);
  if (needed > free) return std::nullopt;
  if (!running && config_.watermark_blocks > 0 &&
      free - needed < static_cast<std::size_t>(config_.watermark_blocks)) {
    return std::nullopt;
  }
  // Every group takes its hit before any group pops a new block.
  if (!running) coordinator_->save_new_computed_blocks(id, hit, total);
  GroupBlockIds fresh = coordinator_->allocate_new_blocks(id, slots);
  // Capped as the slots are, so only held blocks are ever cached; draft tokens never are.
  coordinator_->cache_blocks(request, std::min({total + num_new_tokens, request.num_tokens(), max_len}));
  if (!running) count_group_hits(hit);
  return fresh;
}

void KvCacheManager::free(const Request& request) {
  coordinator_->free(request.id(), request.retention);
}

int KvCacheManager::mamba_align_block_size() const {
  for (std::size_t g = 0; g < num_groups(); ++g) {
    const KvCacheSpec& spec = coordinator_->group(g).spec();
    if (spec.type == AttentionType::kMamba) return spec.block_size;
  }
  return 0;
}

int KvCacheManager::num_common_prefix_blocks(const RequestId& id, int num_running) const {
  if (tables_per_group()) return 0;
  return coordinator_->group(0).num_common_prefix_blocks(id, num_running);
}

std::vector<std::int64_t> KvCacheManager::group_reaches() const {
  std::vector<std::int64_t> reaches;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    reaches.push_back(reach_of(coordinator_->group(g).spec()));
  }
  return reaches;
}

std::vector<std::int64_t> KvCacheManager::blocks_in_use_per_group() const {
  std::vector<std::int64_t> in_use;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    in_use.push_back(coordinator_->group(g).num_blocks_in_use());
  }
  return in_use;
}

bool KvCacheManager::check_invariants(std::string* why) const {
  return pool_.check_invariants(why) && coordinator_->check(why);
}

}  // namespace kv
