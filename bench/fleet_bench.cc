// fleet_bench: what the fleet loop costs over its engines. For each fleet size N, runs the
// fleet on a trace (CPU time), then each of its N engines alone on the requests routed to it
// (replay/fleet_replay.h, build_replica_alone), and prints both CPU times and their ratio,
// side by side in one run, with whether every engine's digest equals its lone replay's.
//
//   fleet_bench [--trace T] [--replicas 1,4,16] [--router R] [--kv-cache-tokens N] [--limit N]
//
// Run from the repository root on a Release build (scripts/bench-fleet).
#include <sys/resource.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "replay/fleet_replay.h"

namespace po = boost::program_options;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct Row {
  int replicas = 0;
  double fleet_s = 0, alone_s = 0;
  std::int64_t steps = 0;
  bool digests_equal = true;
};

// The fleet, then each engine alone; exits on any error.
Row measure(const kv::replay::ReplayConfig& config, const std::string& trace) {
  const kv::replay::FleetOptions& options = config.fleet;
  Row row;
  row.replicas = options.replicas;
  auto fleet = kv::replay::FleetReplay::build(config, trace);
  if (!fleet.ok()) throw std::runtime_error(fleet.status().message());
  std::vector<std::set<std::string>> routed(static_cast<std::size_t>(options.replicas));
  (*fleet)->on_route = [&routed](const std::string& id, int r) { routed[static_cast<std::size_t>(r)].insert(id); };
  const double t0 = cpu_seconds();
  auto summary = (*fleet)->run();
  row.fleet_s = cpu_seconds() - t0;
  if (!summary.ok()) throw std::runtime_error(summary.status().message());
  row.steps = summary->fleet.steps;
  for (int r = 0; r < options.replicas; ++r) {
    auto alone = kv::replay::build_replica_alone(config, trace, r, routed[static_cast<std::size_t>(r)]);
    if (!alone.ok()) throw std::runtime_error(alone.status().message());
    const double t1 = cpu_seconds();
    auto s = alone->make_replayer(config)->run();
    row.alone_s += cpu_seconds() - t1;
    if (!s.ok()) throw std::runtime_error(s.status().message());
    row.digests_equal = row.digests_equal && s->digest == summary->replicas[static_cast<std::size_t>(r)].summary.digest;
  }
  return row;
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoi(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace = "traces/data/mooncake_conversation.kvtrace", replicas = "1,4,16", router = "round-robin";
  std::int64_t kv_tokens = 1000000, limit = 0;
  po::options_description opts("fleet_bench [options]");
  opts.add_options()("help,h", "show this help")("trace", po::value(&trace)->default_value(trace), "trace")(
      "replicas", po::value(&replicas)->default_value(replicas), "fleet sizes, comma-separated")(
      "router", po::value(&router)->default_value(router), "router")(
      "kv-cache-tokens", po::value(&kv_tokens)->default_value(kv_tokens), "KV cache per engine")(
      "limit", po::value(&limit)->default_value(limit), "first N requests (0: all)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    kv::replay::ReplayConfig config;
    config.device.kv_cache_tokens = kv_tokens;
    config.device.verify = kv::sim::VerifyMode::kOff;
    config.run.limit = limit;
    config.run.replay.keep_decision_text = false;
    std::printf("%-9s %12s %16s %8s %12s %s\n", "replicas", "fleet cpu s", "engines alone s", "ratio", "steps",
                "digests");
    for (int n : parse_list(replicas)) {
      config.fleet.replicas = n;
      config.fleet.router = router;
      const Row row = measure(config, trace);
      std::printf("%-9d %12.2f %16.2f %8.3f %12lld %s\n", row.replicas, row.fleet_s, row.alone_s,
                  row.alone_s > 0 ? row.fleet_s / row.alone_s : 0.0, static_cast<long long>(row.steps),
                  row.digests_equal ? "equal" : "DIFFER");
    }
  } catch (const std::exception& e) {
    std::cerr << "fleet_bench: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
