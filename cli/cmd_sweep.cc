// kvsim sweep: prefix-cache hit rate (and serving metrics) against KV-cache capacity, for each
// trace, eviction policy and block size; configurations run in parallel on a thread pool.
// Writes sweep.csv and, when gnuplot is installed, hit_rate.png/.svg (reports/sweep.h).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "files/output_file.h"
#include "files/output_folder.h"
#include "model/util/parse_number.h"
#include "replay/sweep.h"
#include "reports/gnuplot.h"
#include "reports/sweep_plot.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

// The replay options a serving sweep takes (block size and free order are sweep axes).
const std::set<std::string> kServingOptions = {
    "model", "gpu", "gpu-preset-file", "profile", "verify", "cuda-graphs", "max-num-batched-tokens",
    "max-num-seqs", "max-model-len", "no-chunked-prefill", "long-prefill-token-threshold", "full-sequence-gate",
    "hash", "seed", "limit", "max-steps"};

int fail(const std::string& message) {
  std::cerr << "kvsim sweep: " << message << "\n";
  return 2;
}

constexpr int kMaxJobs = 1024;  // threads at once

template <typename T>
StatusOr<std::vector<T>> split_list(const std::string& text, const char* what) {
  std::vector<T> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part.empty()) return Status::error(std::string("empty ") + what + " in '" + text + "'");
    if constexpr (std::is_same_v<T, int>) {
      const std::optional<std::int64_t> v = parse_int64(part);
      if (!v || *v < 1 || *v > 1024) return Status::error(std::string(what) + " '" + part + "' is not an integer from 1 to 1024");
      out.push_back(static_cast<int>(*v));
    } else {
      out.push_back(part);
    }
  }
  if (out.empty()) return Status::error(std::string("no ") + what + " given");
  return out;
}

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

}  // namespace

int run_sweep(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--vary" || a.rfind("--vary=", 0) == 0) return run_grid_sweep(argc, argv);
  }
  std::vector<std::string> traces;
  std::string capacity_text, policy_text = "lru", block_text = "16", mode = "sequence", out_dir, progress = "auto";
  std::string title;
  int jobs = 0;
  bool force = false, no_plot = false, no_optimum = false;
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
  opts.add_options()("help,h", "show this help")
      ("trace", po::value(&traces), "trace file (.kvtrace); repeat for several traces")
      ("capacity", po::value(&capacity_text),
       "capacities in tokens: a list 1e4,3e4,1M,... or a log range FROM:TO:POINTS_PER_DECADE (1e4:1e9:3)")
      ("mode", po::value(&mode)->default_value(mode), "sequence | serving")
      ("policy", po::value(&policy_text)->default_value(policy_text),
       "eviction policies, comma-separated: lru (vLLM's free queue), lru-unhashed-first, lfu, slru, leaf-lru, "
       "priority (docs/policies.md)")
      ("no-optimum", po::bool_switch(&no_optimum),
       "sequence mode: leave out the rows of policy 'optimum' (the offline Belady bound, docs/policies.md)")
      ("block-size", po::value(&block_text)->default_value(block_text), "block sizes in tokens, comma-separated")
      ("jobs,j", po::value(&jobs)->default_value(0), "configurations run at once (0: one per core)")
      ("out", po::value(&out_dir), "output directory (default: runs/sweep-<first trace>)")
      ("force", po::bool_switch(&force), "replace the sweep files in an existing non-empty directory")
      ("title", po::value(&title), "plot title (default: from the traces and mode)")
      ("no-plot", po::bool_switch(&no_plot), "write the CSV only")
      ("progress", po::value(&progress)->default_value(progress), "auto (on a terminal) | on | off");
  po::options_description serving("Serving mode (the options of kvsim replay; verification is off by default)");
  add_config_options(serving, kServingOptions);
  opts.add(serving);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (traces.empty()) return fail("--trace is required (kvsim sweep --help)");
  if (capacity_text.empty()) return fail("--capacity is required, e.g. --capacity 1e4:1e9:3");
  if (mode != "sequence" && mode != "serving") return fail("--mode must be sequence or serving, got '" + mode + "'");
  if (progress != "auto" && progress != "on" && progress != "off") {
    return fail("--progress must be auto, on or off, got '" + progress + "'");
  }
  if (jobs < 0 || jobs > kMaxJobs) return fail("--jobs: must be from 0 to " + std::to_string(kMaxJobs));
  for (const std::string& t : traces) {
    if (!std::filesystem::is_regular_file(t)) return fail("trace " + t + " does not exist or is not a file");
  }
  replay::SweepOptions so;
  so.traces = traces;
  so.mode = mode;
  auto caps = replay::parse_capacities(capacity_text);
  if (!caps.ok()) return fail("--capacity: " + caps.status().message());
  so.capacities = *caps;
  auto policies = split_list<std::string>(policy_text, "policy");
  if (!policies.ok()) return fail("--policy: " + policies.status().message());
  so.policies = *policies;
  auto blocks = split_list<int>(block_text, "block size");
  if (!blocks.ok()) return fail("--block-size: " + blocks.status().message());
  so.block_sizes = *blocks;
  so.jobs = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  so.optimum = !no_optimum;
  if (mode == "serving") {
    so.serving.device.verify = sim::VerifyMode::kOff;
    if (Status s = apply_config_options(vm, so.serving, kServingOptions); !s.ok()) return fail(s.message());
  } else {
    for (const std::string& name : kServingOptions) {  // the cache alone: no model, no device
      if (name == "limit") continue;  // sequence mode takes the first N requests too
      if (vm.count(name) && !vm[name].defaulted()) {
        return fail("--" + name + " applies to --mode serving; sequence mode runs the prefix cache alone "
                    "(one full-attention group, no model or device)");
      }
    }
    if (vm.count("limit") != 0 && !vm["limit"].defaulted()) {  // the first N requests of each trace
      replay::ReplayConfig limits;
      if (Status s = apply_config_options(vm, limits, {"limit"}); !s.ok()) return fail(s.message());
      so.limit = limits.run.limit;
    }
  }

  if (out_dir.empty()) out_dir = "runs/sweep-" + std::filesystem::path(traces.front()).stem().string();
  auto folder = files::OutputFolder::open(out_dir, force);
  if (!folder.ok()) return fail(folder.status().message());

  const bool show = progress == "on" || (progress == "auto" && isatty(STDERR_FILENO));
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t total = replay::sweep_configs(so).size();
  std::cout << "kvsim sweep: " << total << " configurations (" << mode << " mode) on " << so.jobs << " threads\n";
  if (show) {
    so.on_progress = [&](std::size_t done, std::size_t n) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\r  %zu / %zu configurations  %.0f s   ", done, n, s);
    };
  }
  auto points = replay::run_sweep(so);
  if (show) std::fprintf(stderr, "\r%60s\r", "");
  if (!points.ok()) return fail(points.status().message());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::string csv_path = (std::filesystem::path(out_dir) / "sweep.csv").string();
  if (Status s = files::write_whole_file((*folder)->staged("sweep.csv"), replay::sweep_csv(*points)); !s.ok()) {
    return fail(s.message());
  }
  std::printf("  %-32s %14s %-20s %6s %9s %10s\n", "trace", "capacity", "policy", "block", "hit rate", "evictions");
  for (const replay::SweepPoint& p : *points) {
    std::printf("  %-32s %14lld %-20s %6d %9.4f %10lld\n",
                std::filesystem::path(p.config.trace).stem().string().c_str(),
                static_cast<long long>(p.config.capacity_tokens), p.config.policy.c_str(), p.config.block_size,
                p.hit_rate, static_cast<long long>(p.evictions));
  }
  std::printf("  wall time %.1f s (%.2f s per configuration per thread)\n", wall,
              wall * static_cast<double>(so.jobs) / static_cast<double>(total));
  const bool plotted = !no_plot && plot(*points, (*folder)->staging(), title.empty() ?
      "Prefix-cache hit rate vs KV-cache capacity (" + mode + " mode)" : title);
  if (Status s = (*folder)->commit(); !s.ok()) return fail(s.message());
  std::cout << "  wrote " << csv_path << "\n";
  if (plotted) std::cout << "  wrote " << out_dir << "/hit_rate.png and .svg\n";
  return 0;
}

}  // namespace kv::cli
