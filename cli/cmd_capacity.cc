// kvsim capacity --trace T --slo ttft-p99=MS,tpot-p99=MS [replay options]: the highest request
// rate that meets the SLO (replay/capacity_search.h), with the probes around it.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/config_options.h"
#include "cli/number_options.h"
#include "replay/capacity_search.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "capacity";

void print(const replay::CapacityResult& r, const std::vector<replay::SloBound>& slo) {
  std::printf("  %12s", "rate req/s");
  for (const replay::SloBound& b : slo) std::printf("  %16s", (b.metric + "-" + b.stat + " ms").c_str());
  std::printf("  %12s  %10s  %s\n", "output tok/s", "meets SLO", "");
  for (const replay::CapacityProbe& p : r.probes) {
    std::printf("  %12.4f", p.rate);
    for (double v : p.figures) std::printf("  %16.1f", v);
    std::printf("  %12.0f  %10s  %s\n", p.output_throughput, p.meets ? "yes" : "no",
                p.rate == r.rate ? "<- capacity" : (p.overloaded ? "(overloaded)" : ""));
  }
}

}  // namespace

int run_capacity(int argc, char** argv) {
  std::string trace, slo_text;
  replay::CapacityOptions co;
  po::options_description opts(
      "kvsim capacity --trace T --slo ttft-p99=MS[,tpot-p99=MS,...] [replay options]\n\n"
      "Finds the highest request rate (Poisson arrivals; gamma with --burstiness) at which the\n"
      "configured model and GPU serve T on the simulator within the SLO: brackets it by doubling\n"
      "or halving from --start-rate, then bisects until the bracket is within --precision. Prints\n"
      "the rate and every probe. Bounds: METRIC-STAT=MS with METRIC ttft, tpot, itl or e2el and\n"
      "STAT mean, median or pNN. Deterministic for a given --seed.\n"
      "Exit status: 0 a rate was found, 1 no rate meets the SLO, 2 bad usage or bad input.\n\nOptions");
  opts.add_options()("help,h", "show this help")("trace", po::value(&trace), "trace file (.kvtrace)")(
      "slo", po::value(&slo_text), "the SLO, e.g. ttft-p99=500,tpot-p99=50")(
      "start-rate", bounded("start-rate", &co.start_rate), "first rate probed (req/s)")(
      "precision", bounded("precision", &co.precision), "stop when high / low <= 1 + this")(
      "max-probes", bounded("max-probes", &co.max_probes), "replays at most");
  add_config_options(opts);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  if (trace.empty()) return usage_error(kCommand, "--trace is required (kvsim capacity --help)");
  if (vm.count("request-rate"))
    return usage_error(kCommand, "--request-rate is what kvsim capacity searches; leave it out");
  if (Status s = replay::validate(co); !s.ok()) return usage_error(kCommand, s.message());
  auto slo = replay::parse_slo(slo_text);
  if (!slo.ok()) return usage_error(kCommand, slo.status().message());
  replay::ReplayConfig base;
  base.device.verify = sim::VerifyMode::kOff;
  if (Status s = apply_config_options(vm, base); !s.ok()) return usage_error(kCommand, s.message());
  if (!base.events.file.empty()) {  // one file per run: kvsim replay writes it
    return usage_error(kCommand,
                       "--kv-events: not supported by kvsim capacity, which replays many times (use kvsim replay)");
  }
  std::string slo_desc;
  for (const replay::SloBound& b : *slo) slo_desc += (slo_desc.empty() ? "" : ", ") + b.text();
  std::cout << "kvsim capacity: " << trace << " on sim:" << base.device.model.name << "@" << base.device.gpu.name
            << ", SLO " << slo_desc << "\n";
  auto r = replay::find_capacity(base, trace, *slo, co);
  if (!r.ok()) return usage_error(kCommand, r.status().message());
  print(*r, *slo);
  if (r->rate <= 0) {
    std::cout << "  no probed rate meets the SLO (the lowest failed at " << r->failing_rate << " req/s)\n";
    return 1;
  }
  std::printf("  capacity: %.4f req/s meets the SLO; %.4f req/s does not\n", r->rate, r->failing_rate);
  return 0;
}

}  // namespace kv::cli
