#include "replay/grid_sweep.h"

#include <algorithm>

#include "replay/fleet_replay.h"
#include "replay/parallel_indices.h"

namespace kv::replay {

StatusOr<GridAxis> parse_axis(const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return Status::error("--vary: '" + text + "' is not OPTION=V1,V2,...");
  GridAxis axis;
  axis.option = text.substr(0, eq);
  const std::string list = text.substr(eq + 1);
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string v = list.substr(start, comma - start);
    if (v.empty()) return Status::error("--vary " + axis.option + ": empty value in '" + list + "'");
    axis.values.push_back(v);
    start = comma + 1;
  }
  ReplayConfig probe;
  for (const std::string& v : axis.values) {
    if (Status s = set_option(probe, axis.option, v); !s.ok()) return s.with_context("--vary: ");
  }
  return axis;
}

StatusOr<std::vector<GridPoint>> grid_points(const ReplayConfig& base, const std::vector<GridAxis>& axes) {
  std::vector<GridPoint> points(1);
  points[0].config = base;
  for (const GridAxis& axis : axes) {
    std::vector<GridPoint> next;
    for (const GridPoint& p : points) {
      for (const std::string& v : axis.values) {
        GridPoint q = p;
        if (Status s = set_option(q.config, axis.option, v); !s.ok()) return s.with_context("--vary: ");
        q.settings.emplace_back(axis.option, v);
        q.name += (q.name.empty() ? "" : ",") + axis.option + "=" + v;
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    points[i].index = i;
    if (Status s = points[i].config.validate(); !s.ok()) return s.with_context("point " + points[i].name + ": ");
  }
  return points;
}

namespace {

// A point whose configuration asks for a fleet: its figures as one server.
StatusOr<ReplaySummary> run_fleet_point(const GridPoint& p, const std::string& trace, const GridHooks& hooks) {
  auto fleet = FleetReplay::build(p.config, trace);
  if (!fleet.ok()) return fleet.status();
  if (hooks.fleet_before) {
    if (Status s = hooks.fleet_before(p, **fleet); !s.ok()) return s;
  }
  auto summary = (*fleet)->run();
  if (!summary.ok()) return summary.status();
  if (hooks.fleet_after) {
    if (Status s = hooks.fleet_after(p, **fleet, *summary); !s.ok()) return s;
  }
  return std::move(summary->fleet);
}

StatusOr<ReplaySummary> run_point(const GridPoint& p, const std::string& trace, const GridHooks& hooks) {
  if (!p.config.fleet.single_engine()) return run_fleet_point(p, trace, hooks);
  auto run = build_replay(p.config, trace);
  if (!run.ok()) return run.status();
  auto replayer = run->make_replayer(p.config);
  if (hooks.before) {
    if (Status s = hooks.before(p, *run, *replayer); !s.ok()) return s;
  }
  auto summary = replayer->run();
  if (!summary.ok()) return summary.status();
  if (hooks.after) {
    if (Status s = hooks.after(p, *run, *replayer, *summary); !s.ok()) return s;
  }
  return summary;
}

}  // namespace

StatusOr<std::vector<ReplaySummary>> run_grid(const std::vector<GridPoint>& points, const std::string& trace, int jobs,
                                              const GridHooks& hooks) {
  std::vector<StatusOr<ReplaySummary>> results(points.size(), StatusOr<ReplaySummary>(Status::error("not run")));
  for_each_index(
      points.size(), jobs, [&](std::size_t i) { results[i] = run_point(points[i], trace, hooks); }, hooks.on_progress);
  std::vector<ReplaySummary> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) return results[i].status().with_context("point " + points[i].name + ": ");
    out.push_back(std::move(*results[i]));
  }
  return out;
}

}  // namespace kv::replay
