#include "replay/fleet_options.h"

#include <sstream>

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
  return {};
}

const std::set<std::string>& fleet_option_names() {
  static const std::set<std::string> names = {"replicas", "router", "router-params", "event-delay-ms", "event-loss"};
  return names;
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
