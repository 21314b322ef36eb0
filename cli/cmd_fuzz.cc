// kvsim fuzz: runs the property tests of properties/ for a time budget, outside ctest. Rounds
// of cases are drawn from seeds derived from --seed and the round number, so a failure is
// reproduced by the same command line (the report also carries the shrunk ops script).
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <string>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "properties/harness.h"

namespace po = boost::program_options;

namespace kv::cli {
namespace {

// The bounds of the options: a budget from a millisecond to about 11 days, counts up to a million.
constexpr double kMinSeconds = 1e-3;
constexpr double kMaxSeconds = 1e6;
constexpr int kMaxCount = 1000000;

std::uint64_t name_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

int run_fuzz(int argc, char** argv) {
  po::options_description opts(
      "kvsim fuzz --seconds N [--seed S] [--level queue|manager|hybrid|scheduler|all]\n\n"
      "Runs the stateful property tests (free queue, KV-cache manager against its reference\n"
      "model, the hybrid manager on random layouts of full, sliding and chunked groups,\n"
      "the scheduler on the simulated device) for a time budget. On a failure prints the\n"
      "shrunk counterexample (an ops script for the manager level) and exits 1.\n\n"
      "Options");
  double seconds = 10.0;
  std::uint64_t seed = 1;
  std::string level = "all";
  int cases = 50;
  int max_size = 100;
  opts.add_options()("help,h", "show this help")("seconds", bounded("seconds", &seconds, kMinSeconds, kMaxSeconds),
                                                 "time budget in seconds (0.001 to 1e6)")(
      "seed", bounded("seed", &seed, std::uint64_t{0}, std::numeric_limits<std::uint64_t>::max()),
      "base seed (rounds derive theirs from it)")("level", po::value(&level)->default_value(level),
                                                  "queue, manager, hybrid, scheduler or all")(
      "cases", bounded("cases", &cases, 1, kMaxCount), "cases per property per round (1 to 1000000)")(
      "max-size", bounded("max-size", &max_size, 1, kMaxCount), "largest case size (commands per case, 1 to 1000000)");
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, nullptr, vm)) return 0;  // --help
  std::vector<const props::PropertyDef*> selected;
  for (const props::PropertyDef& def : props::all_properties()) {
    if (level == "all" || def.level == level) selected.push_back(&def);
  }
  if (selected.empty()) {
    return usage_error("fuzz",
                       "no properties at level '" + level + "' (levels: queue, manager, hybrid, scheduler, all)");
  }

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  struct Tally {
    long cases = 0;
    double seconds = 0;
  };
  std::map<std::string, Tally> per_level;
  long total = 0;
  for (std::uint64_t round = 0; elapsed() < seconds; ++round) {
    for (const props::PropertyDef* def : selected) {
      if (elapsed() >= seconds) break;
      props::PropertyParams params;
      params.seed = seed * 0x9E3779B97F4A7C15ULL + round * 1000003ULL + name_hash(def->name);
      params.cases = cases;
      params.max_size = max_size;
      const double t0 = elapsed();
      const props::PropertyResult r = props::check_property(def->name, def->property, params);
      Tally& t = per_level[def->level];
      t.cases += r.cases_run;
      t.seconds += elapsed() - t0;
      total += r.cases_run;
      if (!r.passed) {
        std::cout << "FAILED: property " << def->name << " in round " << round << " (kvsim fuzz --seed " << seed
                  << " --level " << def->level << " reproduces it)\n"
                  << r.report << "\n";
        std::cout << total << " cases run in " << std::fixed << std::setprecision(1) << elapsed() << " s\n";
        return 1;
      }
    }
  }
  std::cout << "kvsim fuzz: " << total << " cases in " << std::fixed << std::setprecision(1) << elapsed()
            << " s, no failure\n";
  for (const auto& [name, t] : per_level) {
    std::cout << "  " << std::left << std::setw(10) << name << std::right << std::setw(9) << t.cases << " cases  "
              << std::setw(8) << std::setprecision(0) << (t.seconds > 0 ? t.cases / t.seconds : 0.0) << " cases/s\n";
  }
  return 0;
}

}  // namespace kv::cli
