// TierOptions: second KV-cache tiers (docs/tiers.md): blocks evicted from GPU memory kept in
// host memory (and on disk) and loaded back on a prefix hit. The "KV tiers" rows of the option
// table write here; the builder derives the core's TierConnectorConfig and the simulator's
// TierCostOptions from it (they need the model's bytes per block).
// Invariants:
//   1. 0 host bytes: no tier at all (the disk tier sits below the host tier).
//   2. validate() checks the tiers on their own; what needs the device or the cache is
//      ReplayConfig::validate()'s.
#pragma once

#include <cstdint>

#include "model/tiers/tier_connector.h"
#include "model/util/status.h"
#include "sim/tier_links.h"

namespace kv::replay {

struct TierOptions {
  TierOptions();  // the pcie5 link

  std::int64_t host_cache_bytes = 0;
  std::int64_t disk_cache_bytes = 0;
  sim::LinkSpec host_link;    // GPU <-> host memory (sim/tier_links.h presets)
  double disk_read_gbps = 7;  // a PCIe 4.0 NVMe SSD's sequential read
  std::int64_t disk_latency_us = 100;
  TierStorePolicy store = TierStorePolicy::kOnEvict;
  sim::TierLoadMode load = sim::TierLoadMode::kOverlap;

  bool enabled() const { return host_cache_bytes > 0; }
  Status validate() const;
  // The simulator's cost of the tiers' transfers, for blocks of `bytes_per_block` (off when
  // no tier is enabled).
  sim::TierCostOptions cost(std::int64_t bytes_per_block) const;
  // The core's connector over the tiers, for blocks of `block_size` tokens and `bytes_per_block`.
  TierConnectorConfig connector(int block_size, std::int64_t bytes_per_block) const;
};

}  // namespace kv::replay
