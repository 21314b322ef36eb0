#include "model/tiers/tier_connector.h"

#include <algorithm>

#include "model/util/check.h"

namespace kv {

TierConnector::TierConnector(const TierConnectorConfig& config) : config_(config) {
  KV_CHECK(config.block_size > 0 && config.bytes_per_block > 0, "bad tier geometry");
  tiers_.emplace_back(config.host_capacity_blocks);
  figures_.push_back({"host", config.host_capacity_blocks, config.host_capacity_blocks * config.bytes_per_block});
  if (config.disk_capacity_blocks > 0) {
    tiers_.emplace_back(config.disk_capacity_blocks);
    figures_.push_back({"disk", config.disk_capacity_blocks, config.disk_capacity_blocks * config.bytes_per_block});
  }
}

int TierConnector::find(const BlockHash& hash) const {
  for (int t = 0; t < num_tiers(); ++t) {
    if (tiers_[static_cast<std::size_t>(t)].contains(hash)) return t;
  }
  return -1;
}

std::int64_t TierConnector::get_num_new_matched_tokens(const Request& request, std::int64_t num_local_computed) {
  const std::int64_t bs = config_.block_size;
  KV_CHECK(num_local_computed % bs == 0, "local hit of " << num_local_computed << " tokens is not whole blocks");
  const auto& hashes = request.block_hashes();
  const auto bound = std::min<std::int64_t>(std::max<std::int64_t>(request.num_tokens() - 1, 0) / bs,
                                            static_cast<std::int64_t>(hashes.size()));
  std::int64_t i = num_local_computed / bs;
  while (i < bound && find(hashes[static_cast<std::size_t>(i)]) >= 0) ++i;
  return (i - num_local_computed / bs) * bs;
}

void TierConnector::update_state_after_alloc(const Request& request, std::span<const BlockId> table,
                                             std::int64_t num_local_computed, std::int64_t num_external) {
  const std::int64_t bs = config_.block_size;
  const auto& hashes = request.block_hashes();
  for (std::int64_t i = num_local_computed / bs; i < (num_local_computed + num_external) / bs; ++i) {
    const auto k = static_cast<std::size_t>(i);
    KV_CHECK(k < table.size() && k < hashes.size(), "tier load past the table of " << request.id());
    const int t = find(hashes[k]);
    KV_CHECK(t >= 0, "tier load of a block no tier holds, for " << request.id());
    tiers_[static_cast<std::size_t>(t)].touch(hashes[k]);
    pending_.tier_loads.push_back({table[k], hashes[k], t, request.id(), i});
    TierFigures& f = figures_[static_cast<std::size_t>(t)];
    f.hit_tokens += bs;
    if (request.num_preemptions == 0) f.first_hit_tokens += bs;
    ++f.loaded_blocks;
    f.loaded_bytes += config_.bytes_per_block;
  }
}

void TierConnector::drop(int t, const BlockHash& hash) {
  ++figures_[static_cast<std::size_t>(t)].dropped_blocks;
  pending_.tier_dropped.push_back(hash);
}

// The host's least recent entry goes to disk (whose least recent entry is dropped), or is
// dropped when there is no disk tier.
void TierConnector::demote(const BlockHash& hash) {
  if (num_tiers() < 2) {
    drop(0, hash);
    return;
  }
  ++figures_[0].dropped_blocks;
  TierFigures& disk = figures_[1];
  ++disk.stored_blocks;
  disk.stored_bytes += config_.bytes_per_block;
  if (std::optional<BlockHash> gone = tiers_[1].insert(hash)) drop(1, *gone);
  disk.peak_blocks = std::max(disk.peak_blocks, tiers_[1].size());
}

void TierConnector::store(BlockId block, const BlockHash& hash, std::vector<TierTransfer>& into) {
  if (const int t = find(hash); t >= 0) {
    tiers_[static_cast<std::size_t>(t)].touch(hash);
    return;
  }
  // Stored again after a drop in this same step: the drop no longer holds.
  auto& dropped = pending_.tier_dropped;
  dropped.erase(std::remove(dropped.begin(), dropped.end(), hash), dropped.end());
  into.push_back({block, hash, 0, {}, -1});
  TierFigures& host = figures_[0];
  ++host.stored_blocks;
  host.stored_bytes += config_.bytes_per_block;
  if (std::optional<BlockHash> gone = tiers_[0].insert(hash)) demote(*gone);
  host.peak_blocks = std::max(host.peak_blocks, tiers_[0].size());
}

void TierConnector::on_blocks_evicted(std::span<const EvictedBlock> evicted) {
  if (config_.store != TierStorePolicy::kOnEvict) return;
  for (const EvictedBlock& e : evicted) store(e.block, e.hash, pending_.tier_stores_before);
}

void TierConnector::on_request_scheduled(const Request& request, std::span<const BlockId> table,
                                         std::int64_t num_computed, std::int64_t num_new) {
  if (config_.store != TierStorePolicy::kEveryFullBlock) return;
  const std::int64_t bs = config_.block_size;
  const auto& hashes = request.block_hashes();
  const std::int64_t end = std::min((num_computed + num_new) / bs, static_cast<std::int64_t>(hashes.size()));
  for (std::int64_t i = num_computed / bs; i < end; ++i) {
    const auto k = static_cast<std::size_t>(i);
    KV_CHECK(k < table.size(), "full block " << i << " of " << request.id() << " is past its table");
    store(table[k], hashes[k], pending_.tier_stores_after);
  }
}

void TierConnector::build_connector_meta(StepPlan& plan) {
  plan.tier_stores_before = std::move(pending_.tier_stores_before);
  plan.tier_loads = std::move(pending_.tier_loads);
  plan.tier_stores_after = std::move(pending_.tier_stores_after);
  plan.tier_dropped = std::move(pending_.tier_dropped);
  pending_ = StepPlan{};
}

bool TierConnector::check_invariants(std::string* why) const {
  for (const TierCache& t : tiers_) {
    if (!t.check_invariants(why)) return false;
  }
  if (num_tiers() == 2) {
    for (const BlockHash& h : tiers_[1].lru_order()) {
      if (tiers_[0].contains(h)) {
        *why = "block hash " + h.hex() + " is held by both the host and the disk tier";
        return false;
      }
    }
  }
  return true;
}

}  // namespace kv
