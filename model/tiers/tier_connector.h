// TierConnector: a KvConnector over a second KV-cache tier in host memory and an optional
// third on disk, as vLLM's offloading connector (CPU offload), LMCache, SGLang's HiCache and
// Mooncake's store keep blocks outside GPU memory. Bookkeeping only: it decides which blocks
// are stored, loaded and dropped and writes those transfers into the StepPlan; the device
// copies (the simulator's shadow memory) and costs them (docs/tiers.md).
// Store policies: kOnEvict saves a cached GPU block when the pool evicts it (write-back);
// kEveryFullBlock saves every block when it becomes full, after the step computed it
// (write-through, as vLLM's offloading connector).
// Invariants:
//   1. A block hash is held by at most one tier. The host tier's least recent entry moves to
//      the disk tier when the host is full (or is dropped when there is no disk tier); the
//      disk tier's least recent entry is dropped. A hit touches the entry where it is (no
//      promotion from disk to host).
//   2. A match is the longest run of tier-held hashes right after the local hit, within the
//      lookup bound (KvConnector invariant 2); looking up changes nothing.
//   3. Every load, store and drop decided while a step is scheduled lands in that step's
//      plan; a hash dropped and stored again in the same step is not listed as dropped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/tiers/kv_connector.h"
#include "model/tiers/tier_cache.h"

namespace kv {

enum class TierStorePolicy { kOnEvict, kEveryFullBlock };

struct TierConnectorConfig {
  int block_size = 16;
  std::int64_t bytes_per_block = 0;       // the model's KV bytes per block (all layers)
  std::int64_t host_capacity_blocks = 0;  // >= 1
  std::int64_t disk_capacity_blocks = 0;  // 0: no disk tier
  TierStorePolicy store = TierStorePolicy::kOnEvict;
};

class TierConnector final : public KvConnector {
 public:
  explicit TierConnector(const TierConnectorConfig& config);

  std::int64_t get_num_new_matched_tokens(const Request& request, std::int64_t num_local_computed) override;
  void update_state_after_alloc(const Request& request, std::span<const BlockId> table, std::int64_t num_local_computed,
                                std::int64_t num_external) override;
  void on_blocks_evicted(std::span<const EvictedBlock> evicted) override;
  void on_request_scheduled(const Request& request, std::span<const BlockId> table, std::int64_t num_computed,
                            std::int64_t num_new) override;
  void build_connector_meta(StepPlan& plan) override;
  std::vector<TierFigures> figures() const override { return figures_; }

  const TierCache& tier(int t) const { return tiers_[static_cast<std::size_t>(t)]; }
  int num_tiers() const { return static_cast<int>(tiers_.size()); }
  // The tier holding `hash` (0 host, 1 disk), or -1.
  int find(const BlockHash& hash) const;
  bool check_invariants(std::string* why) const;

 private:
  // Saves a GPU block's contents under `hash` into the host tier (a held hash is touched).
  void store(BlockId block, const BlockHash& hash, std::vector<TierTransfer>& into);
  void demote(const BlockHash& hash);
  void drop(int t, const BlockHash& hash);

  TierConnectorConfig config_;
  std::vector<TierCache> tiers_;      // [host] or [host, disk]
  std::vector<TierFigures> figures_;  // per tier
  StepPlan pending_;                  // this step's transfers until build_connector_meta
};

}  // namespace kv
