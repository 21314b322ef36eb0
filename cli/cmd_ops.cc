// kvsim ops SCRIPT: runs an ops script (docs/semantics.md §6) from a file, or from standard input
// when SCRIPT is '-' or absent.
#include <boost/program_options.hpp>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "ops/ops_interpreter.h"

namespace po = boost::program_options;

namespace kv::cli {

int run_ops(int argc, char** argv) {
  po::options_description opts(
      "kvsim ops [SCRIPT|-]\n\n"
      "Runs an ops script (one command a line, docs/semantics.md §6) against a\n"
      "fresh KV-cache manager and prints one line per query command.\n"
      "Exit status: 0 ok, 1 a `check` found a broken invariant, 2 a malformed line.\n\n"
      "Options");
  opts.add_options()("help,h", "show this help")("script", po::value<std::string>()->default_value("-"),
                                                 "script file, or - for standard input");
  po::positional_options_description pos;
  pos.add("script", 1);
  po::variables_map vm;
  if (!parse_options(argc, argv, opts, &pos, vm)) return 0;  // --help
  const std::string path = vm["script"].as<std::string>();
  if (path == "-") return OpsInterpreter::run_script(std::cin, std::cout, std::cerr);
  std::ifstream in(path);
  if (!in) {
    return usage_error("ops", "cannot open '" + path + "'");
  }
  const int rc = OpsInterpreter::run_script(in, std::cout, std::cerr);
  return rc;
}

}  // namespace kv::cli
