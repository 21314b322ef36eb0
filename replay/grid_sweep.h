// Grid sweeps: replays of one trace over the cross product of any replay options (`--vary
// request-rate=1,2,4 --vary gpu=h100-sxm,h200`), each point a full replay on the simulator.
// Invariants:
//   1. Points are numbered in the cross product's order, the first axis slowest; results are
//      kept by index, so the output is the same bytes whatever the number of threads.
//   2. Every point's configuration is built and validated before any point runs: a bad value
//      is an error naming the option and the value, and nothing is written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "model/util/status.h"
#include "replay/replay_builder.h"
#include "replay/replay_config.h"

namespace kv::replay {

class FleetReplay;
struct FleetSummary;

struct GridAxis {
  std::string option;               // a name of config_options()
  std::vector<std::string> values;  // as the command line gives them
};

// "OPTION=V1,V2,..." -> an axis; the option must exist and every value must be valid for it.
StatusOr<GridAxis> parse_axis(const std::string& text);

struct GridPoint {
  std::size_t index = 0;
  std::vector<std::pair<std::string, std::string>> settings;  // (option, value) per axis
  ReplayConfig config;
  std::string name;  // "request-rate=2,gpu=h200": stable, for folder names
};

// Every point of the grid, in order.
StatusOr<std::vector<GridPoint>> grid_points(const ReplayConfig& base, const std::vector<GridAxis>& axes);

// Observers of one point's run (called from worker threads; each point has its own run). A point
// whose configuration asks for a fleet (config.fleet) runs one (replay/fleet_replay.h) and is
// observed by the fleet_ pair; its result is the fleet's figures as one server.
struct GridHooks {
  std::function<Status(const GridPoint&, ReplayRun&, Replayer&)> before;  // attach observers
  std::function<Status(const GridPoint&, const ReplayRun&, const Replayer&, const ReplaySummary&)> after;
  std::function<Status(const GridPoint&, FleetReplay&)> fleet_before;
  std::function<Status(const GridPoint&, const FleetReplay&, const FleetSummary&)> fleet_after;
  std::function<void(std::size_t done, std::size_t total)> on_progress;  // serialized
};

StatusOr<std::vector<ReplaySummary>> run_grid(const std::vector<GridPoint>& points, const std::string& trace, int jobs,
                                              const GridHooks& hooks);

}  // namespace kv::replay
