// Sweep runs: what `kvsim sweep` does between parsing its command line and printing, so that
// the command only parses and prints.
//
//   capacity sweep  parse_sweep_lists builds the SweepOptions lists; run_sweep_into_folder opens
//                   the output folder, runs every configuration (sweep.h), stages sweep.csv,
//                   lets the caller add files (plots) and commits the folder.
//   grid sweep      vary_grid_points builds every point from the base configuration and the
//                   --vary axes (grid_sweep.h); points_of_rank picks those one rank runs.
// Invariants:
//   1. Nothing appears in the output folder unless every configuration ran and sweep.csv was
//      written: the files are staged (files/output_folder.h) and the folder is committed last.
//   2. sweep.csv is the same bytes whatever the number of threads (sweep.h, invariant 1).
//   3. Hooks only observe (print, time, plot into the staging folder); none changes a result.
//   4. No wall clock and no MPI here: the caller times what it shows, and spreads a grid over
//      ranks (cli/mpi_ranks.h).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "model/util/status.h"
#include "replay/grid_sweep.h"
#include "replay/replay_config.h"
#include "replay/sweep.h"

namespace kv::replay {

// The list options of a capacity sweep, as the command line gives them.
struct SweepLists {
  std::string capacities;          // "1e4,3e4,1M" or "FROM:TO:POINTS_PER_DECADE"
  std::string policies = "lru";    // comma-separated policy names
  std::string block_sizes = "16";  // comma-separated, each from 1 to 1024
};

// Sets options.capacities, .policies and .block_sizes; an error names the option
// ("--capacity: ...", "--policy: ...", "--block-size: ...").
Status parse_sweep_lists(const SweepLists& lists, SweepOptions& options);

// Worker threads for `jobs` (0: one per core).
int sweep_threads(int jobs);

// The default output folder of a capacity sweep: runs/sweep-<stem of the first trace>.
std::string default_sweep_dir(const std::vector<std::string>& traces);

struct SweepRunHooks {
  std::function<void(std::size_t configurations)> on_start;  // the folder is open, nothing has run
  std::function<void()> on_end;                              // every configuration ran, or one failed
  // sweep.csv is staged; more files (plots) may be written into `staging` before the commit.
  std::function<void(const std::vector<SweepPoint>& points, const std::string& staging)> before_commit;
};

// Runs the sweep of `options` into `out_dir` (replacing its sweep files only with `overwrite`).
Status run_sweep_into_folder(const SweepOptions& options, const std::string& out_dir, bool overwrite,
                             const SweepRunHooks& hooks);

// Every point of the grid of `base` over the axes "OPTION=V1,V2,..." of `vary`. A base with a
// KV-events file is refused: the sweep replays many times into one file.
StatusOr<std::vector<GridPoint>> vary_grid_points(const ReplayConfig& base, const std::vector<std::string>& vary);

// The points whose index `mine` accepts, in order.
std::vector<GridPoint> points_of_rank(const std::vector<GridPoint>& points,
                                      const std::function<bool(std::size_t index)>& mine);

}  // namespace kv::replay
