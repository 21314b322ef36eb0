// kvsim replay: the main job. Streams a trace through the vLLM-v1 scheduler onto a device
// (the simulator, or the CUDA backend when built), prints a summary and writes a run folder.

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/progress.h"
#include "files/output_file.h"
#include "replay/replay_builder.h"
#include "reports/result_json.h"
#include "reports/run_folder.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "replay";

// Streams steps and requests into the run folder; on a terminal, a progress line.
void observe(replay::Replayer& replayer, reports::RunFolder& folder, bool show_progress) {
  auto done = std::make_shared<std::int64_t>(0);
  auto last_print = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  replayer.on_step = [&folder, show_progress, done, last_print](const replay::StepRecord& r) {
    folder.add_step(r);
    if (!show_progress) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - *last_print < std::chrono::milliseconds(200)) return;
    *last_print = now;
    std::fprintf(stderr, "\r  step %lld  t=%.2fs  done %lld  running %d  waiting %d  kv %.0f%%   ",
                 static_cast<long long>(r.step), static_cast<double>(r.start_us) / 1e6, static_cast<long long>(*done),
                 r.running, r.waiting, 100.0 * r.kv_usage);
  };
  replayer.on_request_done = [&folder, done](const replay::RequestMetrics& m) {
    folder.add_request(m);
    ++*done;
  };
}

// Exit status of a finished run: 2 if nothing could run, 1 on a verification failure.
int verdict(const replay::ReplaySummary& summary, const std::string& trace_path) {
  if (summary.requests_total > 0 && summary.requests_rejected == summary.requests_total) {
    std::cerr << "kvsim replay: every request of " << trace_path
              << " was rejected (see requests.csv for each reason); check --max-model-len and the pool size\n";
    return 2;
  }
  if (!summary.violations.empty()) {
    std::cerr << "kvsim replay: KV verification failed: " << summary.violations.front() << "\n";
    return 1;
  }
  return 0;
}

Status write_cache_dump(const std::string& path, const Scheduler& scheduler, bool force) {
  std::string text;
  for (const std::string& h : replay::cached_block_hashes(scheduler)) text += h + "\n";
  return files::write_file_atomically(path, text, force).with_context("--dump-cache: ");
}

// The command line of `kvsim replay` other than the replay options, with its defaults.
struct ReplayArgs {
  std::string trace_path, out_dir, decision_log = "full", progress = "auto", dump_cache;
  bool force = false;
};

po::options_description replay_options(ReplayArgs& a) {
  po::options_description opts(
      "kvsim replay --trace TRACE [options]\n\n"
      "Replays TRACE through vLLM v1's scheduler and KV-cache manager (the rules of\n"
      "docs/semantics.md) on a device, prints a summary and writes a run folder (summary.json,\n"
      "steps.csv, requests.csv, decisions.log, kernels.csv, report.md, and result.json in the\n"
      "shape of vllm bench serve's saved result: docs/results.md).\n"
      "Exit status: 0 ok, 1 verification failures, 2 bad input or configuration.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("trace", po::value(&a.trace_path),
                                                 "trace file (.kvtrace; see kvsim gen / convert)")(
      "out", po::value(&a.out_dir), "run folder to write (default: runs/<trace>-<device>-caching-<on|off>)")(
      "force", po::bool_switch(&a.force),
      "replace an existing non-empty run folder (as a whole, once the run is done), and existing --kv-events and "
      "--dump-cache files")("decision-log", po::value(&a.decision_log)->default_value("full"),
                            "full: write decisions.log; digest: keep only its SHA-256 (long traces)")(
      "progress", po::value(&a.progress)->default_value("auto"), "auto (on a terminal) | on | off")(
      "dump-cache", po::value(&a.dump_cache),
      "at the end, write the hash of every cached block to FILE (hex, sorted, one a line; for a hybrid model \"HEX "
      "GROUP\")");
  add_config_options(opts, {}, replay::fleet_option_names());  // a fleet runs with kvsim fleet
  return opts;
}

// The arguments checked before anything runs (an existing --dump-cache file too).
Status check_replay_args(const ReplayArgs& a) {
  if (a.trace_path.empty()) return Status::error("--trace is required (kvsim replay --help)");
  if (a.decision_log != "full" && a.decision_log != "digest") {
    return Status::error("--decision-log must be full or digest, got '" + a.decision_log + "'");
  }
  if (Status s = check_progress_mode(a.progress); !s.ok()) return s;
  std::error_code ec;
  if (!a.dump_cache.empty() && !a.force && std::filesystem::exists(a.dump_cache, ec)) {  // before the run, not after
    return Status::error("--dump-cache: " + a.dump_cache + " exists (use --force to replace it)");
  }
  return Status();
}

// After the run folder: the cache dump, the event sink's close and the injected faults.
int finish_side_outputs(const ReplayArgs& a, replay::ReplayRun& run) {
  if (!a.dump_cache.empty()) {
    if (Status st = write_cache_dump(a.dump_cache, *run.scheduler, a.force); !st.ok())
      return usage_error(kCommand, st.message());
  }
  if (run.events) {
    if (Status st = run.events->close(); !st.ok()) return usage_error(kCommand, st.message());
  }
  if (run.faults != nullptr) {
    for (const std::string& f : run.faults->fired()) std::cerr << "kvsim replay: injected fault: " << f << "\n";
    for (const sim::FaultSpec& f : run.faults->unfired()) {
      return usage_error(kCommand, "--inject-fault " + f.to_string() + " never fired: no step from " +
                                       std::to_string(f.step) +
                                       " on had a target for it (the request not scheduled, or not yet computed)");
    }
  }
  return 0;
}

// Runs the replay into its run folder, prints the summary, then the side outputs and verdict.
int replay_into_folder(ReplayArgs& a, const replay::ReplayConfig& config, replay::ReplayRun& run) {
  const std::string caching = config.scheduler.cache.enable_caching ? "on" : "off";
  if (a.out_dir.empty()) {
    a.out_dir = "runs/" + std::filesystem::path(a.trace_path).stem().string() + "-" +
                (config.device.kind == replay::DeviceKind::kSim ? "sim" : "gpu") + "-caching-" + caching;
  }
  auto folder = reports::RunFolder::create(a.out_dir, a.force);
  if (!folder.ok()) return usage_error(kCommand, folder.status().message());
  (*folder)->set_result_date(reports::result_date_from_environment());
  auto replayer = run.make_replayer(config);
  if (a.decision_log == "full") {
    if (Status st = (*folder)->stream_decisions(); !st.ok()) return usage_error(kCommand, st.message());
    reports::RunFolder* f = folder->get();
    replayer->set_decision_sink([f](std::string_view line) { f->add_decision(line); });
  }
  const bool show_progress = progress_shown(a.progress);
  observe(*replayer, **folder, show_progress);

  const auto t0 = std::chrono::steady_clock::now();
  auto summary = replayer->run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (show_progress) std::fprintf(stderr, "\r%100s\r", "");
  if (!summary.ok()) return usage_error(kCommand, summary.status().message());
  std::cout << reports::format_summary(
      "kvsim replay: " + a.trace_path + " on " + run.device->name() + ", prefix caching " + caching, *summary, wall);
  if (Status st = (*folder)->finish(run.description, *summary, replayer->log(), wall, run.device->kernel_times());
      !st.ok()) {
    return usage_error(kCommand, st.message());
  }
  std::cout << "  run folder                " << a.out_dir << "\n";
  if (summary->overload.overloaded) {
    std::cerr << "kvsim replay: warning: overloaded: " << summary->overload.reason
              << "; the latencies reflect an ever-growing queue (lower --request-rate, or add capacity)\n";
  }
  if (int rc = finish_side_outputs(a, run); rc != 0) return rc;
  return verdict(*summary, a.trace_path);
}

}  // namespace

int run_replay(int argc, char** argv) {
  ReplayArgs a;
  po::options_description opts = replay_options(a);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (Status s = check_replay_args(a); !s.ok()) return usage_error(kCommand, s.message());
  replay::ReplayConfig config;
  if (Status s = apply_config_options(vm, config); !s.ok()) return usage_error(kCommand, s.message());
  config.run.replay.keep_decision_text = false;  // decisions.log is streamed to the run folder
  config.events.overwrite_file = a.force;
  auto run = replay::build_replay(config, a.trace_path);
  if (!run.ok()) return usage_error(kCommand, run.status().message());
  return replay_into_folder(a, config, *run);
}

}  // namespace kv::cli
