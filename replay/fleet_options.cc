#include "replay/fleet_options.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "model/util/parse_number.h"

namespace kv::replay {

Status FleetOptions::validate() const {
  if (replicas < 1 || replicas > 4096) {
    return Status::error("--replicas must be in [1, 4096], got " + std::to_string(replicas));
  }
  if (!(event_delay_ms >= 0 && event_delay_ms <= 3.6e6)) {
    return Status::error("--event-delay-ms must be from 0 to 3.6e6 (an hour)");
  }
  if (!(event_loss >= 0 && event_loss < 1)) {
    return Status::error("--event-loss must be in [0, 1), got " + std::to_string(event_loss));
  }
  auto router_made = fleet::make_router(router, router_params, replicas, 0);
  if (!router_made.ok()) return router_made.status().with_context("--router: ");
  if (prefill_replicas < 0 || (prefill_replicas > 0 && prefill_replicas >= replicas)) {
    return Status::error("--prefill-replicas must leave at least one of the " + std::to_string(replicas) +
                         " --replicas to decode, got " + std::to_string(prefill_replicas));
  }
  if (pd_threshold < 0) return Status::error("--pd-threshold must be >= 0");
  return parse_replica_options(replica_options, replicas).status();
}

const std::set<std::string>& fleet_option_names() {
  static const std::set<std::string> names = {"replicas",         "router",           "router-params",
                                              "event-delay-ms",   "event-loss",       "replica-options",
                                              "prefill-replicas", "kv-transfer-link", "pd-threshold"};
  return names;
}

namespace {

// "R" or "A-B" within [0, replicas).
bool parse_range(const std::string& text, int replicas, int* first, int* last) {
  const std::size_t dash = text.find('-');
  const std::optional<std::int64_t> a = parse_int64(text.substr(0, dash));
  const std::optional<std::int64_t> b = dash == std::string::npos ? a : parse_int64(text.substr(dash + 1));
  if (!a || !b || *a < 0 || *b < *a || *b >= replicas) return false;
  *first = static_cast<int>(*a);
  *last = static_cast<int>(*b);
  return true;
}

}  // namespace

StatusOr<ReplicaOverrides> parse_replica_options(std::string_view text, int replicas) {
  ReplicaOverrides out(static_cast<std::size_t>(std::max(replicas, 0)));
  std::istringstream in{std::string(text)};
  std::string entry;
  while (in >> entry) {
    const auto bad = [&](const std::string& why) {
      return Status::error("--replica-options: '" + entry + "': " + why);
    };
    const std::size_t colon = entry.find(':');
    int first = 0, last = 0;
    if (colon == std::string::npos || !parse_range(entry.substr(0, colon), replicas, &first, &last)) {
      return bad("expected R:OPTION=VALUE or A-B:OPTION=VALUE,... with replicas in [0, " + std::to_string(replicas) +
                 ")");
    }
    std::istringstream pairs(entry.substr(colon + 1));
    std::string pair;
    while (std::getline(pairs, pair, ',')) {
      const std::size_t eq = pair.find('=');
      if (eq == std::string::npos || eq == 0) return bad("'" + pair + "' is not OPTION=VALUE");
      for (int r = first; r <= last; ++r)
        out[static_cast<std::size_t>(r)].emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    }
  }
  return out;
}

StatusOr<fleet::RouterParams> parse_router_params(std::string_view text) {
  fleet::RouterParams out;
  std::istringstream in{std::string(text)};
  std::string pair;
  while (in >> pair) {
    const std::size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::error("--router-params: each parameter is NAME=VALUE, got '" + pair + "'");
    }
    out[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return out;
}

std::string router_params_text(const fleet::RouterParams& params) {
  std::string out;
  for (const auto& [name, value] : params) out += (out.empty() ? "" : " ") + name + "=" + value;
  return out;
}

}  // namespace kv::replay
