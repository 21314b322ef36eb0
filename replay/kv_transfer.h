// KV transfer between a fleet's prefill and decode engines (disaggregated prefill,
// replay/fleet_replay.h, docs/fleet.md): the link presets and what one handoff moves.
// Invariants:
//   1. transfer_ns(bytes) = bytes / bytes_per_s, rounded up to the nanosecond; 0 bytes cost 0.
//   2. hand_off_blocks changes no decision of either engine: it reads the prefill engine's pool
//      and shadow memory and writes only the decode device's shadow tier copies.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/block_hash.h"
#include "model/util/status.h"
#include "replay/replay_builder.h"

namespace kv::replay {

struct KvTransferLink {
  std::string name;
  double bytes_per_s = 0;
  std::string source;  // where the figure comes from
  std::int64_t transfer_ns(std::int64_t bytes) const;
};

// A preset by name (ib-ndr, roce-200, nvlink-h100, pcie4), or a bandwidth in GB/s ("25").
// An error names --kv-transfer-link and lists the presets.
StatusOr<KvTransferLink> find_kv_transfer_link(std::string_view name_or_gbps);

// A request's prompt blocks `hashes` (within the lookup bound), computed and cached by the
// prefill engine, handed to the decode engine: returns how many of them the decode engine's
// prefix cache lacks (what crosses the link). With shadow verification on both sides, the
// decode device keeps the prefill device's fingerprints of every block as a tier copy, so its
// remote loads check that it reads what the prefill side wrote.
std::int64_t hand_off_blocks(ReplayRun& prefill, ReplayRun& decode, std::span<const BlockHash> hashes);

}  // namespace kv::replay
