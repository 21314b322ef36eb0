// kvsim replay: the main job. Streams a trace through the vLLM-v1 scheduler onto a device
// (the simulator, or the CUDA backend when built), prints a summary and writes a run folder.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/replay_setup.h"
#include "model/replayer.h"
#include "reports/run_folder.h"
#include "traces/replay_source.h"

namespace po = boost::program_options;

namespace kv::cli {

int run_replay(int argc, char** argv) {
  ReplaySetupOptions o;
  std::string trace_path, out_dir, decision_log = "full", progress = "auto";
  bool force = false;
  po::options_description opts(
      "kvsim replay --trace TRACE [options]\n\n"
      "Replays TRACE through vLLM v1's scheduler and KV-cache manager on a device, prints a\n"
      "summary and writes a run folder (summary.json, steps.csv, requests.csv, decisions.log,\n"
      "report.md). Exit status: 0 ok, 1 verification failures, 2 bad input or configuration.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")
      ("trace", po::value(&trace_path), "trace file (.kvtrace; see kvsim gen / convert)")
      ("out", po::value(&out_dir), "run folder to write (default: runs/<trace>-<device>-caching-<on|off>)")
      ("force", po::bool_switch(&force), "replace the run files in an existing non-empty run folder")
      ("decision-log", po::value(&decision_log)->default_value("full"),
       "full: write decisions.log; digest: keep only its SHA-256 (long traces)")
      ("progress", po::value(&progress)->default_value("auto"), "auto (on a terminal) | on | off")
      ("limit", po::value(&o.limit)->default_value(0), "replay only the first N requests (0 = all)");
  add_replay_setup_options(opts, o);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (trace_path.empty()) {
    std::cerr << "kvsim replay: --trace is required (kvsim replay --help)\n";
    return 2;
  }
  if (decision_log != "full" && decision_log != "digest") {
    std::cerr << "kvsim replay: --decision-log must be full or digest, got '" << decision_log << "'\n";
    return 2;
  }
  if (progress != "auto" && progress != "on" && progress != "off") {
    std::cerr << "kvsim replay: --progress must be auto, on or off, got '" << progress << "'\n";
    return 2;
  }

  trace::ReplaySourceOptions src_opts;
  src_opts.seed = o.seed;
  src_opts.limit = o.limit;
  auto source = trace::TraceRequestSource::open(trace_path, src_opts);
  if (!source.ok()) {
    std::cerr << "kvsim replay: " << source.status().message() << "\n";
    return 2;
  }
  auto setup = make_replay_setup(o, (*source)->header());
  if (!setup.ok()) {
    std::cerr << "kvsim replay: " << setup.status().message() << "\n";
    return 2;
  }
  ReplaySetup& s = *setup;

  if (out_dir.empty()) {
    out_dir = "runs/" + std::filesystem::path(trace_path).stem().string() + "-" + o.device + "-caching-" +
              (o.prefix_caching ? "on" : "off");
  }
  auto folder = reports::RunFolder::create(out_dir, force);
  if (!folder.ok()) {
    std::cerr << "kvsim replay: " << folder.status().message() << "\n";
    return 2;
  }

  ReplayOptions ro;
  ro.clock = o.clock == "wall" ? ReplayOptions::Clock::kWall : ReplayOptions::Clock::kVirtual;
  ro.keep_decision_text = decision_log == "full";
  ro.max_steps = o.max_steps;
  ro.check_invariants_every_step = o.check_invariants;
  Replayer replayer(*s.scheduler, *s.device, **source, ro, s.predictor.get());

  const bool show_progress = progress == "on" || (progress == "auto" && isatty(STDERR_FILENO));
  std::int64_t done = 0;
  auto last_print = std::chrono::steady_clock::now();
  replayer.on_step = [&](const StepRecord& r) {
    (*folder)->add_step(r);
    if (!show_progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_print < std::chrono::milliseconds(200)) return;
    last_print = now;
    std::fprintf(stderr, "\r  step %lld  t=%.2fs  done %lld  running %d  waiting %d  kv %.0f%%   ",
                 static_cast<long long>(r.step), static_cast<double>(r.start_us) / 1e6,
                 static_cast<long long>(done), r.running, r.waiting, 100.0 * r.kv_usage);
  };
  replayer.on_request_done = [&](const RequestMetrics& m) {
    (*folder)->add_request(m);
    ++done;
  };

  const auto t0 = std::chrono::steady_clock::now();
  auto summary = replayer.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (show_progress) std::fprintf(stderr, "\r%100s\r", "");
  if (!summary.ok()) {
    std::cerr << "kvsim replay: " << summary.status().message() << "\n";
    return 2;
  }
  const std::string title = "kvsim replay: " + trace_path + " on " + s.device->name() + ", prefix caching " +
                            (o.prefix_caching ? "on" : "off");
  std::cout << reports::format_summary(title, *summary, wall);
  if (Status st = (*folder)->finish(s.config, *summary, replayer.log(), wall, s.device->kernel_times()); !st.ok()) {
    std::cerr << "kvsim replay: " << st.message() << "\n";
    return 2;
  }
  std::cout << "  run folder                " << out_dir << "\n";
  if (summary->requests_total > 0 && summary->requests_rejected == summary->requests_total) {
    std::cerr << "kvsim replay: every request of " << trace_path
              << " was rejected (see requests.csv for each reason); check --max-model-len and the pool size\n";
    return 2;
  }
  if (!summary->violations.empty()) {
    std::cerr << "kvsim replay: KV verification failed: " << summary->violations.front() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace kv::cli
