#include "ops/ops_cache.h"

namespace kv::ops {
namespace {

class SingleGroupCache final : public OpsCache {
 public:
  explicit SingleGroupCache(const KvCacheConfig& config) : manager_(config) {}
  std::size_t num_groups() const override { return 1; }
  OpsHit lookup(const Request& request) override {
    CacheHit hit = manager_.lookup(request);
    return OpsHit{{std::move(hit.blocks)}, hit.num_tokens};
  }
  std::optional<GroupBlocks> allocate(const Request& request, std::int64_t n, const OpsHit& hit,
                                      std::int64_t lookahead, bool fullfit) override {
    CacheHit single;
    if (!hit.blocks.empty()) single.blocks = hit.blocks.front();
    single.num_tokens = hit.num_tokens;
    auto fresh = manager_.allocate(request, n, single, lookahead, fullfit);
    if (!fresh) return std::nullopt;
    return GroupBlocks{std::move(*fresh)};
  }
  void free(const Request& request) override { manager_.free(request); }
  GroupBlocks table(const RequestId& id) const override {
    const auto blocks = manager_.blocks_of(id);
    return {{blocks.begin(), blocks.end()}};
  }
  const BlockPool& pool() const override { return manager_.pool(); }
  const PrefixCacheStats& stats() const override { return manager_.stats(); }
  bool reset_prefix_cache() override { return manager_.reset_prefix_cache(); }
  bool check_invariants(std::string* why) const override { return manager_.check_invariants(why); }
  const KvCacheManager* single_group_manager() const override { return &manager_; }

 private:
  KvCacheManager manager_;
};

class HybridCache final : public OpsCache {
 public:
  explicit HybridCache(const HybridKvCacheConfig& config) : manager_(config) {}
  std::size_t num_groups() const override { return manager_.num_groups(); }
  OpsHit lookup(const Request& request) override {
    HybridCacheHit hit = manager_.get_computed_blocks(request);
    if (hit.blocks.empty()) hit.blocks.resize(manager_.num_groups());  // caching off
    if (manager_.config().enable_caching) {  // counted as KvCacheManager::lookup counts
      ++stats_.lookups;
      stats_.queries += request.num_tokens();
      stats_.hits += hit.num_tokens;
    }
    return OpsHit{std::move(hit.blocks), hit.num_tokens};
  }
  std::optional<GroupBlocks> allocate(const Request& request, std::int64_t n, const OpsHit& hit,
                                      std::int64_t lookahead, bool fullfit) override {
    HybridCacheHit h;
    h.blocks = hit.blocks;
    h.num_tokens = hit.num_tokens;
    if (h.num_tokens == 0) h.blocks.clear();
    return manager_.allocate_slots(request, n, h, lookahead, fullfit);
  }
  void free(const Request& request) override { manager_.free(request.id()); }
  GroupBlocks table(const RequestId& id) const override {
    GroupBlocks out;
    for (std::size_t g = 0; g < manager_.num_groups(); ++g) {
      const auto blocks = manager_.blocks_of(id, g);
      out.emplace_back(blocks.begin(), blocks.end());
    }
    return out;
  }
  const BlockPool& pool() const override { return manager_.pool(); }
  const PrefixCacheStats& stats() const override { return stats_; }
  bool reset_prefix_cache() override { return manager_.reset_prefix_cache(); }
  bool check_invariants(std::string* why) const override { return manager_.check_invariants(why); }

 private:
  HybridKvCacheManager manager_;
  PrefixCacheStats stats_;
};

}  // namespace

std::unique_ptr<OpsCache> make_single_group_cache(const KvCacheConfig& config) {
  return std::make_unique<SingleGroupCache>(config);
}

std::unique_ptr<OpsCache> make_hybrid_cache(const HybridKvCacheConfig& config) {
  return std::make_unique<HybridCache>(config);
}

}  // namespace kv::ops
