// kvsim fleet: N engines, each a `kvsim replay` engine, behind a router that reads their KV
// events and load reports late (replay/fleet_replay.h, docs/fleet.md). Prints the fleet's
// summary and one line per replica, and writes a run folder: the fleet's files (summary.json,
// result.json, requests.csv, decisions.log of the routes, report.md), replicas.csv, and one
// replica-R/ run folder per engine.

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/progress.h"
#include "replay/fleet_replay.h"
#include "replay/replayer.h"
#include "reports/result_json.h"
#include "reports/run_folder.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "fleet";

struct FleetArgs {
  std::string trace_path, out_dir, decision_log = "full", progress = "auto";
  bool force = false;
};

po::options_description fleet_options(FleetArgs& a) {
  po::options_description opts(
      "kvsim fleet --trace TRACE --replicas N --router R [options]\n\n"
      "Replays TRACE through N engines -- each the engine of kvsim replay, with every replay option\n"
      "below -- behind a router on one virtual clock (docs/fleet.md). The router sees the engines\n"
      "only through their KV events and load reports, --event-delay-ms late.\n"
      "Writes a run folder: the fleet's summary.json, result.json (vllm bench serve's shape),\n"
      "requests.csv, decisions.log (the routes) and report.md; replicas.csv; replica-R/ per engine.\n"
      "Exit status: 0 ok, 1 verification failures, 2 bad input or configuration.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("trace", po::value(&a.trace_path), "trace file (.kvtrace)")(
      "out", po::value(&a.out_dir), "run folder to write (default: runs/<trace>-fleet-<router>-<N>)")(
      "force", po::bool_switch(&a.force), "replace an existing non-empty run folder")(
      "decision-log", po::value(&a.decision_log)->default_value(a.decision_log),
      "full: each replica-R/ gets its decisions.log; digest: keep only their SHA-256 (long traces)")(
      "progress", po::value(&a.progress)->default_value(a.progress), "auto (on a terminal) | on | off");
  add_config_options(opts, replay::fleet_option_names());
  po::options_description engine("Engine options (each replica's, as kvsim replay takes them)");
  add_config_options(engine, {}, replay::fleet_option_names());
  opts.add(engine);
  return opts;
}

std::string replicas_csv(const replay::FleetSummary& s) {
  std::ostringstream o;
  o << "replica,routed,requests_finished,requests_rejected,prompt_tokens,output_tokens,hit_rate,"
       "request_hit_rate,preemptions,steps,sim_time_us,ttft_p50_us,ttft_p90_us,e2e_p90_us,digest\n";
  for (std::size_t r = 0; r < s.replicas.size(); ++r) {
    const replay::ReplaySummary& e = s.replicas[r].summary;
    o << r << ',' << s.replicas[r].routed << ',' << e.requests_finished << ',' << e.requests_rejected << ','
      << e.prompt_tokens << ',' << e.output_tokens << ',' << e.hit_rate << ',' << e.request_hit_rate << ','
      << e.preemptions << ',' << e.steps << ',' << e.sim_time_us << ',' << e.ttft_us.p50 << ',' << e.ttft_us.p90 << ','
      << e.e2e_us.p90 << ',' << e.digest << '\n';
  }
  return o.str();
}

void print_replicas(const replay::FleetSummary& s) {
  std::printf("  %-8s %8s %9s %9s %12s %12s\n", "replica", "routed", "hit rate", "preempt", "TTFT p90 ms",
              "busy until s");
  for (std::size_t r = 0; r < s.replicas.size(); ++r) {
    const replay::ReplaySummary& e = s.replicas[r].summary;
    std::printf("  %-8zu %8lld %8.1f%% %9lld %12.1f %12.2f\n", r, static_cast<long long>(s.replicas[r].routed),
                100 * e.hit_rate, static_cast<long long>(e.preemptions), static_cast<double>(e.ttft_us.p90) / 1000,
                static_cast<double>(e.sim_time_us) / 1e6);
  }
  std::printf("  load imbalance (max/mean routed)  %.3f\n", s.load_imbalance);
  std::printf("  router notices delivered / lost   %lld / %lld\n", static_cast<long long>(s.events_delivered),
              static_cast<long long>(s.events_lost));
  if (s.pd.requests + s.pd.prefill_rejected == 0) return;
  std::printf("  disaggregated: handed off        %lld (%lld refused by prefill)\n",
              static_cast<long long>(s.pd.requests), static_cast<long long>(s.pd.prefill_rejected));
  std::printf(
      "  KV sent / loaded blocks           %lld / %lld (%.2f GB over the link, %.1f ms mean transfer)\n",
      static_cast<long long>(s.pd.blocks_sent), static_cast<long long>(s.pd.blocks_loaded),
      static_cast<double>(s.pd.bytes_sent) / 1e9,
      s.pd.requests > 0 ? static_cast<double>(s.pd.transfer_ns) / 1e6 / static_cast<double>(s.pd.requests) : 0.0);
}

// Each engine streams its steps, requests and decisions into its own replica-R/ folder.
// `folders` must outlive the run (the observers hold it).
Status open_replica_folders(replay::FleetReplay& fleet, reports::RunFolder& top, int n, bool decisions,
                            std::vector<std::unique_ptr<reports::RunFolder>>& folders) {
  for (int r = 0; r < n; ++r) {
    auto f = top.child("replica-" + std::to_string(r));
    if (!f.ok()) return f.status();
    if (decisions) {
      if (Status s = (*f)->stream_decisions(); !s.ok()) return s;
      reports::RunFolder* raw = f->get();
      fleet.engine(r).set_decision_sink([raw](std::string_view line) { raw->add_decision(line); });
    }
    folders.push_back(std::move(*f));
  }
  fleet.on_step = [&folders](int r, const replay::StepRecord& rec) {
    folders[static_cast<std::size_t>(r)]->add_step(rec);
  };
  fleet.on_request_done = [&folders, &top, &fleet](int r, const replay::RequestMetrics& m) {
    folders[static_cast<std::size_t>(r)]->add_request(m);
    if (!fleet.is_prefill(r) || m.status == "rejected") top.add_request(m);  // the client's requests
  };
  return {};
}

// A progress line on standard error, five times a second at most (after the folders' observers).
void show_progress(replay::FleetReplay& fleet) {
  auto done = std::make_shared<std::int64_t>(0);
  auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
  fleet.on_request_done = [done, inner = fleet.on_request_done](int r, const replay::RequestMetrics& m) {
    if (inner) inner(r, m);
    ++*done;
  };
  fleet.on_step = [done, last, inner = fleet.on_step](int r, const replay::StepRecord& rec) {
    if (inner) inner(r, rec);
    const auto now = std::chrono::steady_clock::now();
    if (now - *last < std::chrono::milliseconds(200)) return;
    *last = now;
    std::fprintf(stderr, "\r  replica %d at t=%.2fs  requests done %lld   ", r, static_cast<double>(rec.start_us) / 1e6,
                 static_cast<long long>(*done));
  };
}

int run_into_folder(FleetArgs& a, const replay::FleetOptions& options, replay::FleetReplay& fleet) {
  if (a.out_dir.empty()) {
    a.out_dir = "runs/" + std::filesystem::path(a.trace_path).stem().string() + "-fleet-" + options.router + "-" +
                std::to_string(options.replicas);
  }
  auto top = reports::RunFolder::create(a.out_dir, a.force);
  if (!top.ok()) return usage_error(kCommand, top.status().message());
  (*top)->set_result_date(reports::result_date_from_environment());
  std::vector<std::unique_ptr<reports::RunFolder>> folders;
  if (Status s = open_replica_folders(fleet, **top, options.replicas, a.decision_log == "full", folders); !s.ok())
    return usage_error(kCommand, s.message());
  const bool progress = progress_shown(a.progress);
  if (progress) show_progress(fleet);
  const auto t0 = std::chrono::steady_clock::now();
  auto summary = fleet.run();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (progress) std::fprintf(stderr, "\r%80s\r", "");
  if (!summary.ok()) return usage_error(kCommand, summary.status().message());
  std::cout << reports::format_summary("kvsim fleet: " + a.trace_path + ", " + std::to_string(options.replicas) +
                                           " replicas of " + fleet.device_name() + ", router " + options.router,
                                       summary->fleet, wall);
  print_replicas(*summary);
  for (int r = 0; r < options.replicas; ++r) {
    const auto& rep = summary->replicas[static_cast<std::size_t>(r)];
    Status s = folders[static_cast<std::size_t>(r)]->finish(fleet.engine_description(r), rep.summary,
                                                            fleet.engine(r).log(), wall);
    if (!s.ok()) return usage_error(kCommand, s.message());
  }
  if (Status s = (*top)->add_file("replicas.csv", replicas_csv(*summary)); !s.ok())
    return usage_error(kCommand, s.message());
  if (Status s = (*top)->finish(fleet.description(), summary->fleet, fleet.routes(), wall); !s.ok())
    return usage_error(kCommand, s.message());
  std::cout << "  run folder                " << a.out_dir << "\n";
  if (!summary->fleet.violations.empty()) {
    std::cerr << "kvsim fleet: KV verification failed: " << summary->fleet.violations.front() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

int run_fleet(int argc, char** argv) {
  FleetArgs a;
  po::options_description opts = fleet_options(a);
  po::positional_options_description pos;
  pos.add("trace", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (a.trace_path.empty()) return usage_error(kCommand, "--trace is required (kvsim fleet --help)");
  if (a.decision_log != "full" && a.decision_log != "digest") {
    return usage_error(kCommand, "--decision-log must be full or digest, got '" + a.decision_log + "'");
  }
  if (Status s = check_progress_mode(a.progress); !s.ok()) return usage_error(kCommand, s.message());
  replay::ReplayConfig config;
  if (Status s = apply_config_options(vm, config); !s.ok()) return usage_error(kCommand, s.message());
  config.run.replay.keep_decision_text = false;  // each engine streams its decisions.log
  auto fleet = replay::FleetReplay::build(config, a.trace_path);
  if (!fleet.ok()) return usage_error(kCommand, fleet.status().message());
  return run_into_folder(a, config.fleet, **fleet);
}

}  // namespace kv::cli
