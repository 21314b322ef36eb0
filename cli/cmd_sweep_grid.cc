// kvsim sweep --vary OPTION=V1,V2 ...: replays of one trace over the cross product of any replay
// options (replay/grid_sweep.h); one run folder per point, a merged sweep.csv and plots.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/mpi_ranks.h"
#include "files/output_file.h"
#include "files/output_folder.h"
#include "replay/grid_sweep.h"
#include "reports/gnuplot.h"
#include "reports/grid_report.h"
#include "reports/result_json.h"
#include "reports/run_folder.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

int fail(const std::string& message) {
  std::cerr << "kvsim sweep: " << message << "\n";
  return 2;
}

// A point's folder name: its index and settings, with anything but [A-Za-z0-9._=,-] as '_'.
std::string folder_name(const replay::GridPoint& p) {
  char idx[16];
  std::snprintf(idx, sizeof idx, "%03zu-", p.index);
  std::string name = idx + p.name;
  for (char& c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '=' || c == ',' || c == '-';
    if (!ok) c = '_';
  }
  return name;
}

// Hooks that write one run folder per point under staging/points (the sweep's staging folder
// is put in place as a unit at the end).
replay::GridHooks folder_hooks(const std::string& staging, std::vector<std::unique_ptr<reports::RunFolder>>& folders) {
  replay::GridHooks h;
  h.before = [&folders, staging](const replay::GridPoint& p, replay::ReplayRun&, replay::Replayer& r) -> Status {
    auto folder = reports::RunFolder::create_inside(staging + "/points/" + folder_name(p));
    if (!folder.ok()) return folder.status();
    (*folder)->set_result_date(reports::result_date_from_environment());
    reports::RunFolder* f = folder->get();
    r.on_step = [f](const replay::StepRecord& s) { f->add_step(s); };
    r.on_request_done = [f](const replay::RequestMetrics& m) { f->add_request(m); };
    folders[p.index] = std::move(*folder);
    return {};
  };
  h.after = [&folders](const replay::GridPoint& p, const replay::ReplayRun& run, const replay::Replayer& r,
                       const replay::ReplaySummary& s) {
    return folders[p.index]->finish(run.description, s, r.log(), 0, run.device->kernel_times());
  };
  return h;
}

// Rank 0: sweep.csv and the plots from every point's (CSV row, plot row).
int write_merged(const std::vector<replay::GridPoint>& points, const std::vector<std::string>& rows,
                 files::OutputFolder& folder, bool no_plot) {
  const std::string& out_dir = folder.dir();
  std::string csv = reports::grid_csv_header(points.front());
  std::vector<reports::GridPlotRow> plot_rows;
  for (const std::string& r : rows) {
    const std::size_t cut = r.find('\x1f');
    csv += r.substr(0, cut);
    plot_rows.push_back(reports::GridPlotRow::from_text(r.substr(cut + 1)));
  }
  if (Status s = files::write_whole_file(folder.staged("sweep.csv"), csv); !s.ok()) return fail(s.message());
  std::string why;
  if (!no_plot && reports::gnuplot_available(&why)) {
    if (Status s = reports::plot_grid(plot_rows, folder.staging()); !s.ok()) {
      std::cerr << "kvsim sweep: plotting failed: " << s.message() << "; the CSV is complete\n";
    }
  }
  if (Status s = folder.commit(); !s.ok()) return fail(s.message());
  std::cout << csv << "  wrote " << out_dir << "/sweep.csv and " << points.size() << " run folders in " << out_dir
            << "/points\n";
  return 0;
}

}  // namespace

int run_grid_sweep(int argc, char** argv) {
  std::string trace, out_dir, progress = "auto";
  std::vector<std::string> vary;
  int jobs = 0;
  bool force = false, no_plot = false;
  po::options_description opts(
      "kvsim sweep --trace T --vary OPTION=V1,V2,... [--vary ...] [replay options]\n\n"
      "Replays T on the simulator at every point of the cross product of the --vary axes (any option\n"
      "of kvsim replay, e.g. --vary request-rate=1,2,4,8 --vary gpu=h100-sxm,h200). Writes one run\n"
      "folder per point under DIR/points/, the merged table DIR/sweep.csv and, with gnuplot,\n"
      "DIR/latency_throughput.png (and goodput.png with --goodput). The same bytes whatever --jobs is,\n"
      "and whatever the number of ranks under mpirun -np N (rank r runs the points i with i % N == r).\n"
      "Exit status: 0 ok, 2 bad usage or bad input.\n\nOptions");
  opts.add_options()("help,h", "show this help")("trace", po::value(&trace), "trace file (.kvtrace)")
      ("vary", po::value(&vary), "OPTION=V1,V2,...: an axis of the grid (repeat for more)")
      ("out", po::value(&out_dir), "output directory (default: runs/grid-<trace>)")
      ("jobs,j", po::value(&jobs)->default_value(0), "points run at once (0: one per core)")
      ("force", po::bool_switch(&force), "replace the files of an existing non-empty directory")
      ("no-plot", po::bool_switch(&no_plot), "write the CSV and run folders only")
      ("progress", po::value(&progress)->default_value(progress), "auto (on a terminal) | on | off");
  add_config_options(opts);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (trace.empty()) return fail("--trace is required (kvsim sweep --help)");
  if (jobs < 0 || jobs > 1024) return fail("--jobs: must be from 0 to 1024");
  if (progress != "auto" && progress != "on" && progress != "off") {
    return fail("--progress must be auto, on or off, got '" + progress + "'");
  }
  replay::ReplayConfig base;
  base.device.verify = sim::VerifyMode::kOff;
  if (Status s = apply_config_options(vm, base); !s.ok()) return fail(s.message());
  if (!base.events.file.empty()) {  // one file per run: kvsim replay writes it
    return fail("--kv-events: not supported by kvsim sweep, which replays many times (use kvsim replay)");
  }
  std::vector<replay::GridAxis> axes;
  for (const std::string& v : vary) {
    auto axis = replay::parse_axis(v);
    if (!axis.ok()) return fail(axis.status().message());
    axes.push_back(*axis);
  }
  auto points = replay::grid_points(base, axes);
  if (!points.ok()) return fail(points.status().message());
  if (out_dir.empty()) out_dir = "runs/grid-" + std::filesystem::path(trace).stem().string();
  MpiRanks mpi;
  // Rank 0 locks the output directory and creates the staging folder before any rank writes
  // into it; ranks of one launch share the staging folder by its fixed name.
  const std::string suffix = mpi.size() > 1 ? "tmp-mpi" : "";
  Status ready;
  std::unique_ptr<files::OutputFolder> folder;
  if (mpi.rank() == 0) {
    auto opened = files::OutputFolder::open(out_dir, force, suffix);
    if (opened.ok()) folder = std::move(*opened);
    else ready = opened.status();
  }
  if (!mpi.all_ok(ready.ok())) return ready.ok() ? 2 : fail(ready.message());
  const std::string staging = folder ? folder->staging() : files::staging_folder(out_dir, suffix);
  std::vector<replay::GridPoint> mine;
  for (const replay::GridPoint& p : *points) {
    if (mpi.mine(p.index)) mine.push_back(p);
  }
  std::vector<std::unique_ptr<reports::RunFolder>> folders(points->size());
  replay::GridHooks hooks = folder_hooks(staging, folders);
  const bool show = mpi.rank() == 0 && (progress == "on" || (progress == "auto" && isatty(STDERR_FILENO)));
  if (show) hooks.on_progress = [](std::size_t d, std::size_t n) { std::fprintf(stderr, "\r  %zu / %zu points ", d, n); };
  const int threads = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (mpi.rank() == 0) {
    std::cout << "kvsim sweep: " << points->size() << " points on " << mpi.size() << " rank(s) x " << threads
              << " threads\n";
  }
  auto results = replay::run_grid(mine, trace, threads, hooks);
  if (show) std::fprintf(stderr, "\r%40s\r", "");
  if (!mpi.all_ok(results.ok())) return results.ok() ? 2 : fail(results.status().message());
  std::vector<std::pair<std::size_t, std::string>> rows;
  for (std::size_t k = 0; k < mine.size(); ++k) {
    rows.emplace_back(mine[k].index, reports::grid_csv_row(mine[k], (*results)[k]) + '\x1f' +
                                         reports::grid_plot_row(mine[k], (*results)[k]).to_text());
  }
  const std::vector<std::string> all = mpi.gather(rows);
  if (mpi.rank() != 0) return 0;
  return write_merged(*points, all, *folder, no_plot);
}

}  // namespace kv::cli
