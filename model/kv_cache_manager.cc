#include "model/kv_cache_manager.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

bool KvCacheConfig::is_hybrid() const {
  return groups.size() > 1 || (groups.size() == 1 && groups.front().spec.type != AttentionType::kFullAttention);
}

std::vector<KvCacheGroupSpec> KvCacheConfig::effective_groups() const {
  if (!groups.empty()) return groups;
  KvCacheGroupSpec full;
  full.spec.block_size = block_size;
  return {full};
}

int KvCacheConfig::scheduler_block_size() const { return kv::scheduler_block_size(effective_groups()); }

int KvCacheConfig::hash_block_size() const { return kv::hash_block_size(effective_groups(), enable_caching); }

namespace {

// What vLLM refuses or never builds for one group, given the cache settings.
Status validate_group(const KvCacheConfig& config, const KvCacheSpec& spec) {
  if (Status s = validate_spec(spec); !s.ok()) return s;
  if (config.enable_caching && spec.type == AttentionType::kCrossAttention) {
    return Status::error("cross attention needs prefix caching off (vLLM raises on its lookup)");
  }
  if (config.enable_caching && spec.type == AttentionType::kRSwa) {
    return Status::error("R-SWA needs prefix caching off (vLLM's model config turns it off)");
  }
  if (spec.type == AttentionType::kMamba && config.enable_caching == (spec.mamba_mode == MambaCacheMode::kNone)) {
    return Status::error(std::string("Mamba mode ") + to_string(spec.mamba_mode) +
                         " with prefix "
                         "caching " +
                         (config.enable_caching ? "on" : "off") +
                         " (vLLM uses "
                         "none without caching, align or all with it)");
  }
  const int hash_block = config.hash_block_size();
  if (config.enable_caching && spec.block_size % hash_block != 0) {
    return Status::error("block size " + std::to_string(spec.block_size) +
                         " is not a multiple of the hash block size " + std::to_string(hash_block));
  }
  return {};
}

}  // namespace

Status KvCacheConfig::validate() const {
  if (block_size < 1) return Status::error("block_size must be at least 1, got " + std::to_string(block_size));
  if (num_blocks < 2) {
    return Status::error("num_blocks (with the null block) must be at least 2, got " + std::to_string(num_blocks));
  }
  if (max_model_len < 1) return Status::error("max_model_len must be at least 1");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (Status s = validate_group(*this, groups[g].spec); !s.ok()) {
      return s.with_context("KV-cache group " + std::to_string(g) + ": ");
    }
    if (use_eagle && groups[g].spec.type == AttentionType::kChunkedLocalAttention) {
      return Status::error(
          "eagle is not supported with chunked local attention (vLLM refuses "
          "it: KV-cache group " +
          std::to_string(g) + ")");
    }
  }
  if (!groups.empty() && cache_block_size(groups) != block_size) {
    return Status::error("block_size " + std::to_string(block_size) + " is not the smallest group block size " +
                         std::to_string(cache_block_size(groups)));
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
  o.scheduler_block_size = config.scheduler_block_size();
  o.hash_block_size = config.hash_block_size();
  return o;
}

// A group's reach as StepPlan::group_windows states it.
std::int64_t reach_of(const KvCacheSpec& spec) {
  switch (spec.type) {
    case AttentionType::kSlidingWindow:
      return spec.window;
    case AttentionType::kChunkedLocalAttention:
      return -std::int64_t{spec.chunk};
    default:
      return 0;
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
  KV_CHECK(request.num_computed_tokens == 0,
           "lookup of " << request.id() << " after it computed " << request.num_computed_tokens);
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
    const auto real = std::count_if(hit.blocks[g].begin(), hit.blocks[g].end(), [](BlockId id) { return id != 0; });
    group_hit_tokens_[g] += static_cast<std::int64_t>(real) * coordinator_->group(g).spec().block_size;
  }
}

std::optional<GroupBlockIds> KvCacheManager::allocate_slots(const Request& request, std::int64_t num_new_tokens,
                                                            const CacheHit& hit, std::int64_t num_lookahead_tokens,
                                                            bool full_sequence_must_fit,
                                                            std::int64_t num_encoder_tokens) {
  KV_CHECK(num_new_tokens > 0, "allocate of 0 tokens for " << request.id());
  KV_CHECK(hit.blocks.empty() || hit.blocks.size() == num_groups(),
           "a hit for " << hit.blocks.size() << " groups, the model has " << num_groups());
  const RequestId& id = request.id();
  const bool running = holds_blocks(id);
  KV_CHECK(!running || hit.num_tokens == 0, "cache hits given for " << id << ", which already holds blocks");
  const std::int64_t max_len = config_.max_model_len;
  const std::int64_t total = std::min(request.num_computed_tokens + hit.num_tokens, max_len);
  SlotDemand demand;
  demand.total_computed = total;
  demand.num_encoder_tokens = num_encoder_tokens;
  demand.num_prompt_tokens = request.num_prompt_tokens();
  if (full_sequence_must_fit) {
    demand.num_tokens = demand.num_tokens_main_model = std::min(request.num_tokens(), max_len);
    if (coordinator_->num_blocks_to_allocate(id, demand, hit, /*capped=*/true).counted >
        static_cast<std::int64_t>(num_free_blocks())) {
      return std::nullopt;
    }
  }
  demand.num_tokens_main_model = total + num_new_tokens;
  demand.num_tokens = std::min(total + num_new_tokens + num_lookahead_tokens, max_len);
  // Blocks that fell out of a window are freed even if the allocation then fails.
  coordinator_->remove_skipped_blocks(id, demand);
  const auto free = static_cast<std::int64_t>(num_free_blocks());
  const BlockNeed need = coordinator_->num_blocks_to_allocate(id, demand, hit, /*capped=*/false);
  const std::int64_t needed = need.counted;
  // Past vLLM's check, vLLM would run out of blocks half-way (and raise): fail it cleanly.
  if (needed > free || need.taken > free) return std::nullopt;
  if (!running && config_.watermark_blocks > 0 && free - needed < config_.watermark_blocks) {
    return std::nullopt;
  }
  // Every group takes its hit before any group pops a new block.
  if (!running) coordinator_->save_new_computed_blocks(id, hit, total);
  GroupBlockIds fresh = coordinator_->allocate_new_blocks(id, demand);
  // Capped as the slots are, so only held blocks are ever cached; draft tokens never are.
  coordinator_->cache_blocks(request, std::min({total + num_new_tokens, request.num_tokens(), max_len}));
  if (!running) count_group_hits(hit);
  return fresh;
}

void KvCacheManager::free(const Request& request) { coordinator_->free(request.id(), request.retention); }

int KvCacheManager::mamba_align_block_size() const {
  for (std::size_t g = 0; g < num_groups(); ++g) {
    const KvCacheSpec& spec = coordinator_->group(g).spec();
    if (spec.type == AttentionType::kMamba && spec.mamba_mode == MambaCacheMode::kAlign) return spec.block_size;
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

std::vector<int> KvCacheManager::group_state_block_sizes() const {
  std::vector<int> sizes;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    const KvCacheSpec& spec = coordinator_->group(g).spec();
    sizes.push_back(spec.type == AttentionType::kMamba ? spec.block_size : 0);
  }
  return sizes;
}

std::vector<bool> KvCacheManager::group_cross_attention() const {
  std::vector<bool> cross;
  bool any = false;
  for (std::size_t g = 0; g < num_groups(); ++g) {
    cross.push_back(coordinator_->group(g).spec().type == AttentionType::kCrossAttention);
    any = any || cross.back();
  }
  return any ? cross : std::vector<bool>{};
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
