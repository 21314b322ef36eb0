#include "replay/tier_options.h"

#include <cmath>

namespace kv::replay {

TierOptions::TierOptions() { host_link = sim::parse_link("pcie5").value(); }

Status TierOptions::validate() const {
  if (!enabled() && disk_cache_bytes > 0) {
    return Status::error("--disk-cache-bytes: needs --host-cache-bytes (the disk tier is below it)");
  }
  return {};
}

sim::TierCostOptions TierOptions::cost(std::int64_t bytes_per_block) const {
  sim::TierCostOptions t;
  if (!enabled()) return t;
  t.enabled = true;
  t.load = load;
  t.host_link = host_link;
  t.disk_bytes_per_s = static_cast<std::int64_t>(std::llround(disk_read_gbps * 1e9));
  t.disk_latency_ns = disk_latency_us * 1000;
  t.bytes_per_block = bytes_per_block;
  return t;
}

TierConnectorConfig TierOptions::connector(int block_size, std::int64_t bytes_per_block) const {
  TierConnectorConfig tc;
  tc.block_size = block_size;
  tc.bytes_per_block = bytes_per_block;
  tc.host_capacity_blocks = host_cache_bytes / bytes_per_block;
  tc.disk_capacity_blocks = disk_cache_bytes / bytes_per_block;
  tc.store = store;
  return tc;
}

}  // namespace kv::replay
