// kvsim sweep: prefix-cache hit rate (and serving metrics) against KV-cache capacity, for each
// trace, eviction policy and block size; configurations run in parallel on a thread pool.
// Writes sweep.csv and, when gnuplot is installed, hit_rate.png/.svg (reports/sweep.h). This
// file parses and prints; the run and its folder are replay/sweep_run.h's.

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "replay/sweep.h"
#include "replay/sweep_run.h"
#include "reports/gnuplot.h"
#include "reports/sweep_plot.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

// The replay options a serving sweep takes (block size and free order are sweep axes).
const std::set<std::string> kServingOptions = {"model",
                                               "gpu",
                                               "gpu-preset-file",
                                               "profile",
                                               "verify",
                                               "cuda-graphs",
                                               "max-num-batched-tokens",
                                               "max-num-seqs",
                                               "max-model-len",
                                               "no-chunked-prefill",
                                               "long-prefill-token-threshold",
                                               "full-sequence-gate",
                                               "hash",
                                               "seed",
                                               "limit",
                                               "max-steps"};

constexpr std::string_view kCommand = "sweep";

constexpr int kMaxJobs = 1024;  // threads at once

// The hit-rate plots into `dir`; false (with a note) when gnuplot is missing or fails.
bool plot(const std::vector<replay::SweepPoint>& points, const std::string& dir, const std::string& title) {
  std::string why;
  if (!reports::gnuplot_available(&why)) {
    std::cerr << "kvsim sweep: no plots: " << why << "; the CSV is complete\n";
    return false;
  }
  if (Status s = reports::plot_sweep(points, dir, title); !s.ok()) {
    std::cerr << "kvsim sweep: plotting failed: " << s.message() << "; the CSV is complete\n";
    return false;
  }
  return true;
}

// The command line of a capacity sweep other than the replay options, with its defaults.
struct SweepArgs {
  std::vector<std::string> traces;
  replay::SweepLists lists;
  std::string mode = "sequence", out_dir, progress = "auto", title;
  int jobs = 0;
  bool force = false, no_plot = false, no_optimum = false;
};

po::options_description sweep_options(SweepArgs& a) {
  po::options_description opts(
      "kvsim sweep --trace T --capacity LIST [options]\n\n"
      "Prefix-cache hit rate against KV-cache capacity (in tokens) for each trace, policy and block\n"
      "size. sequence mode: every request in arrival order is looked up, allocated (whole prompt)\n"
      "and freed on a cache of that capacity -- the cache alone, as the Mooncake paper's Figure 9.\n"
      "serving mode: a full replay on the simulator per configuration (TTFT, TPOT, throughput).\n"
      "Sequence mode also writes rows of policy 'optimum', the offline Belady bound no policy can\n"
      "beat (docs/policies.md; --no-optimum leaves them out); --limit N takes the first N requests.\n"
      "Writes DIR/sweep.csv and, with gnuplot, DIR/hit_rate.png and .svg (serving: ttft_p50.*,\n"
      "throughput.*). The CSV is the same bytes whatever --jobs is.\n"
      "With --vary OPTION=V1,V2 (any kvsim replay option): a grid of full replays instead\n"
      "(kvsim sweep --vary x=1 --help).\n"
      "Exit status: 0 ok, 2 bad usage or bad input.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("trace", po::value(&a.traces),
                                                 "trace file (.kvtrace); repeat for several traces")(
      "capacity", po::value(&a.lists.capacities),
      "capacities in tokens: a list 1e4,3e4,1M,... or a log range FROM:TO:POINTS_PER_DECADE (1e4:1e9:3)")(
      "mode", po::value(&a.mode)->default_value(a.mode), "sequence | serving")(
      "policy", po::value(&a.lists.policies)->default_value(a.lists.policies),
      "eviction policies, comma-separated: lru (vLLM's free queue), lru-unhashed-first, lfu, slru, leaf-lru, "
      "priority (docs/policies.md)")(
      "no-optimum", po::bool_switch(&a.no_optimum),
      "sequence mode: leave out the rows of policy 'optimum' (the offline Belady bound, docs/policies.md)")(
      "block-size", po::value(&a.lists.block_sizes)->default_value(a.lists.block_sizes),
      "block sizes in tokens, comma-separated")("jobs,j", bounded("jobs", &a.jobs),
                                                "configurations run at once (0: one per core)")(
      "out", po::value(&a.out_dir), "output directory (default: runs/sweep-<first trace>)")(
      "force", po::bool_switch(&a.force), "replace the sweep files in an existing non-empty directory")(
      "title", po::value(&a.title), "plot title (default: from the traces and mode)")(
      "no-plot", po::bool_switch(&a.no_plot), "write the CSV only")(
      "progress", po::value(&a.progress)->default_value(a.progress), "auto (on a terminal) | on | off");
  po::options_description serving("Serving mode (the options of kvsim replay; verification is off by default)");
  add_config_options(serving, kServingOptions);
  opts.add(serving);
  return opts;
}

Status check_sweep_args(const SweepArgs& a) {
  if (a.traces.empty()) return Status::error("--trace is required (kvsim sweep --help)");
  if (a.lists.capacities.empty()) return Status::error("--capacity is required, e.g. --capacity 1e4:1e9:3");
  if (a.mode != "sequence" && a.mode != "serving") {
    return Status::error("--mode must be sequence or serving, got '" + a.mode + "'");
  }
  if (Status s = check_progress_mode(a.progress); !s.ok()) return s;
  if (a.jobs < 0 || a.jobs > kMaxJobs) return Status::error("--jobs: must be from 0 to " + std::to_string(kMaxJobs));
  for (const std::string& t : a.traces) {
    if (!std::filesystem::is_regular_file(t)) return Status::error("trace " + t + " does not exist or is not a file");
  }
  return Status();
}

// Serving mode: the replay options into so.serving. Sequence mode: only --limit applies.
Status apply_mode_options(const po::variables_map& vm, replay::SweepOptions& so) {
  if (so.mode == "serving") {
    so.serving.device.verify = sim::VerifyMode::kOff;
    return apply_config_options(vm, so.serving, kServingOptions);
  }
  for (const std::string& name : kServingOptions) {  // the cache alone: no model, no device
    if (name == "limit") continue;                   // sequence mode takes the first N requests too
    if (vm.count(name) && !vm[name].defaulted()) {
      return Status::error("--" + name +
                           " applies to --mode serving; sequence mode runs the prefix cache alone "
                           "(one full-attention group, no model or device)");
    }
  }
  if (vm.count("limit") != 0 && !vm["limit"].defaulted()) {  // the first N requests of each trace
    replay::ReplayConfig limits;
    if (Status s = apply_config_options(vm, limits, {"limit"}); !s.ok()) return s;
    so.limit = limits.run.limit;
  }
  return Status();
}

void print_points(const std::vector<replay::SweepPoint>& points) {
  std::printf("  %-32s %14s %-20s %6s %9s %10s\n", "trace", "capacity", "policy", "block", "hit rate", "evictions");
  for (const replay::SweepPoint& p : points) {
    std::printf("  %-32s %14lld %-20s %6d %9.4f %10lld\n",
                std::filesystem::path(p.config.trace).stem().string().c_str(),
                static_cast<long long>(p.config.capacity_tokens), p.config.policy.c_str(), p.config.block_size,
                p.hit_rate, static_cast<long long>(p.evictions));
  }
}

// Runs the sweep into its folder, with a progress line, the table, the wall time and the plots.
int run_and_print(SweepArgs& a, replay::SweepOptions& so) {
  if (a.out_dir.empty()) a.out_dir = replay::default_sweep_dir(a.traces);
  const bool show = progress_shown(a.progress);
  std::chrono::steady_clock::time_point t0;
  std::size_t total = 0;
  double wall = 0;
  bool plotted = false;
  replay::SweepRunHooks hooks;
  hooks.on_start = [&](std::size_t configurations) {
    t0 = std::chrono::steady_clock::now();
    total = configurations;
    std::cout << "kvsim sweep: " << total << " configurations (" << so.mode << " mode) on " << so.jobs << " threads\n";
  };
  if (show) {
    so.on_progress = [&](std::size_t done, std::size_t n) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\r  %zu / %zu configurations  %.0f s   ", done, n, s);
    };
  }
  hooks.on_end = [&] {
    if (show) std::fprintf(stderr, "\r%60s\r", "");
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  hooks.before_commit = [&](const std::vector<replay::SweepPoint>& points, const std::string& staging) {
    print_points(points);
    std::printf("  wall time %.1f s (%.2f s per configuration per thread)\n", wall,
                wall * static_cast<double>(so.jobs) / static_cast<double>(total));
    plotted = !a.no_plot &&
              plot(points, staging,
                   a.title.empty() ? "Prefix-cache hit rate vs KV-cache capacity (" + a.mode + " mode)" : a.title);
  };
  if (Status s = replay::run_sweep_into_folder(so, a.out_dir, a.force, hooks); !s.ok())
    return usage_error(kCommand, s.message());
  std::cout << "  wrote " << (std::filesystem::path(a.out_dir) / "sweep.csv").string() << "\n";
  if (plotted) std::cout << "  wrote " << a.out_dir << "/hit_rate.png and .svg\n";
  return 0;
}

}  // namespace

int run_sweep(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--vary" || arg.rfind("--vary=", 0) == 0) return run_grid_sweep(argc, argv);
  }
  SweepArgs a;
  po::options_description opts = sweep_options(a);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (Status s = check_sweep_args(a); !s.ok()) return usage_error(kCommand, s.message());
  replay::SweepOptions so;
  so.traces = a.traces;
  so.mode = a.mode;
  if (Status s = replay::parse_sweep_lists(a.lists, so); !s.ok()) return usage_error(kCommand, s.message());
  so.jobs = replay::sweep_threads(a.jobs);
  so.optimum = !a.no_optimum;
  if (Status s = apply_mode_options(vm, so); !s.ok()) return usage_error(kCommand, s.message());
  return run_and_print(a, so);
}

}  // namespace kv::cli
