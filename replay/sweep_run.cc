#include "replay/sweep_run.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <type_traits>

#include "files/output_file.h"
#include "files/output_folder.h"
#include "model/util/parse_number.h"

namespace kv::replay {

namespace {

template <typename T>
StatusOr<std::vector<T>> split_list(const std::string& text, const char* what) {
  std::vector<T> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part.empty()) return Status::error(std::string("empty ") + what + " in '" + text + "'");
    if constexpr (std::is_same_v<T, int>) {
      const std::optional<std::int64_t> v = parse_int64(part);
      if (!v || *v < 1 || *v > 1024)
        return Status::error(std::string(what) + " '" + part + "' is not an integer from 1 to 1024");
      out.push_back(static_cast<int>(*v));
    } else {
      out.push_back(part);
    }
  }
  if (out.empty()) return Status::error(std::string("no ") + what + " given");
  return out;
}

}  // namespace

Status parse_sweep_lists(const SweepLists& lists, SweepOptions& options) {
  auto caps = parse_capacities(lists.capacities);
  if (!caps.ok()) return Status::error("--capacity: " + caps.status().message());
  options.capacities = *caps;
  auto policies = split_list<std::string>(lists.policies, "policy");
  if (!policies.ok()) return Status::error("--policy: " + policies.status().message());
  options.policies = *policies;
  auto blocks = split_list<int>(lists.block_sizes, "block size");
  if (!blocks.ok()) return Status::error("--block-size: " + blocks.status().message());
  options.block_sizes = *blocks;
  return Status();
}

int sweep_threads(int jobs) {
  return jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string default_sweep_dir(const std::vector<std::string>& traces) {
  return "runs/sweep-" + std::filesystem::path(traces.front()).stem().string();
}

Status run_sweep_into_folder(const SweepOptions& options, const std::string& out_dir, bool overwrite,
                             const SweepRunHooks& hooks) {
  auto folder = files::OutputFolder::open(out_dir, overwrite);
  if (!folder.ok()) return folder.status();
  if (hooks.on_start) hooks.on_start(sweep_configs(options).size());
  auto points = run_sweep(options);
  if (hooks.on_end) hooks.on_end();
  if (!points.ok()) return points.status();
  if (Status s = files::write_whole_file((*folder)->staged("sweep.csv"), sweep_csv(*points)); !s.ok()) return s;
  if (hooks.before_commit) hooks.before_commit(*points, (*folder)->staging());
  return (*folder)->commit();
}

StatusOr<std::vector<GridPoint>> vary_grid_points(const ReplayConfig& base, const std::vector<std::string>& vary) {
  if (!base.events.file.empty()) {  // one file per run: kvsim replay writes it
    return Status::error("--kv-events: not supported by kvsim sweep, which replays many times (use kvsim replay)");
  }
  std::vector<GridAxis> axes;
  for (const std::string& v : vary) {
    auto axis = parse_axis(v);
    if (!axis.ok()) return axis.status();
    axes.push_back(*axis);
  }
  return grid_points(base, axes);
}

std::vector<GridPoint> points_of_rank(const std::vector<GridPoint>& points,
                                      const std::function<bool(std::size_t index)>& mine) {
  std::vector<GridPoint> out;
  for (const GridPoint& p : points) {
    if (mine(p.index)) out.push_back(p);
  }
  return out;
}

}  // namespace kv::replay
