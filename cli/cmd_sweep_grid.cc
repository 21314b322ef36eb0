// kvsim sweep --vary OPTION=V1,V2 ...: replays of one trace over the cross product of any replay
// options (replay/grid_sweep.h); one run folder per point, a merged sweep.csv and plots
// (reports/grid_outputs.h). This file parses, prints and spreads the points over MPI ranks.

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/mpi_ranks.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "files/output_folder.h"
#include "replay/grid_sweep.h"
#include "replay/sweep_run.h"
#include "reports/grid_outputs.h"
#include "reports/run_folder.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "sweep";

// The command line of a grid sweep other than the replay options, with its defaults.
struct GridArgs {
  std::string trace, out_dir, progress = "auto";
  std::vector<std::string> vary;
  int jobs = 0;
  bool force = false, no_plot = false;
};

po::options_description grid_options(GridArgs& a) {
  po::options_description opts(
      "kvsim sweep --trace T --vary OPTION=V1,V2,... [--vary ...] [replay options]\n\n"
      "Replays T on the simulator at every point of the cross product of the --vary axes (any option\n"
      "of kvsim replay, e.g. --vary request-rate=1,2,4,8 --vary gpu=h100-sxm,h200). Writes one run\n"
      "folder per point under DIR/points/, the merged table DIR/sweep.csv and, with gnuplot,\n"
      "DIR/latency_throughput.png (and goodput.png with --goodput). The same bytes whatever --jobs is,\n"
      "and whatever the number of ranks under mpirun -np N (rank r runs the points i with i % N == r).\n"
      "Exit status: 0 ok, 2 bad usage or bad input.\n\nOptions");
  opts.add_options()("help,h", "show this help")("trace", po::value(&a.trace), "trace file (.kvtrace)")(
      "vary", po::value(&a.vary), "OPTION=V1,V2,...: an axis of the grid (repeat for more)")(
      "out", po::value(&a.out_dir), "output directory (default: runs/grid-<trace>)")(
      "jobs,j", bounded("jobs", &a.jobs), "points run at once (0: one per core)")(
      "force", po::bool_switch(&a.force), "replace the files of an existing non-empty directory")(
      "no-plot", po::bool_switch(&a.no_plot), "write the CSV and run folders only")(
      "progress", po::value(&a.progress)->default_value(a.progress), "auto (on a terminal) | on | off");
  add_config_options(opts);
  return opts;
}

// Rank 0: sweep.csv and the plots from every point's row, the folder put in place.
int write_merged(const std::vector<replay::GridPoint>& points, const std::vector<std::string>& rows,
                 files::OutputFolder& folder, bool no_plot) {
  const std::string& out_dir = folder.dir();
  auto staged = reports::stage_grid_outputs(points, rows, folder, !no_plot);
  if (!staged.ok()) return usage_error(kCommand, staged.status().message());
  if (!staged->plot.ok()) {
    std::cerr << "kvsim sweep: plotting failed: " << staged->plot.message() << "; the CSV is complete\n";
  }
  if (Status s = folder.commit(); !s.ok()) return usage_error(kCommand, s.message());
  std::cout << staged->csv << "  wrote " << out_dir << "/sweep.csv and " << points.size() << " run folders in "
            << out_dir << "/points\n";
  return 0;
}

// Runs this rank's points into the shared staging folder; rank 0 gathers every row and writes
// the merged files. A rank whose partner failed returns 2 without a message of its own.
int run_on_ranks(const GridArgs& a, const std::vector<replay::GridPoint>& points) {
  MpiRanks mpi;
  // Rank 0 locks the output directory and creates the staging folder before any rank writes
  // into it; ranks of one launch share the staging folder by its fixed name.
  const std::string suffix = mpi.size() > 1 ? "tmp-mpi" : "";
  Status ready;
  std::unique_ptr<files::OutputFolder> folder;
  if (mpi.rank() == 0) {
    auto opened = files::OutputFolder::open(a.out_dir, a.force, suffix);
    if (opened.ok())
      folder = std::move(*opened);
    else
      ready = opened.status();
  }
  if (!mpi.all_ok(ready.ok())) return ready.ok() ? 2 : usage_error(kCommand, ready.message());
  const std::string staging = folder ? folder->staging() : files::staging_folder(a.out_dir, suffix);
  const std::vector<replay::GridPoint> mine =
      replay::points_of_rank(points, [&mpi](std::size_t index) { return mpi.mine(index); });
  std::vector<std::unique_ptr<reports::RunFolder>> folders(points.size());
  replay::GridHooks hooks = reports::grid_folder_hooks(staging, folders);
  const bool show = mpi.rank() == 0 && progress_shown(a.progress);
  if (show)
    hooks.on_progress = [](std::size_t d, std::size_t n) { std::fprintf(stderr, "\r  %zu / %zu points ", d, n); };
  const int threads = replay::sweep_threads(a.jobs);
  if (mpi.rank() == 0) {
    std::cout << "kvsim sweep: " << points.size() << " points on " << mpi.size() << " rank(s) x " << threads
              << " threads\n";
  }
  auto results = replay::run_grid(mine, a.trace, threads, hooks);
  if (show) std::fprintf(stderr, "\r%40s\r", "");
  if (!mpi.all_ok(results.ok())) return results.ok() ? 2 : usage_error(kCommand, results.status().message());
  std::vector<std::pair<std::size_t, std::string>> rows;
  for (std::size_t k = 0; k < mine.size(); ++k)
    rows.emplace_back(mine[k].index, reports::grid_point_row(mine[k], (*results)[k]));
  const std::vector<std::string> all = mpi.gather(rows);
  if (mpi.rank() != 0) return 0;
  return write_merged(points, all, *folder, a.no_plot);
}

}  // namespace

int run_grid_sweep(int argc, char** argv) {
  GridArgs a;
  po::options_description opts = grid_options(a);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (a.trace.empty()) return usage_error(kCommand, "--trace is required (kvsim sweep --help)");
  if (a.jobs < 0 || a.jobs > 1024) return usage_error(kCommand, "--jobs: must be from 0 to 1024");
  if (Status s = check_progress_mode(a.progress); !s.ok()) return usage_error(kCommand, s.message());
  replay::ReplayConfig base;
  base.device.verify = sim::VerifyMode::kOff;
  if (Status s = apply_config_options(vm, base); !s.ok()) return usage_error(kCommand, s.message());
  auto points = replay::vary_grid_points(base, a.vary);
  if (!points.ok()) return usage_error(kCommand, points.status().message());
  if (a.out_dir.empty()) a.out_dir = "runs/grid-" + std::filesystem::path(a.trace).stem().string();
  return run_on_ranks(a, *points);
}

}  // namespace kv::cli
