// kvsim trace info TRACE: sizes, length percentiles, arrival rate and the prefix-sharing
// analysis of a trace (traces/trace_analysis.h), as text or JSON.
#include <boost/program_options.hpp>
#include <iostream>

#include "cli/commands.h"
#include "cli/number_options.h"
#include "cli/progress.h"
#include "traces/trace_analysis.h"

namespace po = boost::program_options;

namespace kv::cli {

namespace {

constexpr std::string_view kCommand = "trace";

}  // namespace

int run_trace(int argc, char** argv) {
  trace::AnalysisOptions a;
  std::string action, path, progress = "auto";
  po::options_description opts(
      "kvsim trace info TRACE [options]\n\n"
      "Reads TRACE once and prints request and token counts, prompt/output length percentiles,\n"
      "the arrival rate, and the prefix sharing: the hit rate of an infinite prefix cache\n"
      "(vLLM's counting), block reuse distances, and the most shared prefixes.\n"
      "Exit status: 0 ok, 2 bad usage or a bad trace.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("action", po::value<std::string>(&action), "info")(
      "trace", po::value<std::string>(&path), "trace file")(
      "block-size", bounded("block-size", &a.block_size, 1, 1 << 20), "KV block size in tokens")(
      "hash-algo", po::value<std::string>(&a.hash_algo)->default_value(""),
      "sha256_cbor or xxhash_cbor (default: the trace's)")("top", bounded("top", &a.top_k, 0, 1000000),
                                                           "most shared prefixes to list")(
      "json", "print JSON instead of text")("dot", po::value<std::string>(&a.dot_path)->default_value(""),
                                            "write a Graphviz DOT of the top of the prefix tree here")(
      "dot-nodes", bounded("dot-nodes", &a.dot_max_nodes, 0, 1000000), "shared prefixes drawn in the DOT")(
      "progress", po::value<std::string>(&progress)->default_value(progress), "auto (on a terminal) | on | off");
  po::positional_options_description pos;
  pos.add("action", 1).add("trace", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (action != "info")
    return usage_error(kCommand, action.empty() ? "missing action: info" : "unknown action '" + action + "'");
  if (path.empty()) return usage_error(kCommand, "missing TRACE");
  if (a.block_size <= 0) return usage_error(kCommand, "--block-size must be > 0");
  if (a.top_k < 0 || a.dot_max_nodes < 0) return usage_error(kCommand, "--top and --dot-nodes must be >= 0");
  if (Status s = check_progress_mode(progress); !s.ok()) return usage_error(kCommand, s.message());
  ProgressLine progress_line("requests", progress);
  a.on_progress = [&progress_line](std::int64_t n) { progress_line.update(n); };
  StatusOr<trace::TraceAnalysis> result = trace::analyze_trace(path, a);
  progress_line.done();
  if (!result.ok()) return usage_error(kCommand, result.status().message());
  std::cout << (vm.count("json") ? trace::analysis_to_json(*result) : trace::analysis_to_text(*result));
  return 0;
}

}  // namespace kv::cli
