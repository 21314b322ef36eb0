// TierLinks: how the simulator costs second-tier KV transfers (docs/tiers.md): the link
// between GPU and host memory (a preset: pcie4, pcie5, nvlink-c2c, or GBPS:LATENCY_US), the
// disk's read bandwidth and latency, and whether a load overlaps the step's compute or
// stalls it.
// Invariants:
//   1. Integer arithmetic only: a transfer of B bytes over a link takes latency_ns +
//      ceil(B * 1e9 / bytes_per_s) ns, the same on every machine.
//   2. A step's loads from one tier are one batched transfer (one latency); disk loads go
//      through the host link at the slower of the two bandwidths, after the disk's latency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/util/status.h"

namespace kv::sim {

struct LinkSpec {
  std::string name;
  std::int64_t bytes_per_s = 0;  // per direction
  std::int64_t latency_ns = 0;   // per batched transfer
};

// pcie4, pcie5, nvlink-c2c, or "GBPS:LATENCY_US" (decimal GB/s, microseconds).
StatusOr<LinkSpec> parse_link(std::string_view text);

enum class TierLoadMode { kOverlap, kStall };

struct TierCostOptions {
  bool enabled = false;  // false: no tier nodes in the step DAG at all
  TierLoadMode load = TierLoadMode::kOverlap;
  LinkSpec host_link;  // GPU <-> host memory
  std::int64_t disk_bytes_per_s = 0;
  std::int64_t disk_latency_ns = 0;
  std::int64_t bytes_per_block = 0;  // the model's KV bytes per block

  // ns of one step's loads: `host_blocks` from host memory and `disk_blocks` from disk.
  std::int64_t load_ns(std::int64_t host_blocks, std::int64_t disk_blocks) const;
  // ns of copying `blocks` GPU blocks out to host memory.
  std::int64_t store_ns(std::int64_t blocks) const;
};

}  // namespace kv::sim
