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
#include "cli/replay_setup.h"
#include "model/replayer.h"
#include "reports/gnuplot.h"
#include "reports/sweep.h"
#include "traces/replay_source.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

int fail(const std::string& message) {
  std::cerr << "kvsim sweep: " << message << "\n";
  return 2;
}

template <typename T>
StatusOr<std::vector<T>> split_list(const std::string& text, const char* what) {
  std::vector<T> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part.empty()) return Status::error(std::string("empty ") + what + " in '" + text + "'");
    if constexpr (std::is_same_v<T, int>) {
      char* end = nullptr;
      const long v = std::strtol(part.c_str(), &end, 10);
      if (*end != '\0') return Status::error(std::string(what) + " '" + part + "' is not an integer");
      out.push_back(static_cast<int>(v));
    } else {
      out.push_back(part);
    }
  }
  if (out.empty()) return Status::error(std::string("no ") + what + " given");
  return out;
}

// A serving-mode configuration: a full replay on the simulator with the replay setup.
StatusOr<reports::SweepPoint> run_serving(const ReplaySetupOptions& base, const reports::SweepConfig& c,
                                          std::int64_t pool_blocks) {
  ReplaySetupOptions o = base;
  o.device = "sim";
  o.block_size = c.block_size;
  o.num_blocks = pool_blocks;
  o.free_order = c.policy == "lru" ? "classic" : "unhashed_first";
  trace::ReplaySourceOptions so;
  so.seed = o.seed;
  so.limit = o.limit;
  auto source = trace::TraceRequestSource::open(c.trace, so);
  if (!source.ok()) return source.status();
  auto setup = make_replay_setup(o, (*source)->header());
  if (!setup.ok()) return setup.status();
  ReplayOptions ro;
  ro.keep_decision_text = false;
  ro.max_steps = o.max_steps;
  Replayer replayer(*setup->scheduler, *setup->device, **source, ro);
  auto summary = replayer.run();
  if (!summary.ok()) return summary.status();
  const ReplaySummary& s = *summary;
  reports::SweepPoint p;
  p.config = c;
  p.mode = "serving";
  p.pool_blocks = pool_blocks;
  p.lookups = s.cache.lookups;
  p.queries = s.cache.queries;
  p.hits = s.cache.hits;
  p.evictions = s.evictions;
  p.requests = s.requests_total;
  p.unfit_requests = s.requests_rejected;
  p.hit_rate = s.hit_rate;
  p.has_serving = true;
  reports::ServingMetrics& m = p.serving;
  m.requests_finished = s.requests_finished;
  m.requests_rejected = s.requests_rejected;
  m.preemptions = s.preemptions;
  m.ttft_p50_us = s.ttft_us.p50;
  m.ttft_p90_us = s.ttft_us.p90;
  m.tpot_p50_us = s.tpot_us.p50;
  m.tpot_p90_us = s.tpot_us.p90;
  m.e2e_p50_us = s.e2e_us.p50;
  m.e2e_p90_us = s.e2e_us.p90;
  m.simulated_us = s.sim_time_us;
  const double sim_s = static_cast<double>(s.sim_time_us) / 1e6;
  m.output_tokens_per_s = sim_s > 0 ? static_cast<double>(s.output_tokens) / sim_s : 0;
  m.requests_per_s = sim_s > 0 ? static_cast<double>(s.requests_finished) / sim_s : 0;
  return p;
}

}  // namespace

int run_sweep(int argc, char** argv) {
  std::vector<std::string> traces;
  std::string capacity_text, policy_text = "lru", block_text = "16", mode = "sequence", out_dir, progress = "auto";
  std::string title;
  int jobs = 0;
  bool force = false, no_plot = false;
  ReplaySetupOptions ro;
  ro.verify = "off";
  po::options_description opts(
      "kvsim sweep --trace T --capacity LIST [options]\n\n"
      "Prefix-cache hit rate against KV-cache capacity (in tokens) for each trace, policy and block\n"
      "size. sequence mode: every request in arrival order is looked up, allocated (whole prompt)\n"
      "and freed on a cache of that capacity -- the cache alone, as the Mooncake paper's Figure 9.\n"
      "serving mode: a full replay on the simulator per configuration (TTFT, TPOT, throughput).\n"
      "Writes DIR/sweep.csv and, with gnuplot, DIR/hit_rate.png and .svg (serving: ttft_p50.*,\n"
      "throughput.*). The CSV is the same bytes whatever --jobs is.\n"
      "Exit status: 0 ok, 2 bad usage or bad input.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")
      ("trace", po::value(&traces), "trace file (.kvtrace); repeat for several traces")
      ("capacity", po::value(&capacity_text),
       "capacities in tokens: a list 1e4,3e4,1M,... or a log range FROM:TO:POINTS_PER_DECADE (1e4:1e9:3)")
      ("mode", po::value(&mode)->default_value(mode), "sequence | serving")
      ("policy", po::value(&policy_text)->default_value(policy_text),
       "eviction policies, comma-separated: lru (vLLM's free queue), lru-unhashed-first")
      ("block-size", po::value(&block_text)->default_value(block_text), "block sizes in tokens, comma-separated")
      ("jobs,j", po::value(&jobs)->default_value(0), "configurations run at once (0: one per core)")
      ("out", po::value(&out_dir), "output directory (default: runs/sweep-<first trace>)")
      ("force", po::bool_switch(&force), "replace the sweep files in an existing non-empty directory")
      ("title", po::value(&title), "plot title (default: from the traces and mode)")
      ("no-plot", po::bool_switch(&no_plot), "write the CSV only")
      ("progress", po::value(&progress)->default_value(progress), "auto (on a terminal) | on | off");
  po::options_description serving("Serving mode (the replay setup of kvsim replay)");
  serving.add_options()
      ("model", po::value(&ro.model)->default_value(ro.model), "model preset: tiny, llama3-8b, llama3-70b")
      ("gpu", po::value(&ro.gpu)->default_value(ro.gpu), "GPU preset of the simulator")
      ("gpu-preset-file", po::value(&ro.gpu_preset_file), "GPU preset file (kvsim calibrate)")
      ("profile", po::value(&ro.profile), "per-kernel profile CSV for the cost model")
      ("max-num-batched-tokens", po::value(&ro.max_num_batched_tokens)->default_value(ro.max_num_batched_tokens),
       "token budget per step")
      ("max-num-seqs", po::value(&ro.max_num_seqs)->default_value(ro.max_num_seqs), "requests per step")
      ("max-model-len", po::value(&ro.max_model_len)->default_value(ro.max_model_len), "longest sequence")
      ("cuda-graphs", po::value(&ro.cuda_graphs)->default_value(ro.cuda_graphs), "CUDA-graph mode")
      ("seed", po::value(&ro.seed)->default_value(0), "seed of generated output tokens")
      ("limit", po::value(&ro.limit)->default_value(0), "replay only the first N requests (0 = all)");
  opts.add(serving);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (traces.empty()) return fail("--trace is required (kvsim sweep --help)");
  if (capacity_text.empty()) return fail("--capacity is required, e.g. --capacity 1e4:1e9:3");
  if (mode != "sequence" && mode != "serving") return fail("--mode must be sequence or serving, got '" + mode + "'");
  if (progress != "auto" && progress != "on" && progress != "off") {
    return fail("--progress must be auto, on or off, got '" + progress + "'");
  }
  if (jobs < 0) return fail("--jobs must be >= 0");
  for (const std::string& t : traces) {
    if (!std::filesystem::is_regular_file(t)) return fail("trace " + t + " does not exist or is not a file");
  }
  reports::SweepOptions so;
  so.traces = traces;
  so.mode = mode;
  auto caps = reports::parse_capacities(capacity_text);
  if (!caps.ok()) return fail("--capacity: " + caps.status().message());
  so.capacities = *caps;
  auto policies = split_list<std::string>(policy_text, "policy");
  if (!policies.ok()) return fail("--policy: " + policies.status().message());
  so.policies = *policies;
  auto blocks = split_list<int>(block_text, "block size");
  if (!blocks.ok()) return fail("--block-size: " + blocks.status().message());
  so.block_sizes = *blocks;
  so.jobs = jobs > 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  if (mode == "serving") {
    // Validate the replay setup once, before any thread starts.
    ReplaySetupOptions probe = ro;
    probe.num_blocks = 2;
    trace::TraceHeader header;
    if (auto s = make_replay_setup(probe, header); !s.ok()) return fail(s.status().message());
    ro.gpu = probe.gpu;  // a preset file is loaded and registered once, here
    ro.gpu_preset_file.clear();
    so.serving = [ro](const reports::SweepConfig& c, std::int64_t pool) { return run_serving(ro, c, pool); };
  }

  if (out_dir.empty()) out_dir = "runs/sweep-" + std::filesystem::path(traces.front()).stem().string();
  std::error_code ec;
  if (std::filesystem::exists(out_dir, ec)) {
    if (!std::filesystem::is_directory(out_dir, ec)) return fail("output " + out_dir + " exists and is not a directory");
    if (!std::filesystem::is_empty(out_dir, ec) && !force) {
      return fail("output directory " + out_dir + " is not empty (use --force to replace its sweep files)");
    }
  } else if (!std::filesystem::create_directories(out_dir, ec)) {
    return fail("cannot create output directory " + out_dir + ": " + ec.message());
  }

  const bool show = progress == "on" || (progress == "auto" && isatty(STDERR_FILENO));
  const auto t0 = std::chrono::steady_clock::now();
  const std::size_t total = reports::sweep_configs(so).size();
  std::cout << "kvsim sweep: " << total << " configurations (" << mode << " mode) on " << so.jobs << " threads\n";
  if (show) {
    so.on_progress = [&](std::size_t done, std::size_t n) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\r  %zu / %zu configurations  %.0f s   ", done, n, s);
    };
  }
  auto points = reports::run_sweep(so);
  if (show) std::fprintf(stderr, "\r%60s\r", "");
  if (!points.ok()) return fail(points.status().message());
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const std::string csv_path = (std::filesystem::path(out_dir) / "sweep.csv").string();
  {
    std::ofstream f(csv_path, std::ios::binary);
    f << reports::sweep_csv(*points);
    if (!f) return fail("cannot write " + csv_path);
  }
  std::printf("  %-32s %14s %-20s %6s %9s %10s\n", "trace", "capacity", "policy", "block", "hit rate", "evictions");
  for (const reports::SweepPoint& p : *points) {
    std::printf("  %-32s %14lld %-20s %6d %9.4f %10lld\n",
                std::filesystem::path(p.config.trace).stem().string().c_str(),
                static_cast<long long>(p.config.capacity_tokens), p.config.policy.c_str(), p.config.block_size,
                p.hit_rate, static_cast<long long>(p.evictions));
  }
  std::printf("  wall time %.1f s (%.2f s per configuration per thread)\n", wall,
              wall * static_cast<double>(so.jobs) / static_cast<double>(total));
  std::cout << "  wrote " << csv_path << "\n";
  if (no_plot) return 0;
  std::string why;
  if (!reports::gnuplot_available(&why)) {
    std::cerr << "kvsim sweep: no plots: " << why << "; the CSV is complete\n";
    return 0;
  }
  if (title.empty()) {
    title = "Prefix-cache hit rate vs KV-cache capacity (" + mode + " mode)";
  }
  if (Status s = reports::plot_sweep(*points, out_dir, title); !s.ok()) {
    std::cerr << "kvsim sweep: plotting failed: " << s.message() << "; the CSV is complete\n";
    return 0;
  }
  std::cout << "  wrote " << out_dir << "/hit_rate.png and .svg\n";
  return 0;
}

}  // namespace kv::cli
