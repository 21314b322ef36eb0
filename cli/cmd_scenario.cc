// kvsim scenario FILE...: runs scenario files recorded from vLLM (its KV-cache manager with
// several groups, or its scheduler) against kvsim's core and prints, per file, `ok`,
// `ok (refused, as vLLM)` or the first mismatch (step, field, expected, got).
#include <boost/program_options.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "ops/scenario.h"

namespace po = boost::program_options;

namespace kv::cli {

int run_scenario(int argc, char** argv) {
  std::vector<std::string> files;
  po::options_description opts(
      "kvsim scenario FILE...\n\n"
      "Runs each scenario file against kvsim's core and prints one line per file: ok, ok (refused,\n"
      "as vLLM) for a configuration vLLM itself refuses, or the first mismatch as 'step N: field:\n"
      "expected X, got Y'. Formats: tests/golden-scheduler/README.md (vLLM's scheduler),\n"
      "tests/golden-spec/README.md (its speculative decoding; rules in docs/semantics.md §5.9) and\n"
      "tests/golden-hybrid/README.md (KV-cache groups; rules in docs/hybrid-groups.md).\n"
      "Exit status: 0 every file ok, 1 a mismatch, 2 a file that cannot be read or parsed.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("file", po::value(&files), "scenario files (positional)");
  po::positional_options_description pos;
  pos.add("file", -1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  if (files.empty()) {
    return usage_error("scenario", "give at least one scenario file (kvsim scenario --help)");
  }
  int status = 0;
  for (const std::string& f : files) {
    auto outcome = ops::run_scenario(f);
    if (!outcome.ok()) {
      std::cerr << "kvsim scenario: " << outcome.status().message() << "\n";
      status = 2;
      continue;
    }
    std::cout << f << ": " << ops::to_string(*outcome) << "\n";
    if (!outcome->ok && status == 0) status = 1;
  }
  return status;
}

}  // namespace kv::cli
