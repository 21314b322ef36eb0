#include "model/kv_cache_coordinator.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <limits>
#include <numeric>

#include "model/util/check.h"

namespace kv {

KvCacheCoordinator::KvCacheCoordinator(std::span<const KvCacheGroupSpec> groups, BlockPool& pool,
                                       const CoordinatorOptions& options)
    : pool_(pool), options_(options) {
  KV_CHECK(!groups.empty(), "a KV-cache manager needs at least one group");
  if (options_.scheduler_block_size == 0) options_.scheduler_block_size = scheduler_block_size(groups);
  if (options_.hash_block_size == 0) {
    options_.hash_block_size = hash_block_size(groups, options.enable_caching);
  }
  KV_CHECK(options.max_model_len > 0, "max_model_len must be positive");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    KV_CHECK(!options.use_eagle || groups[g].spec.type != AttentionType::kChunkedLocalAttention,
             "eagle with a chunked local attention group (vLLM refuses it)");
    // Without caching nothing is hashed, so no group block needs to map onto the chain.
    managers_.push_back(make_single_type_manager(groups[g].spec, pool, static_cast<KvCacheGroupId>(g),
                                                 options.enable_caching ? options_.hash_block_size : 0));
  }
}

BlockNeed KvCacheCoordinator::num_blocks_to_allocate(const RequestId& id, const SlotDemand& demand, const CacheHit& hit,
                                                     bool capped) const {
  BlockNeed need;
  for (std::size_t g = 0; g < managers_.size(); ++g) {
    const SingleTypeKvCacheManager& m = *managers_[g];
    const AttentionType type = m.spec().type;
    const bool windowed = type == AttentionType::kSlidingWindow || type == AttentionType::kChunkedLocalAttention;
    const std::int64_t cap =
        capped && windowed ? m.spec().max_blocks_per_request(options_.max_model_len, options_.max_in_flight_tokens)
                           : std::numeric_limits<std::int64_t>::max();
    const std::int64_t n = m.num_blocks_to_allocate(id, demand, hit.group(g), cap);
    need.counted += n;
    need.taken += std::max<std::int64_t>(n, 0);
  }
  return need;
}

void KvCacheCoordinator::remove_skipped_blocks(const RequestId& id, const SlotDemand& demand) {
  for (auto& m : managers_) m->remove_skipped_blocks(id, demand);
}

void KvCacheCoordinator::save_new_computed_blocks(const RequestId& id, const CacheHit& hit,
                                                  std::int64_t total_computed) {
  for (std::size_t g = 0; g < managers_.size(); ++g) {
    managers_[g]->allocate_new_computed_blocks(id, hit.group(g), total_computed);
  }
}

GroupBlockIds KvCacheCoordinator::allocate_new_blocks(const RequestId& id, const SlotDemand& demand) {
  GroupBlockIds fresh(managers_.size());
  for (std::size_t g = 0; g < managers_.size(); ++g) {
    managers_[g]->allocate_new_blocks(id, demand, fresh[g]);
  }
  return fresh;
}

void KvCacheCoordinator::cache_blocks(const Request& request, std::int64_t num_tokens) {
  for (auto& m : managers_) m->cache_blocks(request, num_tokens);
}

void KvCacheCoordinator::free(const RequestId& id, const BlockRetention& retention) {
  for (auto& m : managers_) m->free(id, retention);
}

void KvCacheCoordinator::new_step() {
  for (auto& m : managers_) m->new_step();
}

std::int64_t KvCacheCoordinator::max_blocks_per_request(std::int64_t num_tokens) const {
  std::int64_t sum = 0;
  for (const auto& m : managers_) {
    const std::int64_t b = m->spec().block_size;
    sum += std::min((num_tokens + b - 1) / b,
                    m->spec().max_blocks_per_request(options_.max_model_len, options_.max_in_flight_tokens));
  }
  return sum;
}

bool KvCacheCoordinator::check(std::string* why) const {
  std::vector<SingleTypeKvCacheManager::Holders> holders(static_cast<std::size_t>(pool_.num_blocks()));
  for (const auto& m : managers_) {
    if (!m->check(why)) return false;
    m->collect_holders(holders);
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b) {
    const auto& h = holders[static_cast<std::size_t>(b)];
    if (pool_.block(b).ref_cnt != h.count) {
      *why = "block " + std::to_string(b) + " has ref_cnt " + std::to_string(pool_.block(b).ref_cnt) + " but " +
             std::to_string(h.count) + " tables hold it";
      return false;
    }
    if (h.two_groups) {
      *why = "block " + std::to_string(b) + " is held by two groups";
      return false;
    }
  }
  return true;
}

namespace {

// Caching off: no lookup, nothing cached, any number of groups.
class NoPrefixCacheCoordinator final : public KvCacheCoordinator {
 public:
  using KvCacheCoordinator::KvCacheCoordinator;
  const char* name() const override { return "KVCacheCoordinatorNoPrefixCache"; }
  CacheHit find_longest_cache_hit(std::span<const BlockHash> /*hashes*/, std::int64_t /*max_length*/) const override {
    return {};
  }
  void cache_blocks(const Request& /*request*/, std::int64_t /*num_tokens*/) override {}
};

// One group: its own hit, aligned to its block size.
class UnitaryCoordinator final : public KvCacheCoordinator {
 public:
  using KvCacheCoordinator::KvCacheCoordinator;
  const char* name() const override { return "UnitaryKVCacheCoordinator"; }
  CacheHit find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length) const override {
    const SingleTypeKvCacheManager& m = *managers_.front();
    const KvCacheGroupId group = 0;
    std::vector<BlockHash> scratch;
    CacheHit hit;
    auto found = m.find_longest_cache_hit(m.block_hashes(hashes, scratch), max_length, std::span(&group, 1),
                                          options_.use_eagle, m.spec().block_size);
    hit.blocks.assign(std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    hit.num_tokens = static_cast<std::int64_t>(hit.blocks.front().size()) * m.spec().block_size;
    return hit;
  }
};

// Several groups: the fixed point over the lookup sets (docs/hybrid-groups.md).
class HybridCoordinator final : public KvCacheCoordinator {
 public:
  HybridCoordinator(std::span<const KvCacheGroupSpec> groups, BlockPool& pool, const CoordinatorOptions& options)
      : KvCacheCoordinator(groups, pool, options),
        sets_(lookup_sets(groups)),
        alignment_(options_.scheduler_block_size) {
    for (const std::vector<int>& set : sets_) set_ids_.emplace_back(set.begin(), set.end());
  }
  const char* name() const override { return "HybridKVCacheCoordinator"; }
  CacheHit find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length) const override;
  // Each group caches up to the last scheduler block boundary; an eagle group one block more
  // (at most num_tokens).
  void cache_blocks(const Request& request, std::int64_t num_tokens) override;

 private:
  const SingleTypeKvCacheManager& first_of(std::size_t set) const {
    return *managers_[static_cast<std::size_t>(sets_[set].front())];
  }
  bool is_full(std::size_t set) const { return first_of(set).spec().type == AttentionType::kFullAttention; }
  bool is_mamba(std::size_t set) const { return first_of(set).spec().type == AttentionType::kMamba; }
  // Looks set `s` up into hit.blocks; returns its hit in tokens.
  std::int64_t look_up(std::size_t s, std::span<const BlockHash> hashes, std::int64_t limit, bool drop,
                       CacheHit& hit) const;

  std::vector<std::vector<int>> sets_;  // lookup order (full attention first)
  std::vector<std::vector<KvCacheGroupId>> set_ids_;
  std::int64_t alignment_ = 1;  // the scheduler's block size: the lcm of the block sizes
};

void HybridCoordinator::cache_blocks(const Request& request, std::int64_t num_tokens) {
  const std::int64_t aligned = num_tokens / alignment_ * alignment_;
  for (auto& m : managers_) {
    const bool eagle_extra = options_.use_eagle && aligned > 0;
    m->cache_blocks(request, eagle_extra ? std::min(num_tokens, aligned + m->spec().block_size) : aligned);
  }
}

std::int64_t HybridCoordinator::look_up(std::size_t s, std::span<const BlockHash> hashes, std::int64_t limit, bool drop,
                                        CacheHit& hit) const {
  const SingleTypeKvCacheManager& m = first_of(s);
  std::vector<BlockHash> scratch;
  auto found = m.find_longest_cache_hit(m.block_hashes(hashes, scratch), limit, set_ids_[s], drop, alignment_);
  const auto length = static_cast<std::int64_t>(found.front().size()) * m.spec().block_size;
  for (std::size_t k = 0; k < sets_[s].size(); ++k) {
    hit.blocks[static_cast<std::size_t>(sets_[s][k])] = std::move(found[k]);
  }
  return length;
}

CacheHit HybridCoordinator::find_longest_cache_hit(std::span<const BlockHash> hashes, std::int64_t max_length) const {
  CacheHit hit;
  hit.blocks.resize(managers_.size());
  // Full attention's hit only shrinks with the length: it is looked up once, then cut.
  std::vector<std::int64_t> full_hit(sets_.size(), -1);
  // Sets whose eagle drop is done at the current length.
  std::vector<bool> verified(sets_.size(), false);
  const bool simple = sets_.size() == 2 && is_full(0);
  std::int64_t length = max_length, longest = 0;
  while (true) {
    std::int64_t current = length;
    for (std::size_t s = 0; s < sets_.size(); ++s) {
      if (full_hit[s] >= 0) {
        current = std::min(current, full_hit[s]);
        continue;
      }
      const bool drop = options_.use_eagle && !verified[s];
      // An eagle set looks one block further: the block it drops is then not lost. Mamba
      // drops nothing, so it looks no further.
      const std::int64_t limit =
          drop && !is_mamba(s) ? std::min(current + first_of(s).spec().block_size, max_length) : current;
      const std::int64_t found = look_up(s, hashes, limit, drop, hit);
      if (drop) {
        verified[s] = true;
      } else if (found < current) {
        std::fill(verified.begin(), verified.end(), false);
      }
      current = found;
      if (is_full(s)) full_hit[s] = current;
      longest = std::max(longest, current);
    }
    if (current >= length || simple) {
      length = std::min(length, current);
      break;
    }
    length = current;
  }
  for (std::size_t s = 0; s < sets_.size(); ++s) {
    if (!is_full(s)) continue;
    for (int g : sets_[s]) {
      auto& blocks = hit.blocks[static_cast<std::size_t>(g)];
      const std::int64_t b = managers_[static_cast<std::size_t>(g)]->spec().block_size;
      const auto keep = static_cast<std::size_t>((length + b - 1) / b);
      if (blocks.size() > keep) blocks.resize(keep);
    }
  }
  hit.num_tokens = length;
  hit.shared_prefix_boundary = longest > length ? longest : 0;
  return hit;
}

}  // namespace

std::unique_ptr<KvCacheCoordinator> make_kv_cache_coordinator(std::span<const KvCacheGroupSpec> groups, BlockPool& pool,
                                                              const CoordinatorOptions& options) {
  if (!options.enable_caching) return std::make_unique<NoPrefixCacheCoordinator>(groups, pool, options);
  if (groups.size() == 1) return std::make_unique<UnitaryCoordinator>(groups, pool, options);
  return std::make_unique<HybridCoordinator>(groups, pool, options);
}

}  // namespace kv
