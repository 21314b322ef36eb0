// FleetOptions: how many engines run behind which router, and how late the router learns
// about them (replay/fleet_replay.h, docs/fleet.md). Part of ReplayConfig, so that `kvsim
// fleet`, `kvsim sweep --vary replicas=...,router=...` and `kvsim capacity` share one option
// table; a plain replay refuses anything but the defaults (one engine).
// Invariants:
//   1. single_engine() exactly when every field has its default.
//   2. validate() accepts a router name and parameters exactly when make_router would.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/router_factory.h"
#include "model/util/status.h"

namespace kv::replay {

struct FleetOptions {
  int replicas = 1;
  std::string router = "round-robin";
  fleet::RouterParams router_params;  // --router-params "NAME=VALUE NAME=VALUE"
  double event_delay_ms = 0;          // KV events and load reports reach the router this late
  double event_loss = 0;              // probability that one batch (events, or a load report) is lost
  // Heterogeneous fleets: "RANGE:OPTION=VALUE,OPTION=VALUE RANGE:..." (RANGE "R" or "A-B"), the
  // engine options some replicas run with instead of the fleet's (--replica-options).
  std::string replica_options;
  // Disaggregated prefill and decode: replicas [0, prefill_replicas) prefill, the rest decode
  // (0: every replica does both). A request of at least pd_threshold prompt tokens is prefilled
  // on the prefill pool, then decoded on the decode pool after its KV crossed kv_transfer_link
  // (replay/kv_transfer.h); a shorter one goes straight to the decode pool.
  int prefill_replicas = 0;
  std::string kv_transfer_link = "ib-ndr";
  std::int64_t pd_threshold = 0;
  bool disaggregated() const { return prefill_replicas > 0; }

  bool single_engine() const {
    return replicas == 1 && router == "round-robin" && router_params.empty() && event_delay_ms == 0 &&
           event_loss == 0 && replica_options.empty() && prefill_replicas == 0 && kv_transfer_link == "ib-ndr" &&
           pd_threshold == 0;
  }
  std::int64_t event_delay_ns() const { return static_cast<std::int64_t>(event_delay_ms * 1e6); }
  Status validate() const;  // names the option at fault
};

// The names of the option table's "Fleet" rows (kvsim replay leaves them out).
const std::set<std::string>& fleet_option_names();

// --replica-options parsed: per replica, the (option, value) pairs it overrides, in order. An
// error names --replica-options and the entry (a replica out of [0, replicas), a malformed
// range or pair); whether an option may differ per replica is the fleet's to check.
using ReplicaOverrides = std::vector<std::vector<std::pair<std::string, std::string>>>;
StatusOr<ReplicaOverrides> parse_replica_options(std::string_view text, int replicas);

// "NAME=VALUE NAME=VALUE" (spaces between pairs) to parameters; an error names --router-params.
StatusOr<fleet::RouterParams> parse_router_params(std::string_view text);
std::string router_params_text(const fleet::RouterParams& params);

}  // namespace kv::replay
