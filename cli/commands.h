// The kvsim subcommands. Each lives in its own cmd_<name>.cc and takes the arguments after its
// name (argv[0] is "kvsim <name>"). Exit status: 0 success, 1 the work found a problem (a
// failed check, a verification error), 2 bad usage or bad input.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/positional_options.hpp>
#include <boost/program_options/variables_map.hpp>
#include <string_view>

namespace kv::cli {

// Parses argv into vm (positional arguments named by pos, if given). Returns false when --help
// was asked for, after printing `opts`: the command then exits 0. Bad options throw; main()
// turns that into "kvsim <command>: <message>" and exit status 2.
bool parse_options(int argc, char** argv, const boost::program_options::options_description& opts,
                   const boost::program_options::positional_options_description* pos,
                   boost::program_options::variables_map& vm);

// Prints "kvsim <command>: <message>" on standard error and returns 2, the exit status of bad
// usage or bad input: every subcommand reports its errors through this one function.
int usage_error(std::string_view command, std::string_view message);

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

int run_ops(int argc, char** argv);
int run_scenario(int argc, char** argv);
int run_replay(int argc, char** argv);
int run_fleet(int argc, char** argv);
int run_gen(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_trace(int argc, char** argv);
int run_sweep(int argc, char** argv);
int run_grid_sweep(int argc, char** argv);  // kvsim sweep --vary ...
int run_capacity(int argc, char** argv);
int run_report(int argc, char** argv);
int run_calibrate(int argc, char** argv);
int run_calibrate_serving(int argc, char** argv);  // kvsim calibrate --serve-result ...
int run_fuzz(int argc, char** argv);

}  // namespace kv::cli
