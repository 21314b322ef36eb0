// kvsim calibrate --serve-result RESULT.json --trace TRACE [replay options]: fits the host's time
// per step and a latency per request outside the engine to a `vllm bench serve` result, by
// replaying the benchmark's workload (replay/serving_fit.h), and prints every figure of the
// result against the replay before and after the fit.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "files/output_file.h"
#include "replay/bench_result.h"
#include "replay/serving_fit.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "calibrate";

constexpr const char* kUsage =
    "kvsim calibrate --serve-result RESULT.json --trace TRACE [--out FIT.json] [replay options]\n\n"
    "Fits two terms of time outside the simulated GPU to a `vllm bench serve --save-result` file\n"
    "(or benchmark_serving.py's): the host's time per engine step, to the mean TPOT, and a fixed\n"
    "latency per request outside the engine (--frontend's LATENCY_NS), to the mean TTFT. Each is\n"
    "found by bisection over replays of TRACE with the replay options given (the benchmark's\n"
    "workload, model, GPU and engine settings, as `kvsim replay` takes them). Prints both terms\n"
    "as the options that reproduce the fitted run and every figure of the result against the\n"
    "replay before and after the fit (docs/fidelity.md, \"Fitting the serving terms to a\n"
    "benchmark\"). Exit status: 0 ok, 2 bad usage or bad input.\n\n"
    "Options";

struct ServingArgs {
  std::string result, trace, out;
  bool force = false;
};

std::string error_pct(double kvsim, double published) {
  if (published == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * (kvsim - published) / published);
  return buf;
}

std::string term_note(const replay::FittedTerm& t) {
  if (t.reached) return "";
  return t.ns == 0 ? "  (not reached: the replay is above the target with 0)" : "  (not reached: below it at 1 s)";
}

// One figure of the result beside the replay's, as given and as fitted.
struct Compared {
  std::string key;
  double published, before, after;
};

// The figures the result and both replays have, in bench_result_keys() order.
std::vector<Compared> compared(const replay::BenchResult& r, const replay::ServingFit& fit) {
  std::vector<Compared> out;
  for (const std::string& key : replay::bench_result_keys()) {
    const auto before = replay::serving_figure(fit.before, key), after = replay::serving_figure(fit.after, key);
    if (r.has(key) && before && after) out.push_back({key, r.figure(key), *before, *after});
  }
  return out;
}

void print_fit(const replay::BenchResult& r, const ServingArgs& a, const replay::ServingFit& fit) {
  std::cout << "kvsim calibrate: " << a.result << " against " << fit.after.completed << " requests of " << a.trace
            << " (" << fit.replays << " replays, " << fit.rounds << " rounds)\n";
  std::printf("  host time per step     %12lld ns   --host-overhead %s%s\n", static_cast<long long>(fit.host_step.ns),
              fit.host_overhead.c_str(), term_note(fit.host_step).c_str());
  std::printf("  latency per request    %12lld ns   --frontend %s%s\n", static_cast<long long>(fit.latency.ns),
              fit.frontend.c_str(), term_note(fit.latency).c_str());
  std::printf("  %-16s %11s %11s %9s %11s %9s\n", "figure", "published", "as given", "error", "fitted", "error");
  for (const Compared& c : compared(r, fit)) {
    std::printf("  %-16s %11.2f %11.2f %9s %11.2f %9s\n", c.key.c_str(), c.published, c.before,
                error_pct(c.before, c.published).c_str(), c.after, error_pct(c.after, c.published).c_str());
  }
  if (r.completed && *r.completed != static_cast<double>(fit.after.completed)) {
    std::printf("  note: the result completed %.0f requests, the replay %lld: is TRACE the benchmark's workload?\n",
                *r.completed, static_cast<long long>(fit.after.completed));
  }
}

std::string fit_json(const replay::BenchResult& r, const replay::ServingFit& fit) {
  nlohmann::ordered_json j;
  j["serve_result"] = r.path;
  j["host_overhead"] = fit.host_overhead;
  j["frontend"] = fit.frontend;
  j["host_step_ns"] = fit.host_step.ns;
  j["host_step_reached"] = fit.host_step.reached;
  j["latency_ns"] = fit.latency.ns;
  j["latency_reached"] = fit.latency.reached;
  j["replays"] = fit.replays;
  for (const Compared& c : compared(r, fit)) {
    j["figures"][c.key] = {{"published", c.published}, {"as_given", c.before}, {"fitted", c.after}};
  }
  return j.dump(2) + "\n";
}

}  // namespace

int run_calibrate_serving(int argc, char** argv) {
  ServingArgs a;
  po::options_description opts(kUsage);
  opts.add_options()("help,h", "show this help")("serve-result", po::value(&a.result),
                                                 "a vllm bench serve --save-result JSON file")(
      "trace", po::value(&a.trace), "the benchmark's workload as a kvsim trace (kvsim gen, kvsim convert)")(
      "out", po::value(&a.out), "also write the fit as JSON to this file")("force", po::bool_switch(&a.force),
                                                                           "replace an existing --out file");
  add_config_options(opts);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (a.result.empty()) return usage_error(kCommand, "--serve-result: give a vllm bench serve result file");
  if (a.trace.empty()) return usage_error(kCommand, "--trace is required (the benchmark's workload)");
  replay::ReplayConfig config;
  if (Status s = apply_config_options(vm, config); !s.ok()) return usage_error(kCommand, s.message());
  auto result = replay::read_bench_result(a.result);
  if (!result.ok()) return usage_error(kCommand, "--serve-result: " + result.status().message());
  auto fit = replay::fit_serving(config, a.trace, result->figure("mean_ttft_ms"), result->figure("mean_tpot_ms"));
  if (!fit.ok()) return usage_error(kCommand, fit.status().message());
  print_fit(*result, a, *fit);
  if (!a.out.empty()) {
    if (Status s = files::write_file_atomically(a.out, fit_json(*result, *fit), a.force); !s.ok()) {
      return usage_error(kCommand, "--out: " + s.message());
    }
    std::cout << "  wrote the fit to " << a.out << "\n";
  }
  return 0;
}

}  // namespace kv::cli
